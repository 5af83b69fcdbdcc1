"""A chart panel's axes: the range shown, where the ticks go and how their labels read.

The rules are matplotlib's defaults as the report used them (plot.py writes the SVG itself):
a linear axis shows its data with a 5 % margin each side and ticks at 1-2-2.5-5 steps, about
four intervals (fewer where their labels would run together: :func:`nice_ticks_fitting`);
a log axis shows its data with a 5 % margin of its decades and labels 1, 2 and 5
of each decade, or, over about a decade or less, as many more as make at least three labels
(:func:`log_ticks`); every label of a linear axis has the same number of decimals, and every
label groups its thousands ("100,000"), as every other number of the report does. No two
labels side by side overlap at the panel's width (their boxes estimated by :func:`text_width`):
a linear axis takes a longer step, or writes every n-th of its categories, or of the values
measured those that keep clear (:func:`thinned`), its tick marks all still drawn.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: share of the data's span added each side (matplotlib's axes.xmargin / ymargin)
MARGIN = 0.05
_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
#: The multiples of each decade a log axis may label, tried in this order: 1, 2 and 5; the
#: decades alone where those are too many; and where both are too few (an axis of about a decade
#: or less; matplotlib's LogFormatter labels more of the decade there too, its minor_thresholds)
#: the rounded preferred numbers of ISO 3, R''5 then R''10: round, and spread evenly along a log
#: axis, so that a panel from 0.45 to 1.4 ms reads 0.5, 0.6, 0.8, 1, 1.2 rather than five
#: labels below 1 and none above.
_LOG_SUBS = ((1.0, 2.0, 5.0), (1.0,), (1.0, 1.5, 2.5, 4.0, 6.0),
             (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0))
#: a log axis's labels: at least this many where the axis allows (a reader needs two to read a
#: value off the chart, and a third to see the scale is not linear) ...
_LOG_LEAST = 3
#: ... and at most this many (LogLocator's numticks: beyond, the decades, every n-th)
_LOG_MOST = 8


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


def log_ticks(axis: Axis, gap: float) -> list[float]:
    """The labelled ticks of a log axis: at least three where the axis allows, at most eight,
    no two nearer than ``gap`` (a share of the axis's length: a label's size along the axis, so
    that labels never overlap).

    The first of these that gives three: 1, 2 and 5 of each decade; the decades (every n-th of
    many); 1, 1.5, 2.5, 4 and 6 of each decade; 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 and 8 of each.
    Where a span is too narrow for any (1.1 to 1.6 ms holds only 1.2 and 1.5), the 1-2-2.5-5
    steps of a linear axis over its values (four intervals, or more where that gives fewer than
    three labels), as matplotlib's LogLocator falls back to its AutoLocator there.
    """
    candidates = [_multiples(axis, subs) for subs in _LOG_SUBS]
    candidates += [_linear_steps(axis, intervals) for intervals in (4, 6, 8, 3, 2)]
    readable = [t for t in candidates if len(t) <= _LOG_MOST and _apart(axis, t, gap)]
    enough = next((t for t in readable if len(t) >= _LOG_LEAST), None)
    if enough is not None:
        return enough
    if readable:
        return max(readable, key=len)
    return spaced(axis, candidates[-1], gap)  # a panel too small for two labels


def log_minor_ticks(axis: Axis) -> list[float]:
    """1 to 9 of each decade inside ``axis``: the marks between the labelled ones (plot.py
    leaves out those that are labelled)."""
    ticks = [f * 10.0 ** d for d in range(math.floor(axis.low) - 1, math.ceil(axis.high) + 1)
             for f in range(1, 10)]
    return [_clean(t) for t in ticks if axis.shows(t)]


def spaced(axis: Axis, ticks: Sequence[float], gap: float) -> list[float]:
    """``ticks`` in order, each left out that comes nearer than ``gap`` (a share of the axis's
    length) to the last one kept: the labels that fit side by side."""
    kept: list[float] = []
    for tick in ticks:
        if not kept or axis.share(tick) - axis.share(kept[-1]) >= gap:
            kept.append(tick)
    return kept


def clear(axis: Axis, ticks: Sequence[float], texts: Sequence[str], length: float,
          size: float, gap: float) -> bool:
    """Whether the labels ``texts`` of ``ticks`` (in order along an axis ``length`` points
    long, at font size ``size``) keep ``gap`` points apart side by side: each label's box is
    its :func:`text_width`, centred on its tick."""
    edges = [(axis.share(t) * length, text_width(text, size) / 2)
             for t, text in zip(ticks, texts, strict=True)]
    return all(b - half_b - (a + half_a) >= gap
               for (a, half_a), (b, half_b) in itertools.pairwise(edges))


def nice_ticks_fitting(axis: Axis, length: float, size: float, gap: float) -> list[float]:
    """:func:`nice_ticks` of about four intervals, or fewer (a longer 1-2-2.5-5 step) where
    their labels would not keep ``gap`` apart at ``length`` points: a narrow panel of large
    numbers reads "0", "50,000", "100,000" rather than five labels run together."""
    for intervals in (4, 3, 2, 1):
        ticks = nice_ticks(axis, intervals)
        if clear(axis, ticks, labels(ticks), length, size, gap):
            return ticks
    return ticks


def thinned(axis: Axis, ticks: Sequence[float], texts: Sequence[str], length: float,
            size: float, gap: float, regular: bool) -> list[int]:
    """The indices of the labels to write where all of them would not keep ``gap`` apart
    (see :func:`clear`). ``regular`` (categories, evenly spaced): every n-th from the first,
    the smallest n that fits. Otherwise (the measured values, e.g. 1, 2, 4 … 64 clients on a
    linear axis, which crowd at its low end): the first, the last where it keeps clear of it,
    and between them each that keeps clear of the one kept before it and of the last."""
    def fits(chosen: Sequence[int]) -> bool:
        return clear(axis, [ticks[i] for i in chosen], [texts[i] for i in chosen], length,
                     size, gap)

    count = len(ticks)
    if fits(range(count)):
        return list(range(count))
    if regular:
        return next((list(range(0, count, n)) for n in range(2, count) if
                     fits(range(0, count, n))), [0])
    kept = [0]
    for i in range(1, count - 1):
        if fits([kept[-1], i]) and fits([i, count - 1]):
            kept.append(i)
    return [*kept, count - 1] if fits([kept[-1], count - 1]) else kept


def _multiples(axis: Axis, subs: Sequence[float]) -> list[float]:
    """``subs`` of each decade inside ``axis``; of the decades alone, every n-th where more
    than :data:`_LOG_MOST`."""
    decades = range(math.floor(axis.low) - 1, math.ceil(axis.high) + 1)
    if subs == (1.0,):
        inside = [d for d in decades if axis.shows(10.0 ** d)]
        stride = max(1, math.ceil(len(inside) / _LOG_MOST))
        decades = range(0) if not inside else range(inside[0] - inside[0] % stride,
                                                     inside[-1] + 1, stride)
    ticks = (_clean(f * 10.0 ** d) for d in decades for f in subs)
    return [t for t in ticks if axis.shows(t)]


def _linear_steps(axis: Axis, intervals: int) -> list[float]:
    """The ticks a linear axis over the log axis's values would have."""
    values = Axis(10.0 ** axis.low, 10.0 ** axis.high)
    return [t for t in nice_ticks(values, intervals) if axis.shows(t)]


