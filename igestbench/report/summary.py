"""The summary a coordinator reads first: one row per target catalogue.

Each row says whether the catalogue works for the campaign's sites (k of n, and the main cause
when not), its headline figures with their units, SOAP against REST as a ratio, the sustained
rate of its load sweeps (capped marked), its score, and the change since the previous
campaign. The best value of each column is marked.

Every figure is the registry's (:mod:`igestbench.results.figures`): a target's headline figure
is the median, over the sites that measured it, of each site's figure at the lowest
concurrency it measured, over SOAP with the suite's default client where the site used it
(the registry's own rows, so the page and the CSV agree with every other printer). Runs from
inside the operator's network (local connections) count only where no partner measured the
target; quick tours only where no full run did.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial

from igestbench.report.matrices import Success, SuccessCell
from igestbench.report.series import interface_name
from igestbench.report.tables import total_text
from igestbench.results.campaign import Campaign, CampaignRun
from igestbench.results.campaign_file import CampaignTarget
from igestbench.results.causes import MEANINGS
from igestbench.results.figures import RowIndex, SummaryRow, format_value

#: The headline figures: (column, workload, metric, higher is better).
HEADLINES = (
    ("lookup p50", "single-query", "p50", False),
    ("full cycle", "full-cycle", "rate", True),
    ("createMany", "burst", "createMany rate", True),
)
#: SOAP clients in the order a summary prefers them: the suite's default first.
_FLAVOURS = ("zeep", "lean", "python-icat")


@dataclass(frozen=True)
class SummaryCell:
    """One value of the summary: the registry's text, the number behind it and why."""

    text: str
    value: float | None = None
    unit: str = ""
    #: where it comes from, in a few words ("median of 4 sites, zeep, 1 client")
    note: str = ""
    #: the best of its column
    best: bool = False
    #: the registry's marks (capped, client-bound, quick tour …)
    marks: tuple[str, ...] = ()
    #: 0 measured by partners, 1 only by the operator itself (local), 2 only by quick tours:
    #: the best of a column is marked among the values of the first kind there is
    source: int = 0
    #: the client flavour(s) of the figures behind it (only values of one flavour are ranked)
    flavour: str | None = None
    #: ``lower`` (≥) or ``upper`` (<): a bound, not a measurement — never the best
    bound: str | None = None


EMPTY = SummaryCell("—")


@dataclass(frozen=True)
class TargetSummary:
    target: str
    operator: str | None
    works: int
    #: sites whose run was counted (cells run), and the sites of the campaign
    tried: int
    sites: int
    #: the most frequent cause of the cells that do not work, and how many it hit
    cause: str | None
    cause_sites: int
    #: the footnote letter that explains it
    cause_letter: str | None
    figures: tuple[SummaryCell, ...]
    rest_vs_soap: SummaryCell
    sustained: SummaryCell
    score: SummaryCell
    change: SummaryCell = EMPTY

    @property
    def works_text(self) -> str:
        return f"{self.works} of {self.tried}"


#: What ★ means, as the page's legends say it (HTML and Markdown alike).
BEST_LEGEND = ("★ the best measured value of its column among comparable ones: measured by "
               "partners (else, where none did, by the operator itself, else by quick tours — "
               "never mixed) with the same client flavour, the column's most common one; a "
               "bound (≥ a cap, or below the lowest step) is not a measurement and is never "
               "starred, nor is a value with nothing to compare")


@dataclass(frozen=True)
class CampaignSummary:
    columns: tuple[str, ...]
    rows: tuple[TargetSummary, ...]
    #: the best "works" share of the column (its rows are marked)
    best_works: tuple[str, ...] = ()
    #: "previous campaign (dates) → this one (dates)", when there is a previous campaign
    change_heading: str | None = None
    #: what ★ means
    best_legend: str = BEST_LEGEND


def _groups(runs: Sequence[CampaignRun], local: Callable[[CampaignRun], bool]
            ) -> list[tuple[list[CampaignRun], str]]:
    """The runs a target's figures come from, in the order they are asked: partners' full
    runs, then the operator's own (a local connection), then quick tours."""
    full = [r for r in runs if not r.quick]
    quick = [r for r in runs if r.quick]
    return [([r for r in full if not local(r)], ""),
            ([r for r in full if local(r)], "local connection only"),
            (quick, "quick tours only")]


