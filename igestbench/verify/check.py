"""``sv7 check``: a monitoring probe with the Nagios plugin convention.

It runs the connectivity, TLS, SOAP and session checks and the REST and IDS checks that do not
write (version, session, query; the IDS's ping and version), and prints ONE line with perfdata::

    ICAT OK - 6.2.0, login ok, REST ok, IDS ok | rtt=1.2ms;;; wsdl=15ms;;; login=30ms;;; …

A deployment without an IDS (``/ids/ping`` does not answer ``IdsOK``) says ``no IDS``; an IDS
that answers ping but fails its version is CRITICAL with the cause.

A catalogue without REST because it is ICAT 4.x says ``no REST (ICAT 4.x)``; one of ICAT 5 or
later whose REST API does not answer is CRITICAL (``rest-missing``), as any failed check.

Exit status: 0 OK, 1 WARNING (only checks marked ``severity="warning"`` failed, e.g. a
self-signed certificate the probe was told to trust), 2 CRITICAL (any other check failed),
3 UNKNOWN (the probe itself could not run: bad options, no target, no login, a crash).
With ``--insecure`` an untrusted certificate is no failure but said in the line, and an
expired one is a WARNING (:mod:`igestbench.verify.insecure` says why).

A probe that never logged in has not checked the service: without an account it is UNKNOWN
("no login configured: set SV7_USER …"), before anything is sent. ``--no-login`` asks for a
connectivity-only probe (connectivity, TLS, the WSDL, REST's version) explicitly; its OK says
``no login (--no-login)``.
"""

from __future__ import annotations

import argparse
import dataclasses
import getpass
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from igestbench import redaction
from igestbench.errors import Sv7Error
from igestbench.icat.credentials import Logins
from igestbench.options import CHECK_OPTIONS, DEFAULT_CHECK_DEADLINE
from igestbench.verify.diagnosis import Diagnosis
from igestbench.verify.insecure import not_verified_note, waive
from igestbench.verify.options import Account, VerifyOptions, add_arguments, options_from
from igestbench.verify.runner import VerificationResult, run_verification

OK, WARNING, CRITICAL, UNKNOWN = 0, 1, 2, 3
STATUS_NAMES = {OK: "OK", WARNING: "WARNING", CRITICAL: "CRITICAL", UNKNOWN: "UNKNOWN"}
CHECK_PARTS = ("connectivity", "tls", "soap", "session", "rest", "ids")
#: perfdata label → the fact (milliseconds) the checks record for it.
PERFDATA = (("rtt", "rtt_ms"), ("wsdl", "wsdl_ms"), ("login", "login_ms"),
            ("rest_login", "rest_login_ms"), ("ids_ping", "ids_ping_ms"))


@dataclass(frozen=True)
class Limits:
    """Thresholds on each call's time (ms; None: none): --warning-ms, --critical-ms."""

    warning_ms: float | None = None
    critical_ms: float | None = None

    def state(self, facts: Mapping[str, Any]) -> tuple[int, str]:
        """OK, or the state of the slowest call over a threshold and ``slow: login 2517 ms
        (over --warning-ms 1000)``."""
        calls = [(label, float(facts[key])) for label, key in PERFDATA if key in facts]
        if not calls:
            return OK, ""
        label, value = max(calls, key=lambda call: call[1])
        for code, flag, limit in ((CRITICAL, "--critical-ms", self.critical_ms),
                                  (WARNING, "--warning-ms", self.warning_ms)):  # fmt: skip
            if limit is not None and value > limit:
                return code, f"slow: {label} {value:.0f} ms (over {flag} {limit:g})"
        return OK, ""


