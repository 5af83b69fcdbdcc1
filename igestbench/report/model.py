"""The view model of a report: everything the templates show, computed from a campaign file.

:func:`build_report` is the one composition root: it reads nothing but the :class:`Campaign`
(and the previous one for the trend) — never a live run — so a report can be rebuilt, checked
and compared at any time from the files alone. The templates only lay the model out.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from igestbench.icat.endpoint import endpoint_of
from igestbench.report.charts import Chart, ChartDrawers, build_charts, likely_charts
from igestbench.report.footnotes import Footnote, footnotes
from igestbench.report.interfaces import InterfaceTable, interface_tables
from igestbench.report.matrices import (
    Participation,
    Success,
    Trend,
    participation,
    success,
    trend,
)
from igestbench.report.scale import ScaleView, scale_view
from igestbench.report.tables import BenchmarkRow, TargetScores, benchmark_rows, deployment_scores
from igestbench.results.campaign import Campaign
from igestbench.results.campaign_file import CampaignSite


@dataclass(frozen=True)
class TargetView:
    name: str
    url: str
    operator: str | None
    port: int


@dataclass(frozen=True)
class RunView:
    """One line of the list of runs the report is made of."""

    site: str
    target: str
    file: str
    file_version: int
    run_id: str
    started: str
    status: str
    tool_version: str | None
    #: "quick" (a quick tour: sv7 run's default) or "full"
    profile: str = "full"


@dataclass(frozen=True)
class Report:
    name: str
    title: str
    #: whether campaign.toml declared the sites and targets (else: those the files showed)
    declared: bool
    sites: tuple[CampaignSite, ...]
    targets: tuple[TargetView, ...]
    participation: Participation
    success: Success
    footnotes: tuple[Footnote, ...]
    #: footnote letters per (site, target) cell
    marks: dict[tuple[str, str], tuple[str, ...]]
    scores: tuple[TargetScores, ...]
    benchmarks: tuple[BenchmarkRow, ...]
    charts: tuple[Chart, ...]
    runs: tuple[RunView, ...]
    history_count: int
    #: what a reader must know about the inputs: skipped files, old formats, unfinished runs
    notices: tuple[str, ...]
    trend: Trend | None
    #: SOAP and REST side by side, per run that measured REST
    interfaces: tuple[InterfaceTable, ...] = ()
    #: how each query's cost grows with the catalogue (runs of the scale part); None: none
    scale: ScaleView | None = None


def _notices(campaign: Campaign) -> list[str]:
    notes = [f"{s.file}: skipped: {s.reason}" for s in campaign.skipped]
    notes += [f"{u.get('file')}: not counted: {u.get('reason')} (site {u.get('site')}, "
              f"target {u.get('target')})" for u in campaign.unexpected]
    for run in campaign.runs:
        if run.file_version != run.result.raw["version"]:
            notes.append(f"{run.file}: written in result format version {run.file_version}, "
                         f"read as version {run.result.raw['version']}")
        if run.result.status != "complete":
            notes.append(f"{run.file}: the run of {run.site} against {run.target} ended: "
                         f"{run.result.status}")
    quick = [f"{r.site} → {r.target}" for r in campaign.runs if r.quick]
    if quick:
        shown = ", ".join(quick[:5]) + (f" and {len(quick) - 5} more" if len(quick) > 5 else "")
        what = "1 run is a quick tour" if len(quick) == 1 else f"{len(quick)} runs are quick tours"
        notes.append(f"{what} (the default profile of sv7 run: one client flavour, small "
                     f"counts, a short sweep): {shown}. Their figures are marked as such and "
                     "are not comparable with those of full runs (sv7 run --profile full).")
    return notes


def build_report(campaign: Campaign, previous: Campaign | None = None, *,
                 charts: bool = True) -> Report:
    """The report of ``campaign``; ``charts=False`` leaves the (slow) SVG drawing out."""
    # the charts are most of a large report's time: their drawing starts first (in worker
    # processes when there are many) and runs while the rest is built
    with ChartDrawers(likely_charts(campaign) if charts else 0) as drawers:
        specs = build_charts(campaign) if charts else []
        grown = scale_view(campaign)
        scale_specs = list(grown.charts) if grown is not None and charts else []
        drawings = drawers.draw([*specs, *scale_specs])
        part, succ = participation(campaign), success(campaign)
        targets = tuple(TargetView(t.name, t.url, t.operator, endpoint_of(t.url).port)
                        for t in campaign.targets)
        notes, marks = footnotes(
            [cell for row in succ.rows for cell in row.cells],
            ports={t.name: t.port for t in targets},
            operators={t.name: t.operator for t in targets},
            target_order=[t.name for t in targets],
        )
        scores, benchmarks = tuple(deployment_scores(campaign)), tuple(benchmark_rows(campaign))
        drawn = tuple(replace(chart, svg=d.svg, legend=d.legend, styles=d.styles)
                      for chart, d in zip([*specs, *scale_specs], drawings(), strict=True))
        if grown is not None:
            grown = grown.with_drawings(drawn[len(specs):] if charts else ())
        drawn = drawn[:len(specs)]
    runs = tuple(RunView(r.site, r.target, r.file, r.file_version, r.result.run_id,
                         r.result.raw["run"]["started"], r.result.status, r.result.tool_version,
                         "quick" if r.quick else "full")
                 for r in campaign.runs)
    before = None
    if previous is not None:
        before = trend(previous.title or previous.name,
                       (participation(previous), success(previous)), (part, succ))
    return Report(
        name=campaign.name, title=campaign.title or campaign.name, declared=campaign.declared,
        sites=campaign.sites, targets=targets, participation=part, success=succ,
        footnotes=tuple(notes), marks=marks, scores=scores, benchmarks=benchmarks, charts=drawn,
        runs=runs,
        history_count=len(campaign.history), notices=tuple(_notices(campaign)), trend=before,
        interfaces=tuple(interface_tables(campaign)), scale=grown,
    )
