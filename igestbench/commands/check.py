"""``sv7 check``: the monitoring probe (its body lives in ``igestbench.verify.check``)."""

from __future__ import annotations

import argparse


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from igestbench.verify import add_check_arguments

    p = sub.add_parser(
        "check",
        help="probe one catalogue for monitoring: Nagios exit code and one status line",
        description="Runs the connectivity, TLS, SOAP and session checks; exit 0 OK, "
        "1 WARNING, 2 CRITICAL, 3 UNKNOWN. Logs in with the default account (SV7_AUTH, "
        "SV7_USER, SV7_PASSWORD or sv7.toml [credentials]) and any --account ROLE=MECH/NAME "
        "(password from SV7_PASSWORD_<ROLE> or --credentials); without an account it is "
        "UNKNOWN, unless --no-login asks for a connectivity-only probe.",
    )
    add_check_arguments(p)


def cmd_check(args: argparse.Namespace) -> int:
    from igestbench.run.stopping import stop_signals
    from igestbench.verify import cmd_check as check
    from igestbench.verify.check import UNKNOWN

    # a monitoring probe stopped (Ctrl-C, a scheduler's SIGTERM) says so in its own convention
    # rather than dying silently, or reporting the checks it did as if that was all
    with stop_signals() as stop:
        try:
            return check(args)
        except KeyboardInterrupt:
            print(f"ICAT UNKNOWN - interrupted by {stop.name} before the checks ended", flush=True)
            return UNKNOWN
