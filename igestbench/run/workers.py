"""Concurrency workers: N processes, each with its own client and session, started on a barrier.

Processes, not threads, because the GIL would otherwise put one client's decoding into another's
latency. Each worker connects and logs in, prepares what its workload needs (untimed), waits at
the barrier with the others, runs the workload, and streams its timing records to the parent —
the one owner that aggregates and writes — in chunks while it runs, then a final outcome.
Everything a worker creates hangs below a Facility of its own, named after the run's tag, and goes
to the journal file it is given (the run's journal, shared with the other workers), so the parent
can clean up after any worker, also one that died. Ctrl-C, SIGTERM and SIGHUP reach the workers
too: each stops, sends what it has, and leaves the cleanup to the parent, which waits
:data:`STOP_GRACE_S` for that and then kills what is left — a worker still starting, or one stuck
in a call — so that the run's cleanup begins within seconds (what a killed worker created is in
the journal, and below its Facility). A worker never outlives its parent
(:func:`~igestbench.run.stopping.die_with_parent`): a runner killed with kill -9 takes its workers
with it within a fraction of a second.

A worker's client is wrapped in an :class:`~igestbench.run.outage.OutageGuard`, which, after a call
nothing answered, polls the target before the next call (bounded) and logs in again; it sends
outages to the parent as they start and end — only when the first poll fails too: a call lost once
while the target answers is that call's error, not an outage. The full cycle and the single-result
queries record the call an outage cut as failed and go on with the next file or lookup. Burst and
multi-query are not resumed — their checks count what one uninterrupted pass made — the worker waits
for the target, so the outage is recorded whole, and ends with an error.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import multiprocessing
import multiprocessing.synchronize
import os
import queue
import signal
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from igestbench import redaction
from igestbench.client import ClientConfig, TransportFailure, connect
from igestbench.client.data_service import connect_data_service
from igestbench.client.repeats import RepeatPolicy
from igestbench.errors import Sv7Error, TransportError
from igestbench.icat.credentials import Credentials
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import get_profile
from igestbench.measure.timing import Recorder, TimingRecord
from igestbench.run.outage import DEFAULT_WAIT_S, Outage, guard
from igestbench.run.stopping import (
    die_with_parent,
    starting_a_process,
    unblock_stop_signals,
    worker_signals,
)
from igestbench.workloads import (
    Journal,
    RunTag,
    WorkloadContext,
    WorkloadResult,
    run_burst,
    run_full_cycle,
    run_multi_query,
    run_single_queries,
)
from igestbench.workloads.ids_ingest import Payload, run_ids_ingest
from igestbench.workloads.ingest import Ingestor

WORKLOADS = ("full-cycle", "single-query", "burst", "multi-query")
#: NeXus files a worker ingests to prepare the workloads other than the full cycle.
PREPARATION_FILES = {"single-query": 3, "burst": 1, "multi-query": 1, "ids": 1}
#: How long workers may take to connect, log in and prepare before the start is called off.
START_TIMEOUT_S = 120.0
STREAM_INTERVAL_S = 0.5
#: After a stop, how long the workers have to send what they have before they are killed.
STOP_GRACE_S = 3.0
#: How long workers that finished their work have to end before they are killed.
END_GRACE_S = 10.0


@dataclass(frozen=True)
class WorkerSpec:
    """Everything one worker process needs (pickled to it; credentials stay in memory)."""

    index: int
    workload: str
    flavour: str
    client: ClientConfig
    credentials: Credentials = field(repr=False)
    tag: RunTag
    journal_path: Path
    profile: str
    #: NeXus files: ingested by the full cycle, or used to prepare the other workloads.
    files: tuple[Path, ...]
    count: int
    batch_size: int
    page_size: int
    #: Seconds to wait for a target that stopped answering before giving up.
    outage_wait: float = DEFAULT_WAIT_S
    #: The parent's log level (--debug), taken when the spec is made: a spawned worker inherits
    #: no logging, so it sets up its own, with the same redaction of secrets.
    log_level: int = field(default_factory=lambda: logging.getLogger().getEffectiveLevel())
    #: The ids part: the IDS's URL, the files to upload (one per size), and, for the built-in
    #: catalogue, its storage folder (journaled for sv7 cleanup after a kill -9).
    ids_url: str | None = None
    payloads: tuple[Payload, ...] = ()
    ids_storage: str | None = None


@dataclass(frozen=True)
class WorkerOutcome:
    index: int
    checks: dict[str, Any]
    problems: list[str]
    #: One line when the worker could not do its job (login refused, interrupted …).
    error: str | None
    end_ns: int


# ("records", index, [TimingRecord]) | ("outage", index, Outage) | ("done", index, outcome)
Message = tuple[str, int, Any]


def _prepare_dataset(ctx: WorkloadContext, spec: WorkerSpec) -> tuple[int, list[Any]]:
    """Ingest the spec's files untimed; (Dataset id, the Datafiles with their Dataset).

    Not measured, so a file whose ingest lost a call is ingested again (each object is looked
    up before it is created: what the cut try made is found, never made twice), and the search
    after it repeated (client/repeats.py); one lost call must not cost the worker's workload."""
    setup = Ingestor(ctx.catalogue, ctx.profile, ctx.journal, ctx.timer, resumable=True)
    again = RepeatPolicy()
    for path in spec.files:
        again.call(functools.partial(setup.ingest, path))
    ctx.recorder.drain()  # preparation is not measured
    mine = Query("Datafile").where(
        {"dataset.investigation.facility.name": Condition("=", ctx.tag.name)}
    )
    targets = again.call(lambda: ctx.catalogue.search(mine.include("dataset")))
    return int(targets[0]["dataset"].id), targets


