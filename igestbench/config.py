"""Typed configuration objects (frozen dataclasses) and the one place that reads ``os.environ``.

Precedence everywhere: command line > ``SV7_*`` environment > configuration file > defaults.
Secrets (passwords) live only in these objects in memory; their reprs hide them.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

from igestbench.errors import UsageError
from igestbench.icat.schema import PROFILE_NAMES
from igestbench.mock.auth import DEFAULT_ACCOUNTS, Account

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class FaultKnobs:
    """Ways the local catalogue can misbehave on purpose, to test the suite itself."""

    #: Added to every SOAP answer.
    latency_ms: float = 0.0
    #: Every Nth SOAP request stalls for ``stall_seconds`` before it is answered (0: never).
    stall_every: int = 0
    stall_seconds: float = 0.0
    #: Fraction of SOAP requests answered with an INTERNAL fault.
    error_rate: float = 0.0
    #: Fraction of SOAP requests whose connection is closed without an answer.
    drop_rate: float = 0.0
    #: Seed of the random draws, so a misbehaving run can be repeated exactly.
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("error_rate", "drop_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise UsageError(f"{name.replace('_', '-')} must be between 0 and 1, not {value}")
        for name in ("latency_ms", "stall_seconds", "stall_every"):
            if getattr(self, name) < 0:
                raise UsageError(f"{name.replace('_', '-')} must not be negative")

    @property
    def active(self) -> bool:
        return any((self.latency_ms, self.stall_every, self.error_rate, self.drop_rate))


@dataclass(frozen=True)
class ServeConfig:
    """Everything the local catalogue needs to start."""

    host: str = "127.0.0.1"
    port: int = 0
    db: str = ":memory:"
    profile: str = "6.2"
    accounts: tuple[Account, ...] = DEFAULT_ACCOUNTS
    #: None (plain HTTP), a mode of igestbench.mock.tls.TLS_MODES, or "CERT,KEY".
    tls: str | None = None
    lifetime_minutes: float = 120.0
    max_entities: int = 10_000
    max_body_bytes: int = 64 * 1024 * 1024
    idle_timeout_s: float = 60.0
    #: On a new database, create the access rules described in the README.
    seed_rules: bool = True
    knobs: FaultKnobs = field(default_factory=FaultKnobs)

    def __post_init__(self) -> None:
        if not is_loopback(self.host):
            raise UsageError(
                f"--host {self.host}: the local catalogue binds to loopback only "
                f"({', '.join(LOOPBACK_HOSTS)})"
            )
        if not 0 <= self.port <= 65535:
            raise UsageError(f"--port {self.port}: a port is a number from 0 to 65535")
        if self.profile not in PROFILE_NAMES:
            raise UsageError(f"--profile {self.profile}: choose one of {', '.join(PROFILE_NAMES)}")
        if not self.accounts:
            raise UsageError("the local catalogue needs at least one account")
        if self.lifetime_minutes <= 0 or self.max_entities <= 0 or self.max_body_bytes <= 0:
            raise UsageError("session lifetime, max entities and max body size must be positive")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
