"""A worker of ``sv7 swarm``: joins the master, runs its share of each step, reports histograms.

The worker reads its own target and credentials (``--target``, ``SV7_*``, ``sv7.toml``) and
refuses a master whose target is another catalogue: credentials go only where this host's own
configuration says. Each step is the schedule of ``sv7 run``'s sweep at this worker's share of
the rate, taken slot by slot by its Locust users (:mod:`igestbench.swarm.users`); when the step
has ended (schedule over, answers drained) the worker summarises it exactly as ``sv7 run``'s
sweep does and sends the result to the master. What it creates is sent to the master as it goes
(every :data:`CREATED_EVERY_S`), for the run's journal.

Before the first step the master has each worker in turn log in the users its share of the
first rate needs (``sv7-warm``: one after another, as ``sv7 run``'s sweep does), then runs the
first rate's schedule as a warm-up step that no figure counts (:data:`WARMUP_INDEX`): the first
step does not carry the connections, logins and the catalogue's cold caches.

How many users take slots is the worker's own choice, per step (:mod:`igestbench.swarm.sizing`:
Little's law from its share of the rate and the latency it saw, more while slots wait, up to the
master's ``--users``); each step's report says how many it used and whether the cap bounded it.

Joining: with ``SV7_SWARM_SECRET`` the connection is CURVE with keys from the secret
(:mod:`igestbench.swarm.secure`); a master that fails the handshake (another secret, or none) is
said in one line and the worker exits 1. A stop (SIGINT, SIGTERM, SIGHUP; also while it is
still connecting) halts the running step, sends what it created, tells the master it leaves and
exits 130/143/129, without a traceback.

``--processes N`` starts N worker processes (one per core: one process is one CPU for gevent)
that die with their parent.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from typing import Any

import gevent
import psutil
from locust import events
from locust.env import Environment
from locust.runners import WorkerRunner

from igestbench import redaction
from igestbench.client import ClientConfig
from igestbench.config import RunConfig
from igestbench.icat.endpoint import endpoint_of
from igestbench.measure.schedule import (
    ClientFactory,
    StepSchedule,
    summarize_step,
    weighted_cycle,
)
from igestbench.run.stopping import die_with_parent
from igestbench.swarm import secure
from igestbench.swarm.command import SwarmConfig
from igestbench.swarm.messages import (
    CREATED,
    HALT,
    READY,
    SETUP,
    STEP,
    STEP_DONE,
    WARM,
    WARM_DONE,
    StepOrder,
    StepReport,
)
from igestbench.swarm.signals import on_stop_signals, raise_in_main
from igestbench.swarm.sizing import TICK_S
from igestbench.swarm.users import SwarmUser, WorkerState
from igestbench.swarm.workload import login_factory, operations, targets_from_wire
from igestbench.workloads import Journal

__all__ = ["run_worker", "spawn_workers"]

CREATED_EVERY_S = 0.5
#: Seconds the warm-up's logins may take before the worker answers with the sessions it has.
LOGIN_WAIT_S = 60.0
#: A call sent later than this after its slot counts as late (as in sv7 run's sweep).
TOLERANCE_NS = 10_000_000


class _Stop(Exception):
    """A stop signal, raised in the main greenlet (not a KeyboardInterrupt: Locust turns one
    into ``sys.exit(1)`` while the worker connects)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class _Refused(Exception):
    """The master's end of the connection failed the handshake."""