def _run(ctx: WorkloadContext, spec: WorkerSpec, start: Callable[[], None]) -> WorkloadResult:
    if spec.workload == "full-cycle":
        start()
        return run_full_cycle(ctx, spec.files)
    dataset_id, targets = _prepare_dataset(ctx, spec)
    if spec.workload == "single-query":
        start()
        return run_single_queries(ctx, targets, spec.count)
    if spec.workload == "burst":
        start()
        return run_burst(ctx, dataset_id, spec.count, spec.batch_size)
    if spec.workload == "ids":
        return _run_ids(ctx, spec, start, targets)
    if spec.workload == "multi-query":
        run_burst(ctx, dataset_id, spec.count, spec.batch_size, modes=("createMany",))
        ctx.recorder.drain()
        expected = spec.count + sum(1 for t in targets if t["dataset"].id == dataset_id)
        start()
        return run_multi_query(ctx, dataset_id, expected, spec.page_size)
    raise ValueError(f"unknown workload {spec.workload!r}")


def _run_ids(
    ctx: WorkloadContext, spec: WorkerSpec, start: Callable[[], None], targets: list[Any]
) -> WorkloadResult:
    """Uploads into a Dataset of the worker's own, of the format of the files it ingested."""
    assert spec.ids_url is not None
    ctx.journal.name_data_service(spec.ids_url, spec.ids_storage)  # before the first upload
    datafile = ctx.catalogue.get("Datafile df INCLUDE df.dataset, df.datafileFormat", targets[0].id)
    service = connect_data_service(spec.client, spec.ids_url, ctx.catalogue, spec.flavour)
    try:
        start()
        return run_ids_ingest(
            ctx, service, int(datafile["dataset"].id), int(datafile["datafileFormat"].id),
            spec.payloads, spec.count,
        )  # fmt: skip
    finally:
        service.close()


def worker_main(
    spec: WorkerSpec, barrier: multiprocessing.synchronize.Barrier, out: multiprocessing.Queue[Any]
) -> None:
    """The body of one worker process."""
    # the one stop signal may come while the worker is already finishing (between its work and
    # its answer): it then ends quietly, as it would have; a traceback would only frighten
    with contextlib.suppress(KeyboardInterrupt):
        _work(spec, barrier, out)


