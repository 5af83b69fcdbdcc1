"""The page says what its figures are: counts, flags and marks mean what they say (tryout 3)."""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path
from typing import Any

from igestbench.measure.sampler import PhaseSeries
from igestbench.report import build_report, render_html, render_markdown, write_csv
from igestbench.report.render import _safe
from igestbench.report.series import history_panels
from igestbench.report.summary import (
    BEST_LEGEND,
    EMPTY,
    SummaryCell,
    TargetSummary,
    _mark_best,
)
from igestbench.report.tables import SCORE_LEGEND, BenchmarkRow
from igestbench.results.campaign import Campaign, dump_campaign, load_campaign
from igestbench.results.client_use import CLIENT_BOUND_PERCENT, CLIENT_USE_LABEL, phase_client_use
from igestbench.results.merge import merge
from igestbench.workloads.scale_queries import QUERIES
from tests.campaign_helpers import bench, sample, write_result
from tests.test_report_scale import section

URL = "https://t1.example/ICATService/ICAT"


def _campaign(tmp_path: Path, *, parts: tuple[str, ...], scale: dict[str, Any] | None = None,
              benchmarks: tuple[dict[str, Any], ...] = (), **extra: Any) -> Campaign:
    path = write_result(tmp_path, "A", URL, parts=parts, benchmarks=benchmarks, **extra)
    if scale is not None:
        doc = json.loads(path.read_text())
        doc["scale"] = scale
        path.write_text(json.dumps(doc))
    out = tmp_path / "c.json"
    dump_campaign(merge([path]).document, out)
    return load_campaign(out)


def _aspect(campaign: Campaign, name: str) -> Any:
    (scores,) = build_report(campaign).scores
    return next(a for a in scores.aspects if a.aspect == name)


def test_reliability_counts_calls_not_the_datafiles_a_batch_or_the_scale_part_makes(
        tmp_path: Path) -> None:
    many = bench("burst", "burst/createMany", 1, [5.0] * 9)
    many["checks"] = {"batch_size": 1000, "createMany.expected": 9000}
    campaign = _campaign(tmp_path, parts=("burst", "scale"), scale=section(),
                         benchmarks=(many,))
    reliability = _aspect(campaign, "reliability")
    # 9 createMany calls (9,000 Datafiles) and the scale part's query calls (20 per query,
    # role and size), not the 100,000 Datafiles of its tree
    queries = sum(len(s["queries"]) * 20 for s in section()["sizes"])
    assert reliability.evidence.startswith(f"0 failed of {9 + queries:,} benchmark calls (0 %)")
    assert "a createMany call is one call" in reliability.evidence
    assert "scale part's query calls" in reliability.evidence
    assert "grow its tree are not counted" in reliability.evidence


def _failing(scale: dict[str, Any], query: str, role: str) -> int:
    """Make ``query`` as ``role`` fail at the largest size, every timed call and both warm-up
    calls, as the part records it; the calls counted of it."""
    (q,) = [q for q in scale["sizes"][-1]["queries"]
            if q["query"] == query and q["role"] == role]
    q.update(n=0, p50_ms=None, p99_ms=None, mean_ms=None, rows=None,
             errors={"WrongResult": 20}, warmup_errors={"WrongResult": 2},
             error="expected 1 Datafile, got 0")
    return 22


def test_a_failed_scale_query_lowers_reliability_and_the_evidence_names_it(
        tmp_path: Path) -> None:
    healthy = _aspect(_campaign(tmp_path / "ok", parts=("scale",), scale=section()),
                      "reliability")
    assert (healthy.level, healthy.score) == ("no errors", 2)
    scale = section()
    failed = _failing(scale, "name", "member")
    reliability = _aspect(_campaign(tmp_path / "bad", parts=("scale",), scale=scale),
                          "reliability")
    calls = sum(len(s["queries"]) * 20 for s in scale["sizes"]) + 2
    assert reliability.score is not None and reliability.score < healthy.score
    assert reliability.evidence.startswith(f"{failed} failed of {calls:,} benchmark calls")
    # over its three sizes: 20 + 2 (the largest), 20 + 20 (the two others succeeded)
    assert "failed: A: scale query name (member, soap): 22 of 62 failed" in reliability.evidence
    # measured by the site whose run made the calls (no site ran the checks)
    assert reliability.sites == ("A",) and reliability.measured_by == 1
    # every query failing as member: five named, the rest counted
    for q in {q["query"] for q in scale["sizes"][-1]["queries"]} - {"name"}:
        _failing(scale, q, "member")
    every = _aspect(_campaign(tmp_path / "every", parts=("scale",), scale=scale), "reliability")
    assert every.evidence.count("scale query") == 5
    assert f"(+{len(QUERIES) - 5} more)" in every.evidence
    # a query whose timed calls all succeeded but whose warm-up failed once: a failed call
    scale = section()
    scale["sizes"][0]["queries"][0]["warmup_errors"] = {"IcatServer": 1}
    once = _aspect(_campaign(tmp_path / "once", parts=("scale",), scale=scale), "reliability")
    assert once.evidence.startswith(f"1 failed of {calls - 1:,} benchmark calls")