def _apart(axis: Axis, ticks: Sequence[float], gap: float) -> bool:
    shares = [axis.share(t) for t in ticks]
    return all(b - a >= gap for a, b in itertools.pairwise(shares))


def labels(ticks: Sequence[float]) -> list[str]:
    """The ticks' labels, all with the fewest decimals that write every one of them exactly
    ("0", "2.5", "5.0", "7.5" as matplotlib's ScalarFormatter writes them), thousands grouped
    ("100,000") as every number of the report is."""
    places = max((_decimals(t) for t in ticks), default=0)
    # a tick that rounds to zero is "0", never "-0"
    return [f"{t if round(t, places) else 0.0:,.{places}f}" for t in ticks]


def log_labels(ticks: Sequence[float]) -> list[str]:
    """A log axis's labels: steps of a linear axis (:func:`log_ticks` on a narrow span) as a
    linear axis writes them ("1.0", "1.5", "2.0"), multiples of decades each as itself ("0.5",
    "1", "2", "5")."""
    steps = [b - a for a, b in itertools.pairwise(ticks)]
    if len(steps) > 1 and max(steps) - min(steps) <= 1e-9 * max(steps):
        return labels(ticks)
    return [grouped(t) for t in ticks]


def grouped(value: float) -> str:
    """A number as a label: thousands grouped, no more decimals than it has ("10,000", "0.2",
    "0.0125")."""
    return labels([value])[0]


def text_width(text: str, size: float) -> float:
    """About how wide ``text`` is at font size ``size`` in DejaVu Sans: enough to place an axis
    label beside its tick labels (the browser lays the text itself out)."""
    narrow = sum(text.count(c) for c in ".,:;il|!' ")
    return size * (0.62 * (len(text) - narrow) + 0.32 * narrow)


def _decimals(value: float) -> int:
    """The fewest decimals (up to 10) that write ``value`` exactly."""
    for places in range(10):
        if abs(round(value, places) - value) <= 1e-9 * max(1.0, abs(value)):
            return places
    return 10


def _clean(value: float) -> float:
    """A tick without the float noise of ``i * step`` (0.30000000000000004 is 0.3)."""
    return float(f"{value:.12g}")
