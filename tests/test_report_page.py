"""What a coordinator reads on the page: failed runs, local connections, empty campaigns, and
charts that stay the same drawing after their SVG is compacted."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

from igestbench.report import build_report, render_html, render_markdown, write_csv
from igestbench.report.charts import Chart, build_charts, draw_chart
from igestbench.report.series import Panel, Series
from igestbench.results.campaign import Campaign, dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.merge import merge
from tests.campaign_helpers import bench, check, write_result
from tests.test_report import U1, U2, build_campaign

STOPPED = "INTERNAL: injected failure (sv7 serve --error-rate)"


def _failed_entry(workload: str, concurrency: int) -> dict[str, Any]:
    # what sv7 run writes for a level whose worker failed before any call succeeded
    return {"workload": workload, "flavour": "zeep", "concurrency": concurrency,
            "wall_s": 0.0, "throughput_per_s": 0.0, "client_bound": False, "ops": {},
            "checks": {}, "problems": [f"worker 0: {STOPPED}"]}


def _campaign(tmp_path: Path, files: list[Path], targets: tuple[CampaignTarget, ...],
              sites: tuple[str, ...] = ("A", "B")) -> Campaign:
    config = CampaignConfig(name="p", sites=tuple(CampaignSite(s) for s in sites),
                            targets=targets)
    dump_campaign(merge(files, config).document, tmp_path / "p.json")
    return load_campaign(tmp_path / "p.json")


def _stopped_run(tmp_path: Path) -> Campaign:
    """B ran against A's catalogue: full cycles measured, single queries stopped on a fault."""
    files = [write_result(
        tmp_path, "B", U1, status="failed", parts=("verify", "full-cycle", "single-query"),
        checks=[check("x")],
        benchmarks=[bench("full-cycle", "full-cycle", 1, [10.0, 12.0]),
                    bench("full-cycle", "full-cycle", 2, [11.0, 13.0]),
                    _failed_entry("single-query", 1), _failed_entry("single-query", 2)])]
    return _campaign(tmp_path, files, (CampaignTarget("T1", U1, "A"),))


def test_a_run_stopped_on_a_fault_shows_failed_and_why(tmp_path: Path) -> None:
    report = build_report(_stopped_run(tmp_path))
    (row,) = report.benchmarks
    assert row.failed == ("single-query",) and row.failure == STOPPED
    assert row.query_p50_ms is None and row.full_cycle_mean_ms == 11.0
    page = render_html(report)
    assert page.count('<td class="failed-run">failed</td>') == 2  # p50 and p99
    assert f"(single-query): {STOPPED}" in page
    # the notice says why the run failed, not only that it did
    assert f"1 run failed — a workload&#39;s clients stopped: {STOPPED}: B → T1" in page
    assert "Campaign <code>p</code>: 2 sites," in page  # two sites declared
    (csv_file,) = [f for f in write_csv(report, tmp_path / "csv") if f.name == "benchmarks.csv"]
    header, line = csv.reader(csv_file.read_text(encoding="utf-8").splitlines())
    fields = dict(zip(header, line, strict=True))
    assert (fields["failed"], fields["failure"], fields["local"]) == ("single-query", STOPPED,
                                                                      "False")
    markdown = render_markdown(report)
    assert "| failed | failed |" in markdown and "stopped (single-query failed)" in markdown


def test_a_failed_level_is_no_point_and_a_panel_without_any_says_so(tmp_path: Path) -> None:
    campaign = _stopped_run(tmp_path)
    (scaling,) = [c for c in build_charts(campaign) if c.kind == "scaling"]
    # the rates first, then the latencies: a column per measure
    cycles, queries, *_ = scaling.panels
    query_latency = next(p for p in scaling.panels if p.title == "single-query: mean latency")
    assert cycles.ylabel == "cycles/s" and query_latency.ylabel == "ms per call"
    assert queries.series[0].y == (None, None)  # not (0.0, 0.0): nothing was measured
    svg = draw_chart(scaling).svg
    assert svg.count("no data: every run of it failed") == 2
    # the empty panels have no ticks: no made-up 0.00 … 0.04 axis
    assert not re.search(r">0\.0[0-9]<", svg)


