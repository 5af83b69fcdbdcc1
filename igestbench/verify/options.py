"""The verification options, defined once and registered for both argparse and pytest.

``sv7 check``, ``sv7 run`` and ``pytest sv_tests`` accept the same options with the same names,
because each is declared once in :data:`OPTIONS` (pytest-benchmark's habit). Whatever parsed
them, :func:`options_from` turns the values into one frozen :class:`VerifyOptions`.

Passwords never appear on a command line. The accounts are those of every sv7 command
(resolved by :func:`igestbench.config.load_logins`): the default account (``SV7_AUTH``,
``SV7_USER``, ``SV7_PASSWORD`` or sv7.toml's ``[credentials]``), which the checks use as the
writer unless one is named, and role accounts: ``--account ROLE=MECH/NAME`` with
``SV7_PASSWORD_<ROLE>`` (e.g. ``SV7_PASSWORD_READER``), or a table in the ``--credentials`` file
(or in sv7.toml as ``[credentials.reader]``)::

    [reader]
    account = "simple/reader"      # may stand in for --account reader=simple/reader
    password = "…"

The roles the suite knows: ``reader`` reads (and proves it cannot write), ``writer`` creates and
deletes a tagged hierarchy; any other role is only logged in and out.
"""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from igestbench.errors import UsageError
from igestbench.icat.credentials import READ_ROLE as READ_ROLE
from igestbench.icat.credentials import WRITE_ROLE as WRITE_ROLE
from igestbench.icat.credentials import Logins, RoleAccount
from igestbench.options import OptionError, number, unknown

PARTS = ("connectivity", "tls", "soap", "session", "read", "write", "cleanup", "rest", "ids")
#: A login the suite may use, and the role it plays (``reader``, ``writer``).
Account = RoleAccount


@dataclass(frozen=True)
class ReferenceQuery:
    """A query whose answer on the target is known: COUNT queries compare the number returned,
    other queries the number of results."""

    name: str
    query: str
    expected: int

    @property
    def is_count(self) -> bool:
        return self.query.lstrip().upper().startswith("SELECT COUNT(")


@dataclass(frozen=True)
class VerifyOptions:
    target: str | None = None
    site: str = ""
    ca_file: Path | None = None
    insecure: bool = False
    timeout: float = 10.0
    accounts: tuple[Account, ...] = ()
    reference_queries: tuple[ReferenceQuery, ...] = ()
    flavour: str = "zeep"
    #: Parts to run (empty: all).
    parts: tuple[str, ...] = ()
    #: Leave out the checks that write (``part(..., writes=True)``): sv7 check, a probe run
    #: every few minutes, must not create anything on a production catalogue.
    read_only: bool = False
    debug: bool = False
    #: The longest the checks may take together, in seconds (sv7 check --deadline); once it
    #: has run out no check starts, and a call in flight ends by it (None: no bound).
    deadline: float | None = None

    def account(self, role: str) -> Account | None:
        return next((a for a in self.accounts if a.role == role), None)

    @property
    def read_account(self) -> Account | None:
        """The reader, else the writer, else any account: reads need only a login."""
        return (
            self.account(READ_ROLE) or self.account(WRITE_ROLE) or next(iter(self.accounts), None)
        )


@dataclass(frozen=True)
class Option:
    """One option: its flags, the keyword arguments both parsers take, and where it applies."""

    flags: tuple[str, ...]
    kwargs: Mapping[str, Any]
    #: Also an option of ``sv7 check`` (the monitoring probe runs only the first four parts).
    for_check: bool = True
    #: Flags under pytest, where the usual one is taken (pytest owns ``--debug``).
    pytest_flags: tuple[str, ...] | None = None


OPTIONS: tuple[Option, ...] = (
    Option(("--target",), {"metavar": "URL", "help": "the catalogue: https://host[:port][/path]"}),
    Option(("--site",), {"default": "", "metavar": "NAME", "help": "partner site name"}),
    Option(
        ("--ca-file",),
        {
            "type": Path,
            "metavar": "FILE",
            "help": "PEM of the CA(s) to trust instead of the system's",
        },
    ),
    Option(
        ("--insecure",),
        {"action": "store_true",
         "help": "do not verify certificates (the TLS checks still report; sv7 check then "
         "names an untrusted certificate in its OK line and is WARNING for an expired one)"},
    ),
    Option(
        ("--timeout",),
        {"default": "10", "metavar": "S",
         "help": "the longest one call may take, the whole answer included (default 10)"},
    ),
    Option(
        ("--account",),
        {
            "action": "append",
            "default": [],
            "metavar": "ROLE=MECH/NAME",
            "help": "an account (repeatable; roles reader, writer, …) on top of the default "
            "one (SV7_AUTH/SV7_USER/SV7_PASSWORD); password from SV7_PASSWORD_<ROLE> or "
            "--credentials",
        },
    ),
    Option(
        ("--credentials",),
        {
            "type": Path,
            "metavar": "FILE",
            "help": "TOML file: auth/username/password and [ROLE] tables (account, password)",
        },
    ),
    Option(
        ("--config",),
        {
            "type": Path,
            "metavar": "FILE",
            "help": "sv7.toml whose [credentials] give the accounts, and [check] sv7 check's "
            "options (default ./sv7.toml if there)",
        },
        pytest_flags=("--sv7-config",),
    ),
    Option(
        ("--reference-queries",),
        {"type": Path, "metavar": "FILE", "help": "TOML file of [[query]] name, query, count"},
        for_check=False,
    ),
    Option(
        ("--flavour",),
        {"default": "zeep", "choices": ("zeep", "python-icat"), "help": "client (default zeep)"},
        for_check=False,
    ),
    Option(
        ("--verify-parts",),
        {"default": "", "metavar": "P,P", "help": f"parts to run (default all: {','.join(PARTS)})"},
        for_check=False,
    ),
    Option(
        ("--debug",),
        {"action": "store_true", "help": "show tracebacks instead of one-line diagnoses"},
        for_check=False,
        pytest_flags=("--sv7-debug",),
    ),
)


