"""What an ICAT login needs: an authenticator's mnemonic, a user name and a password.

ICAT's ``login(plugin, credentials)`` takes the mnemonic and a map of the authenticator's keys;
the authenticators of ICAT's own family (simple, db, ldap) ask for ``username`` and
``password``, and the user name ICAT then reports is ``mnemonic/username``. The client, the
service checks and the local catalogue all use this one value (the last two add a role, or
root rights); the password never shows in a repr.

Every command logs in with one scheme (resolved by :func:`igestbench.config.load_logins`, the
one reader of the environment): a **default account** (``SV7_AUTH``/``SV7_USER``/
``SV7_PASSWORD``, the ``[credentials]`` table of sv7.toml, or a prompt) and, on top, **role
accounts** (``--account ROLE=MECH/NAME`` with ``SV7_PASSWORD_<ROLE>``, or a ``[credentials.ROLE]``
table). Each value remembers where its password came from (``source``), so that a refused login
names the variable or file to fix rather than guessing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

READ_ROLE, WRITE_ROLE = "reader", "writer"
#: The variables of the default account, and of the password of a role account.
AUTH_VARIABLE, USER_VARIABLE, PASSWORD_VARIABLE = "SV7_AUTH", "SV7_USER", "SV7_PASSWORD"
ROLE_PASSWORD_VARIABLE = "SV7_PASSWORD_{role}"

_ROLE = re.compile(r"^[a-z][a-z0-9_]*$")
_ACCOUNT = re.compile(r"^(?P<mech>[A-Za-z0-9_.-]+)/(?P<name>[^/:\s]+)$")


@dataclass(frozen=True)
class Credentials:
    authenticator: str
    username: str
    password: str = field(repr=False)
    #: Where the password came from ("SV7_PASSWORD", "sv7.toml [credentials]", "the prompt" …):
    #: what a hint names when the catalogue refuses the login. Never the password itself.
    source: str = field(default="", compare=False, kw_only=True)

    def as_login(self) -> dict[str, str]:
        """The ``credentials`` map of ICAT's login call."""
        return {"username": self.username, "password": self.password}

    @property
    def user_name(self) -> str:
        """The user name ICAT reports for this login: ``mnemonic/username``."""
        return f"{self.authenticator}/{self.username}"

    def refused_hint(self) -> str:
        """What to check when the catalogue refuses this login."""
        where = f" (the password came from {self.source})" if self.source else ""
        return f"check the authenticator, user name and password of {self.user_name}{where}"


@dataclass(frozen=True)
class RoleAccount(Credentials):
    """A login the service checks use, and the role it plays (``reader``, ``writer``, …)."""

    role: str = field(kw_only=True)

    @classmethod
    def of(cls, role: str, credentials: Credentials) -> RoleAccount:
        return cls(
            credentials.authenticator,
            credentials.username,
            credentials.password,
            role=role,
            source=credentials.source,
        )


@dataclass(frozen=True)
class Logins:
    """The default account (None: none given) and the role accounts on top of it."""

    default: Credentials | None = None
    roles: tuple[RoleAccount, ...] = ()

    def for_checks(self) -> tuple[RoleAccount, ...]:
        """The accounts of the service checks: the roles, and the default account as the
        writer unless a writer was named (as ``sv7 run`` writes with its own account)."""
        accounts = list(self.roles)
        if self.default is not None and not any(a.role == WRITE_ROLE for a in accounts):
            accounts.append(RoleAccount.of(WRITE_ROLE, self.default))
        return tuple(accounts)


def split_account(role: str, spec: str) -> tuple[str, str] | None:
    """``(mechanism, name)`` of ``MECH/NAME`` for a well-formed lower-case role, else None."""
    match = _ACCOUNT.match(spec.strip())
    if not _ROLE.match(role) or not match:
        return None
    return match["mech"], match["name"]


def role_password_variable(role: str) -> str:
    return ROLE_PASSWORD_VARIABLE.format(role=role.upper())