class _Worker:
    def __init__(self, run: RunConfig, runner: WorkerRunner, state: WorkerState) -> None:
        assert run.target is not None and run.credentials is not None
        self.run, self.runner, self.state = run, runner, state
        self.url = endpoint_of(run.target).service_url
        self.client = ClientConfig(run.target, connect_timeout=min(run.timeout, 10.0),
                                   read_timeout=run.timeout, ca_file=run.ca_file,
                                   insecure=run.insecure)  # fmt: skip
        self.journal = Journal()  # in memory: the master keeps the run's journal file
        self.reported = 0
        #: None until the master's setup came; then "" or why this worker could not set up
        self.setup: str | None = None
        #: Set when a signal stops this worker: its cut step is not reported
        self.leaving = False
        self.drain_s = 5.0
        self.host = socket.gethostname()

    def on_setup(self, environment: Environment, msg: Any, **_: Any) -> None:
        data = msg.data
        answer: dict[str, Any] = {"host": self.host, "pid": os.getpid()}
        try:
            wanted = endpoint_of(str(data["target"])).service_url
            if wanted != self.url:
                raise ValueError(
                    f"the master's target {wanted} is not this worker's {self.url}; refused "
                    "(a worker logs in only where its own --target says)"
                )
            creds = self.run.credentials
            assert creds is not None
            factory = login_factory(self.client, creds)
            targets = targets_from_wire(data["targets"])
            sizer = self.state.sizer
            sizer.set_cap(int(data["users"]))
            # one login now (a refused account is said at the setup) and the first latency
            # seen, for the first step's users: the median of three lookups
            sizer.end_step(_lookup_latency(factory, int(targets[0]["id"])))
            ops, weights = operations(
                str(data["workload"]), targets, self.journal,
                mix=data["mix"], batch_size=int(data["batch_size"]),
                prefix=f"swarm-{secrets.token_hex(4)}",
            )  # fmt: skip
            self.state.ops = [(name, ops[name]) for name in weighted_cycle(weights)]
            self.drain_s = float(data["drain_s"])
            self.state.factory = factory
            answer["ok"] = True
        except Exception as exc:  # said to the master, which records it and goes on
            answer.update(ok=False, error=redaction.scrub(str(exc)) or type(exc).__name__)
        self.setup = "" if answer["ok"] else f"could not set up: {answer['error']}"
        self.runner.send_message(READY, answer)

    def on_warm(self, environment: Environment, msg: Any, **_: Any) -> None:
        gevent.spawn(self._log_in_users, float(msg.data["rate"]))

    def _log_in_users(self, rate: float) -> None:
        """Before the first step: the users this worker's share of its rate needs made active,
        each logged in (one after another: users.py), so that the first step's schedule does
        not wait for them; then the master hears how many sessions this worker holds and how
        long its warm-up schedule must run for every user to have a call."""
        state, sizer = self.state, self.state.sizer
        users = sizer.start_step(rate)
        deadline = time.monotonic() + LOGIN_WAIT_S
        while sizer.ready < users and time.monotonic() < deadline and not self.leaving:
            gevent.sleep(0.01)
        self.runner.send_message(WARM_DONE, {"users": users, "clients": state.sessions,
                                             "min_s": (users + len(state.ops)) / rate})

    def on_step(self, environment: Environment, msg: Any, **_: Any) -> None:
        gevent.spawn(self._run_step, StepOrder.from_wire(msg.data))

    def on_halt(self, environment: Environment, msg: Any, **_: Any) -> None:
        step = self.state.step
        if step is not None:
            step.halt.set()

    def _run_step(self, order: StepOrder) -> None:
        state, sizer = self.state, self.state.sizer
        step = StepSchedule(order.rate, order.warmup_s + order.duration_s, state.ops)
        step.t0 = state.clock() + int(order.lead_s * 1e9)
        me = psutil.Process()
        cpu_before, wall_before = sum(me.cpu_times()[:2]), time.monotonic()
        sizer.start_step(order.rate)  # the users log in during the lead and the warm-up
        state.taken = 0
        state.step = step
        state.running.set()
        self._follow(step, order.rate, round(order.warmup_s * 1e9))
        drain_end = time.monotonic() + self.drain_s
        while any(step.in_flight) and time.monotonic() < drain_end and not step.halt.is_set():
            gevent.sleep(0.01)
        step.halt.set()
        state.running.clear()
        state.step = None
        calls = [list(c) for c in step.calls]
        hung = list(step.in_flight)  # calls still unanswered: counted as timed out
        result = summarize_step(step, order.rate, order.duration_s, order.warmup_s, calls, hung,
                                TOLERANCE_NS)  # fmt: skip
        wall = time.monotonic() - wall_before
        cpu = (sum(me.cpu_times()[:2]) - cpu_before) / wall * 100 if wall > 0 else 0.0
        self.send_created()  # before the report: the master journals them first
        if self.leaving:  # a cut step is no step: the master records this worker as lost
            return
        report = StepReport(order.index, result, round(cpu, 1), sizer.active, sizer.cap,
                            round(sizer.capped_s, 3))  # fmt: skip
        sizer.end_step(result.uncorrected.mean_ms / 1e3 if result.uncorrected.count else None)
        self.runner.send_message(STEP_DONE, report.to_wire())

    def _follow(self, step: StepSchedule, rate: float, warm_ns: int) -> None:
        """Until the schedule ends: every TICK_S, users for the slots that wait for one."""
        state, clock = self.state, self.state.clock
        end, measured_from = step.t0 + step.total_ns, step.t0 + warm_ns
        last = clock()
        while not step.halt.is_set():
            # first let every user whose answer has come run: a process short of CPU wakes
            # with many of them, which would otherwise count as busy and call for more users
            gevent.sleep(0)
            now = clock()
            if now >= end:
                return
            behind = now - step.t0 - TOLERANCE_NS  # slots due longer ago than the tolerance
            due = step.slot_count(behind + 1) if behind >= 0 else 0
            busy = sum(1 for call in step.in_flight if call is not None)
            state.sizer.tick(rate, due - state.taken, busy, now >= measured_from, now - last)
            last = now
            step.halt.wait(min(TICK_S, (end - now) / 1e9))

    def send_created(self) -> None:
        entries = self.journal.entries[self.reported :]
        if entries:
            self.reported += len(entries)
            self.runner.send_message(CREATED, {"entries": [list(e) for e in entries]})

    def report_created(self) -> None:
        while True:
            gevent.sleep(CREATED_EVERY_S)
            self.send_created()


