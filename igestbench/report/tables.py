"""The benchmark table (one row per site x target x flavour) and the deployment scores.

Figures come from the lowest concurrency level a run measured — one client alone, the time a
user of the catalogue sees; the charts show the other levels. Where an operation of several
names makes one unit of work (the three single-result lookups), their HdrHistograms are added
before percentiles are taken: percentiles of pooled calls, never an average of percentiles.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy

from igestbench.report.series import failed
from igestbench.results.campaign import Campaign, CampaignRun
from igestbench.results.histograms import decode_histogram
from igestbench.results.scoring import score_deployment
from igestbench.results.workloads import UNIT_OPS

ASPECTS = ("deployment", "certificate", "authentication", "content")
_WORKER = re.compile(r"^worker \d+: ")


@dataclass(frozen=True)
class BenchmarkRow:
    site: str
    target: str
    flavour: str
    #: the concurrency level of the figures (the lowest measured)
    clients: int | None
    full_cycle_mean_ms: float | None
    full_cycle_sd_ms: float | None
    query_p50_ms: float | None
    query_p99_ms: float | None
    burst_create_per_s: float | None
    burst_create_many_per_s: float | None
    multi_query_ms: float | None
    rtt_ms: float | None
    rtt_method: str | None
    api_version: str | None
    #: the client machine was the bottleneck somewhere (CPU > 90 %): figures understate
    client_bound: bool
    #: failed calls of the run's benchmarks
    errors: int
    #: the site tested its own catalogue (it is the target's operator): a local connection
    local: bool = False
    #: the full cycles the mean is over (no deviation of one)
    full_cycle_calls: int = 0
    #: workloads that measured nothing at this level: their workers failed (the run stopped)
    failed: tuple[str, ...] = ()
    #: why, as the first failed worker said it
    failure: str | None = None
    #: a quick tour's figures (sv7 run's default profile): small counts, not campaign figures
    quick: bool = False

    def stopped(self, workload: str) -> bool:
        return workload in self.failed


def _lowest(entries: Sequence[Mapping[str, Any]], workload: str) -> Mapping[str, Any] | None:
    found = [e for e in entries if e["workload"] == workload]
    return min(found, key=lambda e: int(e.get("concurrency") or 0)) if found else None


@dataclass(frozen=True)
class _Pooled:
    """The unit operations' successful calls of one benchmark entry, pooled."""

    mean_ms: float
    sd_ms: float | None
    #: the recorded buckets: each one's highest value (µs) and cumulative count
    values_us: list[int]
    cumulative: Any  # numpy array
    histogram: Any  # hdrh's HdrHistogram, for its nearest-rank rule

    def percentile_ms(self, percentile: float) -> float:
        rank = self.histogram.get_target_count_at_percentile(percentile)
        return self.values_us[int(numpy.searchsorted(self.cumulative, rank))] / 1000


def _pooled(entry: Mapping[str, Any] | None, names: Sequence[str]) -> _Pooled | None:
    """The unit operations of ``entry`` pooled: bucket counts added, means weighted by calls.

    The mean is exact (each op's mean covers its calls); the deviation comes from the histogram
    buckets around it. hdrh walks its 17,000 buckets in Python for every mean, deviation, sum
    or percentile (≈ 50 ms a histogram, minutes for a large campaign); numpy finds the few
    recorded buckets at once, and only those are converted to values.
    """
    if entry is None:
        return None
    ops = [op for name, op in entry.get("ops", {}).items() if name in names
           and isinstance(op.get("histogram"), str) and op.get("ok")
           and isinstance(op.get("mean_ms"), int | float)]
    if not ops:
        return None
    histograms = [decode_histogram(op["histogram"]) for op in ops]  # checked on loading
    first = histograms[0]
    if any(h.counts_len != first.counts_len for h in histograms):
        for other in histograms[1:]:  # other ranges or precisions: let hdrh map the buckets
            first.add(other)
        histograms = [first]
    counts = numpy.ctypeslib.as_array(first.counts).astype(numpy.int64)
    for other in histograms[1:]:
        counts += numpy.ctypeslib.as_array(other.counts).astype(numpy.int64)
    indexes = numpy.flatnonzero(counts)
    if not len(indexes):
        return None
    first.total_count = int(counts.sum())  # for the percentile rank of the pooled calls
    highest = [first.get_highest_equivalent_value(first.get_value_from_index(int(i)))
               for i in indexes]
    lowest = [first.get_lowest_equivalent_value(first.get_value_from_index(int(i)))
              for i in indexes]
    bucket_counts = counts[indexes]
    calls = sum(op["ok"] for op in ops)
    mean_us = sum(op["mean_ms"] * op["ok"] for op in ops) / calls * 1000
    middles = (numpy.array(highest) + numpy.array(lowest)) / 2
    n = int(bucket_counts.sum())
    squares = float((bucket_counts * (middles - mean_us) ** 2).sum())
    sd = math.sqrt(squares / (n - 1)) / 1000 if n > 1 else None
    return _Pooled(mean_us / 1000, sd, highest, numpy.cumsum(bucket_counts), first)


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _rate(entry: Mapping[str, Any] | None, op: str, per_call: float) -> float | None:
    """Objects created per second by one client calling ``op`` back to back."""
    if entry is None:
        return None
    stats = entry.get("ops", {}).get(op)
    mean = stats.get("mean_ms") if isinstance(stats, dict) else None
    return per_call * 1000.0 / mean if isinstance(mean, int | float) and mean > 0 else None


