"""Typed configuration objects (frozen dataclasses) from the command line, environment, sv7.toml.

``ServeConfig`` starts the local catalogue; ``RunConfig`` is everything one ``sv7 run`` needs.
Precedence everywhere: command line > ``SV7_*`` environment > ``sv7.toml`` > defaults; every
value is parsed by its option's one parser (:mod:`igestbench.options`) before anything
starts, and a bad one names its source.

Credentials are resolved for every command in :mod:`igestbench.accounts` (for ``sv7 run`` and
``sv7 cleanup`` through :func:`load_run_config`); sv7.toml is read by
:mod:`igestbench.config_file`. Those three modules are the only ones that read the environment
and the configuration file. Credentials never come from the command line; they live only in
memory: their ``repr`` hides the password and :meth:`RunConfig.public` leaves them out of result
files.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import ipaddress
import math
import os
import socket
import zoneinfo
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from igestbench import options as run_options
from igestbench.accounts import resolve_logins
from igestbench.config_file import ConfigFile, read_config_file, read_toml
from igestbench.errors import UsageError
from igestbench.icat.credentials import Credentials, RoleAccount
from igestbench.icat.schema import PROFILE_NAMES
from igestbench.mock.auth import DEFAULT_ACCOUNTS, DEFAULT_FRIENDLY_NAMES, Account

LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")


@dataclass(frozen=True)
class FaultKnobs:
    """Ways the local catalogue can misbehave on purpose, to test the suite itself."""

    #: Added to every SOAP or REST answer.
    latency_ms: float = 0.0
    #: Every Nth SOAP or REST request stalls for ``stall_seconds`` before it is answered (0: never).
    stall_every: int = 0
    stall_seconds: float = 0.0
    #: Fraction of SOAP or REST requests answered with an INTERNAL fault.
    error_rate: float = 0.0
    #: Fraction of SOAP or REST requests whose connection is closed without an answer.
    drop_rate: float = 0.0
    #: Seed of the random draws, so a misbehaving run can be repeated exactly.
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("latency_ms", "stall_seconds", "error_rate", "drop_rate"):
            if not math.isfinite(getattr(self, name)):
                raise UsageError(f"{name.replace('_', '-')} must be a finite number")
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
    #: The SQL of one request is stopped after this long (an INTERNAL fault says so).
    query_timeout_s: float = 30.0
    #: Most XML elements one request body may hold (checked while parsing).
    max_elements: int = 250_000
    #: Largest request line + header section (HTTP 431 beyond).
    max_header_bytes: int = 64 * 1024
    #: Large bodies received or being handled at once hold at most this much (HTTP 503 beyond).
    max_bodies_in_flight_bytes: int = 128 * 1024 * 1024
    #: On a new database, add example data and the rules that let every logged-in user read
    #: (igestbench.mock.seed); without it a new database has no rules, as a fresh ICAT.
    example_data: bool = False
    #: (mechanism, name) pairs getAuthenticatorInfo gives as ``friendly`` (ICAT's
    #: ``authn.<mnemonic>.friendly``); a mechanism without one has none.
    friendly_names: tuple[tuple[str, str], ...] = DEFAULT_FRIENDLY_NAMES
    #: The server's time zone (IANA name): ICAT reads dates without a zone in its JVM's zone
    #: and answers in it, so reference data made on a CET server reads back the same.
    timezone: str = "UTC"
    #: Send an HTTP ``Date`` header with every answer. A real ICAT 6.2.0 on Payara sends none;
    #: False imitates it (sv7 run then takes the server's clock from a createTime).
    date_header: bool = True
    knobs: FaultKnobs = field(default_factory=FaultKnobs)
    #: Serve an ICAT Data Service under /ids/ (profile 6.2: ids.server 2.1.1's calls).
    ids: bool = True
    #: Where the IDS keeps its files; None: a temporary folder removed when the server stops.
    ids_storage: str | None = None
    #: Present the IDS as two-level with an emulated archive (archive/restore accepted, data
    #: always ONLINE); False: single-level, as ids.server without archive storage.
    ids_two_level: bool = True

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
        if not math.isfinite(self.lifetime_minutes) or self.lifetime_minutes <= 0:
            raise UsageError(f"--session-minutes {self.lifetime_minutes}: must be positive")
        if self.max_entities <= 0 or self.max_body_bytes <= 0:
            raise UsageError("max entities and max body size must be positive")
        if self.db != ":memory:":
            folder = Path(self.db).expanduser().resolve().parent
            if Path(self.db).is_dir() or not folder.is_dir():
                raise UsageError(f"--db {self.db}: not a file in an existing directory")
        if not self.query_timeout_s > 0:
            raise UsageError(f"--query-timeout {self.query_timeout_s:g}: must be positive")
        if self.max_elements <= 0:
            raise UsageError(f"--max-elements {self.max_elements}: must be positive")
        if self.ids_storage is not None and Path(self.ids_storage).expanduser().is_file():
            raise UsageError(f"--ids-storage {self.ids_storage}: a file, not a folder")
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

PARTS = run_options.PARTS
FLAVOUR_NAMES = run_options.FLAVOUR_NAMES


@dataclass(frozen=True)
class RunConfig:
    """The effective options of one run (frozen; built by :func:`load_run_config`)."""

    #: the profile the values not given came from; the defaults below are full's (quick's are
    #: in options.PROFILE_SETTINGS, which load_run_config starts from)
    profile: str = "full"
    target: str | None = None
    site: str = "local"
    flavours: tuple[str, ...] = ("zeep", "python-icat")
    interfaces: tuple[str, ...] | None = None  # None: what the target serves (run/interfaces)
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
    #: Sizes of the files the ids part uploads through the IDS (--cycles of each per client).
    file_sizes: tuple[int, ...] = (1024, 1024**2, 100 * 1024**2)
    #: Highest demanded rate of the load sweep (requests/s) and seconds per step.
    max_rate: float = 200.0
    duration: float = 3.0
    slo_ms: float = 50.0
    repeat: int = 1
    warmup: float = 0.5
    calls_per_connection: int = 0
    mix: Mapping[str, int] = field(default_factory=lambda: {"search": 1})
    #: Datafiles in the scale part's tree at each size (each size grown on top of the last).
    scale_sizes: tuple[int, ...] = run_options.SCALE_SIZES
    #: --yes: what needs agreeing to is agreed to (scale sizes above 100,000 on a target).
    yes: bool = False
    fail_on: tuple[str, ...] = ()
    #: Seconds to wait for a target that stops answering mid-run before giving up on it.
    outage_wait: float = 120.0
    out: Path = Path("reports")
    gzip: bool = False
    ca_file: Path | None = None
    insecure: bool = False
    timeout: float = 30.0
    #: The default account. None: ask at the prompt (or the local catalogue's ingest account
    #: without a target).
    credentials: Credentials | None = field(default=None, repr=False)
    #: The role accounts given on top (--account ROLE=MECH/NAME, [credentials.ROLE]).
    accounts: tuple[RoleAccount, ...] = field(default=(), repr=False)
    #: The service checks' own options (a igestbench.verify.VerifyOptions; accounts, queries).
    verify: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # values from load_run_config are checked already, naming their source; this catches
        # a RunConfig built in Python with a bad value
        for option in run_options.RUN_OPTIONS:
            value = getattr(self, option.field)
            if value is not None and not isinstance(value, bool | Path):
                shown = ",".join(map(str, value)) if isinstance(value, tuple) else value
                option.convert(shown if option.field != "fail_on" else list(value), option.flag)
        if self.insecure and self.ca_file is not None:
            raise UsageError("--insecure and --ca-file contradict each other: choose one")
        if "soap" in (self.interfaces or ()) and set(self.flavours) <= {"rest"}:
            raise UsageError("--interface soap: --flavour names no SOAP client (zeep, lean …)")
        biggest = max(self.scale_sizes)
        if (self.target is not None and "scale" in self.parts and not self.yes
                and biggest > run_options.SCALE_SIZES_WITHOUT_YES):
            raise UsageError(
                f"--scale-sizes {biggest}: a tree of more than "
                f"{run_options.SCALE_SIZES_WITHOUT_YES:,} Datafiles on {self.target} needs --yes "
                "(it is created, measured and removed again, on someone's production catalogue)"
            )
        from igestbench.run.thresholds import parse_threshold

        for text in self.fail_on:
            workload = parse_threshold(text).workload
            if workload not in self.parts:
                raise UsageError(
                    f"--fail-on {text!r}: the run does not measure {workload} "
                    f"(--parts {','.join(self.parts)})"
                )

    def public(self) -> dict[str, Any]:
        """The options as a result file records them: no credentials, paths as text."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("credentials", "accounts", "verify"):
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


