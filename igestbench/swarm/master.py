"""The master of ``sv7 swarm``: prepares, steps the demanded rate over the workers, writes one file.

The order of a run, as ``sv7 run``'s: probe the target, open the result file, start the journal
before anything is created, ingest the few objects to look up (under the run tag), then wait for
the workers on Locust's master runner (bound to loopback unless told otherwise), set them up,
spawn their users and run the steps. Each step's total demanded rate is split evenly over the
workers still there; each worker reports its step's histograms (corrected and uncorrected),
which are merged by addition. A worker that stops sending heartbeats, or quits, is recorded as
lost (with the step it was lost in, whose calls of it are missing from that step) and the run
goes on with the others. At the end — and on SIGINT, SIGTERM or SIGHUP — the workers are told
to quit and everything journaled is removed, as ``sv7 run`` does.
"""

from __future__ import annotations

import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.runners import STATE_MISSING, STATE_RUNNING, MasterRunner

from igestbench import redaction
from igestbench.client import ClientConfig, TransportFailure
from igestbench.config import RunConfig
from igestbench.errors import Sv7Error
from igestbench.measure.sweep import (
    StepResult,
    SweepConfig,
    SweepResult,
    step_failure,
    sustained_rate,
    sweep_rates,
)
from igestbench.results import ResultWriter
from igestbench.run.benchmarks import finite
from igestbench.run.cleanup import RunJournal
from igestbench.run.probe import host_facts, probe
from igestbench.run.runner import Target
from igestbench.run.stopping import STOP_SIGNALS, Stopped
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
    merge_parallel,
)
from igestbench.swarm.users import SwarmUser
from igestbench.swarm.workload import login_factory, prepare, targets_to_wire
from igestbench.workloads import Journal, RunTag

__all__ = ["SWARM_VERSION", "Master"]

#: The version of the ``sweeps[].swarm`` section (an additive key of result format 2).
SWARM_VERSION = 1
#: Seconds a worker may take to log in and answer the setup.
SETUP_WAIT_S = 60.0
#: Seconds after a step's drain before a silent worker is given up (heartbeats say sooner).
REPORT_MARGIN_S = 10.0
DRAIN_S = 5.0
POLL_S = 0.05