def _limit(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def perfdata(
    facts: Mapping[str, Any],
    timing: tuple[float, float | None] | None = None,
    limits: Limits = Limits(),
) -> str:
    """The calls' times with their thresholds; ``timing`` (seconds the checks took, the
    deadline) adds ``time=12.3s;;40;`` — the deadline as its critical threshold, as
    monitoring-plugins write a check's own duration."""
    warn, crit = _limit(limits.warning_ms), _limit(limits.critical_ms)
    data = [f"{label}={float(facts[key]):.1f}ms;{warn};{crit};" for label, key in PERFDATA
            if key in facts]  # fmt: skip
    if timing is not None:
        took, deadline = timing
        data.append(f"time={took:.1f}s;;{'' if deadline is None else f'{deadline:g}'};")
    return " ".join(data)


def _line(
    code: int, text: str, facts: Mapping[str, Any],
    timing: tuple[float, float | None] | None = None, limits: Limits = Limits(),
) -> str:  # fmt: skip
    data = perfdata(facts, timing, limits)
    return f"ICAT {STATUS_NAMES[code]} - {text}" + (f" | {data}" if data else "")


#: Why a probe without an account is UNKNOWN, and what to do.
NO_LOGIN = ("no login configured: set SV7_USER (with SV7_AUTH, SV7_PASSWORD) or [credentials] "
            "in sv7.toml, or ask for a connectivity-only probe with --no-login")


def evaluate(
    result: VerificationResult, no_login: bool = False, deadline: float | None = None,
    limits: Limits = Limits(), insecure: bool = False,
) -> tuple[int, str]:
    """Exit code and status line for the checks of one probe (``no_login``: a connectivity-
    only probe was asked for; ``limits``: thresholds on each call's time; ``insecure``: the
    certificate is not to be verified, :mod:`.insecure` says what that waives)."""
    timing = (result.elapsed_s, deadline) if deadline is not None else None
    failed, unverified = waive(result.failed) if insecure else (result.failed, ())
    note = not_verified_note(unverified)
    if result.out_of_time and not failed:
        # a socket timeout is the target's doing, not the plugin's: CRITICAL, as
        # monitoring-plugins answer a plugin timeout unless told otherwise (not UNKNOWN)
        line = _line(CRITICAL, out_of_time(result, deadline), result.facts, timing, limits)
        return CRITICAL, line
    ran = [c for c in result.checks if c.outcome != "skipped"]
    if not ran:
        return UNKNOWN, _line(UNKNOWN, "no check could run", result.facts, timing, limits)
    if failed:
        worst = next((c for c in failed if c.severity != "warning"), failed[0])
        code = CRITICAL if worst.severity != "warning" or result.out_of_time else WARNING
        more = f" (+{len(failed) - 1} more failed)" if len(failed) > 1 else ""
        # the cause, explanation and hint as sv7 run words them (the checks' one diagnosis):
        # a refused login names where its password came from, never the password
        said = Diagnosis(worst.cause, worst.explanation or "", worst.hint).line()
        if result.out_of_time:
            more += f"; then the deadline ran out ({_not_checked(result)} not checked)"
        return code, _line(code, f"{said}{more}{note}", result.facts, timing, limits)
    logins = [c for c in ran if c.part == "session"]
    if not logins and not no_login:  # nothing logged in: the service was not checked
        return UNKNOWN, _line(UNKNOWN, NO_LOGIN, result.facts, timing, limits)
    session = "login ok" if logins else "no login (--no-login)"
    version = result.api_version or "version unknown"
    status = f"{version}, {session}{_rest_status(result)}{_ids_status(result)}"
    code, slow = limits.state(result.facts)  # working, but slower than the site accepts
    text = f"{status}; {slow}" if slow else status
    return code, _line(code, text + note, result.facts, timing, limits)


def _part_of(check_id: str, result: VerificationResult) -> str:
    return next((c.part for c in result.checks if c.id == check_id), "")


def _not_checked(result: VerificationResult) -> str:
    """``rest, ids``: the parts with a check the deadline kept from ending."""
    cut = {_part_of(i, result) for i in result.out_of_time}
    return ", ".join(p for p in CHECK_PARTS if p in cut) or "some checks"


def out_of_time(result: VerificationResult, deadline: float | None) -> str:
    """``timeout: the checks took longer than --deadline 40 s: checked connectivity, tls,
    soap; not checked session, rest, ids (hint: …)``."""
    cut = {_part_of(i, result) for i in result.out_of_time}
    done = [p for p in CHECK_PARTS
            if p not in cut and any(c.part == p and c.outcome == "passed" for c in result.checks)]
    limit = f"--deadline {deadline:g} s" if deadline is not None else "the deadline"
    said = Diagnosis(
        "timeout",
        f"the checks took longer than {limit}: checked {', '.join(done) or 'nothing'}; "
        f"not checked {_not_checked(result)}",
        "the catalogue answers too slowly for the deadline (the perfdata has each call's "
        "time measured): raise --deadline if the monitoring system's own timeout allows "
        "(Nagios: 60 s)",
    )
    return said.line()


def _rest_status(result: VerificationResult) -> str:
    """``, REST ok``; ``, no REST (ICAT 4.x)`` where the part was skipped by the version."""
    rest = [c for c in result.checks if c.part == "rest"]
    if not rest:
        return ""
    if all(c.outcome == "skipped" for c in rest):
        return f", no REST (ICAT {result.api_version})" if result.api_version else ", no REST"
    return ", REST ok"


def _ids_status(result: VerificationResult) -> str:
    """``, IDS ok``; ``, no IDS`` where /ids/ping did not answer (the part skipped)."""
    ids = [c for c in result.checks if c.part == "ids"]
    if not ids:
        return ""
    if all(c.outcome == "skipped" for c in ids):
        return ", no IDS"
    return ", IDS ok"


def run_check(
    target: str,
    timeout: float,
    ca_file: Path | None,
    insecure: bool,
    credentials: Sequence[Account],
    no_login: bool = False,
    deadline: float | None = DEFAULT_CHECK_DEADLINE,
    limits: Limits = Limits(),
) -> tuple[int, str]:
    """Probe ``target``; (exit code, status line). Never raises: a failing probe is UNKNOWN.
    Without ``credentials`` the probe is UNKNOWN unless ``no_login`` asks for a
    connectivity-only one; ``deadline`` bounds the whole probe (seconds)."""
    options = VerifyOptions(
        deadline=deadline,
        target=target,
        timeout=timeout,
        ca_file=ca_file,
        insecure=insecure,
        accounts=tuple(credentials),
        parts=CHECK_PARTS,
        read_only=True,
    )
    return probe(options, no_login, limits)


def probe(
    options: VerifyOptions, no_login: bool = False, limits: Limits = Limits()
) -> tuple[int, str]:
    if not options.target:
        return UNKNOWN, _line(UNKNOWN, "no --target given", {})
    if not options.accounts and not no_login:
        return UNKNOWN, _line(UNKNOWN, NO_LOGIN, {})
    if no_login:
        options = dataclasses.replace(options, accounts=())
    for account in options.accounts:
        # scrubbed as every known password is (a short one where a password can stand, not
        # out of paths and names: igestbench/redaction.py)
        redaction.remember(account.password)
    try:
        result = run_verification(options, quiet=True)
    except Sv7Error as exc:
        code, line = UNKNOWN, _line(UNKNOWN, str(exc), {})
    except Exception as exc:  # a monitoring probe must answer UNKNOWN, never a traceback
        code, line = UNKNOWN, _line(UNKNOWN, f"probe failed: {type(exc).__name__}: {exc}", {})
    else:
        code, line = evaluate(result, no_login, options.deadline, limits, options.insecure)
    # monitoring systems keep status lines: no password or session id in one, whatever a
    # server's message or an exception echoed
    return code, redaction.scrub(line)


def add_check_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``sv7 check`` (the same definitions as ``sv7 run`` and sv_tests use,
    and ``--no-login``, the probe's own)."""
    add_arguments(parser, for_check=True)
    for option in CHECK_OPTIONS:  # the probe's own, also from SV7_<OPTION> and sv7.toml [check]
        parser.add_argument(option.flag, dest=option.field, help=option.help,
                            metavar="S" if option.field == "deadline" else "MS")
    parser.add_argument("--no-login", action="store_true",
                        help="a connectivity-only probe: no account is asked for or used (OK "
                        "then says 'no login (--no-login)'); without it and without an "
                        "account the probe is UNKNOWN")


def cmd_check(args: argparse.Namespace) -> int:
    """``sv7 check``: print one status line, return the Nagios exit code."""
    from igestbench.accounts import load_logins
    from igestbench.config import load_check_config

    no_login = bool(getattr(args, "no_login", False))
    try:
        # the accounts as every sv7 command resolves them: the default one (SV7_AUTH/SV7_USER/
        # SV7_PASSWORD, sv7.toml [credentials], a prompt at a terminal) and roles on top;
        # none asked for with --no-login
        logins = Logins() if no_login else load_logins(
            args.account,
            args.credentials,
            args.config,
            prompt=getpass.getpass if sys.stdin.isatty() else None,
        )
        options = options_from(vars(args), logins)
        own = load_check_config({o.field: getattr(args, o.field, None) for o in CHECK_OPTIONS},
                                args.config)  # fmt: skip
    except Sv7Error as exc:
        # not sv7's usage exit status 2: that would read as CRITICAL to a monitoring system
        code, line = UNKNOWN, _line(UNKNOWN, str(exc), {})
    else:
        code, line = probe(
            dataclasses.replace(options, parts=CHECK_PARTS, read_only=True, debug=False,
                                deadline=own.deadline),
            no_login,
            Limits(own.warning_ms, own.critical_ms),
        )
    print(line, flush=True)
    return code
