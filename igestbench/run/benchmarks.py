"""From one group of workers to one ``benchmarks`` entry of the result file.

Statistics are computed from all workers' records together (merged, never averaged), with the
first call of each operation in each worker — the call right after login, on cold connections
and caches — reported apart as ``cold_ms``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from igestbench.measure.stats import OpStats, summarize
from igestbench.run.workers import WorkerRun

#: The operations that count as one unit of work of each workload (for throughput).
UNIT_OPS: dict[str, tuple[str, ...]] = {
    "full-cycle": ("full-cycle",),
    "single-query": ("single-query/jpql", "single-query/concise", "single-query/get"),
    "burst": ("burst/create", "burst/createMany"),
    "multi-query": ("multi-query/whole/search", "multi-query/whole/fetch"),
}


def _merge_checks(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for checks in parts:
        for key, value in checks.items():
            if isinstance(value, int) and not key.endswith("_size") and key in merged:
                merged[key] += value
            else:
                merged.setdefault(key, value)
    return merged


def _ops(run: WorkerRun, cold_calls: int) -> dict[str, OpStats]:
    """Per-op statistics with each worker's first ``cold_calls`` calls per op kept apart."""
    merged: dict[str, OpStats] = {}
    for worker_records in run.by_worker.values():
        for op, stats in summarize(worker_records, cold=cold_calls).items():
            if op in merged:
                before = merged[op]
                latency = before.latency
                latency.merge(stats.latency)
                errors = dict(before.errors)
                for name, n in stats.errors.items():
                    errors[name] = errors.get(name, 0) + n
                merged[op] = OpStats(
                    op,
                    before.count + stats.count,
                    before.ok + stats.ok,
                    errors,
                    latency,
                    before.cold_ms + stats.cold_ms,
                )
            else:
                merged[op] = stats
    return merged


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
    ops = _ops(run, cold_calls)
    units = sum(ops[o].ok for o in UNIT_OPS[workload] if o in ops)
    problems = [p for o in run.outcomes for p in o.problems]
    problems += [f"worker {o.index}: {o.error}" for o in run.outcomes if o.error]
    return {
        "workload": workload,
        "flavour": flavour,
        "concurrency": concurrency,
        "wall_s": round(run.wall_s, 6),
        "throughput_per_s": round(units / run.wall_s, 3) if run.wall_s > 0 else None,
        "client_bound": client_bound,
        "ops": {op: finite(stats.to_dict()) for op, stats in sorted(ops.items())},
        "checks": _merge_checks([o.checks for o in sorted(run.outcomes, key=lambda o: o.index)]),
        "problems": problems,
    }
