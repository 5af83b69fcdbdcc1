"""Where each command's accounts come from: one way to give credentials, for every command.

The default account from the environment (``SV7_AUTH``, ``SV7_USER``, ``SV7_PASSWORD``), the
``[credentials]`` table of sv7.toml (or a ``--credentials`` file) or a prompt; role accounts on
top (``--account ROLE=MECH/NAME`` + ``SV7_PASSWORD_<ROLE>``, or ``[credentials.ROLE]``). Never
from the command line: passwords live only in memory, and their ``repr`` hides them.
:func:`igestbench.config.load_run_config` resolves them for ``sv7 run`` and ``sv7 cleanup``,
:func:`load_logins` for ``sv7 check`` and ``pytest sv_tests``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from igestbench.config_file import ConfigFile, read_config_file, read_toml
from igestbench.errors import UsageError
from igestbench.icat.credentials import (
    AUTH_VARIABLE,
    PASSWORD_VARIABLE,
    USER_VARIABLE,
    Credentials,
    Logins,
    RoleAccount,
    role_password_variable,
    split_account,
)


def load_logins(
    accounts: Sequence[str] = (),
    credentials_file: Path | None = None,
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    prompt: Callable[[str], str] | None = None,
) -> Logins:
    """The default and role accounts of ``sv7 check`` and the service checks (``pytest
    sv_tests``): the same sources as ``sv7 run``, none of them required."""
    env = os.environ if environ is None else environ
    file = read_config_file(config_file)
    return resolve_logins(file, accounts, credentials_file, env, prompt, "optional", None)


def resolve_logins(
    file: ConfigFile,
    specs: Sequence[str],
    credentials_file: Path | None,
    environ: Mapping[str, str],
    prompt: Callable[[str], str] | None,
    need: str,
    target: str | None,
) -> Logins:
    """Resolve both kinds of account. Tables are searched in order: the ``--credentials``
    file (a [credentials] table on its own), then sv7.toml's [credentials]."""
    # (where, table): a role's table is then "where [role]" (sv7.toml: [credentials.role])
    tables: list[tuple[str, Mapping[str, Any]]] = []
    if credentials_file is not None:
        tables.append((str(credentials_file), read_toml(credentials_file, "credentials file")))
    if file.path is not None:
        tables.append((f"{file.path} [credentials]", file.credentials))
    for where, table in tables:
        unknown = [k for k, v in table.items()
                   if not isinstance(v, dict) and k not in ("auth", "username", "password")]
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {', '.join(unknown)}: expected auth, "
                             "username, password and [ROLE] tables (account, password)")
    default = _default_account(tables, environ, prompt, need, target)
    return Logins(default, _role_accounts(tables, specs, environ))


def _default_account(
    tables: list[tuple[str, Mapping[str, Any]]],
    environ: Mapping[str, str],
    prompt: Callable[[str], str] | None,
    need: str,
    target: str | None,
) -> Credentials | None:
    """``need``: "required" (a run against a target), "optional" (sv7 check, sv_tests: an
    account given must be complete) or "local" (a run on the built-in catalogue: a complete
    account is used, anything less leaves the catalogue's own ingest account)."""

    def first(variable: str, key: str) -> str | None:
        found = environ.get(variable) or next((str(t[key]) for _, t in tables if key in t), None)
        return found or None

    auth, user = first(AUTH_VARIABLE, "auth"), first(USER_VARIABLE, "username")
    password, source = environ.get(PASSWORD_VARIABLE) or None, PASSWORD_VARIABLE
    if password is None:
        # a file's password belongs to that file's user: never pair it with another user's name
        for where, table in tables:
            if "password" in table and str(table.get("username", user)) == user:
                password, source = str(table["password"]), where
                break
    if need == "local" and not (auth and user and password):
        return None
    if need == "optional" and not (auth or user or password):
        return None
    if not (auth and user):
        missing = " and ".join(v for v, value in ((AUTH_VARIABLE, auth), (USER_VARIABLE, user))
                               if not value)
        what = "credentials needed for --target" if need == "required" else "no default account"
        raise UsageError(
            f"{what}: set {missing} (and {PASSWORD_VARIABLE}), or auth, username and password "
            "in the [credentials] table of sv7.toml"
        )
    if not password:
        if prompt is None:
            raise UsageError(
                f"no password for {auth}/{user}: set {PASSWORD_VARIABLE}, or password in the "
                "[credentials] table of sv7.toml (only a terminal is asked)"
            )
        password = prompt(f"password for {auth}/{user} at {target or 'the target'}: ")
        source = "the prompt"
    return Credentials(auth, user, password, source=source)


def _role_accounts(
    tables: list[tuple[str, Mapping[str, Any]]],
    specs: Sequence[str],
    environ: Mapping[str, str],
) -> tuple[RoleAccount, ...]:
    named: dict[str, tuple[str, str]] = {}
    for where, table in reversed(tables):  # the first table wins
        for role, entry in table.items():
            if isinstance(entry, dict) and "account" in entry:
                named[role] = _split(role, str(entry["account"]), _role_table(where, role))
    for spec in specs:
        role, _, account = spec.partition("=")
        named[role] = _split(role, account, f"--account {spec}")
    accounts = []
    for role, (mechanism, name) in named.items():
        variable = role_password_variable(role)
        password, source = environ.get(variable), variable
        if password is None:
            password, source = next(
                ((str(t[role]["password"]), _role_table(w, role)) for w, t in tables
                 if isinstance(t.get(role), dict) and "password" in t[role]),
                (None, ""),
            )
        if password is None:
            raise UsageError(
                f"no password for the {role} account {mechanism}/{name}: set {variable} "
                "or give it in the --credentials file or sv7.toml [credentials.ROLE]"
            )
        accounts.append(RoleAccount(mechanism, name, password, role=role, source=source))
    return tuple(accounts)


def _role_table(where: str, role: str) -> str:
    """``creds.toml [reader]``, or ``sv7.toml [credentials.reader]``."""
    return where[:-1] + f".{role}]" if where.endswith("[credentials]") else f"{where} [{role}]"


def _split(role: str, spec: str, source: str) -> tuple[str, str]:
    found = split_account(role, spec)
    if found is None:
        raise UsageError(
            f"{source}: expected ROLE=MECHANISM/NAME with a lower-case role, "
            "e.g. reader=simple/reader (the password never goes on the command line)"
        )
    return found


__all__ = ["load_logins", "resolve_logins"]
