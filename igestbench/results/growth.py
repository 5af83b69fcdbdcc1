"""How a query's cost grows with the catalogue: the slope of log latency against log size.

A query an index answers costs about the same at 10³ and 10⁶ Datafiles (slope near 0); one
whose index walk or answer grows with the tree grows slowly (a B-tree's depth is logarithmic);
one that no index serves makes the database read every row, and its cost grows with the table
(slope near 1 once the scan outweighs the call's fixed cost). The slope is fitted by least
squares over every size measured; the word for it, and what it means, are decided here, once,
for the result file, the terminal and the report alike.

A call's fixed cost (the round trip, the protocol, the answer's writing) flattens the fit over
the smaller sizes: over REST, a Datafile by name alone (a scan) cost 0.84, 1.64 and 7.50 ms at
10³, 10⁴ and 10⁵ Datafiles, a fitted slope of 0.48, where the largest tenfold alone gives 0.66.
So a slope between FLAT_BELOW and LINEAR_FROM is read as linear when the slope between the two
largest sizes (at least TOP_SPAN apart) reaches LINEAR_FROM: there the scan outweighs the fixed
cost, and "grows slowly, as an index walk does" would be the wrong reading. The fitted slope
stays the figure (the file, the page and the CSV give it); the meaning names the other.

A meaning states what was measured, and a cause only where the measurement shows it: a flat
line over small sizes may still hide a scan behind the call's fixed cost (a Datafile by name
alone at 10³-10⁴), so "flat" says that the cost did not grow, not that an index serves the
query; a slope below zero is the calls' noise; and where a member's call grows with the tree
but root's same call does not, the table is not the cause (root's call reads it too) — the
member's rules, asked of every row, are (:meth:`Growth.beside_root`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

#: Below this slope a query is flat; from LINEAR_FROM on it grows with the table.
FLAT_BELOW = 0.2
LINEAR_FROM = 0.5
#: How far apart (a ratio of sizes) the two largest sizes must be for their own slope to be
#: read: a p50 off by 15 % moves the slope over a tenfold by 0.06, over a doubling by 0.2.
TOP_SPAN = 5.0

#: word → what it means for an operator
MEANINGS = {
    "flat": "the cost did not grow with the catalogue over the sizes measured",
    "logarithmic": "grows slowly, as an index walk or a growing answer does",
    "linear": "the database scans: no index serves this query",
}
#: a flat line that fell: no growth to read, the calls varied more than the tree changed them
FELL = "the cost fell as the tree grew: the calls' own variation, no growth"
#: a scan the smaller sizes' fixed cost hid from the fit (see the module's docstring)
TOP = ("{linear} (slope {top:.2f} between the two largest sizes; at the smaller ones the "
       "call's own cost hid it)")
#: a member's call that grows where root's same call does not
RULES = ("the member's rules are asked of every row: root's same call does not grow "
         "({root:.2f})")


@dataclass(frozen=True)
class Growth:
    slope: float
    word: str
    #: the rows answered at the smallest and the largest size, where the answer itself grew
    #: with the tree (a page not yet full, an Investigation filling up): then the cost follows
    #: the answer, and "the database scans" would be a wrong reading
    answer: tuple[int, int] | None = None
    #: root's slope for the same query, where this (a member's) grows and root's does not
    root_slope: float | None = None
    #: the slope between the two largest sizes, where it made a fit under LINEAR_FROM linear
    top_slope: float | None = None

    @property
    def meaning(self) -> str:
        if self.word == "flat":
            return FELL if self.slope <= -FLAT_BELOW else MEANINGS["flat"]
        if self.root_slope is not None:
            return RULES.format(root=self.root_slope)
        if self.answer is not None:
            first, last = self.answer
            return (f"its answer grows with the tree ({first:,} → {last:,} rows): the cost "
                    "follows it")
        if self.top_slope is not None:
            return TOP.format(linear=MEANINGS["linear"], top=self.top_slope)
        return MEANINGS[self.word]

    def beside_root(self, root: Growth | None) -> Growth:
        """This growth of a member's call, read beside root's of the same call: where root's
        stays flat and this one grows, the rows the member's rules are asked of are what
        grows (the same query reads the same table for root)."""
        if root is None or root.word != "flat" or self.word == "flat" or self.answer:
            return self
        return replace(self, root_slope=root.slope)


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
    word, top = word_for(slope), None
    if word == "logarithmic":
        top = _top_slope(points)
        if top is not None and top >= LINEAR_FROM:
            word = "linear"
        else:
            top = None
    return Growth(round(slope, 3), word, answer, top_slope=None if top is None else round(top, 3))


def _top_slope(points: Sequence[tuple[float, float]]) -> float | None:
    """The slope between the two largest sizes of three or more (logs), when they are at least
    TOP_SPAN apart; None else (with two sizes it is the fit itself)."""
    largest = sorted(points)
    if len({x for x, _ in largest}) < 3:
        return None
    (x1, y1), (x2, y2) = largest[-2:]
    if x2 - x1 < math.log(TOP_SPAN):
        return None
    return (y2 - y1) / (x2 - x1)


def _slope(points: Sequence[tuple[float, float]]) -> float | None:
    """The least-squares slope of ``points``; None with fewer than two distinct x."""
    if len({x for x, _ in points}) < 2:
        return None
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    sxx = sum((x - mean_x) ** 2 for x, _ in points)
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
    return sxy / sxx
