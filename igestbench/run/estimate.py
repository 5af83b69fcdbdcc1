"""How long a run will wait on its target: the calls its parts plan, times one call's answer.

Each worker makes its calls one after another, so against a partner 300 ms away a quick tour's
few thousand calls take minutes (TRYOUT4 #8: 5 min 27 s for ``--parts verify,single-query,burst``
with nothing but the phase lines to say so). After the probe the run asks the target a few
light calls (``getEntityNames``, no session), takes the median as the time one call takes there,
and, when the calls the parts plan would keep it waiting for a minute or more, says how long
it will be (:func:`estimate_line`).

It is an estimate and says so: the counts below are what each part's workers do one after
another (the slowest worker of a phase: workers of one level run side by side) — the checks'
calls as counted on the built-in catalogue (``tests/test_run_estimate.py`` keeps the figure
true), a NeXus file's ingestion from its eight entities (:mod:`igestbench.workloads.ingest`);
the time of the work on this machine (worker processes, NeXus files, the sampler) and of the
bytes moved by the ids part is not in it. Before the run knows whether the target serves REST
it counts both interfaces, as an ICAT 5 or later serves (``--interface`` says otherwise).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass

from igestbench.client import ClientConfig, connect
from igestbench.config import RunConfig
from igestbench.measure.sweep import SweepConfig, sweep_rates
from igestbench.run.workers import PREPARATION_FILES, WORKLOADS

#: The calls of the service checks (part verify) with the default account alone (259 on the
#: built-in catalogue), and those each further role account adds (23).
VERIFY_CALLS = 260
VERIFY_CALLS_PER_ROLE = 25
#: Ingesting a NeXus file: a lookup of each of its seven parents and the Datafile's create; the
#: first file of a worker also creates the parents (the later ones find them).
INGEST_FIRST_CALLS = 15
INGEST_NEXT_CALLS = 8
#: A worker's login and logout; the cleanup of what a phase created (survey and deletes).
SESSION_CALLS = 2
GROUP_CLEANUP_CALLS = 10
#: The run's own calls outside the parts: reaching the target, REST's probe, the journal's
#: clock, the final cleanup.
RUN_CALLS = 20
#: The scale part's queries: nine, each 20 times after 2 warm-up calls, per role.
SCALE_QUERY_CALLS = 9 * 22
SCALE_BATCH = 1_000
#: Calls of the ids part per file: the put, the Datafile's check, every second file's download.
IDS_FILE_CALLS = 3
#: How many light calls measure the target's answer time.
SAMPLES = 3
#: Below this long waiting on the target, a run says nothing about its duration.
LONG_S = 60.0


def ingest_calls(files: int) -> int:
    return INGEST_FIRST_CALLS + (files - 1) * INGEST_NEXT_CALLS if files > 0 else 0


def workload_calls(workload: str, config: RunConfig) -> int:
    """The calls one worker of ``workload`` makes one after another, preparing and cleaning up
    included."""
    files = config.cycles if workload == "full-cycle" else PREPARATION_FILES[workload]
    calls = SESSION_CALLS + ingest_calls(files) + GROUP_CLEANUP_CALLS
    batches = math.ceil(config.files / config.batch_size)
    if workload == "full-cycle":
        return calls + 1  # the count of what arrived
    calls += 1  # the prepared Datafiles looked up
    if workload == "single-query":
        return calls + config.queries
    if workload == "burst":
        return calls + config.files + batches + 2  # create, createMany, a count of each
    if workload == "multi-query":
        return calls + batches + 3 * (2 + config.files // config.page_size)
    if workload == "ids":
        return calls + config.cycles * len(config.file_sizes) * IDS_FILE_CALLS
    raise ValueError(f"unknown workload {workload!r}")


@dataclass(frozen=True)
class Estimate:
    """What the run plans: calls made one after another, and seconds that do not depend on the
    target's answer time (the sweep's steps)."""

    calls: int
    fixed_s: float

    def seconds(self, answer_ms: float) -> float:
        return self.calls * answer_ms / 1000.0 + self.fixed_s


def plan(config: RunConfig, answer_ms: float) -> Estimate:
    """The calls of the parts ``config`` asks for (see the module's docstring)."""
    interfaces = config.interfaces or ("soap", "rest")
    calls = RUN_CALLS
    if "verify" in config.parts:
        calls += VERIFY_CALLS + VERIFY_CALLS_PER_ROLE * len(config.accounts)
    for interface in interfaces:
        flavours = ["rest"] if interface == "rest" else [
            f for f in config.flavours if f != "rest"]  # fmt: skip
        for workload in (w for w in WORKLOADS if w in config.parts):
            calls += len(flavours) * len(config.concurrency) * workload_calls(workload, config)
    if "ids" in config.parts:  # the lean IDS client, and python-icat's where it is asked for
        clients = 1 + ("python-icat" in config.flavours)
        calls += clients * len(config.concurrency) * workload_calls("ids", config)
    if "scale" in config.parts:
        sizes = config.scale_sizes
        calls += math.ceil(max(sizes) / SCALE_BATCH) + len(sizes) * SCALE_QUERY_CALLS * 2 * len(
            interfaces)  # fmt: skip
    fixed_s = 0.0
    if "sweep" in config.parts:
        rates = sweep_rates(SweepConfig(slo_ms=config.slo_ms, max_rate=config.max_rate))
        # a target slower than the objective breaks it at the first step, where the sweep ends
        steps = 1 if answer_ms > config.slo_ms else len(rates)
        fixed_s = len(interfaces) * (config.warmup + steps * config.repeat * (
            config.warmup + config.duration))  # fmt: skip
    return Estimate(calls, fixed_s)


def answer_ms(client: ClientConfig, samples: int = SAMPLES) -> float:
    """The median time of ``samples`` light calls (``getEntityNames``, no session), in ms."""
    catalogue = connect(client, "lean")
    try:
        times = []
        for _ in range(samples):
            start = time.perf_counter()
            catalogue.entity_names()
            times.append((time.perf_counter() - start) * 1000.0)
    finally:
        catalogue.close()
    return statistics.median(times)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} seconds"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} minutes"
    return f"{seconds / 3600:.1f} hours"


def estimate_line(config: RunConfig, answer: float) -> str | None:
    """``the target answers a call in ~300 ms: this run will take about 5 minutes …``, or None
    when the run would wait on the target for less than :data:`LONG_S`."""
    estimate = plan(config, answer)
    seconds = estimate.seconds(answer)
    if seconds < LONG_S:
        return None
    shorter = "--parts" if config.profile == "quick" else "--parts or --profile quick"
    return (f"the target answers a call in ~{answer:.0f} ms: this run will take about "
            f"{_duration(seconds)} (an estimate: {estimate.calls:,} calls one after another); "
            f"{shorter} to shorten it")  # fmt: skip