class _Inbox:
    """What the workers said, filled by Locust's message handlers (greenlets of the runner)."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.ready: dict[str, dict[str, Any]] = {}
        self.reports: dict[int, dict[str, StepReport]] = {}
        self.created = 0

    def on_ready(self, environment: Environment, msg: Any, **_: Any) -> None:
        self.ready[msg.node_id] = dict(msg.data)

    def on_created(self, environment: Environment, msg: Any, **_: Any) -> None:
        # appended to the run's journal file at once: a kill -9 of the master leaves it there
        # for sv7 cleanup (the lines are short, the file is opened for append per batch)
        by_entity: dict[str, list[int]] = {}
        for entity, obj_id in msg.data["entries"]:
            by_entity.setdefault(str(entity), []).append(int(obj_id))
        for entity, ids in by_entity.items():
            self.journal.add_many(entity, ids)
            self.created += len(ids)

    def on_step_done(self, environment: Environment, msg: Any, **_: Any) -> None:
        report = StepReport.from_wire(msg.data)
        self.reports.setdefault(report.index, {})[msg.node_id] = report


class Master:
    def __init__(self, config: RunConfig, swarm: SwarmConfig) -> None:
        self.config = config
        self.swarm = swarm
        self.tag = RunTag.new(config.site)
        self.signum: int | None = None
        self.held = False
        self.lost: dict[str, dict[str, Any]] = {}
        self.workers: list[str] = []
        self.summary: list[str] = []

    # --- signals -------------------------------------------------------------------------

    def _signal(self, signum: int) -> None:
        if self.signum is None:
            self.signum = signum
        if self.held:
            name = signal.Signals(signum).name
            print(f"sv7 swarm: {name} received; still cleaning up, please wait", flush=True)

    def _check_stop(self) -> None:
        if self.signum is not None and not self.held:
            raise Stopped(self.signum)

    def _sleep(self, seconds: float) -> None:
        gevent.sleep(seconds)
        self._check_stop()

    # --- the run -------------------------------------------------------------------------

    def run(self) -> int:
        for signum in STOP_SIGNALS.values():
            gevent.signal_handler(signum, self._signal, signum)
        config = self.config
        assert config.target is not None and config.credentials is not None
        creds = config.credentials
        client = ClientConfig(config.target, connect_timeout=min(config.timeout, 10.0),
                              read_timeout=config.timeout, ca_file=config.ca_file,
                              insecure=config.insecure)  # fmt: skip
        target = Target(config.target, creds, client, local=False)
        redaction.remember(creds.password)
        target_section, probe_section = probe(client)
        target_section["local"] = False
        writer = ResultWriter(
            config.out,
            run={"id": self.tag.run_id, "tag": self.tag.name, "site": config.site,
                 "parts": ["sweep"], "flavours": ["lean"],
                 "concurrency": [self.swarm.users * self.swarm.expect_workers],
                 "options": config.public(), "mode": "swarm"},
            target=target_section, environment=host_facts(), secrets=[creds.password],
            compress=config.gzip,
        )  # fmt: skip
        journal = RunJournal(writer.path, self.tag)
        print(f"result file: {writer.path}", flush=True)
        status, code = "complete", 0
        runner: MasterRunner | None = None
        try:
            writer.set_section("probe", probe_section)
            target_section["api_version"] = target.login_version()
            writer.set_section("target", target_section)
            journal.start(target, target_section["api_version"])
            writer.set_run("journal", str(journal.path))
            run_journal = Journal(journal.path, self.tag.name)
            with tempfile.TemporaryDirectory(prefix="sv7-swarm-") as tmp:
                targets = prepare(login_factory(client, creds), run_journal, self.tag.name,
                                  Path(tmp))  # fmt: skip
            self._check_stop()
            inbox = _Inbox(Journal(journal.path))
            runner = self._start_locust(inbox)
            self._await_workers(runner)
            self._set_up(runner, inbox, targets, target_section["url"])
            entry = self._sweep(runner, inbox)
            writer.append("sweeps", entry)
            for lost in self.lost.values():
                writer.append("notes", _lost_note(lost))
            self._check_stop()  # a signal during the steps: stopped after writing them
        except Stopped:
            status, code = "interrupted", 128 + (self.signum or signal.SIGINT)
            writer.append("notes", f"interrupted ({signal.Signals(code - 128).name}); "
                          "the workers were told to stop and the run cleaned up")  # fmt: skip
        except (Sv7Error, TransportFailure) as exc:
            status, code = "failed", 1
            writer.append("notes", f"run stopped: {exc}")
            self.summary.append(f"the run stopped: {exc}")
        finally:
            self.held = True  # from here a signal is noted, not raised: the cleanup must finish
            if runner is not None:
                _quit(runner)
            if journal.started:
                section = journal.finish(target)
                writer.set_section("cleanup", section)
                if section.get("journal"):
                    self.summary.append(
                        f"not everything could be cleaned up; journal kept: "
                        f"{section['journal']} (sv7 cleanup finishes the job)"
                    )
            if self.signum is not None and status != "interrupted":
                status, code = "interrupted", 128 + self.signum
            path = writer.finish(status)
        for line in self.summary:
            print(f"sv7 swarm: {line}", flush=True)
        print(f"result file: {path}", flush=True)
        return code

    def _start_locust(self, inbox: _Inbox) -> MasterRunner:
        env = Environment(user_classes=[SwarmUser], events=events)
        host, port = self.swarm.bind
        runner = env.create_master_runner(master_bind_host=host, master_bind_port=port)
        runner.register_message(READY, inbox.on_ready)
        runner.register_message(CREATED, inbox.on_created)
        runner.register_message(STEP_DONE, inbox.on_step_done)
        print(f"sv7 swarm: master listening on {host}:{port}; waiting for "
              f"{self.swarm.expect_workers} worker(s)", flush=True)  # fmt: skip
        return runner

    def _await_workers(self, runner: MasterRunner) -> None:
        deadline = time.monotonic() + self.swarm.wait_workers_s
        while len(runner.clients.ready) < self.swarm.expect_workers:
            if time.monotonic() > deadline:
                raise Sv7Error(
                    f"only {len(runner.clients.ready)} of {self.swarm.expect_workers} worker(s) "
                    f"joined within {self.swarm.wait_workers_s:g} s (start them with sv7 swarm "
                    f"worker --master {self.swarm.bind[0]}:{self.swarm.bind[1]})"
                )
            self._sleep(POLL_S * 4)
        self.workers = [node.id for node in runner.clients.ready]

    def _set_up(self, runner: MasterRunner, inbox: _Inbox, targets: Any, url: str) -> None:
        setup = {"tag": self.tag.name, "target": url, "targets": targets_to_wire(targets),
                 "workload": self.swarm.workload, "mix": dict(self.config.mix),
                 "batch_size": self.config.batch_size, "drain_s": DRAIN_S}  # fmt: skip
        for worker in self.workers:
            runner.send_message(SETUP, setup, client_id=worker)
        deadline = time.monotonic() + SETUP_WAIT_S
        while any(w not in inbox.ready for w in self.workers) and time.monotonic() < deadline:
            self._sleep(POLL_S)
        for worker in self.workers:
            answer = inbox.ready.get(worker, {"ok": False, "error": "no answer to the setup"})
            if not answer.get("ok"):
                self.lost[worker] = {
                    "worker": worker,
                    "host": answer.get("host"),
                    "when": "setup",
                    "reason": str(answer.get("error")),
                }
        self.workers = [w for w in self.workers if w not in self.lost]
        if not self.workers:
            reasons = "; ".join(sorted({str(x["reason"]) for x in self.lost.values()}))
            raise Sv7Error(f"no worker could set up: {reasons}")
        users = self.swarm.users * len(runner.clients.ready)
        runner.start(users, spawn_rate=max(users, 1) * 10.0)
        deadline = time.monotonic() + 10.0
        while runner.state != STATE_RUNNING and time.monotonic() < deadline:
            self._sleep(POLL_S)

    def _gone(self, runner: MasterRunner, worker: str) -> str | None:
        node = runner.clients.get(worker)
        if node is None:
            return "quit"
        if node.state == STATE_MISSING:
            return "no heartbeat"
        return None

    def _step(self, runner: MasterRunner, inbox: _Inbox, index: int, rate: float) -> list[str]:
        """Run step ``index`` at ``rate`` in total; the workers that reported it."""
        live = [w for w in self.workers if w not in self.lost]
        config = self.config
        order = StepOrder(index, rate / len(live), config.duration, config.warmup)
        for worker in live:
            runner.send_message(STEP, order.to_wire(), client_id=worker)
        wait = order.lead_s + order.warmup_s + order.duration_s + DRAIN_S + REPORT_MARGIN_S
        deadline = time.monotonic() + wait
        while True:
            reported = inbox.reports.get(index, {})
            pending = [w for w in live if w not in reported]
            for worker in pending:
                why = self._gone(runner, worker) or (
                    "no report in time" if time.monotonic() > deadline else None
                )
                if why is not None:
                    node_host = inbox.ready.get(worker, {}).get("host")
                    self.lost[worker] = {"worker": worker, "host": node_host, "when": "step",
                                         "rate": rate, "reason": why}  # fmt: skip
            if all(w in reported or w in self.lost for w in live):
                return [w for w in live if w in reported]
            try:
                self._sleep(POLL_S)
            except Stopped:
                for worker in live:
                    runner.send_message(HALT, None, client_id=worker)
                raise

    def _sweep(self, runner: MasterRunner, inbox: _Inbox) -> dict[str, Any]:
        config, swarm = self.config, self.swarm
        rates = swarm.rates
        settings = SweepConfig(
            slo_ms=config.slo_ms, max_rate=max(rates) if rates else config.max_rate,
            rates=rates, start_rate=min(10.0, config.max_rate), step_s=config.duration,
            warmup_s=config.warmup, flavour="lean",
        )  # fmt: skip
        steps: list[StepResult] = []
        reporters: list[list[str]] = []
        #: steps in which a worker was lost: their figures miss its calls, so they cannot
        #: show the rate as sustained
        incomplete: set[int] = set()
        stopped: str | None = None
        for index, rate in enumerate(sweep_rates(settings)):
            if not [w for w in self.workers if w not in self.lost]:
                stopped = f"every worker was lost before the step at {rate:g}/s"
                break
            print(f"sv7 swarm: step {index + 1} at {rate:g}/s", flush=True)
            try:
                reported = self._step(runner, inbox, index, rate)
            except Stopped:  # the steps so far are written; run() then stops with cleanup
                stopped = f"stopped during the step at {rate:g}/s"
                break
            if not reported:
                stopped = f"no worker reported the step at {rate:g}/s"
                break
            step = merge_parallel([inbox.reports[index][w].step for w in reported], rate)
            steps.append(step)
            reporters.append(reported)
            if any(x.get("rate") == rate for x in self.lost.values()):
                incomplete.add(len(steps) - 1)
            stopped = step_failure(step, config.slo_ms)
            if stopped is not None:
                break
        result = SweepResult(
            flavour="lean",
            slo_ms=config.slo_ms,
            connection_mode="persistent",
            steps=tuple(steps),
            sustained_rate=sustained_rate(
                [s for i, s in enumerate(steps) if i not in incomplete], config.slo_ms
            ),
            stopped=stopped,
        )
        entry = result.to_dict()
        for i, (step_entry, step) in enumerate(zip(entry["steps"], result.steps, strict=True)):
            step_entry.update(_step_extras(step, len(reporters[i])))
            step_entry["lost_workers"] = sum(
                1 for x in self.lost.values() if x.get("rate") == step.demanded_rate
            )
        if stopped is not None:
            entry["stopped"] = stopped
        entry["swarm"] = self._swarm_section(inbox, reporters)
        figures: dict[str, Any] = finite(entry)
        return figures

    def _swarm_section(self, inbox: _Inbox, reporters: list[list[str]]) -> dict[str, Any]:
        joined = [*self.workers, *(w for w in self.lost if w not in self.workers)]
        hosts = {inbox.ready.get(w, {}).get("host") or w.rsplit("_", 1)[0] for w in joined}
        per_worker = []
        for worker in joined:
            steps = []
            for index, reported in enumerate(reporters):
                if worker in reported:
                    report = inbox.reports[index][worker]
                    steps.append({"index": index, "rate": report.step.demanded_rate,
                                  "sent": report.step.sent, "cpu_percent": report.cpu_percent,
                                  "users": report.users,
                                  "histogram": report.step.corrected.encode()})  # fmt: skip
            info = inbox.ready.get(worker, {})
            per_worker.append({"id": worker, "host": info.get("host"), "pid": info.get("pid"),
                               "steps": steps})  # fmt: skip
        return {
            "version": SWARM_VERSION,
            "workload": self.swarm.workload,
            "workers": len(joined),
            "hosts": len(hosts),
            "users_per_worker": self.swarm.users,
            "engine": "locust",
            "lost": list(self.lost.values()),
            "created": inbox.created,
            "per_worker": per_worker,
        }


def _step_extras(step: StepResult, workers: int) -> dict[str, Any]:
    """What a swarm step adds to a sweep step: workers, per-op figures, the scheduler's
    lateness and the merged histograms themselves (so another tool can merge them again)."""
    return {
        "workers": workers,
        "lateness_ms": step.lateness.summary(),
        "histograms": {"corrected": step.corrected.encode(),
                       "uncorrected": step.uncorrected.encode()},
        "ops": {name: {"count": op.count, "ok": op.ok, "success_rate": op.success_rate,
                       "errors": dict(op.errors), "latency_ms": op.latency.summary()}
                for name, op in sorted(step.ops.items())},
    }  # fmt: skip


def _lost_note(lost: dict[str, Any]) -> str:
    where = f" on {lost['host']}" if lost.get("host") else ""
    if lost["when"] == "setup":
        return f"worker {lost['worker']}{where} did not set up: {lost['reason']}"
    return (f"worker {lost['worker']}{where} was lost during the step at {lost['rate']:g}/s "
            f"({lost['reason']}); its calls of that step are not in the figures")  # fmt: skip


def _quit(runner: MasterRunner) -> None:
    """Tell every worker to stop its step and quit, then close the master's sockets."""
    try:
        runner.send_message(HALT, None)
        runner.quit()
    except Exception:  # a broken connection must not keep the cleanup from running
        pass