def test_the_client_cpu_chart_draws_the_figure_the_client_bound_flag_is_decided_from() -> None:
    # two clients using 150 % of the 200 % they could use, the busiest 95 % of its core: bound
    phase = PhaseSeries("burst/zeep/2", 1.0, t_s=[1.0], dt_s=[1.0], cpu_percent=[100.0],
                        client_cpu_percent=[150.0], client_capacity_percent=[200.0],
                        busiest_process_percent=[95.0], others_cpu_percent=[50.0],
                        load_avg=[1.0], client_wait_percent=[0.0])
    assert phase.client_bound
    drawn = phase_client_use(phase.to_dict())
    assert drawn == 95.0 and drawn > CLIENT_BOUND_PERCENT
    # a client past one core (its threads outside the GIL: 115 % seen in a quick tour's burst
    # phase) must not be drawn on an axis that calls it a share of what it could use
    past = phase_client_use({"phase": "burst/zeep/1", "client_cpu_percent": [115.0],
                             "client_capacity_percent": [100.0]})
    assert past == 115.0
    assert "could use" not in CLIENT_USE_LABEL and "% of one core" in CLIENT_USE_LABEL
    # a phase in which no client of the suite ran has no bar (not the machine's 80 %)
    assert phase_client_use({"phase": "scale", "cpu_percent": [80.0],
                             "client_cpu_percent": [0.0],
                             "client_capacity_percent": [0.0]}) is None


def _options(**given: Any) -> dict[str, Any]:
    """run.options as sv7 run writes them: the quick profile's, but what was given."""
    quick = {"flavours": ["zeep"], "cycles": 3, "files": 50, "queries": 50, "batch_size": 10,
             "max_rate": 40.0, "duration": 1.0, "warmup": 0.25, "scale_sizes": [300, 1000],
             "file_sizes": [1024, 1048576]}
    return {**quick, **given}


def test_a_scale_only_run_says_not_run_for_what_it_was_not_asked_to_do(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, parts=("scale",), scale=section(), profile="quick",
                         run_extra={"options": _options(scale_sizes=[1000, 10000, 100000])})
    report = build_report(campaign)
    (scores,) = report.scores
    levels = {a.aspect: (a.level, a.evidence) for a in scores.aspects}
    assert levels["checks"] == ("not run", "no run was asked to run the checks (--parts verify)")
    assert levels["reachability"][0] == levels["content"][0] == "not run"
    # its query calls are calls: reliability is scored from them
    assert levels["reliability"][0] == "no errors"
    assert "scale part's query calls" in levels["reliability"][1]
    (row,) = report.summary.rows
    assert row.sustained.text == "not run" and "load sweep" in (row.sustained.note or "")
    # the sizes were the user's: the quick profile set nothing this run measured
    assert not [n for n in report.notices if "quick tour" in n]


def test_the_quick_tour_notice_says_what_the_profile_set_and_its_for_one_run(
        tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, parts=("burst", "scale"), scale=section(), profile="quick",
                         benchmarks=(bench("burst", "burst/create", 1, [5.0] * 9),),
                         run_extra={"options": _options()})
    (notice,) = [n for n in build_report(campaign).notices if "quick tour" in n]
    assert "A → t1.example (one client flavour, small counts, a tree of 300 and 1,000 " \
           "Datafiles)" in notice
    assert "sweep" not in notice and "Its figures" in notice and "Their" not in notice


def _target(name: str, lookup: SummaryCell, sustained: SummaryCell) -> TargetSummary:
    return TargetSummary(name, None, 1, 1, 1, None, 0, None, (lookup, EMPTY, EMPTY), EMPTY,
                         sustained, EMPTY)


