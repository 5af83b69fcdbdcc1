"""``sv7 swarm master|worker``: the parser and the entry of the distributed load sweep.

Only :func:`cmd_swarm` imports Locust (and with it gevent's monkey-patching, which must come
before anything opens a socket or a TLS context); the parser is built without it, so ``sv7
--help`` works on the base install and ``sv7 run``/``sv7 serve`` never see gevent.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from igestbench.errors import UsageError
from igestbench.options import (
    BY_FIELD,
    RATE_WORDS,
    OptionError,
    argparse_type,
    number,
    rate,
    whole,
)
from igestbench.swarm.sizing import DEFAULT_CAP

if TYPE_CHECKING:
    from igestbench.config import SwarmSecret

__all__ = [
    "DEFAULT_PORT",
    "SwarmConfig",
    "add_swarm",
    "cmd_swarm",
    "host_port",
    "patch_for_swarm",
]

#: Locust's master port: ``sv7 swarm worker --master HOST`` finds a master started without --bind.
DEFAULT_PORT = 5557
WORKLOADS = ("single-query", "mix", "burst")
#: Options of sv7 run the master takes over (same flag, field, parser and help).
MASTER_RUN_FIELDS = ("target", "site", "max_rate", "duration", "warmup", "slo_ms", "mix",
                     "batch_size", "out", "ca_file", "timeout", "insecure", "gzip")  # fmt: skip
#: ... and those a worker needs to reach the catalogue itself.
WORKER_RUN_FIELDS = ("target", "ca_file", "timeout", "insecure")
#: The swarm's defaults of the sweep's options: sv7 run's full profile (the swarm has no quick
#: tour); given on the command line, as SV7_* or in sv7.toml's [run], they win as for sv7 run.
SWARM_PROFILE = "full"
#: Help of the options whose meaning or default differs from sv7 run's.
SWARM_HELP = {
    "target": "the catalogue the workers load: URL or HOST[:PORT] (required, here or as "
    "SV7_TARGET / sv7.toml; the swarm starts no catalogue of its own)",
    "site": "name of the site running the swarm (default: this machine's short host name)",
    "max_rate": f"highest total demanded rate of the doubling steps, in {RATE_WORDS} "
    "(requests/s; default 200)",
    "duration": "seconds per step (default 3)",
    "warmup": "seconds of warm-up before each step, not measured (default 0.5); also the "
    "least the warm-up before the first step runs, after the workers' logins",
    "batch_size": "Datafiles per createMany call of --workload burst (default 100)",
}


def host_port(text: str, default_port: int = DEFAULT_PORT) -> tuple[str, int]:
    """``HOST[:PORT]`` (``[::1]:5557`` for IPv6) → (host, port); UsageError naming the problem."""
    value = text.strip()
    host, port_text = value, ""
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise UsageError(f"{text!r}: expected HOST[:PORT], e.g. 127.0.0.1:5557 or [::1]:5557")
        port_text = rest[1:]
    elif value.count(":") == 1:
        host, port_text = value.split(":")
    if not host:
        raise UsageError(f"{text!r}: expected HOST[:PORT], e.g. 127.0.0.1:5557")
    try:
        port = whole(1, 65535)(port_text) if port_text else default_port
    except OptionError as exc:
        raise UsageError(f"{text!r}: the port: {exc}") from None
    return host, port


def rate_list(value: object) -> tuple[float, ...]:
    """``50,100,200`` → demanded rates (requests/s), each a number > 0."""
    items = [item.strip() for item in str(value).split(",") if item.strip()]
    if not items:
        raise OptionError(f"expected demanded rates in {RATE_WORDS} (requests/s) separated by "
                          "commas, e.g. 50,100")  # fmt: skip
    return tuple(rate(item) for item in items)


@dataclass(frozen=True)
class SwarmConfig:
    """The swarm's own options (sv7 run's are read into a RunConfig as usual)."""

    role: str
    rates: tuple[float, ...] | None = None
    workload: str = "single-query"
    expect_workers: int = 1
    wait_workers_s: float = 60.0
    bind: tuple[str, int] = ("127.0.0.1", DEFAULT_PORT)
    #: The most users one worker may use (each worker sizes its own up to it).
    users: int = DEFAULT_CAP
    master: tuple[str, int] = ("127.0.0.1", DEFAULT_PORT)
    processes: int = 1
    config_file: Path | None = None
    #: Set in the processes ``--processes`` starts: they die with it.
    parent_pid: int | None = None
    #: Shared by master and workers (SV7_SWARM_SECRET, sv7.toml [swarm] secret): CURVE keys.
    secret: SwarmSecret | None = field(default=None, repr=False)

    def options(self) -> dict[str, object]:
        """The swarm's own options as a result file records them (the secret: only whether
        there was one)."""
        return {
            "rates": list(self.rates) if self.rates is not None else None,
            "workload": self.workload,
            "expect_workers": self.expect_workers,
            "wait_workers": self.wait_workers_s,
            "users": self.users,
            "bind": f"{self.bind[0]}:{self.bind[1]}",
            "authenticated": self.secret is not None,
        }


def _run_option(p: argparse.ArgumentParser, name: str) -> None:
    option = BY_FIELD[name]
    shown = SWARM_HELP.get(name, option.help)
    if option.switch:
        p.add_argument(option.flag, dest=name, action="store_const", const=True,
                       help=shown)  # fmt: skip
    else:
        p.add_argument(option.flag, dest=name, help=shown)


def add_swarm(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``sv7 swarm`` with its two roles."""
    p = sub.add_parser(
        "swarm",
        help="open-loop load sweep from many client hosts (Locust master and workers)",
        description="Distributed load on Locust (pip install 'igestbench[distributed]'): a "
        "master runs the sweep and writes one result file; workers on other hosts join it and "
        "make the calls with their own credentials (SV7_* or sv7.toml, never sent over the "
        "wire). Latency is ours: from each call's intended send time, HdrHistograms merged at "
        "the master.",
        epilog="Workers on other hosts: set the same SV7_SWARM_SECRET (or [swarm] secret in "
        "sv7.toml) on the master and every worker — never on the command line; without it the "
        "master binds only to loopback. Exit status: 0 ok, 1 error, 2 usage, 130/143/129 "
        "interrupted by SIGINT/SIGTERM/SIGHUP (the master cleans up first)",
    )
    roles = p.add_subparsers(dest="role", metavar="ROLE", parser_class=type(p))
    master = roles.add_parser(
        "master",
        help="run the sweep: wait for the workers, step the demanded rate, write the result",
        description="Prepares a few objects under the run tag, waits for --expect-workers "
        "workers, splits each step's total demanded rate over them and merges their "
        "histograms; cleans up at the end and on SIGINT/SIGTERM/SIGHUP.",
    )
    master.add_argument("--config", type=Path, help="sv7.toml to read (default ./sv7.toml)")
    for name in MASTER_RUN_FIELDS:
        _run_option(master, name)
    master.add_argument("--rates", type=argparse_type(rate_list),
                        help=f"total demanded rates of the steps, in {RATE_WORDS} "
                        "(requests/s), e.g. 50,100 (default: doubling from 10 up to "
                        "--max-rate)")  # fmt: skip
    master.add_argument("--workload", choices=WORKLOADS,
                        help="single-query (default), mix (--mix, as sv7 run's sweep) or burst "
                        "(createMany of --batch-size Datafiles per call)")  # fmt: skip
    master.add_argument(
        "--expect-workers",
        type=argparse_type(whole(1, 1024)),
        default=1,
        help="workers to wait for before the first step (default 1)",
    )
    master.add_argument(
        "--wait-workers",
        type=argparse_type(number(0, above=True)),
        default=60.0,
        help="seconds to wait for them (default 60)",
    )
    master.add_argument("--bind", default=f"127.0.0.1:{DEFAULT_PORT}",
                        help="address the workers connect to (default 127.0.0.1:5557); "
                        "any other than loopback, e.g. 0.0.0.0:5557, needs "
                        "SV7_SWARM_SECRET")  # fmt: skip
    master.add_argument("--users", type=argparse_type(whole(1, 1024)), default=DEFAULT_CAP,
                        help="the most users one worker may use, each one client, connection "
                        "and session; each worker uses as many as its share of the rate and "
                        f"the latency it sees need (default {DEFAULT_CAP})")  # fmt: skip
    worker = roles.add_parser(
        "worker",
        help="join a master and make calls at the rate it asks",
        description="Connects to the master, logs in to the catalogue with this host's own "
        "credentials (SV7_AUTH/SV7_USER/SV7_PASSWORD or sv7.toml) and refuses a master whose "
        "target is not this worker's own --target. A master on another host needs the "
        "swarm's SV7_SWARM_SECRET (or [swarm] secret in sv7.toml) here too.",
    )
    worker.add_argument(
        "--master",
        default=f"127.0.0.1:{DEFAULT_PORT}",
        help="the master's HOST[:PORT] (default 127.0.0.1:5557)",
    )
    worker.add_argument(
        "--processes",
        type=argparse_type(whole(1, 256)),
        default=1,
        help="worker processes on this host, e.g. one per core (default 1)",
    )
    worker.add_argument("--config", type=Path, help="sv7.toml to read (default ./sv7.toml)")
    worker.add_argument("--parent-pid", type=int, help=argparse.SUPPRESS)
    for name in WORKER_RUN_FIELDS:
        _run_option(worker, name)