def parse_mix(text: str) -> dict[str, int]:
    """``search=21,get=8,create=1`` → {"search": 21, "get": 8, "create": 1}."""
    mix: dict[str, int] = run_options.BY_FIELD["mix"].convert(text, "--mix")
    return mix


# --- sources: sv7.toml (igestbench.config_file) ----------------------------------------------


def _run_options(
    cli: Mapping[str, Any], file: ConfigFile, environ: Mapping[str, str]
) -> dict[str, Any]:
    """Every option of sv7 run parsed and checked, naming its source when bad."""
    return _options(cli, file.path, "run", file.run, run_options.RUN_OPTIONS, environ)


def _options(
    cli: Mapping[str, Any],
    path: Path | None,
    name: str,
    table: Mapping[str, Any],
    known: Sequence[run_options.RunOption],
    environ: Mapping[str, str],
) -> dict[str, Any]:
    """Every option of ``known`` parsed and checked, naming its source when bad (sv7.toml's
    table ``name`` < environment < CLI)."""
    options: dict[str, Any] = {}
    unknown = sorted(k for k in table if run_options.file_key(k, known) is None)
    if unknown:
        keys = [o.flag.removeprefix("--") for o in known]
        raise UsageError(f"{path}: unknown option(s) in [{name}]: "
                         + ", ".join(run_options.did_you_mean(k, keys) for k in unknown))
    for key, value in table.items():
        option = run_options.file_key(key, known)
        assert option is not None
        options[option.field] = option.convert(value, f"{path} [{name}] {key}")
    for option in known:
        if option.variable in environ:
            options[option.field] = option.convert(environ[option.variable], option.variable)
    by_field = {o.field: o for o in known}
    for field_name, value in cli.items():
        if value is not None:
            option = by_field[field_name]
            options[field_name] = value if option.switch else option.convert(value, option.flag)
    return options


