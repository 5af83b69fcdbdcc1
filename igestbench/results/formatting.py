"""The one way a figure is written: its number, then the unit naming what was counted.

Every printer of a figure — terminal, result file (``summary[].text``), page, Markdown, CSV —
writes it with :func:`format_value`, so the same value is the same text everywhere. Kept apart
from the registry (:mod:`igestbench.results.figures`) so that the sweep verdicts
(:mod:`igestbench.results.sweeps`), which the registry uses, can write values too.
"""

from __future__ import annotations

import math

__all__ = ["BOUNDS", "format_number", "format_slope", "format_value"]

#: How a bounded value is written: ``lower`` (at least: the sweep reached its cap with the
#: objective met), ``upper`` (below: no step met it).
BOUNDS = {"lower": "≥ ", "upper": "< "}
#: Units that count things one by one: written as whole numbers, singular for one.
_COUNTS = {"errors": "error"}


def format_number(value: float | None) -> str:
    """A figure's number as sv7 writes it: no decimals from 100 on (thousands separated),
    else three significant digits (``9,400``, ``412``, ``29.4``, ``4.10``, ``0.523``);
    ``—`` when there is none."""
    if value is None or not math.isfinite(value):
        return "—"
    size = abs(value)
    if size >= 99.95:  # what would round to 100.0 is written as 100
        return f"{value:,.0f}"
    if size >= 9.995:
        return f"{value:.1f}"
    if size >= 1:
        return f"{value:.2f}"
    if size == 0:
        return "0"
    return f"{value:.3g}"


def format_slope(value: float) -> str:
    """A growth slope (of log latency against log size): two decimals, ``0.54``, ``-0.02`` —
    its words part at 0.2 and 0.5, so a third digit says nothing the fit can hold."""
    return f"{value:.2f}"


def format_value(value: float | None, unit: str, bound: str | None = None) -> str:
    """A figure with its unit: ``29.4 cycles/s``, ``4.10 ms``, ``≥ 40.0 requests/s`` (a lower
    bound), ``2 errors``; ``—`` alone when there is no value. Never a bare ``/s``: the unit
    names what is counted."""
    if value is None or not math.isfinite(value):
        return "—"
    if unit in _COUNTS:
        n = round(value)
        return f"{n:,} {_COUNTS[unit] if n == 1 else unit}"
    if unit == "slope":  # the terminal's and the page's growth words write it so too
        return f"{format_slope(value)} {unit}"
    return f"{BOUNDS.get(bound or '', '')}{format_number(value)} {unit}"
