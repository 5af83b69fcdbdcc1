"""Authenticators, accounts and sessions of the local catalogue.

As in ICAT, ``login(plugin, credentials)`` asks the authenticator named by the mnemonic
(``simple``, ``db``, …) and the user name becomes ``mechanism/name``; a session is a random UUID
with a lifetime that ``refresh`` renews. Messages are those ICAT and authn.simple send.
"""

from __future__ import annotations

import hmac
import re
import threading
import time
import tomllib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from igestbench.errors import UsageError
from igestbench.icat.credentials import Credentials
from igestbench.icat.faults import IcatSession


@dataclass(frozen=True)
class Account(Credentials):
    """Credentials the local catalogue accepts, and whether their user is a root user."""

    root: bool = False


#: Accounts of a catalogue started without any: two root users (one to administer, one for
#: ingestion, as facilities run them) and an ordinary reader.
DEFAULT_ACCOUNTS = (
    Account("simple", "root", "root", root=True),
    Account("simple", "ingest", "ingest", root=True),
    Account("simple", "reader", "reader"),
)

_SPEC = re.compile(r"^(?P<mech>[A-Za-z0-9_.-]+)/(?P<name>[^:/\s]+):(?P<pw>[^:]*)(?P<root>:root)?$")


def parse_friendly(spec: str) -> tuple[str, str]:
    """``MECH=NAME`` → (mechanism, friendly name); UsageError naming the expected form otherwise."""
    mechanism, sep, name = spec.partition("=")
    if not sep or not re.fullmatch(r"[A-Za-z0-9_.-]+", mechanism):
        raise UsageError(
            f"bad --friendly {spec!r}: expected MECHANISM=NAME, e.g. ldap='Federal Id'"
        )
    return mechanism, name.strip()


def parse_account(spec: str) -> Account:
    """``MECH/NAME:PASSWORD[:root]`` → Account; UsageError naming the expected form otherwise."""
    m = _SPEC.match(spec)
    if not m:
        raise UsageError(
            f"bad --user {spec.split(':', 1)[0]!r}…: expected MECHANISM/NAME:PASSWORD[:root], "
            "e.g. simple/alice:secret or db/admin:pw:root"
        )
    return Account(m["mech"], m["name"], m["pw"], root=bool(m["root"]))


def load_accounts(path: Path) -> list[Account]:
    """Accounts from a TOML file of ``[[user]]`` tables (mechanism, name, password, root)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the users file ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    users = data.get("user")
    if not isinstance(users, list) or not users:
        raise UsageError(f"{path}: expected one or more [[user]] tables")
    accounts = []
    for i, entry in enumerate(users, 1):
        try:
            accounts.append(
                Account(
                    authenticator=str(entry.get("mechanism", "simple")),
                    username=str(entry["name"]),
                    password=str(entry["password"]),
                    root=bool(entry.get("root", False)),
                )
            )
        except (KeyError, AttributeError):
            raise UsageError(f"{path}: [[user]] number {i} needs name and password") from None
    return accounts


#: Friendly names getAuthenticatorInfo gives, by mechanism, when none are configured (``sv7
#: serve --friendly``). ICAT takes them from ``authn.<mnemonic>.friendly`` and sends none for a
#: mechanism without one, as a real ICAT 6.2.0 deployed without it does (issue 20): none.
DEFAULT_FRIENDLY_NAMES: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class AuthenticatorInfo:
    mnemonic: str
    #: None: not configured (getAuthenticatorInfo then has no ``friendly`` element).
    friendly: str | None
    admin: bool = False
    #: (credential key, hidden) in the order a login form asks for them.
    keys: tuple[tuple[str, bool], ...] = (("username", False), ("password", True))


class Authenticators:
    """The login plugins of a catalogue: one per mechanism among its accounts."""

    def __init__(
        self,
        accounts: Iterable[Account],
        friendly_names: Iterable[tuple[str, str]] = DEFAULT_FRIENDLY_NAMES,
    ) -> None:
        self.accounts: dict[tuple[str, str], Account] = {}
        order: list[str] = []
        for a in accounts:
            self.accounts[(a.authenticator, a.username)] = a
            if a.authenticator not in order:
                order.append(a.authenticator)
        friendly = {m: name for m, name in friendly_names if name}
        self.info = tuple(AuthenticatorInfo(m, friendly.get(m)) for m in order)

    @property
    def root_users(self) -> frozenset[str]:
        return frozenset(self.root_user_names)

    @property
    def root_user_names(self) -> tuple[str, ...]:
        """The root users in the order of the accounts (ICAT's ``rootUserNames``)."""
        return tuple(dict.fromkeys(a.user_name for a in self.accounts.values() if a.root))

    def authenticate(self, plugin: str, credentials: Mapping[str, str]) -> str:
        """The ICAT user name for these credentials, or IcatSession with ICAT's message."""
        if plugin not in {i.mnemonic for i in self.info}:
            raise IcatSession(f"Authenticator mnemonic {plugin} not recognised")
        name = credentials.get("username") or ""
        password = credentials.get("password") or ""
        if not name:
            raise IcatSession("Username cannot be null or empty.")
        if not password:
            raise IcatSession("Password cannot be null or empty.")
        account = self.accounts.get((plugin, name))
        # compare in constant time even when the account does not exist
        expected = account.password if account else "\0" + password
        if not hmac.compare_digest(expected.encode(), password.encode()) or account is None:
            raise IcatSession("The username and password do not match ")
        return account.user_name


@dataclass
class Session:
    user: str
    expires: float  # time.monotonic() deadline


class Sessions:
    """Live sessions; ids are random UUIDs, expiry is checked on every use."""

    def __init__(self, lifetime_minutes: float) -> None:
        self.lifetime_s = lifetime_minutes * 60.0
        self._now = time.monotonic
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open(self, user: str) -> str:
        sid = str(uuid.uuid4())
        with self._lock:
            self._sessions[sid] = Session(user, self._now() + self.lifetime_s)
        return sid

    def user(self, sid: str | None) -> str:
        return self._get(sid).user

    def _get(self, sid: str | None) -> Session:
        if not sid:
            raise IcatSession("Session Id cannot be null or empty.")
        session = self._sessions.get(sid)
        if session is None:
            raise IcatSession(f"Unable to find user by sessionid: {sid}")
        if session.expires <= self._now():
            with self._lock:
                self._sessions.pop(sid, None)
            raise IcatSession(f"Session id:{sid} has expired")
        return session

    def remaining_minutes(self, sid: str | None) -> float:
        return max(0.0, (self._get(sid).expires - self._now()) / 60.0)

    def refresh(self, sid: str | None) -> None:
        self._get(sid).expires = self._now() + self.lifetime_s

    def close(self, sid: str | None) -> None:
        self._get(sid)
        with self._lock:
            self._sessions.pop(sid or "", None)

    def is_logged_in(self, user: str) -> bool:
        """Whether ``user`` has a session that has not expired (REST ``/icat/user/...``)."""
        now = self._now()
        with self._lock:
            return any(s.user == user and s.expires > now for s in self._sessions.values())

    def __len__(self) -> int:
        return len(self._sessions)
