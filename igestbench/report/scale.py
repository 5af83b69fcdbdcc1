"""The report's scale section: how each query's cost grows with the catalogue, root and member.

From each run's ``scale`` section (``sv7 run --parts scale``) alone:

* per target a chart of latency (p50, ms) against the tree's size (Datafiles), both axes
  logarithmic, one panel per query of the set, a line per site, interface and role — on a
  log-log chart a straight line's slope is the growth the table gives;
* a table of growth per target: per site, interface and role, each query's fitted slope and its
  word (flat, logarithmic, linear), as the run wrote them (:mod:`igestbench.results.growth`);
* the member's p50 over root's at the largest size each run measured, per query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from igestbench.report.charts import Chart, chart_colours
from igestbench.report.colours import colour_of, dash_for, paler
from igestbench.report.series import Panel, Series
from igestbench.results.campaign import Campaign, CampaignRun
from igestbench.results.figures import MS, P50, SCALE, figure, format_number
from igestbench.results.format import SCALE_ROLES
from igestbench.results.formatting import format_slope

INTERFACE_NAMES = {"soap": "SOAP", "rest": "REST"}
ROLES = SCALE_ROLES


@dataclass(frozen=True)
class GrowthCell:
    slope: float | None
    word: str | None
    #: what the word means for this cell, as the run wrote it (the cell's tooltip)
    meaning: str | None = None

    @property
    def text(self) -> str:
        return "—" if self.slope is None else f"{format_slope(self.slope)} {self.word}"


@dataclass(frozen=True)
class GrowthRow:
    target: str
    site: str
    interface: str
    role: str
    #: the sizes the slope was fitted over (Datafiles), smallest to largest
    sizes: tuple[int, ...]
    cells: tuple[GrowthCell, ...]


@dataclass(frozen=True)
class RatioRow:
    target: str
    site: str
    interface: str
    #: the largest size both roles were measured at
    size: int
    #: member p50 / root p50 per query (None: one of them missing)
    cells: tuple[float | None, ...]

    def text(self, value: float | None) -> str:
        return "—" if value is None else f"{format_number(value)}x"


@dataclass(frozen=True)
class LatencyRow:
    """One run's p50 of each query at one size, as one role over one interface (the numbers
    the chart draws, for the Markdown page)."""

    target: str
    site: str
    interface: str
    role: str
    size: int
    #: p50 (ms) per query, None where not measured
    cells: tuple[float | None, ...]

    @staticmethod
    def text(value: float | None) -> str:
        return format_number(value)


@dataclass(frozen=True)
class ScaleView:
    #: (name, label) of each query, in the order of the runs' sets
    queries: tuple[tuple[str, str], ...]
    charts: tuple[Chart, ...]
    growth: tuple[GrowthRow, ...]
    ratios: tuple[RatioRow, ...]
    #: what the page must say about the runs (a member not measured, and why)
    notes: tuple[str, ...]
    #: every measured cell, as scale.csv holds it (SCALE_CSV_HEADER)
    cells: tuple[list[Any], ...] = ()
    #: the p50s the charts draw, per run, interface, role and size (the Markdown's table)
    latency: tuple[LatencyRow, ...] = ()
    #: the unit of a latency (the registry's: figures.figure(SCALE, P50))
    unit: str = MS

    def with_drawings(self, charts: Sequence[Chart]) -> ScaleView:
        return replace(self, charts=tuple(charts))


def _section(run: CampaignRun) -> Mapping[str, Any] | None:
    section = run.result.raw.get("scale")
    if not isinstance(section, Mapping) or not isinstance(section.get("sizes"), list):
        return None
    return section


def _points(section: Mapping[str, Any]) -> dict[tuple[str, str, str], dict[int, float]]:
    """(query, interface, role) → size → p50 ms, over the sizes measured."""
    out: dict[tuple[str, str, str], dict[int, float]] = {}
    for size in section["sizes"]:
        if not isinstance(size, Mapping) or not isinstance(size.get("size"), int):
            continue
        for q in size.get("queries") or ():
            value = q.get("p50_ms") if isinstance(q, Mapping) else None
            if isinstance(value, int | float) and value > 0:
                key = (str(q.get("query")), str(q.get("interface")), str(q.get("role")))
                out.setdefault(key, {})[size["size"]] = float(value)
    return out


def _queries(sections: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, str], ...]:
    found: dict[str, str] = {}
    for section in sections:
        for name, label in (section.get("queries") or {}).items():
            found.setdefault(str(name), str(label))
    return tuple(found.items())


def _chart(index: int, target: str, runs: Sequence[tuple[CampaignRun, Mapping[str, Any]]],
           queries: Sequence[tuple[str, str]], colours: Mapping[str, str]) -> Chart | None:
    """One panel per query; a line per site, interface and role: the site's colour (paler for
    the ordinary member), dashed for REST — as in every chart of the page."""
    unit = figure(SCALE, P50).unit
    panels = []
    for name, label in queries:
        series = []
        for run, section in runs:
            for (query, interface, role), points in _points(section).items():
                if query != name:
                    continue
                sizes = sorted(points)
                colour = colour_of(colours, run.site)
                series.append(Series(
                    f"{run.site} · {INTERFACE_NAMES.get(interface, interface)} · {role}",
                    tuple(float(s) for s in sizes), tuple(points[s] for s in sizes),
                    colour=paler(colour) if role == "member" else colour,
                    dash=dash_for(interface)))
        panels.append(Panel(label, "Datafiles in the catalogue", f"p50 ({unit})",
                            tuple(sorted(series, key=lambda s: s.label)), log=True,
                            empty_note="not measured"))  # fmt: skip
    if not any(p.series for p in panels):
        return None
    return Chart(f"scale-{index}", "scale", f"Latency against catalogue size: {target}",
                 tuple(panels), columns=3)


def _growth(target: str, run: CampaignRun, section: Mapping[str, Any],
            queries: Sequence[tuple[str, str]]) -> list[GrowthRow]:
    fitted: dict[tuple[str, str, str], GrowthCell] = {}
    for g in section.get("growth") or ():
        if isinstance(g, Mapping):
            slope = g.get("slope")
            fitted[(str(g.get("query")), str(g.get("interface")), str(g.get("role")))] = \
                GrowthCell(float(slope) if isinstance(slope, int | float) else None,
                           str(g["growth"]) if g.get("growth") else None,
                           str(g["meaning"]) if g.get("meaning") else None)
    sizes = tuple(s["size"] for s in section["sizes"] if isinstance(s, Mapping)
                  and isinstance(s.get("size"), int))  # fmt: skip
    rows = []
    for interface in dict.fromkeys(k[1] for k in fitted):
        for role in ROLES:
            cells = tuple(fitted.get((q, interface, role), GrowthCell(None, None))
                          for q, _ in queries)  # fmt: skip
            if any(c.slope is not None for c in cells):
                rows.append(GrowthRow(target, run.site, interface, role, sizes, cells))
    return rows


def _ratios(target: str, run: CampaignRun, section: Mapping[str, Any],
            queries: Sequence[tuple[str, str]]) -> list[RatioRow]:
    points = _points(section)
    rows = []
    for interface in dict.fromkeys(k[1] for k in points):
        measured = {role: {size for (_, i, r), p in points.items() if i == interface
                           and r == role for size in p} for role in ROLES}  # fmt: skip
        common = measured["root"] & measured["member"]
        if not common:
            continue
        size = max(common)
        cells = []
        for name, _ in queries:
            root = points.get((name, interface, "root"), {}).get(size)
            member = points.get((name, interface, "member"), {}).get(size)
            cells.append(member / root if root and member else None)
        rows.append(RatioRow(target, run.site, interface, size, tuple(cells)))
    return rows


def scale_view(campaign: Campaign) -> ScaleView | None:
    """The section, with its charts not yet drawn; None when no run measured the scale part."""
    measured = [(r, s) for r in campaign.runs if (s := _section(r)) is not None]
    if not measured:
        return None
    queries = _queries([s for _, s in measured])
    charts, growth, ratios, notes, cells, latency = [], [], [], [], [], []
    colours = chart_colours(campaign)
    for index, target in enumerate(campaign.targets):
        runs = [(r, s) for r, s in measured if r.target == target.name]
        chart = _chart(index, target.name, runs, queries, colours)
        if chart is not None:
            charts.append(chart)
        for run, section in runs:
            growth += _growth(target.name, run, section, queries)
            ratios += _ratios(target.name, run, section, queries)
            cells += _cells(run, section)
            latency += _latency(target.name, run, section, queries)
            member = section.get("member")
            if isinstance(member, Mapping) and member.get("why"):
                notes.append(f"{run.site} → {target.name}: measured as root only: "
                             f"{member['why']}")
    return ScaleView(queries, tuple(charts), tuple(growth), tuple(ratios), tuple(notes),
                     tuple(cells), tuple(latency), figure(SCALE, P50).unit)


def _latency(target: str, run: CampaignRun, section: Mapping[str, Any],
             queries: Sequence[tuple[str, str]]) -> list[LatencyRow]:
    points = _points(section)
    rows = []
    for interface in dict.fromkeys(k[1] for k in points):
        for role in ROLES:
            sizes = sorted({size for (_, i, r), p in points.items() if i == interface
                            and r == role for size in p})  # fmt: skip
            for size in sizes:
                cells = tuple(points.get((name, interface, role), {}).get(size)
                              for name, _ in queries)  # fmt: skip
                rows.append(LatencyRow(target, run.site, interface, role, size, cells))
    return rows


def _cells(run: CampaignRun, section: Mapping[str, Any]) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for size in section["sizes"]:
        for q in (size.get("queries") or ()) if isinstance(size, Mapping) else ():
            if isinstance(q, Mapping):
                rows.append([run.target, run.site, size.get("size"), q.get("query"),
                             q.get("interface"), q.get("role"), q.get("p50_ms"),
                             q.get("p99_ms"), q.get("mean_ms"), q.get("n"), q.get("rows")])
    return rows


SCALE_CSV_HEADER = ["target", "site", "size", "query", "interface", "role", f"p50_{MS}",
                    f"p99_{MS}", f"mean_{MS}", "n", "rows"]  # fmt: skip
