"""A worker of ``sv7 swarm``: joins the master, runs its share of each step, reports histograms.

The worker reads its own target and credentials (``--target``, ``SV7_*``, ``sv7.toml``) and
refuses a master whose target is another catalogue: credentials go only where this host's own
configuration says. Each step is the schedule of ``sv7 run``'s sweep at this worker's share of
the rate, taken slot by slot by its Locust users (:mod:`igestbench.swarm.users`); when the step
has ended (schedule over, answers drained) the worker summarises it exactly as ``sv7 run``'s
sweep does and sends the result to the master. What it creates is sent to the master as it goes
(every :data:`CREATED_EVERY_S`), for the run's journal.

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
from igestbench.measure.schedule import StepSchedule, summarize_step, weighted_cycle
from igestbench.run.stopping import STOP_SIGNALS, die_with_parent
from igestbench.swarm.command import SwarmConfig
from igestbench.swarm.messages import (
    CREATED,
    HALT,
    READY,
    SETUP,
    STEP,
    STEP_DONE,
    StepOrder,
    StepReport,
)
from igestbench.swarm.users import SwarmUser, WorkerState
from igestbench.swarm.workload import login_factory, operations, targets_from_wire
from igestbench.workloads import Journal

__all__ = ["run_worker", "spawn_workers"]

CREATED_EVERY_S = 0.5
#: A call sent later than this after its slot counts as late (as in sv7 run's sweep).
TOLERANCE_NS = 10_000_000


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
            factory().close()  # one login now: a refused account is said at the setup
            ops, weights = operations(
                str(data["workload"]), targets_from_wire(data["targets"]), self.journal,
                mix=data["mix"], batch_size=int(data["batch_size"]),
                prefix=f"swarm-{secrets.token_hex(4)}",
            )  # fmt: skip
            self.state.ops = [(name, ops[name]) for name in weighted_cycle(weights)]
            self.drain_s = float(data["drain_s"])
            self.state.factory = factory
            answer["ok"] = True
        except Exception as exc:  # said to the master, which records it and goes on
            answer.update(ok=False, error=redaction.scrub(str(exc)) or type(exc).__name__)
        self.runner.send_message(READY, answer)

    def on_step(self, environment: Environment, msg: Any, **_: Any) -> None:
        gevent.spawn(self._run_step, StepOrder.from_wire(msg.data))

    def on_halt(self, environment: Environment, msg: Any, **_: Any) -> None:
        step = self.state.step
        if step is not None:
            step.halt.set()

    def _run_step(self, order: StepOrder) -> None:
        state = self.state
        step = StepSchedule(order.rate, order.warmup_s + order.duration_s, state.ops)
        step.t0 = state.clock() + int(order.lead_s * 1e9)
        me = psutil.Process()
        cpu_before, wall_before = sum(me.cpu_times()[:2]), time.monotonic()
        state.step = step
        state.running.set()
        end_s = (step.t0 + step.total_ns - state.clock()) / 1e9
        step.halt.wait(max(0.0, end_s))
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
        report = StepReport(order.index, result, round(cpu, 1), len(step.calls))
        self.runner.send_message(STEP_DONE, report.to_wire())

    def send_created(self) -> None:
        entries = self.journal.entries[self.reported :]
        if entries:
            self.reported += len(entries)
            self.runner.send_message(CREATED, {"entries": [list(e) for e in entries]})

    def report_created(self) -> None:
        while True:
            gevent.sleep(CREATED_EVERY_S)
            self.send_created()


def run_worker(run: RunConfig, swarm: SwarmConfig) -> int:
    """One worker process: until the master quits it, or a signal does."""
    assert run.credentials is not None
    if swarm.parent_pid is not None:  # started by --processes: never outlive the parent
        die_with_parent(swarm.parent_pid)
    redaction.remember(run.credentials.password)
    state = WorkerState()
    SwarmUser.state = state
    env = Environment(user_classes=[SwarmUser], events=events)
    host, port = swarm.master
    runner = env.create_worker_runner(master_host=host, master_port=port)
    worker = _Worker(run, runner, state)
    runner.register_message(SETUP, worker.on_setup)
    runner.register_message(STEP, worker.on_step)
    runner.register_message(HALT, worker.on_halt)
    reporter = gevent.spawn(worker.report_created)
    stopped: list[int] = []

    def stop(signum: int) -> None:
        stopped.append(signum)
        step = state.step
        if step is not None:
            step.halt.set()
        worker.send_created()
        runner.quit()  # tells the master this worker left

    for signum in STOP_SIGNALS.values():
        gevent.signal_handler(signum, stop, signum)
    print(f"sv7 swarm: worker {runner.client_id} connecting to {host}:{port}", flush=True)
    try:
        runner.greenlet.join()
    finally:
        worker.send_created()
        reporter.kill()
    return 128 + stopped[0] if stopped else 0


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
                child.send_signal(signal.SIGTERM)

    for signum in STOP_SIGNALS.values():
        gevent.signal_handler(signum, forward, signum)
    codes = [child.wait() for child in children]
    if stopped:
        return 128 + stopped[0]
    return max(codes, default=0)
