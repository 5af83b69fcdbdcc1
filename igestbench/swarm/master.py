"""The master of ``sv7 swarm``: prepares, steps the demanded rate over the workers, writes one file.

The order of a run, as ``sv7 run``'s: probe the target, open the result file, start the journal
before anything is created, listen for workers on Locust's master runner (bound to loopback
unless a secret lets workers prove who they are: :mod:`igestbench.swarm.secure`), ingest the few
objects to look up (under the run tag), wait for the workers, set them up, spawn their users
(the cap: each worker activates what its share needs) and run the steps. Each step's total
demanded rate is split evenly over the workers still there; each worker reports its step's
histograms (corrected and uncorrected), which are merged by addition; a line per step and the
sweep's outcome are printed (:mod:`igestbench.swarm.summary`). A worker that stops sending
heartbeats, or quits, is recorded as lost (with the step it was lost in, whose calls of it are
missing from that step) and the run goes on with the others; one that joins after the steps
began is told to quit. A message that is not a worker's is dropped with one log line and
counted. At the end — and on SIGINT, SIGTERM or SIGHUP in any phase, within seconds — the
workers are told to quit and everything journaled is removed, as ``sv7 run`` does.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gevent
from locust import events
from locust.env import Environment
from locust.exception import RPCError
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
from igestbench.results.format import ResultFileError
from igestbench.run import interfaces
from igestbench.run.benchmarks import finite
from igestbench.run.cleanup import RunJournal
from igestbench.run.probe import host_facts, probe
from igestbench.run.runner import EXIT_WRITE, Target
from igestbench.run.stopping import Stopped
from igestbench.swarm import record, secure, summary
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
    WARMUP_INDEX,
    StepOrder,
    StepReport,
    merge_parallel,
)
from igestbench.swarm.signals import on_stop_signals, raise_in_main
from igestbench.swarm.users import SwarmUser
from igestbench.swarm.workload import login_factory, prepare, targets_to_wire
from igestbench.workloads import Journal, RunTag
from igestbench.workloads.journal_io import JournalWriteError

__all__ = ["Master"]

#: Seconds a worker may take to log in and answer the setup.
SETUP_WAIT_S = 60.0
#: Seconds after a step's drain before a silent worker is given up (heartbeats say sooner).
REPORT_MARGIN_S = 10.0
DRAIN_S = 5.0
POLL_S = 0.05


class _Inbox:
    """What the workers said, filled by Locust's message handlers (greenlets of the runner).
    Only the workers of the run are heard: another node's sv7 message is dropped."""

    def __init__(self, journal: Journal, refusals: secure.Refusals) -> None:
        self.journal = journal
        self.refusals = refusals
        #: the nodes set up (READY is heard from these) and those measuring (the rest too)
        self.invited: set[str] = set()
        self.members: set[str] = set()
        self.ready: dict[str, dict[str, Any]] = {}
        #: each worker's answer to the warm-up's logins (sv7-warm-done)
        self.warm: dict[str, dict[str, Any]] = {}
        self.reports: dict[int, dict[str, StepReport]] = {}
        self.created = 0
        #: the first journal write that failed (a greenlet cannot stop the run: _sweep does)
        self.write_error: JournalWriteError | None = None

    def _heard(self, msg: Any, among: set[str]) -> bool:
        if msg.node_id in among:
            return True
        self.refusals.message(str(msg.node_id).encode(), f"{msg.type}: not a worker of this run")
        return False

    def on_ready(self, environment: Environment, msg: Any, **_: Any) -> None:
        if self._heard(msg, self.invited):
            self.ready[msg.node_id] = dict(msg.data)

    def on_warm_done(self, environment: Environment, msg: Any, **_: Any) -> None:
        if self._heard(msg, self.members):
            self.warm[msg.node_id] = dict(msg.data)

    def on_created(self, environment: Environment, msg: Any, **_: Any) -> None:
        # appended to the run's journal file at once: a kill -9 of the master leaves it there
        # for sv7 cleanup (the lines are short, the file is opened for append per batch)
        if not self._heard(msg, self.members):
            return
        by_entity: dict[str, list[int]] = {}
        for entity, obj_id in msg.data["entries"]:
            by_entity.setdefault(str(entity), []).append(int(obj_id))
        for entity, ids in by_entity.items():
            try:
                self.journal.add_many(entity, ids)
            except JournalWriteError as exc:  # a full disk: the run stops after the step
                self.write_error = self.write_error or exc
            self.created += len(ids)

    def on_step_done(self, environment: Environment, msg: Any, **_: Any) -> None:
        if self._heard(msg, self.members):
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
        #: False once the workers of the run are known: a later one is told to quit
        self.admitting = True
        self.refusals = secure.Refusals()
        self.summary: list[str] = []

    # --- signals -------------------------------------------------------------------------

    def _signal(self, signum: int) -> None:
        if self.signum is None:
            self.signum = signum
            if not self.held:
                # ends whatever the run waits on, at once (unless the cleanup has begun by then)
                raise_in_main(Stopped(signum), still=lambda: not self.held)
                return
        name = signal.Signals(signum).name
        print(f"sv7 swarm: {name} received; still cleaning up, please wait", flush=True)

    def _sleep(self, seconds: float) -> None:
        gevent.sleep(seconds)

    def _admit(self, node: str, addr: str) -> bool:
        if self.admitting or node in self.workers:
            return True
        self.refusals.late(node)
        return False

    # --- the run -------------------------------------------------------------------------

    def run(self) -> int:
        on_stop_signals(self._signal)
        try:
            return self._run()
        except Stopped as exc:  # before the result file: nothing was created
            name = signal.Signals(exc.signum).name
            print(f"sv7 swarm: interrupted ({name}) before anything was created", flush=True)
            return 128 + exc.signum

    def _run(self) -> int:
        config, swarm = self.config, self.swarm
        assert config.target is not None and config.credentials is not None
        creds = config.credentials
        client = ClientConfig(config.target, connect_timeout=min(config.timeout, 10.0),
                              read_timeout=config.timeout, ca_file=config.ca_file,
                              insecure=config.insecure)  # fmt: skip
        target = Target(config.target, creds, client, local=False)
        redaction.remember(creds.password)
        if swarm.secret is not None:
            redaction.remember(swarm.secret.value)
        target_section, probe_section = probe(client)
        target_section["local"] = False
        writer = ResultWriter(
            config.out, run=record.run_section(self.tag, config, swarm), target=target_section,
            environment=host_facts(), compress=config.gzip,
            secrets=[creds.password, *([swarm.secret.value] if swarm.secret else [])],
        )  # fmt: skip
        journal = RunJournal(writer.path, self.tag)
        status, code = "complete", 0
        runner: MasterRunner | None = None
        try:
            print(f"result file: {writer.path}", flush=True)
            writer.set_section("probe", probe_section)
            target_section["api_version"] = target.login_version()
            choice = record.interface_choice(target_section["api_version"],
                                             interfaces.probe_rest(client))  # fmt: skip
            target_section["interfaces"] = choice.to_dict()
            writer.set_section("target", target_section)
            journal.start(target, target_section["api_version"])
            writer.set_run("journal", str(journal.path))
            writer.set_run("server_clock", journal.server_clock)  # where it came from
            inbox = _Inbox(Journal(journal.path), self.refusals)
            runner = self._start_locust(inbox)  # before anything is created: a busy port
            with tempfile.TemporaryDirectory(prefix="sv7-swarm-") as tmp:
                targets = prepare(login_factory(client, creds), Journal(journal.path,
                                  self.tag.name), self.tag.name, Path(tmp))  # fmt: skip
            self._await_workers(runner)
            self._set_up(runner, inbox, targets, target_section["url"])
            self._sweep(runner, inbox, writer)
        except Stopped:
            status, code = "interrupted", 128 + (self.signum or signal.SIGINT)
        except (ResultFileError, JournalWriteError) as exc:
            # a full disk, a quota: stop now; the cleanup below needs no file
            status, code = "failed", EXIT_WRITE
            self.summary.append(f"the run stopped: {exc}; it cleans up by what it holds in "
                                "memory, not by the journal file")  # fmt: skip
            self._note(writer, f"run stopped: {exc}")
        except (Sv7Error, TransportFailure) as exc:
            status, code = "failed", 1
            self._note(writer, f"run stopped: {exc}")
            self.summary.append(f"the run stopped: {exc}")
        finally:
            self.held = True  # from here a signal is noted, not raised: the cleanup must finish
            if runner is not None:
                _quit(runner)
            # the cleanup first: a write that fails below must not cost it
            section = journal.finish(target) if journal.started else None
            if section is not None and section.get("journal"):
                self.summary.append(
                    f"not everything could be cleaned up; journal kept: "
                    f"{section['journal']} (sv7 cleanup finishes the job)"
                )
            said = None
            if self.signum is not None:  # also one that came during the cleanup
                status, code = "interrupted", 128 + self.signum
                said = (f"interrupted ({signal.Signals(self.signum).name}); the workers were "
                        "told to stop and the run cleaned up")  # fmt: skip
                self.summary.append(said)
            path = self._finish(writer, status, section, said)
            if path is None:
                code = code if status == "interrupted" else EXIT_WRITE
                path = writer.path
        for line in self.summary:
            print(f"sv7 swarm: {line}", flush=True)
        print(f"result file: {path}", flush=True)
        return code

    def _note(self, writer: ResultWriter, note: str) -> None:
        """A note while the run stops: a failed write of it is reported when the file is
        finished, and never keeps the run from cleaning up."""
        with contextlib.suppress(ResultFileError):
            writer.append("notes", note)

    def _finish(self, writer: ResultWriter, status: str, cleanup: dict[str, Any] | None,
                said: str | None) -> Path | None:  # fmt: skip
        """The last writes of the result file; None when they failed (said in the summary)."""
        try:
            for lost in self.lost.values():
                writer.append("notes", record.lost_note(lost))
            refused = self.refusals.summary()
            if refused is not None:
                writer.append("notes", refused)
            if cleanup is not None:
                writer.set_section("cleanup", cleanup)
            if said is not None:
                writer.append("notes", said)
            return writer.finish(status)
        except ResultFileError as exc:
            self.summary.append(f"the result file could not be finished: {exc} (it holds the "
                                "run as of its last complete write)")  # fmt: skip
            return None

    def _start_locust(self, inbox: _Inbox) -> MasterRunner:
        swarm = self.swarm
        # Locust warns when its master spreads users faster than 100/s per worker, as after a
        # worker is lost (the users it keeps in reserve are idle: nothing ramps up)
        logging.getLogger("locust.runners").addFilter(_NoSpawnRateWarning())
        keys = secure.curve_keys(swarm.secret.value) if swarm.secret is not None else None
        secure.install(keys, self.refusals, gate=self._admit)
        env = Environment(user_classes=[SwarmUser], events=events)
        host, port = swarm.bind
        try:
            runner = env.create_master_runner(master_bind_host=host, master_bind_port=port)
        except (RPCError, SystemExit) as exc:  # Locust exits when the port is taken
            why = str(exc) if isinstance(exc, RPCError) else "the port is in use"
            raise Sv7Error(f"cannot listen on {host}:{port} for the workers ({why}); choose "
                           "another with --bind") from None  # fmt: skip
        runner.register_message(READY, inbox.on_ready)
        runner.register_message(CREATED, inbox.on_created)
        runner.register_message(STEP_DONE, inbox.on_step_done)
        runner.register_message(WARM_DONE, inbox.on_warm_done)
        how = ("workers must prove the swarm's secret: CURVE" if keys is not None
               else "no secret: loopback only")  # fmt: skip
        print(f"sv7 swarm: master listening on {host}:{port} ({how}); waiting for "
              f"{swarm.expect_workers} worker(s)", flush=True)  # fmt: skip
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
        self.admitting = False

    def _set_up(self, runner: MasterRunner, inbox: _Inbox, targets: Any, url: str) -> None:
        setup = {"tag": self.tag.name, "target": url, "targets": targets_to_wire(targets),
                 "workload": self.swarm.workload, "mix": dict(self.config.mix),
                 "batch_size": self.config.batch_size, "drain_s": DRAIN_S,
                 "users": self.swarm.users}  # fmt: skip
        inbox.invited.update(self.workers)
        # one worker after another: each logs in to set up, and logins at once can hold a
        # real ICAT (Payara's request threads all waiting on the authenticator) for 30 s
        for worker in self.workers:
            runner.send_message(SETUP, setup, client_id=worker)
            self._answer_of(runner, worker, inbox.ready, "no answer to the setup")
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
        inbox.members.update(self.workers)
        # the cap of users on every worker; each activates what its share needs (spawned at the
        # highest rate Locust accepts without a warning: 100 per worker and second)
        workers = len(runner.clients.ready)
        runner.start(self.swarm.users * workers, spawn_rate=100.0 * workers)
        deadline = time.monotonic() + 10.0 + self.swarm.users / 100.0
        while runner.state != STATE_RUNNING and time.monotonic() < deadline:
            self._sleep(POLL_S)

    def _answer_of(self, runner: MasterRunner, worker: str, answers: Mapping[str, Any],
                   unanswered: str) -> str | None:  # fmt: skip
        """Wait (up to :data:`SETUP_WAIT_S`) for ``worker``'s answer to land in ``answers``:
        None once it did, else why not (it left, or ``unanswered``). The workers are asked one
        after another with this: each logs in, and logins at once can hold a real ICAT."""
        deadline = time.monotonic() + SETUP_WAIT_S
        while worker not in answers:
            why = self._gone(runner, worker) or (
                unanswered if time.monotonic() > deadline else None)  # fmt: skip
            if why is not None:
                return why
            self._sleep(POLL_S)
        return None

    def _gone(self, runner: MasterRunner, worker: str) -> str | None:
        node = runner.clients.get(worker)
        if node is None:
            return "quit"
        if node.state == STATE_MISSING:
            return "no heartbeat"
        return None

    def _warm_up(self, runner: MasterRunner, inbox: _Inbox, rate: float) -> dict[str, Any]:
        """Before the first step, counted in no figure: each worker in turn logs in the users
        its share of ``rate`` needs (one after another: a worker's are, and the next worker
        begins when it is done), then every worker runs ``rate``'s schedule for ``--warmup``
        seconds, and at least until each user had a call; what it did, for the file
        (``sweeps[].warmup``, as ``sv7 run``'s sweep writes it)."""
        live = [w for w in self.workers if w not in self.lost]
        share = rate / len(live)
        for worker in live:
            runner.send_message(WARM, {"rate": share}, client_id=worker)
            why = self._answer_of(runner, worker, inbox.warm, "no answer to the warm-up's logins")
            if why is not None:
                self.lost[worker] = {"worker": worker, "when": "warm-up", "rate": rate,
                                     "host": inbox.ready.get(worker, {}).get("host"),
                                     "reason": why}  # fmt: skip
        answers = [inbox.warm[w] for w in live if w in inbox.warm and w not in self.lost]
        seconds = max([self.config.warmup, *(float(a["min_s"]) for a in answers)])
        reported = self._step(runner, inbox, WARMUP_INDEX, rate, seconds, 0.0,
                              when="warm-up") if answers else []  # fmt: skip
        calls = sum(inbox.reports[WARMUP_INDEX][w].step.sent for w in reported)
        return {"rate": rate, "seconds": round(seconds, 3), "workers": len(answers),
                "clients": sum(int(a["clients"]) for a in answers), "calls": calls}

    def _step(self, runner: MasterRunner, inbox: _Inbox, index: int, rate: float,
              duration_s: float | None = None, warmup_s: float | None = None,
              when: str = "step") -> list[str]:  # fmt: skip
        """Run step ``index`` at ``rate`` in total (for ``--duration`` after ``--warmup``
        unless said); the workers that reported it."""
        live = [w for w in self.workers if w not in self.lost]
        config = self.config
        order = StepOrder(index, rate / len(live),
                          config.duration if duration_s is None else duration_s,
                          config.warmup if warmup_s is None else warmup_s)  # fmt: skip
        for worker in live:
            runner.send_message(STEP, order.to_wire(), client_id=worker)
        wait = order.lead_s + order.warmup_s + order.duration_s + DRAIN_S + REPORT_MARGIN_S
        deadline = time.monotonic() + wait
        try:
            while True:
                reported = inbox.reports.get(index, {})
                for worker in [w for w in live if w not in reported]:
                    why = self._gone(runner, worker) or (
                        "no report in time" if time.monotonic() > deadline else None
                    )
                    if why is not None:
                        node_host = inbox.ready.get(worker, {}).get("host")
                        self.lost[worker] = {"worker": worker, "host": node_host,
                                             "when": when, "rate": rate,
                                             "reason": why}  # fmt: skip
                if all(w in reported or w in self.lost for w in live):
                    # a worker lost in the step (it quit after its report of a cut step, say)
                    # is not in its figures: the step is marked as missing its calls
                    return [w for w in live if w in reported and w not in self.lost]
                self._sleep(POLL_S)
        except Stopped:
            for worker in live:
                runner.send_message(HALT, None, client_id=worker)
            raise

    def _sweep(self, runner: MasterRunner, inbox: _Inbox, writer: ResultWriter) -> None:
        """The steps; the sweep's entry is written when they end, also when a stop ends them
        (Stopped is raised again once the finished steps are in the file)."""
        config, swarm = self.config, self.swarm
        rates = swarm.rates
        settings = SweepConfig(
            slo_ms=config.slo_ms, max_rate=max(rates) if rates else config.max_rate,
            rates=rates, start_rate=min(10.0, config.max_rate), step_s=config.duration,
            warmup_s=config.warmup, flavour=record.FLAVOUR,
        )  # fmt: skip
        planned = sweep_rates(settings)
        steps: list[StepResult] = []
        entries: list[dict[str, Any]] = []
        incomplete: set[int] = set()  # steps that lost a worker: not the sustained rate
        stopped: str | None = None
        interrupted: Stopped | None = None
        warmup: dict[str, Any] | None = None
        if planned:  # the first step must not pay for logins, connections, cold caches
            print(f"sv7 swarm: warm-up at {summary.rate(planned[0])} (not counted): the "
                  "workers log in their users one after another", flush=True)  # fmt: skip
            try:
                warmup = self._warm_up(runner, inbox, planned[0])
            except Stopped as exc:
                stopped = f"interrupted ({signal.Signals(exc.signum).name}) during the warm-up"
                interrupted = exc
                planned = []
            else:
                print(f"sv7 swarm: warm-up done: {warmup['clients']} sessions on "
                      f"{warmup['workers']} worker(s), {warmup['calls']} calls in "
                      f"{warmup['seconds']:g} s, not counted", flush=True)  # fmt: skip
        for index, rate in enumerate(planned):
            if not [w for w in self.workers if w not in self.lost]:
                stopped = f"every worker was lost before the step at {summary.rate(rate)}"
                break
            print(f"sv7 swarm: step {index + 1} of {len(planned)} at "
                  f"{summary.rate(rate)}", flush=True)  # fmt: skip
            try:
                reported = self._step(runner, inbox, index, rate)
            except Stopped as exc:  # the steps so far are written; run() then cleans up
                stopped = (f"interrupted ({signal.Signals(exc.signum).name}) during the step "
                           f"at {summary.rate(rate)}")  # fmt: skip
                interrupted = exc
                break
            if inbox.write_error is not None:
                raise inbox.write_error  # the run's cleanup goes by memory and the server
            if not reported:
                stopped = f"no worker reported the step at {summary.rate(rate)}"
                break
            reports = [inbox.reports[index][w] for w in reported]
            step = merge_parallel([r.step for r in reports], rate)
            steps.append(step)
            entry = finite({**step.to_dict(), **record.step_extras(step, reports)})
            entry["lost_workers"] = sum(1 for x in self.lost.values()
                                        if x.get("when") == "step" and x.get("rate") == rate)
            entries.append(entry)
            if entry["lost_workers"]:
                incomplete.add(len(steps) - 1)
            for line in summary.step_lines(index, entry, config.slo_ms):
                print(f"sv7 swarm: {line}", flush=True)
            stopped = self._stop_after(step, entry)
            if stopped is not None:
                break
        result = SweepResult(
            flavour=record.FLAVOUR, slo_ms=config.slo_ms, connection_mode="persistent",
            steps=tuple(steps), stopped=stopped,
            sustained_rate=sustained_rate(
                [s for i, s in enumerate(steps) if i not in incomplete], config.slo_ms),
            warmup=warmup,
        )  # fmt: skip
        sweep = {**result.to_dict(), "steps": entries, "interface": record.INTERFACE,
                 "stopped": stopped, "swarm": self._swarm_section(inbox, entries)}  # fmt: skip
        writer.append("sweeps", finite(sweep))
        for line in summary.outcome_lines(sweep, record.run_section(self.tag, config, swarm)):
            print(f"sv7 swarm: {line}", flush=True)
        if interrupted is not None:
            raise interrupted

    def _stop_after(self, step: StepResult, entry: dict[str, Any]) -> str | None:
        """Why the sweep ends after this step, or None: a clear failure, or the objective
        broken where the suite's own limit bounded the step (higher rates would only be
        bounded the more; said as the suite's limit, not the catalogue's)."""
        slo = self.config.slo_ms
        limit = record.suite_limit(entry)
        if limit is not None and summary.problem(entry, slo) is not None:
            return summary.bounded_text(step.demanded_rate)
        failure = step_failure(step, slo)
        if failure is not None:
            reason = failure.partition(": ")[2]
            return f"clear failure at {summary.rate(step.demanded_rate)}: {reason}"
        return None

    def _swarm_section(self, inbox: _Inbox, entries: list[dict[str, Any]]) -> dict[str, Any]:
        joined = [*self.workers, *(w for w in self.lost if w not in self.workers)]
        hosts = {inbox.ready.get(w, {}).get("host") or w.rsplit("_", 1)[0] for w in joined}
        per_worker = []
        for worker in joined:
            steps: list[dict[str, Any]] = []
            for index in range(len(entries)):
                report = inbox.reports.get(index, {}).get(worker)
                if report is not None:
                    steps.append({"index": index, "rate": report.step.demanded_rate,
                                  "sent": report.step.sent, "cpu_percent": report.cpu_percent,
                                  "users": report.users, "cap": report.cap,
                                  "capped_s": report.capped_s,
                                  "histogram": report.step.corrected.encode()})  # fmt: skip
            info = inbox.ready.get(worker, {})
            per_worker.append({"id": worker, "host": info.get("host"), "pid": info.get("pid"),
                               "users": max((s["users"] for s in steps), default=0),
                               "steps": steps})  # fmt: skip
        return {
            "version": record.SWARM_VERSION,
            "workload": self.swarm.workload,
            "workers": len(joined),
            "hosts": len(hosts),
            "users_cap_per_worker": self.swarm.users,
            "engine": "locust",
            "authenticated": self.swarm.secret is not None,
            "lost": list(self.lost.values()),
            "created": inbox.created,
            "per_worker": per_worker,
        }


class _NoSpawnRateWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Your selected spawn rate is very high")


#: How long the master's sockets may take to hand the workers their "quit" when they close.
QUIT_LINGER_MS = 1000


def _quit(runner: MasterRunner) -> None:
    """Tell every worker to stop its step and quit, then stop Locust's greenlets and close the
    master's socket. Not Locust's ``quit()``: it waits half a second for final statistics
    (the swarm has none) and for each greenlet to die, seconds a stop cannot spare."""
    with contextlib.suppress(Exception):  # a broken connection must not keep the cleanup
        runner.send_message(HALT, None)
        runner.send_message("quit", None)  # Locust's own: each worker stops and exits
    runner.greenlet.kill(block=False)
    with contextlib.suppress(Exception):
        runner.server.close(linger=QUIT_LINGER_MS)  # type: ignore[no-untyped-call]
