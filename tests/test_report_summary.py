"""The page a coordinator reads in 30 seconds (issue 19, points 5, 7 and 8): the summary first,
swarm runs beside campaign runs, notices with causes, dates, unfinished runs, scores that tell
a working catalogue from a failing one, summary.csv."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any

from igestbench.cli import main
from igestbench.report import build_report, render_html, write_csv
from igestbench.report.charts import build_charts
from igestbench.results.campaign import Campaign, dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.figures import summary_rows
from igestbench.results.merge import merge
from tests.campaign_helpers import REFUSED_PROBE, bench, check, sweep, write_result

GOOD = "https://good.example/ICATService/ICAT"
BAD = "https://bad.example:8182/ICATService/ICAT"
UNREACHABLE = f"target unreachable: {BAD}: connection refused: [Errno 111] Connection refused"


def _entries(scale: float = 1.0) -> list[dict[str, Any]]:
    return [bench("single-query", "single-query/jpql", 1, [2.0 * scale, 3.0 * scale, 4.0 * scale]),
            bench("full-cycle", "full-cycle", 1, [20.0 * scale, 30.0 * scale])]


def _capped(mean_ms: float) -> dict[str, Any]:
    """A sweep whose every step met the objective: its sustained rate is its cap."""
    entry = sweep([10, 20, 40], mean_ms)
    entry["sustained_rate"] = 40
    return entry


def _campaign(tmp_path: Path, name: str = "c", scale: float = 1.0, minutes: int = 0,
              extra: list[Path] | None = None) -> Campaign:
    """GOOD (run by A) works for A and B; BAD (run by B) refuses A and is B's own."""
    d = tmp_path / name
    files = [
        write_result(d, "A", GOOD, minutes=minutes, checks=[check("x"), check("y")],
                     parts=("verify", "single-query", "full-cycle", "sweep"),
                     benchmarks=_entries(scale), sweeps=[_capped(2.0 * scale)]),
        write_result(d, "B", GOOD, minutes=minutes, checks=[check("x"), check("y")],
                     parts=("verify", "single-query", "full-cycle"),
                     benchmarks=_entries(scale * 2)),
        write_result(d, "A", BAD, minutes=minutes, status="failed", probe=REFUSED_PROBE,
                     notes=[UNREACHABLE]),
        write_result(d, "B", BAD, minutes=minutes, checks=[check("x"), check("y", "failed",
                                                                              "icat-fault-INTERNAL")],
                     benchmarks=_entries(scale * 3)),
        *(extra or []),
    ]
    config = CampaignConfig(name, (CampaignSite("A"), CampaignSite("B")),
                            (CampaignTarget("Good ICAT", GOOD, "A"),
                             CampaignTarget("Bad ICAT", BAD, "B")),
                            title=f"Campaign {name}")
    dump_campaign(merge(files, config).document, tmp_path / f"{name}.json")
    return load_campaign(tmp_path / f"{name}.json")


def test_the_page_opens_with_a_summary_per_target(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path)
    report = build_report(campaign, charts=False)
    page = render_html(report)
    assert page.index('id="summary"') < page.index('id="participation"')
    assert page.index('id="trend"') if 'id="trend"' in page else True
    assert report.summary is not None
    good, bad = report.summary.rows
    assert (good.target, good.works, good.tried) == ("Good ICAT", 2, 2)
    assert (bad.target, bad.works, bad.tried) == ("Bad ICAT", 0, 2)
    assert bad.cause is not None and bad.cause_sites == 1
    # the figures are the registry's: from the partner sites (B; A runs Good ICAT itself)
    run = campaign.run("B", "Good ICAT")
    assert run is not None
    b_rows = {r.metric: r for r in summary_rows(run.result) if r.workload == "single-query"}
    lookup = good.figures[0]
    assert lookup.unit == "ms" and lookup.value == b_rows["p50"].value
    assert lookup.text == b_rows["p50"].text and lookup.note == "from 1 site, zeep, 1 client"
    assert lookup.text.endswith(" ms") and lookup.text in page
    # the catalogue no partner measured shows its operator's own figures, and says so
    assert "local connection only" in bad.figures[0].note
    # the best of each column is marked among comparable figures: Good's is the only one a
    # partner measured, Bad's its operator's own — nothing to compare, no star
    assert not good.figures[0].best and not bad.figures[0].best
    assert good.score.best and good.score.value is not None and bad.score.value is not None
    # the sweep reached its cap with the objective met: a lower bound, marked capped
    assert good.sustained.text.startswith("≥ ") and "capped" in good.sustained.marks
    summary = page.split('id="summary"')[1].split("</section>")[0]
    assert '<span class="mark-capped">capped</span>' in summary and "★" in summary