def test_local_connections_are_told_apart(tmp_path: Path) -> None:
    # build_campaign: T1 is A's, T2 is B's; A ran against both, B against both, C against T1
    report = build_report(build_campaign(tmp_path))
    cells = {(c.site, c.target): c for row in report.success.rows for c in row.cells}
    assert [k for k, c in cells.items() if c.local] == [("A", "T1"), ("B", "T2")]
    assert (report.success.local.count, report.success.local.ok) == (2, 2)
    assert (report.success.remote.count, report.success.remote.ok) == (3, 0)
    (row,) = report.benchmarks  # A against its own T1
    assert row.local
    page = render_html(report)
    assert page.count('class="cell ok local"') == 2
    assert "Remote connections (a site against a partner's catalogue): 0 of 3 ok (0 %)" in page
    assert "local connections (a site against its own): 2 of 2 ok (100 %)" in page
    assert "Local connections: a site against its own catalogue (1 row)" in page
    assert "Remote connections: a site" not in page


def test_a_run_against_the_built_in_catalogue_is_a_local_connection(tmp_path: Path) -> None:
    # the quick start's run: no campaign file, no operator; the catalogue ran on the site itself
    built_in = write_result(tmp_path, "hzb-pc", "https://127.0.0.1:40777/ICATService/ICAT",
                            checks=[check("a")], built_in=True,
                            benchmarks=[bench("full-cycle", "full-cycle", 1, [10.0, 12.0])])
    outcome = merge([built_in])
    dump_campaign(outcome.document, tmp_path / "c.json")
    report = build_report(load_campaign(tmp_path / "c.json"))
    ((cell,),) = [row.cells for row in report.success.rows]
    assert cell.local and (report.success.local.count, report.success.remote.count) == (1, 0)
    (row,) = report.benchmarks
    assert row.local
    page = render_html(report)
    assert "Local connections: a site against its own catalogue (1 row)" in page
    assert "Remote connections: a site" not in page


def test_an_empty_campaign_says_no_data(tmp_path: Path) -> None:
    nothing = _campaign(tmp_path, [], (), sites=())
    page = render_html(build_report(nothing))
    assert "0 sites, 0 target catalogues, 0 runs counted" in page
    for note in ("the campaign has no sites", "the campaign has no targets",
                 "no run measured a benchmark.", "no run measured a benchmark, a sweep",
                 "no run was counted"):
        assert f"No data: {note}" in page
    # no table is left with a header and nothing under it
    assert "<table" not in page.split('id="scores"')[1].split('class="scale"')[0]
    one = _campaign(tmp_path, [], (CampaignTarget("T1", U2, "A"),), sites=("A",))
    assert "1 site, 1 target catalogue, 0 runs counted" in render_html(build_report(one))


def test_the_scale_of_the_scores_is_next_to_them(tmp_path: Path) -> None:
    page = render_html(build_report(build_campaign(tmp_path)))
    scale = page.split('id="scores"')[1].split('<table class="scores">')[0]
    assert "3 HTTPS on port 443" in scale and "out of 20" in scale
    assert "4 every site that tried got an answer" in scale  # what each point is for