def _first_measured(groups: Sequence[tuple[list[CampaignRun], str]],
                    pick: Callable[[CampaignRun], SummaryRow | None]) -> SummaryCell:
    """The median of the first group of runs in which the figure was measured; "failed" when
    runs measured it and every one failed."""
    failed = False
    for source, (runs, note) in enumerate(groups):
        rows = [row for run in runs if (row := pick(run)) is not None]
        measured = [r for r in rows if r.value is not None and "failed" not in r.marks]
        if measured:
            # one client flavour per cell (the suite's default first): a median of zeep's
            # and python-icat's figures would compare with neither
            rank = {f: i for i, f in enumerate(_FLAVOURS)}
            flavour = min((r.flavour for r in measured), key=lambda f: rank.get(f, len(rank)))
            rows = [r for r in rows if r.flavour == flavour]
            if failed:
                note = "; ".join(n for n in (note, "the partners' runs failed") if n)
            return replace(_median_cell(rows, note), source=source)
        failed = failed or any("failed" in r.marks for r in rows)
    return SummaryCell("failed", note="every run of it failed") if failed else EMPTY


def _figure(index: RowIndex, rows: Sequence[SummaryRow], workload: str, metric: str
            ) -> SummaryRow | None:
    """A run's figure over SOAP at its lowest level, with the preferred client."""
    found = [r for r in rows if r.workload == workload and r.metric == metric
             and r.interface == "soap" and r.clients is not None]
    if not found:
        return None
    rank = {f: i for i, f in enumerate(_FLAVOURS)}
    found.sort(key=lambda r: (r.clients or 0, rank.get(r.flavour, len(rank))))
    return found[0]


def _is_local(target: CampaignTarget, run: CampaignRun) -> bool:
    return target.is_local_to(run.site)


def _run_figure(run: CampaignRun, workload: str, metric: str) -> SummaryRow | None:
    rows = run.figures
    return _figure(RowIndex(rows), rows, workload, metric)


def _median_cell(values: Sequence[SummaryRow], note: str) -> SummaryCell:
    measured = [r for r in values if r.value is not None and "failed" not in r.marks]
    if not measured:
        failed = any("failed" in r.marks for r in values)
        return SummaryCell("failed" if failed else "—", note="every run of it failed"
                           if failed else "")
    unit = measured[0].unit
    value = float(f"{statistics.median(r.value for r in measured if r.value is not None):.6g}")
    first = measured[0]
    where = (f"{first.flavour}, {first.clients} client" + ("s" if first.clients != 1 else ""))
    sites = f"median of {len(measured)} sites" if len(measured) > 1 else "from 1 site"
    if all(r.samples == 1 for r in measured):
        sites += ", n = 1"  # one call each: a percentile of nothing more
    marks = tuple(sorted({m for r in measured for m in r.marks if m == "client-bound"}))
    words = ", ".join(w for w in (sites, where, note) if w)
    return SummaryCell(format_value(value, unit), value, unit, words, marks=marks,
                       flavour="+".join(sorted({r.flavour for r in measured})),
                       bound=next((r.bound for r in measured if r.bound), None))


def _ratio(groups: Sequence[tuple[list[CampaignRun], str]]) -> SummaryCell:
    """REST's lookup rate over SOAP's, in the same run at the same level (median of the runs
    of the first group that measured both)."""
    for runs, note in groups:
        cell = _ratio_of(runs, note)
        if cell.value is not None:
            return cell
    return SummaryCell("—", note="no run measured both interfaces")


def _ratio_of(runs: Sequence[CampaignRun], note: str) -> SummaryCell:
    ratios = []
    for run in runs:
        rows = run.figures
        soap = _figure(RowIndex(rows), rows, "single-query", "rate")
        rest = next((r for r in rows if r.workload == "single-query" and r.metric == "rate"
                     and r.interface == "rest" and soap is not None
                     and r.clients == soap.clients), None)
        # in the same run: a combined cell's interfaces may come from two (results/pieces.py)
        same = soap is not None and rest is not None and run.origin(
            f"single-query/{soap.interface}") is run.origin("single-query/rest")
        if soap and rest and soap.value and rest.value and same:
            ratios.append(rest.value / soap.value)
    if not ratios:
        return SummaryCell("—", note="no run measured both interfaces")
    ratio = statistics.median(ratios)
    faster = "REST faster" if ratio > 1 else "SOAP faster" if ratio < 1 else "equal"
    sites = f"median of {len(ratios)} runs" if len(ratios) > 1 else "1 run"
    return SummaryCell(f"REST {ratio:.2f}\u00d7 SOAP", float(f"{ratio:.4g}"), "\u00d7",
                       "; ".join(w for w in (f"lookups/s, {faster}", sites, note) if w))


