"""The scale part's figures in the result file's summary and on the Markdown page (issue 21.6):
the registry's rows, the same numbers as the section, in every printer."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from igestbench.report import build_report, write_csv
from igestbench.report.render import render_markdown
from igestbench.results.figures import P50, SCALE, figure, summary_rows
from igestbench.results.loader import load_result
from igestbench.results.scale_rows import metric
from igestbench.workloads.scale_queries import QUERIES
from tests.campaign_helpers import write_result
from tests.test_report_scale import URL, campaign, section


def older_file(tmp_path: Path) -> Path:
    """A run of the part alone as the writer wrote it before the part's figures were in the
    summary: the section, and a summary without them."""
    path = write_result(tmp_path, "A", URL, parts=("scale",))
    doc = json.loads(path.read_text())
    doc["scale"], doc["summary"] = section(), []
    path.write_text(json.dumps(doc))
    return path


def test_the_section_s_headline_figures_are_summary_rows_with_their_definitions() -> None:
    scale = section()
    scale["sizes"][-1]["queries"][0].update(n=0, p50_ms=None, errors={"WrongResult": 20},
                                            error="3 rows where the tree holds 1")
    from igestbench.results.figures import compute_summary

    rows = {r.metric: r for r in compute_summary({"run": {}, "scale": scale})}
    # the p50 at the largest size per query and role, its growth, and the population rate
    assert len(rows) == len(QUERIES) * 2 * 2 + 1
    name = rows[metric("name", "member", "p50")]
    assert (name.workload, name.interface, name.clients, name.unit) == (SCALE, "soap", 1, "ms")
    assert name.value == 200.0 and name.text == "200 ms" and name.samples == 20
    assert "100,000 Datafiles" in (name.note or "")
    assert name.definition == figure(SCALE, P50)
    growth = rows[metric("name", "root", "growth")]
    assert growth.value == 1.0 and growth.unit == "slope" and growth.note is not None
    assert growth.note.startswith("linear: the database scans")
    failed = rows[metric(QUERIES[0].name, "root", "p50")]
    assert failed.marks == ("failed",) and failed.text == "failed"
    assert "3 rows where the tree holds 1" in (failed.note or "")
    rate = rows["population rate"]
    assert rate.value == 12_000.0 and rate.text == "12,000 Datafiles/s"
    assert all(r.definition is not None for r in rows.values())


def test_the_writer_keeps_them_in_the_file_and_an_older_file_reads_them(tmp_path: Path) -> None:
    from igestbench.results import ResultWriter

    writer = ResultWriter(tmp_path, run={"id": "r1", "site": "A", "parts": ["scale"]},
                          target={"url": URL}, environment={})
    writer.set_section("scale", section())
    doc = json.loads(writer.finish().read_text())
    stored = [r for r in doc["summary"] if r["workload"] == SCALE]
    assert len(stored) == len(QUERIES) * 4 + 1
    # a file written before the part's figures were in the summary: the same rows, computed
    older = older_file(tmp_path / "older")
    computed = [r.to_dict() for r in summary_rows(load_result(older)) if r.workload == SCALE]
    assert computed == stored


def test_the_markdown_page_has_the_section_with_the_registry_s_numbers(tmp_path: Path) -> None:
    report = build_report(campaign(tmp_path, section()), charts=False)
    md = render_markdown(report)
    assert "## Catalogue size" in md and "### Growth per target" in md
    assert "| t1.example | A | SOAP | member | 100,000 |" in md
    latency = next(line for line in md.splitlines()
                   if line.startswith("| t1.example | A | SOAP | member | 100,000 | 2.00 | 200 |"))
    assert latency.count("|") == 6 + len(QUERIES)
    assert "1.00 linear" in md and "2.00x" in md
    written = write_csv(report, tmp_path / "csv")
    with (tmp_path / "csv" / "scale.csv").open(encoding="utf-8") as file:
        cells = [r for r in csv.DictReader(file)
                 if (r["query"], r["role"], r["size"]) == ("name", "member", "100000")]
    assert tmp_path / "csv" / "scale.csv" in written and float(cells[0]["p50_ms"]) == 200.0


def test_a_report_without_a_scale_run_has_no_markdown_section(tmp_path: Path) -> None:
    from igestbench.results.campaign import dump_campaign, load_campaign
    from igestbench.results.merge import merge

    path = write_result(tmp_path, "A", URL)
    dump_campaign(merge([path]).document, tmp_path / "c.json")
    md = render_markdown(build_report(load_campaign(tmp_path / "c.json"), charts=False))
    assert "## Catalogue size" not in md


def test_the_end_of_the_run_prints_the_part_s_figures(tmp_path: Path) -> None:
    # tryout of 2026-11-26: `sv7 run --parts scale` ended with "result file" and "next" only
    from igestbench.run.summary import file_summary

    lines = file_summary(older_file(tmp_path))
    assert lines[0].startswith("scale (p50 at the largest size, as root / as the member")
    assert lines[1] == ("  population: 12,000 Datafiles/s (growing the tree to 100,000 "
                        "Datafiles, 100,000 of them by createMany)")
    (name,) = [line for line in lines if line.startswith("  SOAP name ")]
    rows = {r.metric: r for r in summary_rows(load_result(older_file(tmp_path / "again")))}
    # the same texts as the file's rows: the registry's, not the printer's own
    assert rows[metric("name", "root", P50)].text in name
    assert rows[metric("name", "member", P50)].text in name
    assert "; linear (slope 1.00): the database scans" in name
    assert not [line for line in lines if "population " in line and "SOAP" in line]


def test_a_flat_line_that_fell_says_it_is_noise() -> None:
    # tryout of 2026-11-26: the quick tour printed "SOAP get … flat (slope -0.42)", a verdict
    # on two sizes whose calls varied more than the tree changed them
    from igestbench.results.growth import FELL, MEANINGS
    from igestbench.results.rows import SummaryRow
    from igestbench.run.summary import _growth_text

    def row(slope: float, meaning: str) -> SummaryRow:
        return SummaryRow("scale", "soap", "lean", None, "get root growth", slope, "",
                          f"{slope:.2f}", 2, note=f"flat: {meaning} (over 2 sizes)")

    assert _growth_text(row(-0.42, FELL)) == f"; flat (slope -0.42): {FELL}"
    assert _growth_text(row(0.05, MEANINGS["flat"])) == "; flat (slope 0.05)"


def test_a_slope_is_written_alike_in_the_terminal_the_file_the_page_and_the_csv() -> None:
    """Tryout 4: terminal `linear (slope 0.54)`, page `0.54 linear`, but summary.csv's text
    (the registry's) `0.537 slope`."""
    from igestbench.report.scale import GrowthCell
    from igestbench.results.figures import compute_summary
    from igestbench.run.summary import _growth_text

    scale = section()
    for g in scale["growth"]:
        g["slope"] = 0.537
    rows = {r.metric: r for r in compute_summary({"run": {}, "scale": scale})}
    growth = rows[metric("name", "root", "growth")]
    assert growth.value == 0.537  # the value keeps its digits; its text is the one rule's
    assert growth.text == "0.54 slope"
    assert "(slope 0.54)" in _growth_text(growth)
    assert GrowthCell(0.537, "linear").text == "0.54 linear"