def test_scores_tell_a_working_catalogue_from_a_failing_one(tmp_path: Path) -> None:
    report = build_report(_campaign(tmp_path), charts=False)
    totals = {t.target: t.total for t in report.scores}
    # deployed alike (https, no facts): today both scored the same; what partners met differs
    good, bad = totals["Good ICAT"], totals["Bad ICAT"]
    assert good is not None and bad is not None and good[0] - bad[0] >= 4
    aspects = {a.aspect: a for a in report.scores[1].aspects}
    assert (aspects["reachability"].score, aspects["checks"].score) == (2, 1)
    assert aspects["reachability"].evidence == "1 of 2 sites got an answer; not: A"


def test_summary_csv_has_value_and_unit_columns(tmp_path: Path) -> None:
    campaign = _campaign(tmp_path)
    report = build_report(campaign, charts=False)
    written = write_csv(report, tmp_path / "csv")
    assert tmp_path / "csv" / "summary.csv" in written
    # summary.csv: every counted run's summary rows, as the registry gives them
    rows = list(csv.DictReader((tmp_path / "csv" / "summary.csv").read_text(
        encoding="utf-8").splitlines()))
    run = campaign.run("B", "Good ICAT")
    assert run is not None
    p50 = next(r for r in run.figures if (r.workload, r.metric) == ("single-query", "p50"))
    (line,) = [r for r in rows if (r["site"], r["target"], r["workload"], r["metric"])
               == ("B", "Good ICAT", "single-query", "p50")]
    assert (float(line["value"]), line["unit"], line["text"]) == (p50.value, "ms", p50.text)
    assert len(rows) == sum(len(r.figures) for r in campaign.runs)
    # summary-targets.csv: the page's summary, one row per target and column
    rows = list(csv.DictReader((tmp_path / "csv" / "summary-targets.csv").read_text(
        encoding="utf-8").splitlines()))
    assert list(rows[0]) == ["target", "operator", "figure", "value", "unit", "text", "best",
                             "note"]
    lookup = next(r for r in rows if r["target"] == "Good ICAT" and r["figure"] == "lookup p50")
    assert report.summary is not None
    cell = report.summary.rows[0].figures[0]
    assert (float(lookup["value"]), lookup["unit"], lookup["text"]) == (cell.value, "ms",
                                                                        cell.text)
    works = next(r for r in rows if r["target"] == "Bad ICAT" and r["figure"] == "works for")
    assert (works["value"], works["unit"]) == ("0", "sites of 2")


def test_a_swarm_run_stands_beside_the_campaign_run(tmp_path: Path) -> None:
    """Issue 19.5: merging a full run and a later swarm run of the same site and target kept
    one ("1 run, 1 older") and the report showed the partner with 0 checks."""
    swarm = write_result(tmp_path / "swarm", "A", GOOD, run_id="swarm", minutes=600,
                         parts=("sweep",), sweeps=[sweep([50, 100, 200], 5.0)])
    doc = json.loads(swarm.read_text(encoding="utf-8"))
    doc["run"]["mode"] = "swarm"
    swarm.write_text(json.dumps(doc), encoding="utf-8")
    campaign = _campaign(tmp_path, extra=[swarm])
    assert len(campaign.history) == 0
    kinds = {(r.site, r.target, r.kind) for r in campaign.runs}
    assert ("A", "Good ICAT", "run") in kinds and ("A", "Good ICAT", "swarm") in kinds
    run = campaign.run("A", "Good ICAT")
    assert run is not None and len(run.result.checks) == 2  # the campaign run's checks count
    report = build_report(campaign)
    cell = next(c for row in report.success.rows for c in row.cells
                if (c.site, c.target) == ("A", "Good ICAT"))
    assert (cell.state, cell.text) == ("ok", "2/2")
    assert [(b.site, b.target) for b in report.benchmarks].count(("A", "Good ICAT")) == 1
    (sweeps,) = [c for c in build_charts(campaign) if c.kind == "sweep"]
    assert {"A · SOAP", "A · SOAP · swarm"} <= set(sweeps.labels)
    assert report.summary is not None
    assert report.summary.rows[0].sustained.note.startswith("A, SOAP, swarm")
    page = render_html(report)
    assert page.count("<td>sv7 swarm</td>") == 1
    # the command says it: two runs of A against Good ICAT, none older
    out = tmp_path / "merged.json"
    files = [str(p) for p in (tmp_path / "c").glob("*.json")] + [str(swarm)]
    assert main(["merge", *files, "-o", str(out)]) == 0
    assert len(json.loads(out.read_text(encoding="utf-8"))["runs"]) == 5


def test_an_ad_hoc_campaign_is_titled_with_its_dates(tmp_path: Path) -> None:
    files = [write_result(tmp_path, "A", GOOD, checks=[check("x")]),
             write_result(tmp_path, "B", GOOD, checks=[check("x")], minutes=60 * 48)]
    dump_campaign(merge(files, name="campaign").document, tmp_path / "c.json")
    report = build_report(load_campaign(tmp_path / "c.json"), charts=False)
    assert report.title == "Campaign of 2026-11-21 to 2026-11-23"
    assert "<h1>Campaign of 2026-11-21 to 2026-11-23</h1>" in render_html(report)


