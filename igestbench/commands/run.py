"""``sv7 run``: the service checks, workloads and sweep against one catalogue, one result file."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

from igestbench.commands.common import interactive_prompt
from igestbench.options import RUN_OPTIONS


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "run",
        help="run the service checks and benchmarks against one catalogue, write a result file",
        description="The default account comes from the environment (SV7_AUTH, SV7_USER, "
        "SV7_PASSWORD), sv7.toml [credentials] or a prompt at a terminal, never from the command "
        "line; --account adds role accounts for the checks. Without --target the built-in "
        "catalogue is started and used. Every option (also from SV7_<OPTION> and sv7.toml [run]) "
        "is checked before anything starts.",
        epilog="exit status: 0 ok, 1 error, 2 usage, 3 a --fail-on threshold failed, 4 target "
        "unreachable (DNS, refused, timeout), 5 TLS failed (a certificate not trusted: "
        "--ca-file or --insecure; or https:// to a plain-HTTP port: http://), 6 a service check "
        "failed or ended in an error (before 3 when both), 130/143/129 interrupted by "
        "SIGINT/SIGTERM/SIGHUP",
    )
    p.add_argument("--config", type=Path, help="sv7.toml to read (default ./sv7.toml if present)")
    for option in RUN_OPTIONS:
        if option.switch:
            p.add_argument(option.flag, dest=option.field, action="store_const", const=True,
                           help=option.help)
        else:
            p.add_argument(option.flag, dest=option.field, help=option.help)
    from igestbench.verify.options import OPTIONS

    # the service checks' own options (accounts, reference queries …), defined once over there
    checks = p.add_argument_group("service checks (part verify)")
    own = {o.flag for o in RUN_OPTIONS} | {"--flavour", "--debug", "--config"}
    for check in OPTIONS:
        if check.flags[0] not in own:
            checks.add_argument(*check.flags, **dict(check.kwargs))


def cmd_run(args: argparse.Namespace) -> int:
    from igestbench.run.closed_streams import dropped_when_closed

    # a closed terminal or pipe (sv7 run 2>&1 | head) drops the lines, never the run; the
    # result file says so
    with dropped_when_closed() as streams:
        return _run(args, streams.notes)


def _run(args: argparse.Namespace, terminal_notes: Callable[[], list[str]]) -> int:
    from igestbench.config import load_run_config
    from igestbench.icat.credentials import Logins
    from igestbench.run.next_steps import end_of_run
    from igestbench.run.progress import Progress
    from igestbench.run.runner import Runner
    from igestbench.run.summary import file_summary
    from igestbench.verify.options import options_from

    # the checks' own options first (files, parts), then the run's and the accounts: all
    # checked before the password prompt and before anything starts
    verify = options_from({**vars(args), "target": None}, Logins())
    config = load_run_config(
        {o.field: getattr(args, o.field) for o in RUN_OPTIONS},
        config_file=args.config,
        prompt=interactive_prompt(),
        accounts=args.account,
        credentials_file=args.credentials,
    )
    verify = dataclasses.replace(verify, accounts=config.accounts)
    config = dataclasses.replace(config, verify=verify)
    outcome = Runner(config, Progress(), terminal_notes).run()
    for line in outcome.summary:
        print(f"sv7 run: {line}", file=sys.stderr)
    if outcome.path is not None:
        print("\n".join([*file_summary(outcome.path),
                         *end_of_run(config, outcome.path, outcome.completed)]))
    return outcome.exit_code