def _sustained(runs: Sequence[CampaignRun]) -> SummaryCell:
    """The highest sustained rate any site's sweep (or swarm) measured on the target."""
    best: tuple[SummaryRow, CampaignRun] | None = None
    for run in runs:
        for row in run.figures:
            if row.workload != "sweep" or row.value is None or row.bound == "upper":
                continue
            if best is None or row.value > (best[0].value or 0):
                best = (row, run)
    if best is None and not any(r.result.raw.get("sweeps") or "sweep" in (
            r.result.raw["run"].get("parts") or ("sweep",)) for r in runs):
        return SummaryCell("not run", note="no run was asked for a load sweep (--parts sweep)")
    if best is None:
        return SummaryCell("—", note="no sweep sustained a rate")
    row, run = best
    swarm = ", swarm" if run.kind == "swarm" else ""
    return SummaryCell(row.text, row.value, row.unit,
                       f"{run.site}, {interface_name(row.interface)}{swarm}", marks=row.marks,
                       flavour=f"{row.interface} {row.flavour}", bound=row.bound)


def _cause(cells: Sequence[SuccessCell], letters: Mapping[tuple[str, str], tuple[str, ...]]
           ) -> tuple[str | None, int, str | None]:
    causes: Counter[str] = Counter()
    where: dict[str, tuple[str, str]] = {}
    for cell in cells:
        if cell.state in ("ok", "not-run"):
            continue
        for cause in dict.fromkeys(p.cause for p in cell.problems):
            causes[cause] += 1
            where.setdefault(cause, (cell.site, cell.target))
    if not causes:
        return None, 0, None
    cause, count = causes.most_common(1)[0]
    meaning = MEANINGS.get(cause, ("",))[0]
    if cause.startswith("icat-fault-"):
        meaning = f"ICAT {cause.removeprefix('icat-fault-')} faults"
    text = f"{cause}: {meaning}" if meaning and not cause.startswith("icat-fault-") else \
        meaning or cause
    marks = letters.get(where[cause], ())
    return text, count, marks[0] if marks else None


def _mark_best(rows: list[TargetSummary]) -> list[TargetSummary]:
    """Mark the best value of each figure column (lower or higher, as the figure goes) among
    comparable values (:data:`BEST_LEGEND`)."""
    rank = {f: i for i, f in enumerate(_FLAVOURS)}

    def best_of(cells: list[SummaryCell], higher: bool
                ) -> tuple[float, int, str | None] | None:
        known = [c for c in cells if c.value is not None and c.bound is None
                 and "failed" not in c.marks]
        if not known:
            return None
        first = min(c.source for c in known)  # partners' figures before local ones
        kinds = Counter(c.flavour for c in known if c.source == first)
        flavour = max(kinds, key=lambda f: (kinds[f], -rank.get(f or "", len(rank))))
        values = [c.value for c in known if c.source == first and c.flavour == flavour
                  and c.value is not None]
        if len(values) < 2:
            return None
        return (max(values) if higher else min(values)), first, flavour

    def marked(cell: SummaryCell, top: tuple[float, int, str | None] | None) -> SummaryCell:
        hit = (top is not None and cell.bound is None and "failed" not in cell.marks
               and (cell.value, cell.source, cell.flavour) == top)
        return replace(cell, best=True) if hit else cell

    for i, (_, _, _, higher) in enumerate(HEADLINES):
        top = best_of([r.figures[i] for r in rows], higher)
        rows = [replace(r, figures=tuple(marked(c, top) if j == i else c
                                         for j, c in enumerate(r.figures))) for r in rows]
    top = best_of([r.sustained for r in rows], True)
    rows = [replace(r, sustained=marked(r.sustained, top)) for r in rows]
    top = best_of([r.score for r in rows], True)
    rows = [replace(r, score=marked(r.score, top)) for r in rows]
    top = best_of([r.change for r in rows], True)
    return [replace(r, change=marked(r.change, top)) for r in rows]