def test_a_run_that_did_not_finish_is_marked(tmp_path: Path) -> None:
    """A run killed with -9 leaves its file "partial": it showed as a normal row."""
    killed = write_result(tmp_path, "A", GOOD, status="partial", checks=[check("x")],
                          benchmarks=_entries())
    dump_campaign(merge([killed]).document, tmp_path / "c.json")
    report = build_report(load_campaign(tmp_path / "c.json"), charts=False)
    (row,) = report.benchmarks
    assert row.unfinished is not None and "kill -9" in row.unfinished
    page = render_html(report)
    assert '<span class="unfinished"' in page and ">did not finish</span>" in page
    assert any(n.startswith("1 run did not finish — the file was never finished: the run was "
                            "killed (kill -9") for n in report.notices)
    (run,) = report.runs
    assert not run.finished and run.ended is not None


def test_one_call_is_shown_as_n_1_and_client_bound_is_a_mark_not_a_row_colour(
        tmp_path: Path) -> None:
    one = bench("single-query", "single-query/jpql", 1, [3.0])
    one["client_cpu"] = {"bound": True, "why": "workers at 97 % of their core"}
    f = write_result(tmp_path, "A", GOOD, checks=[check("x")], benchmarks=[one])
    dump_campaign(merge([f]).document, tmp_path / "c.json")
    page = render_html(build_report(load_campaign(tmp_path / "c.json"), charts=False))
    table = page.split('<table class="benchmarks">')[1].split("</table>")[0]
    # p50 = p99 with one call: the p99 cell says n = 1 instead of repeating the value
    assert '<td class="num n1" title="one call: its p99 is that call">n = 1</td>' in table
    assert 'class="client-bound"' not in table  # no row colour …
    assert '<span class="bound">⚠</span>' in table  # … a mark on the figure
    legend = page.split('<table class="benchmarks">')[1].split("</p>")[0]
    assert "client-bound — the suite's own clients" in legend  # explained under the table


def test_the_full_cycle_cell_carries_its_marks_as_every_figure(tmp_path: Path) -> None:
    """The full-cycle cell of the benchmark table was written without the ⚠ the terminal and
    the CSV give a client-bound full cycle (tryout 4, finding 3)."""
    cycle = bench("full-cycle", "full-cycle", 1, [20.0, 30.0])
    cycle["client_cpu"] = {"bound": True, "why": "workers at 97 % of their core"}
    query = bench("single-query", "single-query/jpql", 1, [2.0, 3.0, 4.0])
    f = write_result(tmp_path, "A", GOOD, checks=[check("x")], benchmarks=[cycle, query])
    dump_campaign(merge([f]).document, tmp_path / "c.json")
    page = render_html(build_report(load_campaign(tmp_path / "c.json"), charts=False))
    table = page.split('<table class="benchmarks">')[1].split("</table>")[0]
    (cell,) = re.findall(r'<td class="num"[^>]*><span class="fig">25\.0 ms</span>.*?</td>', table)
    assert '<span class="bound">⚠</span>' in cell and 'title="client-bound' in cell
    # the query's figures were not client-bound: no mark on them
    assert table.count('<span class="bound">⚠</span>') == 1


def test_the_trend_shows_performance_per_target_with_both_dates(tmp_path: Path) -> None:
    before = _campaign(tmp_path, "before", scale=2.0)
    now = _campaign(tmp_path, "now", scale=1.0, minutes=60 * 24 * 30)
    report = build_report(now, before, charts=False)
    assert report.trend is not None and report.trend.previous == "Campaign before (2026-11-21)"
    lookups = [c for c in report.changes if c.figure == "lookup p50"]
    assert [c.target for c in lookups] == ["Good ICAT", "Bad ICAT"]
    assert lookups[0].percent is not None and round(lookups[0].percent) == -50
    assert lookups[0].direction == "better"  # half the latency
    page = render_html(report)
    assert page.index('id="trend"') < page.index('id="scores"')  # after the matrices
    assert "(2026-11-21 → 2026-12-21)" in page  # both campaigns' dates in the summary
    assert re.search(r"-50 % ▲", page)
    assert report.summary is not None and "faster by 50 %" in report.summary.rows[0].change.text


def test_a_real_swarm_file_merges_without_damage_beside_a_run(tmp_path: Path) -> None:
    """The committed sv7 swarm file: every part of it passes merge's checks (its histograms,
    send lateness, per-worker steps), and it is counted beside ESRF's run of the same target."""
    (swarm,) = (Path(__file__).resolve().parent.parent / "fixtures" / "results" / "swarm"
                ).glob("*.json")
    url = json.loads(swarm.read_text(encoding="utf-8"))["target"]["url"]
    run = write_result(tmp_path, "ESRF", url, checks=[check("x")], benchmarks=_entries())
    outcome = merge([swarm, run])
    assert outcome.damaged == () and outcome.skipped == ()
    assert sorted(r["kind"] for r in outcome.document["runs"]) == ["run", "swarm"]