class _AddOption(Protocol):
    def __call__(self, *flags: str, **kwargs: Any) -> Any: ...


def _dest(flags: tuple[str, ...]) -> str:
    return flags[0].lstrip("-").replace("-", "_")


def register(add: _AddOption, for_check: bool = False, pytest: bool = False) -> None:
    """Declare the options with ``add``: pytest's ``addoption`` (``pytest=True``) or an
    argparse group's ``add_argument`` (``for_check``: only those of ``sv7 check``)."""
    for option in OPTIONS:
        if pytest:
            flags = option.pytest_flags or option.flags
        elif option.flags == ("--debug",) or (for_check and not option.for_check):
            # sv7 declares --debug globally; a subcommand must not declare it again
            continue
        else:
            flags = option.flags
        add(*flags, dest=_dest(flags), **option.kwargs)


def values_from_pytest(getoption: Callable[[str], Any]) -> dict[str, Any]:
    """The values pytest parsed, under the names :func:`options_from` takes."""
    return {_dest(o.flags): getoption(_dest(o.pytest_flags or o.flags)) for o in OPTIONS}


def add_arguments(parser: argparse.ArgumentParser, for_check: bool = False) -> None:
    """The options on an ``sv7`` subcommand (``run``, or ``check`` with ``for_check``)."""
    register(parser.add_argument_group("service verification").add_argument, for_check)


def options_from(values: Mapping[str, Any], logins: Logins) -> VerifyOptions:
    """VerifyOptions from parsed values (by dest; missing ones take their defaults).

    ``logins`` are the accounts :func:`igestbench.config.load_logins` resolved from the same
    values (``account``, ``credentials``, ``config``) and the environment: this module never
    reads the environment itself.
    """
    defaults = VerifyOptions()
    target = values.get("target") or None
    if target is not None:
        from igestbench.icat.endpoint import endpoint_of

        try:
            endpoint_of(str(target))
        except UsageError as exc:  # one line naming the option and what is wrong with the URL
            raise UsageError(f"--target: {exc}") from None
    parts = tuple(p.strip() for p in str(values.get("verify_parts") or "").split(",") if p.strip())
    bad = [p for p in dict.fromkeys(parts) if p not in PARTS]
    if bad:
        raise UsageError(f"--verify-parts: {unknown('part', bad, PARTS)}")
    ca_file, insecure = values.get("ca_file"), bool(values.get("insecure"))
    if ca_file is not None and insecure:
        raise UsageError("--insecure and --ca-file contradict each other: choose one")
    if ca_file is not None and not Path(ca_file).is_file():
        raise UsageError(f"--ca-file {ca_file}: no such file")
    try:
        timeout = number(0, above=True)(values.get("timeout") or defaults.timeout)
    except OptionError as exc:
        raise UsageError(f"--timeout: {exc}") from None
    queries_file = values.get("reference_queries")
    return VerifyOptions(
        target=target,
        site=str(values.get("site") or ""),
        ca_file=Path(ca_file) if ca_file is not None else None,
        insecure=insecure,
        timeout=timeout,
        accounts=logins.for_checks(),
        reference_queries=load_reference_queries(queries_file) if queries_file else (),
        flavour=str(values.get("flavour") or defaults.flavour),
        parts=parts,
        debug=bool(values.get("debug")),
    )


def _read_toml(path: Path, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the {what} file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None


def load_reference_queries(path: Path) -> tuple[ReferenceQuery, ...]:
    """``[[query]]`` tables with ``query`` and ``count`` (and an optional ``name``)."""
    entries = _read_toml(path, "reference queries").get("query")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"{path}: expected one or more [[query]] tables (name, query, count)")
    queries = []
    for index, entry in enumerate(entries, 1):
        try:
            query, expected = str(entry["query"]), int(entry["count"])
        except (KeyError, TypeError, ValueError):
            raise UsageError(f"{path}: [[query]] number {index} needs query and count") from None
        queries.append(ReferenceQuery(str(entry.get("name", f"q{index}")), query, expected))
    return tuple(queries)
