"""Latency histograms of a result file pooled: several operations' calls as one series.

Where several operations make one unit of work (the three single-result lookups), their
HdrHistograms (``ops.*.histogram`` in the file) are added bucket by bucket before a percentile
is taken: percentiles of the pooled calls, never an average of percentiles. hdrh walks its
~17,000 buckets in Python for every mean, deviation or percentile (≈ 50 ms a histogram, minutes
for a large campaign); numpy finds the few recorded buckets at once, and only those are
converted to values. The rank is hdrh's own nearest-rank rule, so a single histogram gives what
hdrh would.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy
from hdrh.histogram import HdrHistogram

__all__ = ["Pooled", "pool", "pooled_percentiles_ms"]


@dataclass(frozen=True)
class Pooled:
    """The recorded buckets of pooled histograms."""

    #: each recorded bucket's highest and lowest value (µs), and the cumulative count
    highest_us: Any  # numpy array
    lowest_us: Any
    counts: Any
    cumulative: Any
    histogram: HdrHistogram

    @property
    def total(self) -> int:
        return int(self.cumulative[-1])

    def percentile_ms(self, percentile: float) -> float:
        rank = self.histogram.get_target_count_at_percentile(percentile)
        index = min(int(numpy.searchsorted(self.cumulative, rank)), len(self.cumulative) - 1)
        return float(self.highest_us[index]) / 1000

    def stdev_ms(self, mean_ms: float) -> float | None:
        """The deviation around ``mean_ms`` (the exact mean of the calls) from the buckets'
        midpoints; None below two calls."""
        n = self.total
        if n < 2:
            return None
        middles = (self.highest_us + self.lowest_us) / 2
        squares = float((self.counts * (middles - mean_ms * 1000) ** 2).sum())
        value = math.sqrt(squares / (n - 1)) / 1000
        return value if math.isfinite(value) else None


def pool(encoded: Sequence[str]) -> Pooled | None:
    """The histograms ``encoded`` (HdrHistogram's base64 form) added; None when they hold no
    call (or none decodes)."""
    histograms = []
    for text in encoded:
        try:
            histograms.append(HdrHistogram.decode(text.encode("ascii")))
        except Exception:  # a damaged histogram in a partner's file: no percentile from it
            continue
    if not histograms:
        return None
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
    highest = numpy.array([first.get_highest_equivalent_value(first.get_value_from_index(int(i)))
                           for i in indexes], dtype=numpy.float64)
    lowest = numpy.array([first.get_lowest_equivalent_value(first.get_value_from_index(int(i)))
                          for i in indexes], dtype=numpy.float64)
    bucket_counts = counts[indexes]
    return Pooled(highest, lowest, bucket_counts, numpy.cumsum(bucket_counts), first)


def pooled_percentiles_ms(encoded: Sequence[str], percentiles: Sequence[float]
                          ) -> tuple[float | None, ...]:
    """The ``percentiles`` (ms) of the calls of the histograms ``encoded``, pooled."""
    pooled = pool(encoded)
    if pooled is None:
        return tuple(None for _ in percentiles)
    return tuple(pooled.percentile_ms(p) for p in percentiles)
