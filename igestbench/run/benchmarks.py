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
from collections.abc import Sequence
from typing import Any

from igestbench.measure.stats import OpStats, merge_ops, summarize
from igestbench.measure.timing import TimingRecord
from igestbench.results.workloads import IDS_UNIT, UNIT_OPS
from igestbench.run.workers import WorkerRun
from igestbench.workloads.ids_ingest import transfer_figures


def _merge_checks(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for checks in parts:
        for key, value in checks.items():
            if isinstance(value, int) and not key.endswith("_size") and key in merged:
                merged[key] += value
            elif key == "transfers" and key in merged:  # per op: files, bytes, ns — added
                for op, moved in value.items():
                    into = merged[key].setdefault(op, {k: 0 for k in moved})
                    for k, n in moved.items():
                        into[k] = into.get(k, 0) + n
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
    return OpStats(stats.op, stats.count, stats.ok, stats.errors, stats.latency)


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
    client_bound: bool,
    cold_calls: int = 1,
) -> dict[str, Any]:
    ops, after_outage = _ops(run, cold_calls)
    if workload == "ids":  # every size's uploads (ids/put/1KiB, ids/put/1MiB …)
        units = sum(s.ok for o, s in ops.items() if o.startswith(IDS_UNIT + "/"))
    else:
        units = sum(ops[o].ok for o in UNIT_OPS[workload] if o in ops)
    problems = [p for o in run.outcomes for p in o.problems]
    problems += [f"worker {o.index}: {o.error}" for o in run.outcomes if o.error]
    checks = _merge_checks([o.checks for o in sorted(run.outcomes, key=lambda o: o.index)])
    entry: dict[str, Any] = {
        "workload": workload,
        "flavour": flavour,
        "concurrency": concurrency,
        "wall_s": round(run.wall_s, 6),
        "throughput_per_s": round(units / run.wall_s, 3) if run.wall_s > 0 else None,
        "client_bound": client_bound,
        "ops": {
            op: finite({**stats.to_dict(), "after_outage_ms": after_outage.get(op, [])})
            for op, stats in sorted(ops.items())
        },
        "checks": checks,
        "problems": problems,
    }
    if "transfers" in checks:  # the ids part: files/s and MB/s per operation and size
        entry["transfers"] = transfer_figures(checks["transfers"], concurrency)
    return entry