def _lookup_latency(factory: ClientFactory, datafile_id: int) -> float:
    """Seconds a ``get`` of one of the run's Datafiles takes (median of three), logged in."""
    client = factory()
    try:
        times = []
        for _ in range(3):
            began = time.perf_counter()
            client.get("Datafile", datafile_id)
            times.append(time.perf_counter() - began)
        return sorted(times)[1]
    finally:
        client.close()


def run_worker(run: RunConfig, swarm: SwarmConfig) -> int:
    """One worker process: until the master quits it, or a signal does; the exit code."""
    assert run.credentials is not None
    if swarm.parent_pid is not None:  # started by --processes: never outlive the parent
        die_with_parent(swarm.parent_pid)
    stopped: list[int] = []

    def stop(signum: int) -> None:
        if not stopped:
            stopped.append(signum)
            raise_in_main(_Stop(signum))

    on_stop_signals(stop)  # first: a stop while connecting ends the worker too
    redaction.remember(run.credentials.password)
    if swarm.secret is not None:
        redaction.remember(swarm.secret.value)
    host, port = swarm.master
    refused: list[str] = []

    def on_refused(how: str) -> None:
        if not refused:
            refused.append(how)
            raise_in_main(_Refused(how))

    keys = secure.curve_keys(swarm.secret.value) if swarm.secret is not None else None
    secure.install(keys, secure.Refusals(), on_refused=on_refused)
    state = WorkerState()
    SwarmUser.state = state
    env = Environment(user_classes=[SwarmUser], events=events)
    print(f"sv7 swarm: worker connecting to {host}:{port}"
          + (" (CURVE, keys from the swarm's secret)" if keys else ""), flush=True)  # fmt: skip
    runner: WorkerRunner | None = None
    worker: _Worker | None = None
    try:
        runner = env.create_worker_runner(master_host=host, master_port=port)
        worker = _Worker(run, runner, state)
        runner.register_message(SETUP, worker.on_setup)
        runner.register_message(WARM, worker.on_warm)
        runner.register_message(STEP, worker.on_step)
        runner.register_message(HALT, worker.on_halt)
        print(f"sv7 swarm: worker {runner.client_id} joined", flush=True)
        reporter = gevent.spawn(worker.report_created)
        try:
            runner.greenlet.join()
        finally:
            reporter.kill()
        if worker.setup is None:
            print(f"sv7 swarm worker: the master at {host}:{port} did not take this worker "
                  "(its steps had begun, or its run ended)", file=sys.stderr,
                  flush=True)  # fmt: skip
            return 1
        if worker.setup:
            print(f"sv7 swarm worker: {worker.setup}", file=sys.stderr, flush=True)
            return 1
        return 0
    except _Stop as exc:
        if runner is not None and worker is not None:
            _leave(env, runner, worker, state)
        return 128 + exc.signum
    except _Refused as exc:
        print(f"sv7 swarm worker: the master at {host}:{port} refused the connection (the "
              f"ZeroMQ handshake failed: {exc}): SV7_SWARM_SECRET must be the same on the "
              "master and on every worker", file=sys.stderr, flush=True)  # fmt: skip
        return 1
    except ConnectionError:  # Locust gave up after its retries (5 minutes)
        print(f"sv7 swarm worker: no master answered at {host}:{port} (is it running, is the "
              "port open?)", file=sys.stderr, flush=True)  # fmt: skip
        return 1
    finally:
        if worker is not None:
            worker.send_created()


def _leave(env: Environment, runner: WorkerRunner, worker: _Worker, state: WorkerState) -> None:
    """A stopped worker: halt the step, report what it created, tell the master, quit."""
    worker.leaving = True
    step = state.step
    if step is not None:
        step.halt.set()
    worker.send_created()
    # Locust's "quit" to the master (its worker runner sends it on this event)
    env.events.quitting.fire(environment=env, reverse=True)  # type: ignore[no-untyped-call]
    runner.quit()


def spawn_workers(args: argparse.Namespace, swarm: SwarmConfig) -> int:
    """``--processes N``: N worker processes of one each, which do not outlive this one."""
    host, port = swarm.master
    argv = [sys.executable, "-m", "igestbench", "swarm", "worker", "--master", f"[{host}]:{port}"
            if ":" in host else f"{host}:{port}", "--processes", "1"]  # fmt: skip
    for flag, value in (("--config", args.config), ("--target", args.target),
                        ("--ca-file", args.ca_file), ("--timeout", args.timeout)):  # fmt: skip
        if value is not None:
            argv += [flag, str(value)]
    if args.insecure:
        argv.append("--insecure")
    argv += ["--parent-pid", str(os.getpid())]
    children = [subprocess.Popen(argv, stdin=subprocess.DEVNULL)
                for _ in range(swarm.processes)]  # fmt: skip
    stopped: list[int] = []

    def forward(signum: int) -> None:
        stopped.append(signum)
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    on_stop_signals(forward)
    codes = [child.wait() for child in children]
    if stopped:
        return 128 + stopped[0]
    return max(codes, default=0)