def test_the_star_marks_the_best_measured_value_among_comparable_ones() -> None:
    def ms(value: float, flavour: str = "zeep", source: int = 0) -> SummaryCell:
        return SummaryCell(f"{value} ms", value, "ms", flavour=flavour, source=source)

    def capped(rate: float) -> SummaryCell:
        return SummaryCell(f"≥ {rate} requests/s", rate, "requests/s", marks=("capped",),
                           flavour="soap lean", bound="lower")

    rows = _mark_best([
        _target("A", ms(1.2), capped(40.0)),
        _target("B", ms(1.5), capped(40.0)),
        _target("C", ms(0.4, "python-icat"), capped(40.0)),  # another client: not ranked
        _target("D", ms(0.9, source=1), EMPTY),  # the operator's own figure: not ranked
    ])
    assert [r.target for r in rows if r.figures[0].best] == ["A"]
    assert not any(r.sustained.best for r in rows)  # a cap is not a measurement
    assert "same client flavour" in BEST_LEGEND and "never starred" in BEST_LEGEND
    assert "operator itself" in BEST_LEGEND


def test_a_total_says_what_it_is_out_of_in_the_same_words_everywhere(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, parts=("scale",), scale=section())
    report = build_report(campaign)
    (row,) = report.summary.rows
    (scores,) = report.scores
    # only the deployment (3 points, from the URL) and the reliability of the scale part's
    # queries (2) were measured: the total says the rest
    assert row.score.text == scores.total_text == "5 / 5 (15 of 20 points not measured)"
    html, markdown = render_html(report), render_markdown(report)
    assert SCORE_LEGEND.startswith("Higher is better. A target's total is out of 20: 10 for")
    assert SCORE_LEGEND.replace("'", "&#39;") in html and SCORE_LEGEND in markdown
    assert "out of 10" not in markdown
    assert "5 / 5 (15 of 20 points not measured)" in html
    assert "| t1.example | 5 / 5 (15 of 20 points not measured) |" in markdown


def test_the_csv_has_the_tables_header_and_guards_formulas_but_not_figures(
        tmp_path: Path) -> None:
    campaign = _campaign(tmp_path, parts=("scale",), scale=section())
    written = {p.name: p for p in write_csv(build_report(campaign), tmp_path / "csv")}
    # a run without benchmarks: the table's whole header, as the Markdown prints it
    header = written["benchmarks.csv"].read_text().splitlines()
    assert header == [",".join(f.name for f in dataclasses.fields(BenchmarkRow)
                               if f.name != "figures")]
    rows = list(csv.DictReader(written["summary.csv"].read_text().splitlines()))
    slopes = [r["text"] for r in rows if r["metric"].endswith("growth")]
    assert slopes and all(not t.startswith("'") for t in slopes)
    assert _safe("-0.01 slope") == "-0.01 slope" and _safe("-3") == "-3"
    for formula in ("=1+1", "-2+3+cmd|' /C calc'!A0", "@SUM(A1)", "+x", "\t=1", "\r=1"):
        assert _safe(formula) == "'" + formula


def test_a_deviation_is_kept_to_six_significant_digits_as_its_mean(tmp_path: Path) -> None:
    cycles = bench("full-cycle", "full-cycle", 1, [20.0, 23.0, 31.0, 27.3])
    campaign = _campaign(tmp_path, parts=("full-cycle",), benchmarks=(cycles,))
    (row,) = build_report(campaign).benchmarks
    assert row.full_cycle_sd_ms is not None
    assert row.full_cycle_sd_ms == float(f"{row.full_cycle_sd_ms:.6g}")
    assert len(repr(row.full_cycle_sd_ms).replace(".", "").lstrip("0")) <= 6


def test_the_built_in_catalogues_bars_take_the_colour_of_the_site_that_ran_it(
        tmp_path: Path) -> None:
    path = write_result(tmp_path, "local", "http://127.0.0.1:1/ICATService/ICAT",
                        parts=("full-cycle",), built_in=True,
                        samples=[sample("full-cycle/zeep/1", [90.0], client=[40.0])])
    dump_campaign(merge([path]).document, tmp_path / "c.json")
    campaign = load_campaign(tmp_path / "c.json")
    cpu, _ = history_panels(campaign.runs, campaign.targets, {"local": "#123456"})
    (bars,) = cpu.series
    assert bars.colour == "#123456" and bars.y == (40.0,)
