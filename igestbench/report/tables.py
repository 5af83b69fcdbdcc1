"""The benchmark table (one row per site x target x flavour) and the deployment scores.

Figures come from the lowest concurrency level a run measured — one client alone, the time a
user of the catalogue sees; the charts show the other levels. Every figure is the registry's
(:mod:`igestbench.results.figures`): the run file's ``summary`` row, or the row the registry
computes for a file without one — so the table shows the number, unit and text the terminal
printed and the CSV holds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from igestbench.report.notices import end_cause
from igestbench.results.campaign import Campaign, CampaignRun
from igestbench.results.figures import (
    BENCHMARK_CALLS,
    RowIndex,
    SummaryRow,
    benchmark_calls,
    measures_of,
)
from igestbench.results.pieces import benchmark_piece
from igestbench.results.pooling import pool
from igestbench.results.scale_rows import SCALE_CALLS, scale_calls
from igestbench.results.scoring import (
    score_checks,
    score_deployment,
    score_reachability,
    score_reliability,
)

ASPECTS = ("deployment", "certificate", "authentication", "content")
#: The table's figures: (workload, metric) of each column, in order.
COLUMNS = (("full-cycle", "mean"), ("single-query", "p50"), ("single-query", "p99"),
           ("burst", "create rate"), ("burst", "createMany rate"), ("multi-query", "mean"))


@dataclass(frozen=True)
class BenchmarkRow:
    site: str
    target: str
    flavour: str
    #: the concurrency level of the figures (the lowest measured)
    clients: int | None
    full_cycle_mean_ms: float | None
    full_cycle_sd_ms: float | None
    query_p50_ms: float | None
    query_p99_ms: float | None
    burst_create_per_s: float | None
    burst_create_many_per_s: float | None
    multi_query_ms: float | None
    rtt_ms: float | None
    rtt_method: str | None
    api_version: str | None
    #: the suite's own clients were saturated somewhere (figures understate the server)
    client_bound: bool
    #: errors of the run's benchmarks: failed calls and clients that stopped (the registry's)
    errors: int
    #: the site tested its own catalogue (it is the target's operator): a local connection
    local: bool = False
    #: the full cycles the mean is over (no deviation of one)
    full_cycle_calls: int = 0
    #: workloads that measured nothing at this level: their workers failed (the run stopped)
    failed: tuple[str, ...] = ()
    #: why, as the first failed worker said it
    failure: str | None = None
    #: a quick tour's figures (sv7 run's default profile): small counts, not campaign figures
    quick: bool = False
    #: the registry's rows of the table's figures (:data:`COLUMNS`), for their texts and marks
    figures: tuple[SummaryRow, ...] = ()
    #: why the run did not finish (its file was never completed, or a signal stopped it)
    unfinished: str | None = None

    def stopped(self, workload: str) -> bool:
        return workload in self.failed

    @property
    def machine_busy(self) -> bool:
        """A figure of the row was measured while the client machine was busy (the
        registry's mark: its clients waited for a core)."""
        return any("machine-busy" in f.marks for f in self.figures)

    def figure(self, workload: str, metric: str) -> SummaryRow | None:
        return next((f for f in self.figures if (f.workload, f.metric) == (workload, metric)),
                    None)

    def text(self, workload: str, metric: str) -> str:
        """The figure as the registry writes it (``21.4 ms``, ``632 Datafiles/s``, ``failed``)."""
        found = self.figure(workload, metric)
        return found.text if found is not None else "—"


def _lowest(entries: Sequence[Mapping[str, Any]], workload: str) -> Mapping[str, Any] | None:
    found = [e for e in entries if e["workload"] == workload]
    return min(found, key=lambda e: int(e.get("concurrency") or 0)) if found else None


def _finite(value: float | None) -> float | None:
    return value if value is not None and math.isfinite(value) else None


def _figure(index: RowIndex, entry: Mapping[str, Any] | None, metric: str) -> SummaryRow | None:
    if entry is None:
        return None
    level = entry.get("concurrency")
    return index.get(str(entry["workload"]), str(entry.get("interface") or "soap"),
                     str(entry["flavour"]), level if isinstance(level, int) else None, metric)


def _value(row: SummaryRow | None) -> float | None:
    return row.value if row is not None else None


def _six(value: float | None) -> float | None:
    """Six significant digits, as the registry keeps every figure beside it (the mean)."""
    return None if value is None else float(f"{value:.6g}")


def _sd(entry: Mapping[str, Any] | None, mean_ms: float | None) -> float | None:
    """The full cycles' deviation around their mean, from the histogram's buckets."""
    if entry is None or mean_ms is None:
        return None
    (measure,) = measures_of("full-cycle")
    ops = entry.get("ops") or {}
    histograms = [op["histogram"] for name, op in ops.items() if name in measure.calls
                  and isinstance(op, dict) and isinstance(op.get("histogram"), str)]
    pooled = pool(histograms) if histograms else None
    return _finite(pooled.stdev_ms(mean_ms)) if pooled is not None else None


def _row(run: CampaignRun, index: RowIndex, flavour: str, local: bool = False) -> BenchmarkRow:
    result = run.result
    entries = [b for b in result.benchmarks if b["flavour"] == flavour]
    lowest = {w: _lowest(entries, w) for w in ("full-cycle", "single-query", "burst",
                                                "multi-query")}
    figures = {(w, m): _figure(index, lowest[w], m) for w, m in COLUMNS}
    rtt = (result.raw.get("probe") or {}).get("rtt") or {}
    levels = [int(e["concurrency"]) for e in entries if isinstance(e.get("concurrency"), int)]
    rows = [r for r in index.rows if r.flavour == flavour and r.workload not in ("sweep", "ids")]
    level_of = {w: e.get("concurrency") for w, e in lowest.items() if e is not None}
    lowest_rows = [r for r in rows if r.workload in level_of
                   and r.clients == level_of[r.workload]]
    stopped = tuple(w for w, e in lowest.items() if e is not None and all(
        "failed" in r.marks for r in lowest_rows if r.workload == w and r.metric.endswith("rate")))
    causes = [r.reason.removeprefix("failed: ") for r in lowest_rows
              if "failed" in r.marks and r.reason]
    cycle = figures[("full-cycle", "mean")]
    # the RTT, API version and end beside the figures are those of the run that measured them
    # (a combined cell: results/pieces.py); a row from several runs keeps the cell's newest
    origins = {id(o): o for o in (run.origin(str(benchmark_piece(e)))
                                  for e in lowest.values() if e is not None)}
    if len(origins) == 1:
        (origin,) = origins.values()
        result = origin.result
        rtt = (result.raw.get("probe") or {}).get("rtt") or {}
    else:
        origin = run
    return BenchmarkRow(
        site=run.site, target=run.target, flavour=flavour,
        clients=min(levels) if levels else None,
        full_cycle_mean_ms=_value(cycle),
        full_cycle_sd_ms=_six(_sd(lowest["full-cycle"], _value(cycle))),
        query_p50_ms=_value(figures[("single-query", "p50")]),
        query_p99_ms=_value(figures[("single-query", "p99")]),
        burst_create_per_s=_value(figures[("burst", "create rate")]),
        burst_create_many_per_s=_value(figures[("burst", "createMany rate")]),
        multi_query_ms=_value(figures[("multi-query", "mean")]),
        rtt_ms=rtt.get("median_ms"), rtt_method=rtt.get("method"),
        api_version=result.api_version,
        client_bound=any("client-bound" in r.marks for r in rows),
        errors=int(sum(r.value or 0 for r in rows if r.metric == "errors")),
        local=local,
        full_cycle_calls=cycle.samples if cycle is not None else 0,
        failed=stopped, failure=causes[0] if causes else None, quick=origin.quick,
        figures=tuple(f for f in figures.values() if f is not None),
        unfinished=end_cause(origin) if result.status in ("partial", "interrupted") else None,
    )


def benchmark_rows(campaign: Campaign) -> list[BenchmarkRow]:
    """One row per run and flavour, in matrix order (target, then site)."""
    site_rank = {s.name: i for i, s in enumerate(campaign.sites)}
    rows: list[BenchmarkRow] = []
    for target in campaign.targets:
        runs = sorted((r for r in campaign.runs if r.target == target.name),
                      key=lambda r: site_rank[r.site])
        for run in runs:
            index = RowIndex(run.figures)
            # the IDS clients (their own table, transfers.py) are no flavours of the catalogue's
            flavours = dict.fromkeys(b["flavour"] for b in run.result.benchmarks
                                     if b.get("workload") != "ids")
            rows.extend(_row(run, index, flavour, target.is_local_to(run.site))
                        for flavour in flavours)
    return rows


@dataclass(frozen=True)
class AspectScore:
    aspect: str
    level: str
    score: int | None
    max: int | None
    evidence: str
    #: sites whose runs established this level, and how many runs scored the aspect at all
    sites: tuple[str, ...]
    measured_by: int


#: Each aspect's most points (results/scoring.py): 10 for how a catalogue is deployed, 10 for
#: what the campaign's sites met.
ASPECT_MAX = {"deployment": 3, "certificate": 3, "authentication": 2, "content": 2,
              "reachability": 4, "checks": 4, "reliability": 2}
#: A target's total at most: every aspect measured.
SCORE_MAX = sum(ASPECT_MAX.values())
#: What a total is, as every printer of it says (page, Markdown, summary).
SCORE_LEGEND = (f"Higher is better. A target's total is out of {SCORE_MAX}: "
                f"{sum(ASPECT_MAX[a] for a in ASPECTS)} for how it is deployed "
                f"({', '.join(ASPECTS)}) and "
                f"{sum(ASPECT_MAX[a] for a in ('reachability', 'checks', 'reliability'))} for "
                "what the campaign's sites met (reachability, checks, reliability). An aspect "
                "that was not measured (unknown, not run) counts in neither the score nor its "
                "maximum; the total then says how many points were not measured")


def total_text(total: tuple[int, int] | None) -> str:
    """A target's total as every printer writes it: ``16 / 20``, or ``3 / 5 (15 of 20 points
    not measured)``; ``—`` when no aspect was measured."""
    if total is None:
        return "—"
    score, most = total
    missing = SCORE_MAX - most
    return f"{score} / {most}" + (f" ({missing} of {SCORE_MAX} points not measured)"
                                  if missing > 0 else "")


@dataclass(frozen=True)
class TargetScores:
    target: str
    operator: str | None
    aspects: tuple[AspectScore, ...]

    @property
    def total(self) -> tuple[int, int] | None:
        """(score, max) over the aspects that were measured; None when none was."""
        known = [a for a in self.aspects if a.score is not None and a.max is not None]
        if not known:
            return None
        return sum(a.score or 0 for a in known), sum(a.max or 0 for a in known)

    @property
    def total_text(self) -> str:
        return total_text(self.total)


def _aspect(aspect: str, runs: Sequence[CampaignRun], url: str) -> AspectScore:
    """The level most sites measured (a site that could not connect measured nothing)."""
    seen = [(run.site, (run.result.raw.get("scores") or {}).get(aspect)) for run in runs]
    scored = [(site, s) for site, s in seen if isinstance(s, dict) and s.get("score") is not None]
    if not scored and aspect == "deployment":
        # scheme and port are in the URL: known even when no site got through
        s = score_deployment(url)
        return AspectScore(aspect, s.level, s.score, s.max, s.evidence + " (from the URL)", (), 0)
    if not scored and not _asked(runs, CHECK_PARTS):
        return AspectScore(aspect, NOT_RUN, None, None, NO_CHECKS, (), 0)
    if not scored:
        return AspectScore(aspect, "unknown", None, None, "no site could measure it", (), 0)
    levels = [str(s.get("level")) for _, s in scored]
    votes = Counter(levels)
    # most votes wins; between equals, the level of the site listed first
    level = max(votes, key=lambda name: (votes[name], -levels.index(name)))
    chosen = next(s for _, s in scored if str(s.get("level")) == level)
    return AspectScore(aspect, level, chosen.get("score"), chosen.get("max"),
                       str(chosen.get("evidence") or ""),
                       tuple(x for x, s in scored if str(s.get("level")) == level), len(scored))


#: The level of an aspect no run was asked to measure (not "unknown": nothing was tried).
NOT_RUN = "not run"
#: The parts that run the checks, and those that make benchmark calls (options.PARTS).
CHECK_PARTS = ("verify",)
BENCHMARK_PARTS = ("full-cycle", "single-query", "burst", "multi-query", "ids", "scale")
NO_CHECKS = "no run was asked to run the checks (--parts verify)"
NO_BENCHMARKS = ("no run was asked for a benchmark workload (--parts full-cycle, single-query, "
                 "burst, multi-query, ids, scale)")


def _asked(runs: Sequence[CampaignRun], parts: Sequence[str]) -> bool:
    """Whether any of ``runs`` was asked to run one of ``parts`` (a file without its list of
    parts: taken as asked)."""
    for run in runs:
        listed = run.result.raw["run"].get("parts")
        if not isinstance(listed, list) or set(listed) & set(parts):
            return True
    return False


#: What partners met, scored over the campaign (results/scoring.py): after the deployment's
#: aspects, so that a catalogue deployed alike but failing its partners scores apart.
SERVICE_ASPECTS = ("reachability", "checks", "reliability")


def _service_aspects(runs: Sequence[CampaignRun], cells: Sequence[CellOutcome]
                     ) -> tuple[AspectScore, ...]:
    tried = [c for c in cells if c.state != "not-run"]
    connected = [c for c in tried if c.connected and c.total]
    blocked = [c.site for c in tried if c not in connected]
    reach = score_reachability(len(connected), len(tried), blocked)
    checks = score_checks(sum(c.passed for c in connected), sum(c.total for c in connected))
    counted = [benchmark_calls(run.figures) for run in runs]
    scaled = [(run.site, scale_calls(run.result.raw.get("scale"))) for run in runs]
    reliability = score_reliability(
        sum(f for _, f in counted) + sum(s.failed for _, s in scaled),
        sum(c for c, _ in counted) + sum(s.calls for _, s in scaled),
        f"{BENCHMARK_CALLS}; {SCALE_CALLS}",
        [f"{site}: scale query {q}" for site, s in scaled for q in s.failing])
    asked = (_asked(runs, CHECK_PARTS),) * 2 + (_asked(runs, BENCHMARK_PARTS),)
    # measured by: the sites that tried the checks; for reliability, those whose runs called
    sites = tuple(c.site for c in tried)
    calling = tuple(dict.fromkeys(run.site for run, (calls, _), (_, s)
                                  in zip(runs, counted, scaled, strict=True)
                                  if calls or s.calls))
    by = {name: calling if name == "reliability" else sites for name in SERVICE_ASPECTS}
    return tuple(AspectScore(name, s.level, s.score, s.max, s.evidence, by[name], len(by[name]))
                 if ran or s.score is not None else
                 AspectScore(name, NOT_RUN, None, None,
                             NO_CHECKS if name != "reliability" else NO_BENCHMARKS, (), 0)
                 for name, s, ran in zip(SERVICE_ASPECTS, (reach, checks, reliability), asked,
                                         strict=True))


class CellOutcome(Protocol):
    """What the scores need of a success-matrix cell (matrices.SuccessCell)."""

    @property
    def site(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def connected(self) -> bool: ...
    @property
    def passed(self) -> int: ...
    @property
    def total(self) -> int: ...


def deployment_scores(campaign: Campaign,
                      cells: Mapping[str, Sequence[CellOutcome]] | None = None
                      ) -> list[TargetScores]:
    """Each target's aspects; with the success matrix's ``cells`` per target, also what its
    partners met (reachability, checks, reliability)."""
    out = []
    for target in campaign.targets:
        runs = [r for r in campaign.runs if r.target == target.name and r.kind == "run"]
        aspects = tuple(_aspect(a, runs, target.url) for a in ASPECTS)
        if cells is not None:
            aspects += _service_aspects(runs, cells.get(target.name, ()))
        out.append(TargetScores(target.name, target.operator, aspects))
    return out
