"""Typed configuration objects (frozen dataclasses) and the one place that reads ``os.environ``.

``ServeConfig`` starts the local catalogue; ``RunConfig`` is everything one ``sv7 run`` needs.
Precedence everywhere: command line > ``SV7_*`` environment > ``sv7.toml`` > defaults.
Credentials come from the configuration file, the environment (``SV7_AUTH``, ``SV7_USER``,
``SV7_PASSWORD``) or a prompt — never from the command line — and live only in memory: their
``repr`` hides the password and :meth:`RunConfig.public` leaves them out of result files.
"""

from __future__ import annotations

import datetime as dt
import getpass
import ipaddress
import os
import tomllib
import zoneinfo
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from igestbench.errors import UsageError
from igestbench.icat.credentials import Credentials
from igestbench.icat.schema import PROFILE_NAMES
from igestbench.mock.auth import DEFAULT_ACCOUNTS, DEFAULT_FRIENDLY_NAMES, Account

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
    #: On a new database, add example data and the rules that let every logged-in user read
    #: (igestbench.mock.seed); without it a new database has no rules, as a fresh ICAT.
    example_data: bool = False
    #: (mechanism, name) pairs getAuthenticatorInfo gives as ``friendly`` (ICAT's
    #: ``authn.<mnemonic>.friendly``); a mechanism without one has none.
    friendly_names: tuple[tuple[str, str], ...] = DEFAULT_FRIENDLY_NAMES
    #: The server's time zone (IANA name): ICAT reads dates without a zone in its JVM's zone
    #: and answers in it, so reference data made on a CET server reads back the same.
    timezone: str = "UTC"
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
        self.zone  # noqa: B018 - validates the name now, before anything starts

    @property
    def zone(self) -> dt.tzinfo:
        """The time zone named by ``timezone``."""
        if self.timezone.upper() == "UTC":
            return dt.UTC
        try:
            return zoneinfo.ZoneInfo(self.timezone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise UsageError(
                f"--timezone {self.timezone}: not a known time zone "
                "(an IANA name such as UTC, Europe/Berlin or CET)"
            ) from None


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# --- sv7 run ----------------------------------------------------------------------------

PARTS = ("verify", "full-cycle", "single-query", "burst", "multi-query", "sweep")
FLAVOUR_NAMES = ("zeep", "python-icat", "lean")


@dataclass(frozen=True)
class RunConfig:
    """The effective options of one run (frozen; built by :func:`load_run_config`)."""

    target: str | None = None
    site: str = "local"
    flavours: tuple[str, ...] = ("zeep", "python-icat")
    parts: tuple[str, ...] = PARTS
    concurrency: tuple[int, ...] = (1, 2)
    #: NeXus files each worker ingests in the full cycle.
    cycles: int = 10
    #: Datafiles of the burst and multi-result workloads (per worker).
    files: int = 200
    queries: int = 200
    batch_size: int = 100
    page_size: int = 100
    payload_bytes: int = 0
    #: Highest demanded rate of the load sweep (requests/s) and seconds per step.
    max_rate: float = 200.0
    duration: float = 3.0
    slo_ms: float = 50.0
    repeat: int = 1
    warmup: float = 0.5
    calls_per_connection: int = 0
    mix: Mapping[str, int] = field(default_factory=lambda: {"search": 1})
    fail_on: tuple[str, ...] = ()
    #: Seconds to wait for a target that stops answering mid-run before giving up on it.
    outage_wait: float = 120.0
    out: Path = Path("reports")
    gzip: bool = False
    ca_file: Path | None = None
    insecure: bool = False
    timeout: float = 30.0
    #: None: ask at the prompt (or the local catalogue's ingest account without a target).
    credentials: Credentials | None = field(default=None, repr=False)
    #: The service checks' own options (a igestbench.verify.VerifyOptions; accounts, queries).
    verify: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        bad = [p for p in self.parts if p not in PARTS]
        if bad:
            raise UsageError(f"--parts: unknown {', '.join(bad)}; choose from {', '.join(PARTS)}")
        bad = [f for f in self.flavours if f not in FLAVOUR_NAMES]
        if bad:
            raise UsageError(
                f"--flavour: unknown {', '.join(bad)}; choose from {', '.join(FLAVOUR_NAMES)}"
            )
        if not self.concurrency or any(c < 1 or c > 256 for c in self.concurrency):
            raise UsageError("--concurrency: levels are whole numbers from 1 to 256")
        for name in ("cycles", "files", "queries", "batch_size", "page_size", "repeat"):
            if getattr(self, name) < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
        if self.max_rate <= 0 or self.duration <= 0 or self.slo_ms <= 0 or self.timeout <= 0:
            raise UsageError("--max-rate, --duration, --slo-ms and --timeout must be positive")
        if self.outage_wait < 0:
            raise UsageError("--outage-wait must not be negative")
        if self.insecure and self.ca_file is not None:
            raise UsageError("--insecure and --ca-file contradict each other: choose one")
        if not self.site.strip():
            raise UsageError("--site must not be empty")

    def public(self) -> dict[str, Any]:
        """The options as a result file records them: no credentials, paths as text."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("credentials", "verify"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, Path):
                value = str(value)
            elif isinstance(value, tuple):
                value = list(value)
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        if self.credentials is not None:
            out["user"] = self.credentials.user_name  # who ran it is fine; the password is not
        return out


# --- sources ------------------------------------------------------------------------------

_LISTS = {"flavours", "parts", "concurrency", "fail_on"}


def _convert(name: str, value: Any, source: str) -> Any:
    """A value from a file or the environment, as the RunConfig field ``name`` wants it."""
    try:
        if name in _LISTS:
            items = value.split(",") if isinstance(value, str) else list(value)
            items = [str(i).strip() for i in items if str(i).strip()]
            return tuple(int(i) for i in items) if name == "concurrency" else tuple(items)
        if name == "mix":
            return (
                parse_mix(value)
                if isinstance(value, str)
                else {str(k): int(v) for k, v in value.items()}
            )
        default = getattr(RunConfig(), name)
        if isinstance(default, bool):
            if isinstance(value, bool):
                return value
            return str(value).strip().lower() in ("1", "true", "yes", "on")
        if isinstance(default, int):
            return int(value)
        if isinstance(default, float):
            return float(value)
        if name in ("out", "ca_file"):
            return Path(str(value)).expanduser()
        return str(value)
    except (TypeError, ValueError):
        raise UsageError(f"{source}: {name} = {value!r} is not a valid value") from None


def parse_mix(text: str) -> dict[str, int]:
    """``search=21,get=8,create=1`` → {"search": 21, "get": 8, "create": 1}."""
    mix: dict[str, int] = {}
    for part in text.split(","):
        name, _, weight = part.partition("=")
        try:
            mix[name.strip()] = int(weight) if weight else 1
        except ValueError:
            raise UsageError(f"--mix: {part!r} is not NAME=WEIGHT") from None
    if not mix or any(w < 0 for w in mix.values()) or not any(mix.values()):
        raise UsageError("--mix needs at least one operation with a positive weight")
    return mix


def _from_file(path: Path | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The [run] options and [credentials] table of an sv7.toml (if there is one)."""
    if path is None:
        default = Path("sv7.toml")
        if not default.is_file():
            return {}, {}
        path = default
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the configuration ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    run = data.get("run", {})
    known = {f.name for f in fields(RunConfig)} - {"credentials", "verify"}
    unknown = sorted(set(run) - known)
    if unknown:
        raise UsageError(f"{path}: unknown option(s) in [run]: {', '.join(unknown)}")
    options = {k.replace("-", "_"): _convert(k, v, str(path)) for k, v in run.items()}
    credentials = {str(k): str(v) for k, v in data.get("credentials", {}).items()}
    return options, credentials


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for f in fields(RunConfig):
        key = "SV7_" + f.name.upper()
        if f.name not in ("credentials", "verify") and key in environ:
            options[f.name] = _convert(f.name, environ[key], f"environment {key}")
    return options


def load_run_config(
    cli: Mapping[str, Any],
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    prompt: Callable[[str], str] | None = None,
) -> RunConfig:
    """Merge the sources; ask for a password only if a target needs one and none was given."""
    env = os.environ if environ is None else environ
    file_options, file_credentials = _from_file(config_file)
    merged: dict[str, Any] = {**file_options, **_from_environment(env)}
    merged.update({k: v for k, v in cli.items() if v is not None})
    config = RunConfig(**merged)
    auth = env.get("SV7_AUTH") or file_credentials.get("auth")
    user = env.get("SV7_USER") or file_credentials.get("username")
    password = env.get("SV7_PASSWORD") or file_credentials.get("password")
    if config.target is None and not (user and password):
        return config  # the local catalogue: its own ingest account is used
    if not (auth and user):
        raise UsageError(
            "credentials needed for --target: set SV7_AUTH and SV7_USER (and SV7_PASSWORD), "
            "or [credentials] auth/username/password in sv7.toml"
        )
    if not password:
        ask = prompt or getpass.getpass
        password = ask(f"password for {auth}/{user} at {config.target}: ")
    return RunConfig(**{**asdict_shallow(config), "credentials": Credentials(auth, user, password)})


def asdict_shallow(config: RunConfig) -> dict[str, Any]:
    """Field values without deep copies (asdict would recurse into the credentials)."""
    return {f.name: getattr(config, f.name) for f in fields(config)}


# --- sv7 merge: campaign.toml ---------------------------------------------------------------


@dataclass(frozen=True)
class CampaignSite:
    name: str
    country: str = ""


@dataclass(frozen=True)
class CampaignTarget:
    """A catalogue of the campaign: its display name, its URL and the site that runs it."""

    name: str
    url: str
    operator: str | None = None


@dataclass(frozen=True)
class CampaignConfig:
    """What a campaign expected (``campaign.toml``): coverage and participation count against it.

    ::

        [campaign]
        name = "sv7-2026-11"
        title = "SV7 service verification, November 2026"   # optional
        parts = ["verify", "full-cycle"]                      # optional, default: all parts

        [[site]]
        name = "ELETTRA"
        country = "IT"

        [[target]]
        name = "ESRF ICAT"
        url = "https://icat.esrf.fr/ICATService/ICAT"
        operator = "ESRF"                                     # optional, one of the sites
    """

    name: str
    sites: tuple[CampaignSite, ...]
    targets: tuple[CampaignTarget, ...]
    parts: tuple[str, ...] = PARTS
    title: str = ""

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise UsageError("campaign: the name must not be empty")
        for kind, names in (("site", [s.name for s in self.sites]),
                            ("target", [t.name for t in self.targets])):
            # sites match result files case-insensitively, so names may not differ by case only
            folded = [n.casefold() for n in names]
            twice = sorted({n for n in names if folded.count(n.casefold()) > 1})
            if twice:
                raise UsageError(f"campaign: {kind} {', '.join(twice)} listed more than once")
        bad = [p for p in self.parts if p not in PARTS]
        if bad:
            raise UsageError(f"campaign: unknown part(s) {', '.join(bad)}; "
                             f"choose from {', '.join(PARTS)}")
        known = {s.name for s in self.sites}
        for target in self.targets:
            if target.operator is not None and target.operator not in known:
                raise UsageError(f"campaign: target {target.name}: operator {target.operator} "
                                 "is not one of the [[site]] names")


def _table_list(data: Mapping[str, Any], key: str, path: Path) -> list[Mapping[str, Any]]:
    items = data.get(key, [])
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise UsageError(f"{path}: [[{key}]] must be an array of tables")
    return items


def _text(table: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = table.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise UsageError(f"{where}: {key} must be a non-empty string")
    return value


def load_campaign_config(path: Path) -> CampaignConfig:
    """The campaign that ``path`` (a campaign.toml) describes; UsageError naming what is wrong."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the campaign ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    head = data.get("campaign", {})
    if not isinstance(head, dict):
        raise UsageError(f"{path}: [campaign] must be a table")
    parts = head.get("parts", list(PARTS))
    if not isinstance(parts, list) or not all(isinstance(p, str) for p in parts):
        raise UsageError(f"{path}: [campaign] parts must be a list of part names")
    sites = tuple(
        CampaignSite(_text(t, "name", f"{path} [[site]] {i + 1}"),
                     _text(t, "country", f"{path} [[site]] {i + 1}", required=False))
        for i, t in enumerate(_table_list(data, "site", path))
    )
    targets = []
    for i, table in enumerate(_table_list(data, "target", path)):
        where = f"{path} [[target]] {i + 1}"
        operator = _text(table, "operator", where, required=False)
        targets.append(CampaignTarget(_text(table, "name", where), _text(table, "url", where),
                                      operator or None))
    try:
        return CampaignConfig(
            name=_text(head, "name", f"{path} [campaign]"),
            title=_text(head, "title", f"{path} [campaign]", required=False),
            parts=tuple(parts),
            sites=sites,
            targets=tuple(targets),
        )
    except UsageError as exc:
        raise UsageError(f"{path}: {exc}") from None
