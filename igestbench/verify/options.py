"""The verification options, defined once and registered for both argparse and pytest.

``sv7 check``, ``sv7 run`` and ``pytest sv_tests`` accept the same options with the same names,
because each is declared once in :data:`OPTIONS` (pytest-benchmark's habit). Whatever parsed
them, :func:`options_from` turns the values into one frozen :class:`VerifyOptions`.

Passwords never appear on a command line: ``--account ROLE=MECH/NAME`` names an account, its
password comes from the environment (``SV7_PASSWORD_<ROLE>``, e.g. ``SV7_PASSWORD_READER``) or
from a TOML file given with ``--credentials``::

    [reader]
    account = "simple/reader"      # may stand in for --account reader=simple/reader
    password = "…"

The roles the suite knows: ``reader`` reads (and proves it cannot write), ``writer`` creates and
deletes a tagged hierarchy; any other role is only logged in and out.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from igestbench.errors import UsageError
from igestbench.icat.credentials import Credentials

PARTS = ("connectivity", "tls", "soap", "session", "read", "write", "cleanup")
READ_ROLE, WRITE_ROLE = "reader", "writer"
PASSWORD_VARIABLE = "SV7_PASSWORD_{role}"
_ROLE = re.compile(r"^[a-z][a-z0-9_]*$")
_ACCOUNT = re.compile(r"^(?P<mech>[A-Za-z0-9_.-]+)/(?P<name>[^/:\s]+)$")


@dataclass(frozen=True)
class Account(Credentials):
    """A login the suite may use, and the role it plays (``reader``, ``writer``)."""

    role: str

    @classmethod
    def of(cls, role: str, credentials: Credentials) -> Account:
        return cls(credentials.authenticator, credentials.username, credentials.password,
                   role=role)


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
    debug: bool = False

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
        {"action": "store_true", "help": "do not verify certificates (TLS checks still report)"},
    ),
    Option(
        ("--timeout",),
        {"type": float, "default": 10.0, "metavar": "S", "help": "network timeout (default 10)"},
    ),
    Option(
        ("--account",),
        {
            "action": "append",
            "default": [],
            "metavar": "ROLE=MECH/NAME",
            "help": "an account (repeatable; roles reader, writer, …); password from "
            "SV7_PASSWORD_<ROLE> or --credentials",
        },
    ),
    Option(
        ("--credentials",),
        {"type": Path, "metavar": "FILE", "help": "TOML file: [ROLE] account=…, password=…"},
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
        elif option.pytest_flags or (for_check and not option.for_check):
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


def options_from(values: Mapping[str, Any], environ: Mapping[str, str]) -> VerifyOptions:
    """VerifyOptions from parsed values (by dest; missing ones take their defaults).

    ``environ`` holds the ``SV7_PASSWORD_<ROLE>`` variables; the caller passes it in, so that
    this module never reads the process environment itself.
    """
    defaults = VerifyOptions()
    target = values.get("target") or None
    parts = tuple(p.strip() for p in str(values.get("verify_parts") or "").split(",") if p.strip())
    unknown = sorted(set(parts) - set(PARTS))
    if unknown:
        raise UsageError(
            f"--verify-parts: unknown {', '.join(unknown)}; choose from {', '.join(PARTS)}"
        )
    ca_file, insecure = values.get("ca_file"), bool(values.get("insecure"))
    if ca_file is not None and insecure:
        raise UsageError("--insecure and --ca-file contradict each other: choose one")
    if ca_file is not None and not Path(ca_file).is_file():
        raise UsageError(f"--ca-file {ca_file}: no such file")
    timeout = float(values.get("timeout") or defaults.timeout)
    if timeout <= 0:
        raise UsageError(f"--timeout {timeout}: must be positive")
    queries_file = values.get("reference_queries")
    return VerifyOptions(
        target=target,
        site=str(values.get("site") or ""),
        ca_file=Path(ca_file) if ca_file is not None else None,
        insecure=insecure,
        timeout=timeout,
        accounts=resolve_accounts(values.get("account") or [], values.get("credentials"), environ),
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


def _split_account(role: str, spec: str, source: str) -> tuple[str, str]:
    match = _ACCOUNT.match(spec.strip())
    if not _ROLE.match(role) or not match:
        raise UsageError(
            f"{source}: expected ROLE=MECHANISM/NAME with a lower-case role, "
            "e.g. reader=simple/reader (the password never goes on the command line)"
        )
    return match["mech"], match["name"]


def resolve_accounts(
    specs: Sequence[str], credentials_file: Path | None, environ: Mapping[str, str]
) -> tuple[Account, ...]:
    """Accounts from ``--account`` specs and the credentials file; each must get a password."""
    table = _read_toml(credentials_file, "credentials") if credentials_file else {}
    named: dict[str, tuple[str, str]] = {}
    for role, entry in table.items():
        if not isinstance(entry, dict):
            raise UsageError(f"{credentials_file}: [{role}] must be a table (account, password)")
        if "account" in entry:
            named[role] = _split_account(
                role, str(entry["account"]), f"{credentials_file} [{role}]"
            )
    for spec in specs:
        role, _, account = spec.partition("=")
        named[role] = _split_account(role, account, f"--account {spec}")
    accounts = []
    for role, (mechanism, name) in named.items():
        variable = PASSWORD_VARIABLE.format(role=role.upper())
        password = environ.get(variable)
        if password is None:
            password = table.get(role, {}).get("password")
        if password is None:
            raise UsageError(
                f"no password for the {role} account {mechanism}/{name}: set {variable} "
                "or give it in the --credentials file"
            )
        accounts.append(Account(mechanism, name, str(password), role=role))
    return tuple(accounts)


def load_reference_queries(path: Path) -> tuple[ReferenceQuery, ...]:
    """``[[query]]`` tables with ``query`` and ``count`` (and an optional ``name``)."""
    entries = _read_toml(path, "reference queries").get("query")
    if not isinstance(entries, list) or not entries:
        raise UsageError(f"{path}: expected one or more [[query]] tables (name, query, count)")
    queries = []
    for number, entry in enumerate(entries, 1):
        try:
            query, expected = str(entry["query"]), int(entry["count"])
        except (KeyError, TypeError, ValueError):
            raise UsageError(f"{path}: [[query]] number {number} needs query and count") from None
        queries.append(ReferenceQuery(str(entry.get("name", f"q{number}")), query, expected))
    return tuple(queries)
