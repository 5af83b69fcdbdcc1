"""The view model of a report: everything the templates show, computed from a campaign file.

:func:`build_report` is the one composition root: it reads nothing but the :class:`Campaign`
(and the previous one for the trend) — never a live run — so a report can be rebuilt, checked
and compared at any time from the files alone. The templates only lay the model out.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from igestbench.icat.endpoint import endpoint_of
from igestbench.report.charts import Chart, build_charts, render_all
from igestbench.report.footnotes import Footnote, footnotes
from igestbench.report.ids_matrix import any_checked, ids_success
from igestbench.report.interfaces import InterfaceTable, interface_tables
from igestbench.report.matrices import (
    Participation,
    Success,
    SuccessCell,
    Trend,
    participation,
    success,
    trend,
)
from igestbench.report.notices import end_cause, notices, period, period_text
from igestbench.report.scale import ScaleView, scale_view
from igestbench.report.summary import (
    CampaignSummary,
    FigureChange,
    campaign_summary,
    figure_changes,
    with_change,
)
from igestbench.report.tables import (
    SCORE_LEGEND,
    BenchmarkRow,
    TargetScores,
    benchmark_rows,
    deployment_scores,
)
from igestbench.report.transfers import TransferRow, transfer_rows
from igestbench.results.campaign import Campaign, CampaignRun
from igestbench.results.campaign_file import CampaignSite
from igestbench.results.server_clock import clock_text


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
    #: "run" (sv7 run) or "swarm" (sv7 swarm)
    kind: str = "run"
    #: why it did not complete (None when it did)
    ended: str | None = None
    #: where the run's reading of the server's clock came from (results/server_clock.py)
    clock: str = ""

    @property
    def finished(self) -> bool:
        return self.status == "complete"


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
    #: the page's opening: one row per target (summary.py)
    summary: CampaignSummary | None = None
    #: the days of the campaign's runs ("2026-11-21 to 2026-11-23")
    dates: str = ""
    #: per target and headline figure, the change since the previous campaign
    changes: tuple[FigureChange, ...] = ()
    #: the counted runs, for their figures (summary.csv)
    figure_runs: tuple[CampaignRun, ...] = ()
    #: how each query's cost grows with the catalogue (runs of the scale part); None: none
    scale: ScaleView | None = None
    #: the ids part: files/s and MB/s of put and getData per size (ingestion with the bytes)
    transfers: tuple[TransferRow, ...] = ()
    #: the IDS success matrix (ids_matrix.py), None when no run checked an IDS
    ids_success: Success | None = None
    #: what a score's total is out of, as the page and the Markdown say it (tables.py)
    score_legend: str = SCORE_LEGEND
    #: its footnotes, lettered on from the success matrix's, and its cells' letters
    ids_footnotes: tuple[Footnote, ...] = ()
    ids_marks: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)


def build_report(campaign: Campaign, previous: Campaign | None = None, *,
                 charts: bool = True) -> Report:
    """The report of ``campaign``; ``charts=False`` leaves the charts' SVG out."""
    specs = build_charts(campaign) if charts else []
    grown = scale_view(campaign)
    scale_specs = list(grown.charts) if grown is not None and charts else []
    drawn = tuple(replace(chart, svg=d.svg, legend=d.legend, styles=d.styles)
                  for chart, d in zip([*specs, *scale_specs], render_all([*specs, *scale_specs]),
                                      strict=True))
    if grown is not None:
        grown = grown.with_drawings(drawn[len(specs):] if charts else ())
    drawn = drawn[:len(specs)]
    part, succ = participation(campaign), success(campaign)
    targets = tuple(TargetView(t.name, t.url, t.operator, endpoint_of(t.url).port)
                    for t in campaign.targets)
    notes, marks = footnotes(
        [cell for row in succ.rows for cell in row.cells],
        ports={t.name: t.port for t in targets},
        operators={t.name: t.operator for t in targets},
        target_order=[t.name for t in targets],
    )
    data_service = ids_success(campaign)
    ids_notes, ids_marks = footnotes(
        [cell for row in data_service.rows for cell in row.cells],
        ports={t.name: t.port for t in targets},
        operators={t.name: t.operator for t in targets},
        target_order=[t.name for t in targets], first=len(notes),
    )
    scores = tuple(deployment_scores(campaign, _cells_by_target(succ)))
    benchmarks = tuple(benchmark_rows(campaign))
    summary = _summary(campaign, succ, marks, scores)
    runs = tuple(RunView(r.site, r.target, r.file, r.file_version, r.result.run_id,
                         r.result.raw["run"]["started"], r.result.status, r.result.tool_version,
                         "quick" if r.quick else "full", r.kind,
                         None if r.result.status == "complete" else end_cause(r),
                         clock_text(r.result.raw["run"].get("server_clock")))
                 for cell in campaign.runs for r in cell.behind)  # each run of a combined cell
    # an older run that gives a combined cell pieces is counted (in runs), not only history
    counted = {(r.site, r.target, r.file) for r in runs}
    older = sum((h.site, h.target, h.file) not in counted for h in campaign.history)
    dates = period_text(period(campaign))
    before: Trend | None = None
    changes: tuple[FigureChange, ...] = ()
    if previous is not None:
        then = period_text(period(previous))
        name = f"{previous.title or previous.name} ({then})"
        old_part, old_succ = participation(previous), success(previous)
        before = trend(name, (old_part, old_succ), (part, succ))
        _, old_marks = footnotes([c for row in old_succ.rows for c in row.cells], {},
                                 {t.name: t.operator for t in previous.targets},
                                 [t.name for t in previous.targets])
        old_scores = tuple(deployment_scores(previous, _cells_by_target(old_succ)))
        old_summary = _summary(previous, old_succ, old_marks, old_scores)
        changes = figure_changes(summary, old_summary)
        summary = with_change(summary, old_summary,
                              f"since {previous.title or previous.name} ({then} → {dates})")
    return Report(
        name=campaign.name, title=_title(campaign, dates), declared=campaign.declared,
        sites=campaign.sites, targets=targets, participation=part, success=succ,
        footnotes=tuple(notes), marks=marks, scores=scores, benchmarks=benchmarks, charts=drawn,
        runs=runs,
        history_count=older, notices=tuple(notices(campaign)), trend=before,
        interfaces=tuple(interface_tables(campaign)), summary=summary, dates=dates,
        changes=changes, figure_runs=campaign.runs, scale=grown,
        transfers=tuple(transfer_rows(campaign)),
        ids_success=data_service if any_checked(data_service) else None,
        ids_footnotes=tuple(ids_notes), ids_marks=ids_marks,
    )


def _title(campaign: Campaign, dates: str) -> str:
    """The page's title: the campaign's own, or (a campaign without campaign.toml, whose name
    is only the output file's) "Campaign of <dates>"."""
    if campaign.title:
        return campaign.title
    if campaign.declared:
        return f"{campaign.name}, {dates}"
    return f"Campaign of {dates}"


def _cells_by_target(succ: Success) -> dict[str, list[SuccessCell]]:
    return {name: [row.cells[i] for row in succ.rows] for i, name in enumerate(succ.targets)}


def _summary(campaign: Campaign, succ: Success, marks: dict[tuple[str, str], tuple[str, ...]],
             scores: tuple[TargetScores, ...]) -> CampaignSummary:
    return campaign_summary(campaign, succ, marks, {t.target: t.total for t in scores})
