"""How a query's cost grows with the catalogue: the slope of log latency against log size.

A query an index answers costs about the same at 10³ and 10⁶ Datafiles (slope near 0); one
whose index walk or answer grows with the tree grows slowly (a B-tree's depth is logarithmic);
one that no index serves makes the database read every row, and its cost grows with the table
(slope near 1 once the scan outweighs the call's fixed cost). The slope is fitted by least
squares over every size measured; the word for it is decided here, once, for the result file,
the terminal and the report alike.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Below this slope a query is flat; from LINEAR_FROM on it grows with the table.
FLAT_BELOW = 0.2
LINEAR_FROM = 0.5

#: word → what it means for an operator
MEANINGS = {
    "flat": "an index finds the answer: the cost does not grow with the catalogue",
    "logarithmic": "grows slowly, as an index walk or a growing answer does",
    "linear": "the database scans: no index serves this query",
}


@dataclass(frozen=True)
class Growth:
    slope: float
    word: str
    #: the rows answered at the smallest and the largest size, where the answer itself grew
    #: with the tree (a page not yet full, an Investigation filling up): then the cost follows
    #: the answer, and "the database scans" would be a wrong reading
    answer: tuple[int, int] | None = None

    @property
    def meaning(self) -> str:
        if self.answer is not None and self.word != "flat":
            first, last = self.answer
            return (f"its answer grows with the tree ({first:,} → {last:,} rows): the cost "
                    "follows it")
        return MEANINGS[self.word]


def word_for(slope: float) -> str:
    if slope < FLAT_BELOW:
        return "flat"
    return "logarithmic" if slope < LINEAR_FROM else "linear"


def fit(sizes: Sequence[float], latencies_ms: Sequence[float],
        rows: Sequence[int | None] | None = None) -> Growth | None:
    """The growth of ``latencies_ms`` over ``sizes`` (pairs with a positive value of both);
    None with fewer than two distinct sizes. ``rows``: the rows each answer held, to tell a
    growing answer from a scan."""
    points = [(math.log(s), math.log(t)) for s, t in zip(sizes, latencies_ms, strict=True)
              if s > 0 and t is not None and t > 0]  # fmt: skip
    slope = _slope(points)
    if slope is None:
        return None
    answer = None
    if rows is not None:
        counted = [(s, r) for s, r in zip(sizes, rows, strict=True) if s > 0 and r]
        grows = _slope([(math.log(s), math.log(r)) for s, r in counted])
        if grows is not None and grows >= FLAT_BELOW:
            answer = (counted[0][1], counted[-1][1])
    return Growth(round(slope, 3), word_for(slope), answer)


def _slope(points: Sequence[tuple[float, float]]) -> float | None:
    """The least-squares slope of ``points``; None with fewer than two distinct x."""
    if len({x for x, _ in points}) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return sxy / sxx