def campaign_summary(campaign: Campaign, success: Success,
                     letters: Mapping[tuple[str, str], tuple[str, ...]],
                     scores: Mapping[str, tuple[int, int] | None]) -> CampaignSummary:
    """The summary rows of ``campaign`` (see the module docstring)."""
    targets = {t.name: t for t in campaign.targets}
    cells = {name: [row.cells[i] for row in success.rows]
             for i, name in enumerate(success.targets)}
    rows = []
    for name, target in targets.items():
        column = cells.get(name, [])
        runs = [r for r in campaign.runs if r.target == name]
        groups = _groups([r for r in runs if r.kind == "run"], partial(_is_local, target))
        figures = [_first_measured(groups, partial(_run_figure, workload=w, metric=m))
                   for _, w, m, _ in HEADLINES]
        cause, cause_sites, letter = _cause(column, letters)
        score = scores.get(name)
        rows.append(TargetSummary(
            target=name, operator=target.operator,
            works=sum(c.state == "ok" for c in column),
            tried=sum(c.state != "not-run" for c in column), sites=len(column),
            cause=cause, cause_sites=cause_sites, cause_letter=letter,
            figures=tuple(figures), rest_vs_soap=_ratio(groups), sustained=_sustained(runs),
            # totals of different maxima (aspects not measured) are not compared
            score=SummaryCell(total_text(score), float(score[0]), f"points of {score[1]}",
                              flavour=f"of {score[1]}") if score else EMPTY,
        ))
    shares = [(r.works / r.tried if r.tried else -1.0) for r in rows]
    top = max(shares, default=-1.0)
    best_works = tuple(r.target for r, s in zip(rows, shares, strict=True)
                       if top > 0 and s == top and len(rows) > 1)
    return CampaignSummary(tuple(c for c, *_ in HEADLINES), tuple(_mark_best(rows)), best_works)


def with_change(now: CampaignSummary, before: CampaignSummary, heading: str
                ) -> CampaignSummary:
    """``now`` with each target's change since ``before``: how many sites it works for, and
    its lookup p50 (the first headline figure) in %."""
    old = {r.target: r for r in before.rows}
    rows = []
    for row in now.rows:
        previous = old.get(row.target)
        if previous is None:
            rows.append(replace(row, change=SummaryCell("new",
                                                        note="not in the previous campaign")))
            continue
        parts = [f"works {previous.works_text} → {row.works_text}"]
        value = None
        then, current = previous.figures[0], row.figures[0]
        if then.value and current.value is not None:
            # lookup latency: lower is better, so a fall is an improvement (shown as +)
            value = 100.0 * (then.value - current.value) / then.value
            parts.append(f"{HEADLINES[0][0]} {then.text} → {current.text} "
                         f"({'faster' if value >= 0 else 'slower'} by {abs(value):.0f} %)")
        rows.append(replace(row, change=SummaryCell("; ".join(parts), value, "%")))
    marked = _mark_best(rows)
    return replace(now, rows=tuple(marked), change_heading=heading)


@dataclass(frozen=True)
class FigureChange:
    """One headline figure of a target in the previous campaign and in this one."""

    target: str
    figure: str
    before: str
    now: str
    #: the change in % of the previous value; None when either side has none
    percent: float | None
    #: "better", "worse" or "same" (within 5 %), as the figure goes (latency down is better)
    direction: str


def figure_changes(now: CampaignSummary, before: CampaignSummary) -> tuple[FigureChange, ...]:
    """Per target in both campaigns and headline figure (and the sustained rate): before, now,
    the change in % and whether it is for the better."""
    old = {r.target: r for r in before.rows}
    changes = []
    for row in now.rows:
        previous = old.get(row.target)
        if previous is None:
            continue
        pairs = [(name, higher, previous.figures[i], row.figures[i])
                 for i, (name, _, _, higher) in enumerate(HEADLINES)]
        pairs.append(("sustained rate", True, previous.sustained, row.sustained))
        for name, higher, then, current in pairs:
            if then.value is None and current.value is None:
                continue
            percent = None
            if then.value and current.value is not None:
                percent = 100.0 * (current.value - then.value) / then.value
            direction = "same"
            if percent is not None and abs(percent) >= 5:
                direction = "better" if (percent > 0) == higher else "worse"
            changes.append(FigureChange(row.target, name, then.text, current.text, percent,
                                        direction))
    return tuple(changes)