def _work(
    spec: WorkerSpec, barrier: multiprocessing.synchronize.Barrier, out: multiprocessing.Queue[Any]
) -> None:
    redaction.install(spec.log_level)
    redaction.remember(spec.credentials.password)
    parent = multiprocessing.parent_process()
    if parent is not None and parent.pid is not None:
        die_with_parent(parent.pid)
    signals = worker_signals()
    recorder = Recorder()
    stop = threading.Event()

    def stream() -> None:
        while not stop.wait(STREAM_INTERVAL_S):
            chunk = recorder.drain()
            if chunk:
                out.put(("records", spec.index, chunk))

    streamer = threading.Thread(target=stream, daemon=True)
    outcome_error: str | None = None
    result: WorkloadResult | None = None
    try:
        # started with the stop signals blocked (run_workers): one that came while this process
        # was starting is raised here, inside the try, and ends it like any other
        unblock_stop_signals()
        # connecting (the version, a WSDL) and logging in are not measured: a lost call is
        # repeated (client/repeats.py); the workload's own calls never are
        again = RepeatPolicy()
        catalogue = guard(
            again.call(lambda: connect(spec.client, spec.flavour)),
            spec.outage_wait,
            lambda outage: out.put(("outage", spec.index, outage)),
        )
        try:
            again.call(lambda: catalogue.login(spec.credentials.authenticator,
                                               spec.credentials.as_login()))  # fmt: skip
            ctx = WorkloadContext(
                catalogue,
                get_profile(spec.profile),
                spec.tag,
                Journal(spec.journal_path),
                recorder=recorder,
            )

            def start() -> None:
                barrier.wait(timeout=START_TIMEOUT_S)
                recorder.drain()  # preparation is not measured; from here on records stream
                streamer.start()

            try:
                result = _run(ctx, spec, start)
                # its last call lost: whether that was an outage, the next poll says (and
                # the parent's cleanup needs the target back)
                catalogue.recover()
            except TransportFailure as exc:
                if catalogue.outage is None:
                    raise
                # not resumed: wait for the target all the same, so that the outage is
                # recorded whole and the parent can clean up after this worker
                what = "an outage" if catalogue.recover() is not None else "a lost call"
                raise TransportError(f"{spec.workload} cut short by {what}: {exc}") from exc
        finally:
            with contextlib.suppress(Sv7Error):
                catalogue.logout()
            catalogue.close()
    except KeyboardInterrupt:
        outcome_error = "interrupted"
    except threading.BrokenBarrierError:
        outcome_error = "the start was called off (another worker failed to prepare)"
    except Sv7Error as exc:
        outcome_error = str(exc)
    except Exception as exc:  # a bug: report it, never hang the run
        outcome_error = f"{type(exc).__name__}: {exc} ({traceback.format_exc(limit=3)})"
    finally:
        signals.hold()  # a second signal must not cut the answer to the parent short
        end_ns = time.perf_counter_ns()
        stop.set()
        if streamer.is_alive():
            streamer.join()
        if outcome_error is not None:
            outcome_error = redaction.scrub(outcome_error)  # it goes into the result file
            # do not leave the others waiting at the barrier for a worker that is gone
            with contextlib.suppress(Exception):
                barrier.abort()
        # before the start, the records are the preparation's (the full cycle's ingest of a
        # query workload): never the workload's figures, also when the preparation failed
        measured = recorder.drain() if streamer.ident is not None else []
        chunk = measured + (result.records if result else [])
        if chunk:
            out.put(("records", spec.index, chunk))
        out.put(
            (
                "done",
                spec.index,
                WorkerOutcome(
                    spec.index,
                    result.checks if result else {},
                    result.problems if result else [],
                    outcome_error,
                    end_ns,
                ),
            )
        )


@dataclass
class WorkerRun:
    """What the parent collected from one group of workers."""

    #: Timing records by worker index, in the order they arrived.
    by_worker: dict[int, list[TimingRecord]]
    outcomes: list[WorkerOutcome]
    start_ns: int
    end_ns: int
    interrupted: bool = False
    #: The latest report of each outage, by (worker index, outage start).
    outage_reports: dict[tuple[int, int], Outage] = field(default_factory=dict)

    @property
    def outages(self) -> list[tuple[int, Outage]]:
        """(worker index, outage) of every outage a worker saw."""
        return [(index, o) for (index, _), o in sorted(self.outage_reports.items())]

    @property
    def records(self) -> list[TimingRecord]:
        return [r for index in sorted(self.by_worker) for r in self.by_worker[index]]

    @property
    def wall_s(self) -> float:
        return max(0.0, (self.end_ns - self.start_ns) / 1e9)


