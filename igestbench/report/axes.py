"""A chart panel's axes: the range shown, where the ticks go and how their labels read.

The rules are matplotlib's defaults as the report used them (plot.py writes the SVG itself):
a linear axis shows its data with a 5 % margin each side and ticks at 1-2-2.5-5 steps, about
four intervals; a log axis shows its data with a 5 % margin of its decades and ticks at 1, 2
and 5 of each decade; every label of an axis has the same number of decimals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: share of the data's span added each side (matplotlib's axes.xmargin / ymargin)
MARGIN = 0.05
_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
#: a log axis with more ticks than this keeps only the decades (LogLocator's numticks)
_LOG_TICKS = 8


@dataclass(frozen=True)
class Axis:
    """A scale from data values to a share of the axis's length (0 at the low end)."""

    low: float
    high: float
    log: bool = False

    def share(self, value: float) -> float:
        if self.log:
            return (math.log10(value) - self.low) / (self.high - self.low)
        return (value - self.low) / (self.high - self.low)

    def shows(self, value: float) -> bool:
        """Whether ``value`` lies inside the axis (a tick outside it is not drawn)."""
        if self.log and value <= 0:
            return False
        share = self.share(value)
        return -1e-9 <= share <= 1 + 1e-9


def linear(values: Iterable[float], margin: float = MARGIN) -> Axis:
    """The range of ``values`` with ``margin`` of its span each side; one value or none gets a
    small range around it, as matplotlib makes a flat axis readable."""
    found = list(values)
    if not found:
        return Axis(0.0, 1.0)
    low, high = min(found), max(found)
    if high - low <= 1e-12 * max(abs(low), abs(high), 1.0):
        pad = abs(low) * 0.05 if low else 0.05
        low, high = low - pad, high + pad
    span = high - low
    return Axis(low - margin * span, high + margin * span)


def logarithmic(values: Iterable[float]) -> Axis:
    """The decades of the positive ``values``, with a 5 % margin of them each side."""
    found = [math.log10(v) for v in values if v > 0]
    if not found:
        return Axis(0.0, 1.0, log=True)
    low, high = min(found), max(found)
    if high - low < 1e-9:
        low, high = low - 0.5, high + 0.5
    span = high - low
    return Axis(low - MARGIN * span, high + MARGIN * span, log=True)


def nice_ticks(axis: Axis, intervals: int = 4, integer: bool = False) -> list[float]:
    """Ticks inside ``axis`` at a 1, 2, 2.5 or 5 step of a power of ten: the smallest step that
    makes at most ``intervals`` intervals; whole numbers only when ``integer``."""
    span = axis.high - axis.low
    if span <= 0:
        return [axis.low]
    raw = span / intervals
    scale = 10.0 ** math.floor(math.log10(raw))
    step = 10.0 * scale
    for factor in _STEPS:
        candidate = factor * scale
        if integer and (candidate < 1 or candidate != int(candidate)):
            continue
        if candidate >= raw * (1 - 1e-9):
            step = candidate
            break
    first = math.ceil(axis.low / step - 1e-9)
    last = math.floor(axis.high / step + 1e-9)
    return [_clean(i * step) for i in range(first, last + 1)]


def log_ticks(axis: Axis) -> list[float]:
    """1, 2 and 5 of each decade inside ``axis``; only the decades when that is too many."""
    ticks = [f * 10.0 ** d for d in range(math.floor(axis.low) - 1, math.ceil(axis.high) + 1)
             for f in (1.0, 2.0, 5.0)]
    shown = [t for t in ticks if axis.shows(t)]
    if len(shown) > _LOG_TICKS:
        shown = [t for t in shown if _is_decade(t)]
    return shown


def log_minor_ticks(axis: Axis) -> list[float]:
    """2 to 9 of each decade inside ``axis``: the unlabelled marks between the labelled ones."""
    ticks = [f * 10.0 ** d for d in range(math.floor(axis.low) - 1, math.ceil(axis.high) + 1)
             for f in range(2, 10)]
    return [_clean(t) for t in ticks if axis.shows(t)]


def labels(ticks: Sequence[float]) -> list[str]:
    """The ticks' labels, all with the fewest decimals that write every one of them exactly
    ("0", "2.5", "5.0", "7.5" as matplotlib's ScalarFormatter writes them)."""
    for decimals in range(7):
        if all(abs(round(t, decimals) - t) <= 1e-9 * max(1.0, abs(t)) for t in ticks):
            break
    return [_no_minus_zero(f"{t:.{decimals}f}") for t in ticks]


def grouped(value: float) -> str:
    """A log axis's label: thousands grouped, up to ten significant digits ("10,000", "0.2")."""
    return f"{value:,.10g}"


def text_width(text: str, size: float) -> float:
    """About how wide ``text`` is at font size ``size`` in DejaVu Sans: enough to place an axis
    label beside its tick labels (the browser lays the text itself out)."""
    narrow = sum(text.count(c) for c in ".,:;il|!' ")
    return size * (0.62 * (len(text) - narrow) + 0.32 * narrow)


def _is_decade(value: float) -> bool:
    return abs(math.log10(value) - round(math.log10(value))) < 1e-9


def _clean(value: float) -> float:
    """A tick without the float noise of ``i * step`` (0.30000000000000004 is 0.3)."""
    return float(f"{value:.12g}")


def _no_minus_zero(text: str) -> str:
    return text[1:] if text.startswith("-") and float(text) == 0 else text