def test_the_svg_is_compact_keeps_every_mark_and_defines_every_class() -> None:
    series = tuple(Series(f"s{i}", (1.0, 2.0, 4.0), (1.0 + i, 2.0, 3.5),
                          low=(0.5, 1.5, 3.0), high=(1.5, 2.5, 4.0), colour=colour)
                   for i, colour in enumerate(("#1f77b4", "#ff7f0e", "#2ca02c")))
    chart = Chart("k", "k", "K", (Panel("p", "x", "y", series, hline=2.0, hline_label="h"),))
    drawing = draw_chart(chart)
    assert len(drawing.svg) < 16_000
    used = set(re.findall(r'class="(s[0-9a-f]{6})"', drawing.svg))
    assert used and used == {name for name, _ in drawing.styles}
    for colour in ("#1f77b4", "#ff7f0e", "#2ca02c"):  # line, dots and band of each series
        assert len(re.findall(f'(?:stroke|fill)="{colour}"', drawing.svg)) == 3, colour
    # the font is the page's; no style is written out on a mark (classes and own colours)
    assert "font-family" not in drawing.svg and "style=" not in drawing.svg


def test_the_page_defines_each_chart_style_once(tmp_path: Path) -> None:
    page = render_html(build_report(build_campaign(tmp_path)))
    defined = re.findall(r"^\.(s[0-9a-f]{6})\{", page, re.MULTILINE)
    assert defined and len(defined) == len(set(defined))
    assert set(re.findall(r'class="(s[0-9a-f]{6})"', page)) == set(defined)


def test_quick_tours_are_labelled_apart_from_full_runs(tmp_path: Path) -> None:
    """A quick tour's figures (sv7 run's default) are marked wherever they are shown: in the
    notices, on their benchmark row, in the charts' keys and in the list of runs; a file
    written before profiles (no run.profile) reads as a full run."""
    entries = [bench("full-cycle", "full-cycle", n, [10.0, 12.0]) for n in (1, 2)]
    files = [write_result(tmp_path, "A", U2, run_id="a", parts=("full-cycle",),
                          benchmarks=entries, profile="quick"),
             write_result(tmp_path, "B", U2, run_id="b", parts=("full-cycle",),
                          benchmarks=entries)]
    report = build_report(_campaign(tmp_path, files, (CampaignTarget("T2", U2),)))
    assert [(row.site, row.quick) for row in report.benchmarks] == [("A", True), ("B", False)]
    assert [(run.site, run.profile) for run in report.runs] == [("A", "quick"), ("B", "full")]
    (notice,) = [n for n in report.notices if "quick tour" in n]
    assert notice.startswith("1 run is a quick tour") and "A → T2" in notice
    (scaling,) = [c for c in report.charts if c.kind == "scaling"]
    assert {entry.label for entry in scaling.legend} == {"A · SOAP zeep (quick tour)",
                                                         "B · SOAP zeep"}
    page = render_html(report)
    assert page.count('<span class="quick"') == 1
    assert "<td>quick tour</td>" in page and "<td>full</td>" in page
    assert "A (quick tour) |" in render_markdown(report)


def test_a_cell_never_run_has_no_local_frame(tmp_path: Path) -> None:
    """TRYOUT4 #16: the built-in catalogue is every site's own, but a site that never ran
    against it made no connection to frame (in the success matrix nor in the IDS one)."""
    from igestbench.report.ids_matrix import ids_success

    remote = write_result(tmp_path, "ELETTRA", "https://icat.example.org/ICATService/ICAT",
                          checks=[check("a")])
    built_in = write_result(tmp_path, "SITEA", "https://127.0.0.1:40777/ICATService/ICAT",
                            checks=[check("a")], built_in=True)
    outcome = merge([remote, built_in])
    dump_campaign(outcome.document, tmp_path / "c.json")
    campaign = load_campaign(tmp_path / "c.json")
    report = build_report(campaign)
    for matrix in (report.success, ids_success(campaign)):
        cells = {(c.site, c.target): c for row in matrix.rows for c in row.cells}
        assert cells[("ELETTRA", "built-in")].state == "not-run"
        assert not cells[("ELETTRA", "built-in")].local
    cells = {(c.site, c.target): c for row in report.success.rows for c in row.cells}
    assert cells[("SITEA", "built-in")].local  # the run that was made is framed
    page = render_html(report)
    assert page.count('class="cell ok local"') == 1
    assert 'class="cell not-run local"' not in page
    assert "a cell not run has no frame" in page