def run_workers(
    specs: Sequence[WorkerSpec],
    on_records: Callable[[int, list[TimingRecord]], None] | None = None,
    deadline_s: float = 3600.0,
    on_start: Callable[[list[int]], None] | None = None,
    on_outage: Callable[[int, Outage], None] | None = None,
    on_done: Callable[[], None] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> WorkerRun:
    """Start one process per spec on a common barrier; collect records until all are done.

    ``on_records`` gets (worker index, records) for each chunk as it arrives, ``on_start`` the
    workers' process ids (the sampler watches their CPU), ``on_outage`` each outage report (worker
    index, outage) as it arrives, ``on_done`` when every worker has answered, before they are reaped
    (the sampler's last reading of their CPU), ``on_ready`` when they have started and prepared and
    pass the barrier (the sampler's end of their start-up). A ``KeyboardInterrupt`` (a stop signal,
    see stopping.py) at any moment — also while the workers start — stops the workers, waits
    :data:`STOP_GRACE_S` at most for what they have, and returns with ``interrupted``.
    """
    mp = multiprocessing.get_context("spawn")  # the parent may hold threads (local catalogue)
    with starting_a_process():  # the first semaphore starts multiprocessing's resource tracker
        barrier = mp.Barrier(len(specs) + 1)
        out: multiprocessing.Queue[Any] = mp.Queue()
    processes = [mp.Process(target=worker_main, args=(s, barrier, out), daemon=True) for s in specs]
    started: list[multiprocessing.process.BaseProcess] = []
    run = WorkerRun({}, [], time.perf_counter_ns(), 0)
    grace = END_GRACE_S
    try:
        for p in processes:
            with starting_a_process():  # a stop waits until the process is started
                p.start()
            started.append(p)
        if on_start is not None:
            on_start([p.pid for p in started if p.pid is not None])
        with contextlib.suppress(threading.BrokenBarrierError):
            barrier.wait(timeout=START_TIMEOUT_S)  # broken: a worker failed; its outcome says why
        run.start_ns = time.perf_counter_ns()
        if on_ready is not None:
            on_ready()
        _collect(run, out, len(specs), on_records, on_outage, time.monotonic() + deadline_s)
        if on_done is not None:
            on_done()
    except KeyboardInterrupt as stop:
        run.interrupted = True
        grace = STOP_GRACE_S
        # A Ctrl-C on a terminal reaches the workers too, a signal sent to this process alone
        # (kill, timeout) does not: pass it on — the same one, so that a worker stopped by a
        # SIGTERM says SIGTERM — then give them a moment to send what they have.
        signum = getattr(stop, "signum", signal.SIGINT)
        with contextlib.suppress(KeyboardInterrupt):  # a second signal: noted (stopping.py)
            for worker in started:
                if worker.is_alive() and worker.pid is not None:
                    with contextlib.suppress(OSError):
                        os.kill(worker.pid, signum)
            _collect(run, out, len(specs), on_records, on_outage,
                     time.monotonic() + STOP_GRACE_S, started)  # fmt: skip
    finally:
        _end(started, time.monotonic() + grace)
        out.close()
        out.join_thread()
    run.end_ns = max((o.end_ns for o in run.outcomes), default=time.perf_counter_ns())
    return run


def _end(processes: Sequence[multiprocessing.process.BaseProcess], deadline: float) -> None:
    """Let ``processes`` end until ``deadline``; kill those still there (what a worker created
    is journaled, and hangs below its Facility, which the cleanup removes by name)."""
    for p in processes:
        p.join(timeout=max(0.0, deadline - time.monotonic()))
    for p in processes:
        if p.is_alive():
            p.kill()
    for p in processes:
        p.join()


def _collect(
    run: WorkerRun,
    out: multiprocessing.Queue[Any],
    expected: int,
    on_records: Callable[[int, list[TimingRecord]], None] | None,
    on_outage: Callable[[int, Outage], None] | None,
    deadline: float,
    processes: Sequence[multiprocessing.process.BaseProcess] = (),
) -> None:
    """Take the workers' messages until all are done or ``deadline``; with ``processes``, also
    until none of them is left (a worker killed, or stopped before it could answer)."""
    done = {o.index for o in run.outcomes}
    while len(done) < expected and time.monotonic() < deadline:
        try:
            kind, index, payload = out.get(timeout=0.1 if processes else 0.5)
        except queue.Empty:
            if processes and not any(p.is_alive() for p in processes):
                return
            continue
        if kind == "records":
            run.by_worker.setdefault(index, []).extend(payload)
            if on_records is not None:
                on_records(index, payload)
        elif kind == "outage":
            run.outage_reports[(index, payload.start_ns)] = payload
            if on_outage is not None:
                on_outage(index, payload)
        elif index not in done:
            run.outcomes.append(payload)
            done.add(index)
