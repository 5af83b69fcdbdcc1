"""From one group of workers to one ``benchmarks`` entry of the result file.

Statistics are computed from all workers' records together (merged, never averaged), with the
first call of each operation in each worker — the call right after login, on cold connections
and caches — reported apart as ``cold_ms``. After an outage the target may be a restarted one,
cold again: the first call of each operation in each worker after the outage ended is reported
apart as well, as ``after_outage_ms`` (one list over all outages; left out of the statistics).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from typing import Any

from igestbench.measure.stats import OpStats, merge_ops, summarize
from igestbench.measure.timing import TimingRecord
from igestbench.results.figures import calls_of, entry_rate, measures_of
from igestbench.run.workers import WorkerRun


def _merge_checks(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for checks in parts:
        for key, value in checks.items():
            if isinstance(value, int) and not key.endswith("_size") and key in merged:
                merged[key] += value
            else:
                merged.setdefault(key, value)
    return merged


def _ops(run: WorkerRun, cold_calls: int) -> tuple[dict[str, OpStats], dict[str, list[float]]]:
    """Per-op statistics with each worker's first ``cold_calls`` calls per op kept apart, and
    the first call per op after each outage (in ms, by op), also left out of the statistics."""
    parts: list[dict[str, OpStats]] = []
    after_outage: dict[str, list[float]] = {}
    ends: dict[int, list[int]] = {index: [] for index in run.by_worker}
    for index, outage in run.outages:
        if outage.end_ns is not None and index in ends:
            ends[index].append(outage.end_ns)
    for index, worker_records in run.by_worker.items():
        # split at the outages' ends: segment k holds the calls after the k-th outage
        cuts = sorted(ends[index])
        segments: list[list[TimingRecord]] = [[] for _ in range(len(cuts) + 1)]
        for record in worker_records:
            segments[bisect.bisect_left(cuts, record.start_ns)].append(record)
        parts.append(summarize(segments[0], cold=cold_calls))
        for segment in segments[1:]:
            stats = summarize(segment, cold=1)
            for op, op_stats in stats.items():
                after_outage.setdefault(op, []).extend(op_stats.cold_ms)
            parts.append({op: _warm(s) for op, s in stats.items()})
    return merge_ops(parts), after_outage


def _warm(stats: OpStats) -> OpStats:
    return OpStats(stats.op, stats.count, stats.ok, stats.errors, stats.latency,
                   failed_ns=stats.failed_ns)


def _errors(run: WorkerRun) -> dict[str, Any]:
    """What went wrong, counted so that it agrees with the stop cause: every failed timed call
    (the cold first ones too, which the per-op counts leave out; a step failing inside a call
    is that call's failure), and every client that stopped with an error without a failed call
    of its own (a refused login, a failed preparation)."""
    causes: dict[str, int] = {}
    failed_by: dict[int, int] = {}
    calls = calls_of(r.op for records in run.by_worker.values() for r in records)
    for index, records in run.by_worker.items():
        for record in records:
            if not record.ok and record.op in calls:  # a failed step failed its call too
                cause = record.error or "unknown"
                causes[cause] = causes.get(cause, 0) + 1
                failed_by[index] = failed_by.get(index, 0) + 1
    stopped = [o for o in run.outcomes if o.error and not failed_by.get(o.index)]
    return {"calls": sum(failed_by.values()), "clients": len(stopped),
            "causes": dict(sorted(causes.items()))}


def finite(value: Any) -> Any:
    """``value`` with NaN and infinities as None: JSON has no such numbers (an op that never
    succeeded has no mean latency, not a mean of NaN)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def benchmark_entry(
    workload: str,
    flavour: str,
    concurrency: int,
    run: WorkerRun,
    client_bound: bool = False,
    cold_calls: int = 1,
    client_cpu: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``benchmarks`` entry of one group of workers. ``client_cpu`` is the sampler's view
    of the suite's own clients in the phase (:meth:`PhaseSeries.client_summary`); its verdict
    is the entry's ``client_bound``. ``throughput_per_s`` is the registry's rate of the
    workload's first measure (results/figures.py), so that it never disagrees with the summary."""
    ops, after_outage = _ops(run, cold_calls)
    problems = [p for o in run.outcomes for p in o.problems]
    problems += [f"worker {o.index}: {o.error}" for o in run.outcomes if o.error]
    entry: dict[str, Any] = {
        "workload": workload,
        "flavour": flavour,
        "concurrency": concurrency,
        "wall_s": round(run.wall_s, 6),
        "throughput_per_s": None,
        "client_bound": bool(client_cpu["bound"]) if client_cpu is not None else client_bound,
        "ops": {
            op: finite({**stats.to_dict(), "after_outage_ms": after_outage.get(op, [])})
            for op, stats in sorted(ops.items())
        },
        "checks": _merge_checks([o.checks for o in sorted(run.outcomes, key=lambda o: o.index)]),
        "problems": problems,
        "errors": _errors(run),
    }
    if client_cpu is not None:
        entry["client_cpu"] = finite(dict(client_cpu))
    measures = measures_of(workload, entry)
    if measures:
        rate, _ = entry_rate(entry, measures[0])
        entry["throughput_per_s"] = round(rate, 3) if rate is not None else None
    return entry