@dataclass(frozen=True)
class CheckConfig:
    """sv7 check's own options (:data:`igestbench.options.CHECK_OPTIONS`)."""

    #: The longest the whole probe may take, in seconds.
    deadline: float = run_options.DEFAULT_CHECK_DEADLINE
    #: A call slower than these (ms) makes the probe WARNING, CRITICAL (None: no threshold).
    warning_ms: float | None = None
    critical_ms: float | None = None

    def __post_init__(self) -> None:
        if (self.warning_ms is not None and self.critical_ms is not None
                and self.warning_ms > self.critical_ms):
            raise UsageError(f"--warning-ms {self.warning_ms:g} is above --critical-ms "
                             f"{self.critical_ms:g}: a call must be slow before it is too slow")


def load_check_config(
    cli: Mapping[str, Any],
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> CheckConfig:
    """sv7 check's options: ``cli`` by field (None: not given), then ``SV7_<OPTION>``, then the
    ``[check]`` table of sv7.toml, then defaults; a bad value names its source."""
    env = os.environ if environ is None else environ
    file = read_config_file(config_file)
    return CheckConfig(**_options(cli, file.path, "check", file.check,
                                  run_options.CHECK_OPTIONS, env))  # fmt: skip


def load_run_config(
    cli: Mapping[str, Any],
    config_file: Path | None = None,
    environ: Mapping[str, str] | None = None,
    prompt: Callable[[str], str] | None = None,
    accounts: Sequence[str] = (),
    credentials_file: Path | None = None,
) -> RunConfig:
    """Merge the sources; ask for a password only if a target needs one and none was given.

    ``cli`` holds the command line's values by RunConfig field (None: not given); ``accounts``
    and ``credentials_file`` are ``--account`` and ``--credentials``; ``prompt`` asks for a
    missing password (None: never ask, the message says what to set).
    """
    env = os.environ if environ is None else environ
    file = read_config_file(config_file)
    options = _run_options(cli, file, env)
    profile = options.get("profile", run_options.DEFAULT_PROFILE)  # an option given wins
    options = {**run_options.PROFILE_SETTINGS[profile], **options, "profile": profile}
    if options.get("target") is not None and "parts" not in options:
        # a big tree, or files in the facility's storage, only when asked for by name
        options["parts"] = tuple(
            p for p in run_options.PARTS if p not in run_options.NAMED_ONLY_ON_TARGET
        )
    if options.get("target") is not None and "site" not in options:
        # "local" names the built-in catalogue's runs; a run against a partner's catalogue that
        # took it too would merge with every other unnamed site into one row of the campaign
        options["site"] = default_site()
    config = RunConfig(**options)
    need = "required" if config.target is not None else "local"
    logins = resolve_logins(file, accounts, credentials_file, env, prompt, need, config.target)
    return dataclasses.replace(config, credentials=logins.default, accounts=logins.roles)


def default_site() -> str:
    """The site of a run against a named target when none is given: this machine's short name."""
    return socket.gethostname().split(".")[0] or "local"


# --- sv7 swarm's secret ----------------------------------------------------------------------

SWARM_SECRET_VARIABLE = "SV7_SWARM_SECRET"
#: Shorter secrets are refused: the CURVE keys derive from it, and a handshake overheard on the
#: network lets anyone try guesses offline.
SWARM_SECRET_MIN_LENGTH = 16


@dataclass(frozen=True)
class SwarmSecret:
    """The secret master and workers of ``sv7 swarm`` share (never on the command line)."""

    value: str = field(repr=False)
    #: Where it came from, for messages: the variable's name or ``sv7.toml [swarm] secret``.
    source: str


def load_swarm_secret(
    config_file: Path | None = None, environ: Mapping[str, str] | None = None
) -> SwarmSecret | None:
    """``SV7_SWARM_SECRET``, else ``secret`` in the ``[swarm]`` table of sv7.toml; None when
    neither is set. A secret too short to resist guessing is a usage error naming its source."""
    env = os.environ if environ is None else environ
    value: object = env.get(SWARM_SECRET_VARIABLE) or None
    source = SWARM_SECRET_VARIABLE
    path = config_file if config_file is not None else (
        Path("sv7.toml") if Path("sv7.toml").is_file() else None)  # fmt: skip
    if value is None and path is not None:
        table = read_toml(path, "configuration").get("swarm", {})
        if not isinstance(table, dict):
            raise UsageError(f"{path}: [swarm] must be a table")
        value, source = table.get("secret"), f"{path} [swarm] secret"
    if value is None:
        return None
    if not isinstance(value, str) or len(value.strip()) < SWARM_SECRET_MIN_LENGTH:
        raise UsageError(
            f"{source}: the swarm's secret must be text of at least {SWARM_SECRET_MIN_LENGTH} "
            "characters, the same on the master and every worker (make one with: python -c "
            "'import secrets; print(secrets.token_urlsafe(32))')"
        )
    return SwarmSecret(value, source)
