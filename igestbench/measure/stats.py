"""Mergeable latency statistics: HdrHistogram for percentiles, exact sums for mean and CI.

A :class:`LatencyStats` keeps three things, all of which merge by addition:

* an HdrHistogram of latencies in µs (1 µs .. 60 s, 3 significant digits: every percentile is
  within 0.1 % of the true value), which is what the result file stores (:meth:`encode`);
* the count, the sum and the sum of squares of the latencies in *integer* nanoseconds. Python
  integers do not round, so mean and variance are exact for any count, and merging the sums of
  two workers gives exactly the figures of the pooled calls (never an average of averages);
* the raw samples while there are at most :data:`RAW_LIMIT` of them, so small series (a cold
  start, a short step) get exact percentiles instead of bucketed ones.

Percentiles use the nearest-rank rule as HdrHistogram computes it (rank ``int(p·n/100 + 0.5)``,
at least 1) in both regimes, so a series does not change its definition when it grows past the
raw limit. The 95 % confidence interval of the mean is Student's: mean ± t(0.975, n-1)·s/√n.
The t quantile comes from a table for 1..30 degrees of freedom and from the Cornish-Fisher
expansion around the normal quantile beyond (error < 1e-4 there), so scipy is not needed.
A histogram decoded from a file has no sums: its mean is then the histogram's (within 0.1 %).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hdrh.histogram import HdrHistogram

from igestbench.measure.timing import TimingRecord

__all__ = [
    "HIGHEST_US",
    "PERCENTILES",
    "RAW_LIMIT",
    "LatencyStats",
    "OpStats",
    "mean_ci95",
    "merge_ops",
    "rate_per_s",
    "summarize",
    "t_quantile_975",
    "throughput_per_s",
]

LOWEST_US = 1
HIGHEST_US = 60_000_000
SIGNIFICANT_DIGITS = 3
#: Up to this many samples are kept raw (exact percentiles); beyond, the histogram alone answers.
RAW_LIMIT = 10_000
#: Reported percentiles: key in the result file → percentile.
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p999": 99.9}

# t(0.975, df) for df = 1..30 (two-sided 95 %), the classic table to four decimals.
_T975 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip
_Z975 = 1.959963984540054


def t_quantile_975(df: int) -> float:
    """Student's t quantile for a two-sided 95 % interval with ``df`` degrees of freedom."""
    if df < 1:
        raise ValueError("a t quantile needs at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    # Cornish-Fisher expansion of t in powers of 1/df (Abramowitz & Stegun 26.7.5).
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


def mean_ci95(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, low, high) of ``values`` with Student's 95 % interval; no interval below 2 values."""
    n = len(values)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    mean = math.fsum(values) / n
    if n == 1:
        return (mean, math.nan, math.nan)
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    half = t_quantile_975(n - 1) * math.sqrt(variance / n)
    return (mean, mean - half, mean + half)


def _histogram() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def _nearest_rank(count: int, percentile: float) -> int:
    return max(1, int(percentile * count / 100 + 0.5))


class LatencyStats:
    """Latencies of one series (an op, a step), recorded in ns, reported in ms.

    An accumulator, hence mutable; not thread-safe: one per worker, merged afterwards.
    """

    __slots__ = ("_hist", "_raw", "count", "exact", "sum_ns", "sum_sq_ns")

    def __init__(self) -> None:
        self._hist = _histogram()
        self._raw: list[int] | None = []
        self.count = 0
        self.sum_ns = 0
        self.sum_sq_ns = 0
        #: False once the sums came from a decoded histogram rather than the calls themselves.
        self.exact = True

    @classmethod
    def of(cls, durations_ns: Iterable[int]) -> LatencyStats:
        stats = cls()
        for ns in durations_ns:
            stats.record(ns)
        return stats

    def record(self, duration_ns: int) -> None:
        ns = max(0, duration_ns)
        self.count += 1
        self.sum_ns += ns
        self.sum_sq_ns += ns * ns
        # Beyond 60 s the histogram saturates at its top; the sums keep the true value.
        self._hist.record_value(min(ns // 1000, HIGHEST_US))
        if self._raw is not None:
            if len(self._raw) < RAW_LIMIT:
                self._raw.append(ns)
            else:
                self._raw = None

    def merge(self, other: LatencyStats) -> None:
        """Add ``other``'s calls to this series (histogram counts and sums are added)."""
        self._hist.add(other._hist)
        self.count += other.count
        self.sum_ns += other.sum_ns
        self.sum_sq_ns += other.sum_sq_ns
        self.exact = self.exact and other.exact
        if self._raw is not None and other._raw is not None:
            if len(self._raw) + len(other._raw) <= RAW_LIMIT:
                self._raw = self._raw + other._raw
            else:
                self._raw = None
        else:
            self._raw = None

    @classmethod
    def merged(cls, parts: Iterable[LatencyStats]) -> LatencyStats:
        total = cls()
        for part in parts:
            total.merge(part)
        return total

    # --- the histogram in the result file ----------------------------------------------------

    def encode(self) -> str:
        """HdrHistogram's compressed base64 form (V2) of the latencies in µs."""
        encoded: bytes | str = self._hist.encode()
        return encoded.decode("ascii") if isinstance(encoded, bytes) else encoded

    @classmethod
    def decode(cls, text: str) -> LatencyStats:
        """The series an :meth:`encode` string holds; mean and variance from its buckets."""
        stats = cls()
        stats._hist = HdrHistogram.decode(text.encode("ascii"))
        stats._raw = None
        stats.exact = False
        n = stats.count = int(stats._hist.get_total_count())
        if n:
            # HdrHistogram's own bucket-midpoint mean and (population) deviation, in µs.
            mean_us = float(stats._hist.get_mean_value())
            var_us = float(stats._hist.get_stddev()) ** 2
            stats.sum_ns = round(mean_us * 1e3 * n)
            stats.sum_sq_ns = round((var_us + mean_us**2) * 1e6 * n)
        return stats

    def to_wire(self) -> dict[str, Any]:
        """Everything the series holds, for another process to merge without loss (``sv7
        swarm`` sends each worker's series to the master): the histogram, the exact sums (as
        decimal text: they outgrow 64-bit integers, which msgpack and JSON readers stop at) and
        the raw samples while there are any."""
        return {
            "histogram": self.encode(),
            "count": self.count,
            "sum_ns": str(self.sum_ns),
            "sum_sq_ns": str(self.sum_sq_ns),
            "exact": self.exact,
            "raw": list(self._raw) if self._raw is not None else None,
        }

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> LatencyStats:
        """The series :meth:`to_wire` described, exactly as it was (ValueError if inconsistent)."""
        stats = cls.decode(str(data["histogram"]))
        count = int(data["count"])
        raw = data.get("raw")
        if count != stats.count or (raw is not None and len(raw) != count):
            raise ValueError(f"a series of {count} calls came with {stats.count} in its histogram")
        stats.sum_ns, stats.sum_sq_ns = int(data["sum_ns"]), int(data["sum_sq_ns"])
        stats.exact = bool(data["exact"])
        stats._raw = [int(ns) for ns in raw] if raw is not None else None
        return stats

    # --- figures (ms) ------------------------------------------------------------------------

    @property
    def mean_ms(self) -> float:
        return self.sum_ns / self.count / 1e6 if self.count else math.nan

    @property
    def stdev_ms(self) -> float:
        n = self.count
        if n < 2:
            return math.nan
        # Exact integer arithmetic: n·Σx² - (Σx)² cannot lose digits to cancellation.
        return math.sqrt((n * self.sum_sq_ns - self.sum_ns**2) / (n * (n - 1))) / 1e6

    @property
    def ci95_ms(self) -> tuple[float, float]:
        """Student's 95 % interval of the mean, assuming independent calls; NaN below 2 calls."""
        if self.count < 2:
            return (math.nan, math.nan)
        half = t_quantile_975(self.count - 1) * self.stdev_ms / math.sqrt(self.count)
        return (self.mean_ms - half, self.mean_ms + half)

    @property
    def min_ms(self) -> float:
        if not self.count:
            return math.nan
        if self._raw is not None:
            return min(self._raw) / 1e6
        return float(self._hist.get_min_value()) / 1e3

    @property
    def max_ms(self) -> float:
        if not self.count:
            return math.nan
        if self._raw is not None:
            return max(self._raw) / 1e6
        return float(self._hist.get_max_value()) / 1e3

    def percentiles_ms(self, wanted: Sequence[float] = tuple(PERCENTILES.values())) -> list[float]:
        """Latency at each percentile of ``wanted``, exact from raw samples while there are any."""
        if not self.count:
            return [math.nan for _ in wanted]
        if self._raw is not None:
            ordered = sorted(self._raw)
            return [ordered[_nearest_rank(self.count, p) - 1] / 1e6 for p in wanted]
        # One pass over the buckets for all percentiles (get_value_at_percentile walks each time).
        values = self._hist.get_percentile_to_value_dict(list(wanted))
        return [float(values[p]) / 1e3 for p in wanted]

    def percentile_ms(self, percentile: float) -> float:
        return self.percentiles_ms((percentile,))[0]

    def summary(self) -> dict[str, Any]:
        """``{"mean", "ci95", "p50", "p90", "p99", "p999"}`` in ms: a sweep step's latency shape."""
        figures: dict[str, Any] = {"mean": self.mean_ms, "ci95": list(self.ci95_ms)}
        figures.update(zip(PERCENTILES, self.percentiles_ms(), strict=True))
        return figures


@dataclass(frozen=True)
class OpStats:
    """Count, outcomes and latency of one operation: one entry of a benchmark's ``"ops"``."""

    op: str
    count: int
    ok: int
    #: Exception class name (or error cause) → number of calls it ended.
    errors: dict[str, int]
    #: Latencies of the successful calls: a failure that answers fast must not flatter the
    #: figures, and failures are counted apart (a timed-out call is an error, not a latency).
    latency: LatencyStats
    #: The first calls (after login), kept apart from the warmed-up statistics.
    cold_ms: list[float] = field(default_factory=list)
    #: Time spent in the failed (warm) calls, ns: a rate counts it (results/figures.py), the
    #: latency figures do not.
    failed_ns: int = 0

    @property
    def success_rate(self) -> float:
        return self.ok / self.count if self.count else math.nan

    def to_dict(self) -> dict[str, Any]:
        """The ``ops`` entry shape of the result file (layout.md)."""
        lat = self.latency
        p50, p90, p99 = lat.percentiles_ms((50.0, 90.0, 99.0))
        return {
            "count": self.count,
            "ok": self.ok,
            "errors": dict(self.errors),
            "mean_ms": lat.mean_ms,
            "p50_ms": p50,
            "p90_ms": p90,
            "p99_ms": p99,
            "max_ms": lat.max_ms,
            "histogram": lat.encode(),
            "cold_ms": list(self.cold_ms),
            "failed_ms": self.failed_ns / 1e6,
        }


def summarize(records: Iterable[TimingRecord], cold: int = 0) -> dict[str, OpStats]:
    """Per-op statistics of ``records``; the first ``cold`` calls of each op (by start time)
    are reported in ``cold_ms`` and left out of the counts and the latency statistics."""
    by_op: dict[str, list[TimingRecord]] = {}
    for record in records:
        by_op.setdefault(record.op, []).append(record)
    result: dict[str, OpStats] = {}
    for op, op_records in by_op.items():
        op_records.sort(key=lambda r: r.start_ns)
        warm = op_records[cold:]
        errors: dict[str, int] = {}
        for r in warm:
            if not r.ok:
                name = r.error or "unknown"
                errors[name] = errors.get(name, 0) + 1
        result[op] = OpStats(
            op=op,
            count=len(warm),
            ok=len(warm) - sum(errors.values()),
            errors=errors,
            latency=LatencyStats.of(r.duration_ns for r in warm if r.ok),
            cold_ms=[r.duration_ns / 1e6 for r in op_records[:cold]],
            failed_ns=sum(r.duration_ns for r in warm if not r.ok),
        )
    return result


def merge_ops(parts: Iterable[Mapping[str, OpStats]]) -> dict[str, OpStats]:
    """The per-op statistics of several workers or repetitions, added op by op."""
    merged: dict[str, OpStats] = {}
    for part in parts:
        for name, op in part.items():
            before = merged.get(name)
            if before is None:
                before = OpStats(name, 0, 0, {}, LatencyStats())
            errors = dict(before.errors)
            for cause, n in op.errors.items():
                errors[cause] = errors.get(cause, 0) + n
            latency = LatencyStats.merged([before.latency, op.latency])
            merged[name] = OpStats(
                name,
                before.count + op.count,
                before.ok + op.ok,
                errors,
                latency,
                before.cold_ms + op.cold_ms,
                before.failed_ns + op.failed_ns,
            )
    return merged


def rate_per_s(count: int, seconds: float) -> float:
    """``count`` events over ``seconds`` as a rate; NaN (not infinity) for an empty interval."""
    return count / seconds if seconds > 0 else math.nan


def throughput_per_s(records: Sequence[TimingRecord], ok_only: bool = True) -> float:
    """Completed calls per second over the span from the first start to the last end."""
    if not records:
        return math.nan
    start = min(r.start_ns for r in records)
    end = max(r.start_ns + r.duration_ns for r in records)
    done = sum(1 for r in records if r.ok) if ok_only else len(records)
    return rate_per_s(done, (end - start) / 1e9)