def _failure(entries: Sequence[Mapping[str, Any] | None]) -> tuple[tuple[str, ...], str | None]:
    """The workloads of ``entries`` that measured nothing, and the first reason given."""
    stopped = [e for e in entries if e is not None and failed(e, str(e["workload"]))]
    reasons = [_WORKER.sub("", str(p)) for e in stopped for p in e.get("problems") or ()]
    return tuple(str(e["workload"]) for e in stopped), reasons[0] if reasons else None


def _row(run: CampaignRun, flavour: str, local: bool = False) -> BenchmarkRow:
    result = run.result
    entries = [b for b in result.benchmarks if b["flavour"] == flavour]
    cycle = _lowest(entries, "full-cycle")
    query = _lowest(entries, "single-query")
    burst = _lowest(entries, "burst")
    multi = _lowest(entries, "multi-query")
    cycle_stats = _pooled(cycle, UNIT_OPS["full-cycle"])
    query_stats = _pooled(query, UNIT_OPS["single-query"])
    batch_size = (burst or {}).get("checks", {}).get("batch_size")
    batch = batch_size if isinstance(batch_size, int) else 1
    # the whole result in one call: search, or fetch (+ decode) in the lean/zeep flavours
    multi_means = [op["mean_ms"] for name, op in (multi or {}).get("ops", {}).items()
                   if name in UNIT_OPS["multi-query"]
                   and isinstance(op.get("mean_ms"), int | float)]
    rtt = (result.raw.get("probe") or {}).get("rtt") or {}
    levels = [int(e["concurrency"]) for e in entries if isinstance(e.get("concurrency"), int)]
    stopped, failure = _failure([cycle, query, burst, multi])
    return BenchmarkRow(
        site=run.site, target=run.target, flavour=flavour,
        clients=min(levels) if levels else None,
        full_cycle_mean_ms=cycle_stats.mean_ms if cycle_stats else None,
        full_cycle_sd_ms=_finite(cycle_stats.sd_ms) if cycle_stats else None,
        query_p50_ms=query_stats.percentile_ms(50.0) if query_stats else None,
        query_p99_ms=query_stats.percentile_ms(99.0) if query_stats else None,
        burst_create_per_s=_rate(burst, "burst/create", 1),
        burst_create_many_per_s=_rate(burst, "burst/createMany", batch),
        multi_query_ms=sum(multi_means) if multi_means else None,
        rtt_ms=rtt.get("median_ms"), rtt_method=rtt.get("method"),
        api_version=result.api_version,
        client_bound=any(e.get("client_bound") for e in entries),
        errors=sum(op.get("count", 0) - op.get("ok", 0)
                   for e in entries for op in e.get("ops", {}).values()),
        local=local,
        full_cycle_calls=sum(op.get("ok", 0) for name, op in (cycle or {}).get("ops", {}).items()
                             if name in UNIT_OPS["full-cycle"]),
        failed=stopped, failure=failure, quick=run.quick,
    )


def benchmark_rows(campaign: Campaign) -> list[BenchmarkRow]:
    """One row per run and flavour, in matrix order (target, then site)."""
    site_rank = {s.name: i for i, s in enumerate(campaign.sites)}
    rows: list[BenchmarkRow] = []
    for target in campaign.targets:
        runs = sorted((r for r in campaign.runs if r.target == target.name),
                      key=lambda r: site_rank[r.site])
        for run in runs:
            flavours = dict.fromkeys(b["flavour"] for b in run.result.benchmarks)
            rows.extend(_row(run, flavour, target.is_local_to(run.site)) for flavour in flavours)
    return rows


@dataclass(frozen=True)
class AspectScore:
    aspect: str
    level: str
    score: int | None
    max: int | None
    evidence: str
    #: sites whose runs established this level, and how many runs scored the aspect at all
    sites: tuple[str, ...]
    measured_by: int


@dataclass(frozen=True)
class TargetScores:
    target: str
    operator: str | None
    aspects: tuple[AspectScore, ...]

    @property
    def total(self) -> tuple[int, int] | None:
        """(score, max) over the aspects that were measured; None when none was."""
        known = [a for a in self.aspects if a.score is not None and a.max is not None]
        if not known:
            return None
        return sum(a.score or 0 for a in known), sum(a.max or 0 for a in known)


def _aspect(aspect: str, runs: Sequence[CampaignRun], url: str) -> AspectScore:
    """The level most sites measured (a site that could not connect measured nothing)."""
    seen = [(run.site, (run.result.raw.get("scores") or {}).get(aspect)) for run in runs]
    scored = [(site, s) for site, s in seen if isinstance(s, dict) and s.get("score") is not None]
    if not scored and aspect == "deployment":
        # scheme and port are in the URL: known even when no site got through
        s = score_deployment(url)
        return AspectScore(aspect, s.level, s.score, s.max, s.evidence + " (from the URL)", (), 0)
    if not scored:
        return AspectScore(aspect, "unknown", None, None, "no site could measure it", (), 0)
    levels = [str(s.get("level")) for _, s in scored]
    votes = Counter(levels)
    # most votes wins; between equals, the level of the site listed first
    level = max(votes, key=lambda name: (votes[name], -levels.index(name)))
    chosen = next(s for _, s in scored if str(s.get("level")) == level)
    return AspectScore(aspect, level, chosen.get("score"), chosen.get("max"),
                       str(chosen.get("evidence") or ""),
                       tuple(x for x, s in scored if str(s.get("level")) == level), len(scored))


def deployment_scores(campaign: Campaign) -> list[TargetScores]:
    out = []
    for target in campaign.targets:
        runs = [r for r in campaign.runs if r.target == target.name]
        out.append(TargetScores(target.name, target.operator,
                                tuple(_aspect(a, runs, target.url) for a in ASPECTS)))
    return out