def patch_for_swarm(argv: Sequence[str]) -> None:
    """Before anything imports ssl or opens a socket: gevent's monkey-patching when the command
    is ``sv7 swarm`` (Locust patches on import, too late once the parsers of the other commands
    have imported requests; gevent then warns and TLS contexts recurse). No other command ever
    imports gevent."""
    command = next((a for a in argv if not a.startswith("-")), None)
    if command == "swarm":
        try:
            from gevent import monkey
        except ImportError:  # cmd_swarm says what to install
            return
        monkey.patch_all()


def _check_exposure(flag: str, host: str, secret: SwarmSecret | None, risk: str) -> None:
    """Another host than loopback only with the swarm's secret (then CURVE authenticates)."""
    from igestbench.config import is_loopback

    if secret is None and not is_loopback(host):
        raise UsageError(
            f"{flag} {host}: not a loopback address, and no SV7_SWARM_SECRET (or [swarm] secret "
            f"in sv7.toml) is set: without one this {risk}. Set the same secret on the master "
            "and every worker, or keep to loopback"
        )


def _interactive_prompt(allowed: bool) -> Callable[[str], str] | None:
    import getpass

    return getpass.getpass if allowed and sys.stdin.isatty() else None


def cmd_swarm(args: argparse.Namespace) -> int:
    if args.role is None:
        raise UsageError("choose a role: sv7 swarm master … or sv7 swarm worker --master HOST")
    try:
        import locust  # noqa: F401  (patched already: see patch_for_swarm)
    except ImportError:
        raise UsageError("sv7 swarm needs Locust: pip install 'igestbench[distributed]'") from None
    from igestbench.config import load_run_config, load_swarm_secret

    # the swarm's own options first: a bad address is said before any password is asked
    secret = load_swarm_secret(args.config)
    if args.role == "master":
        workload = args.workload or ("mix" if args.mix else "single-query")
        if args.mix and workload != "mix":
            raise UsageError(f"--mix is the mix of --workload mix, not of {workload}")
        swarm = SwarmConfig(
            "master", rates=args.rates, workload=workload,
            expect_workers=args.expect_workers, wait_workers_s=args.wait_workers,
            bind=host_port(args.bind), users=args.users, config_file=args.config, secret=secret,
        )  # fmt: skip
        _check_exposure("--bind", swarm.bind[0], secret, "lets any host that reaches the port "
                        "join as a worker and send the master what it likes")  # fmt: skip
    else:
        swarm = SwarmConfig("worker", master=host_port(args.master), processes=args.processes,
                            config_file=args.config, parent_pid=args.parent_pid,
                            secret=secret)  # fmt: skip
        _check_exposure("--master", swarm.master[0], secret, "would talk to whatever answers "
                        "there (a master on another host has a secret)")  # fmt: skip
    names = MASTER_RUN_FIELDS if args.role == "master" else WORKER_RUN_FIELDS
    spawned = args.role == "worker" and args.processes > 1
    cli = {name: getattr(args, name) for name in names}
    run = load_run_config(
        {**cli, "profile": SWARM_PROFILE} if args.role == "master" else cli,
        config_file=args.config,
        # worker processes started by --processes share a terminal: none of them asks
        prompt=_interactive_prompt(not spawned),
    )
    if run.target is None:
        raise UsageError(
            "name the catalogue with --target (or SV7_TARGET / sv7.toml): the swarm does not "
            "start a catalogue of its own, and a worker logs in only where it was told itself"
        )
    if args.role == "master":
        from igestbench.swarm.master import Master

        return Master(run, swarm).run()
    from igestbench.swarm.worker import run_worker, spawn_workers

    if spawned:
        return spawn_workers(args, swarm)
    return run_worker(run, swarm)
