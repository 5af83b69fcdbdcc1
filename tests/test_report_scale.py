"""The report's Catalogue size section, from result files alone (issue 21, point 4)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from igestbench.report import build_report, render_html, write_csv
from igestbench.report.charts import chart_colours
from igestbench.report.colours import DASHED, NEUTRAL, SOLID
from igestbench.results.campaign import Campaign, dump_campaign, load_campaign
from igestbench.results.growth import fit
from igestbench.results.merge import merge
from igestbench.workloads.scale_queries import QUERIES
from tests.campaign_helpers import write_result

URL = "https://t1.example/ICATService/ICAT"
SIZES = (1_000, 10_000, 100_000)


def section(member_factor: float = 2.0) -> dict[str, Any]:
    """A scale section as the part writes it: every query flat (1 ms) but by name, which grows
    linearly (as a scan does); the member pays ``member_factor`` for every query."""
    sizes = []
    for size in SIZES:
        queries = []
        for q in QUERIES:
            root = size / 1000 if q.name == "name" else 1.0
            for role, ms in (("root", root), ("member", root * member_factor)):
                queries.append({"query": q.name, "interface": "soap", "role": role, "n": 20,
                                "calls": 20, "p50_ms": ms, "p99_ms": ms * 2, "mean_ms": ms,
                                "rows": 1})  # fmt: skip
        sizes.append({"size": size, "datafiles_added": size, "rate_per_s": 12_000.0,
                      "populate_s": size / 12_000, "queries": queries})  # fmt: skip
    growth = []
    for q in QUERIES:
        for role in ("root", "member"):
            points = [(s["size"], next(x["p50_ms"] for x in s["queries"]
                                       if x["query"] == q.name and x["role"] == role))
                      for s in sizes]  # fmt: skip
            g = fit([p[0] for p in points], [p[1] for p in points])
            assert g is not None
            growth.append({"query": q.name, "interface": "soap", "role": role, "sizes": 3,
                           "slope": g.slope, "growth": g.word, "meaning": g.meaning})
    return {"version": 1, "sizes": sizes, "growth": growth,
            "queries": {q.name: q.label for q in QUERIES},
            "roles": {"root": "simple/ingest", "member": "simple/reader"},
            "member": {"account": "simple/reader", "why": None}}  # fmt: skip


def campaign(tmp_path: Path, scale: dict[str, Any]) -> Campaign:
    path = write_result(tmp_path, "A", URL, parts=("scale",))
    doc = json.loads(path.read_text())
    doc["scale"] = scale
    path.write_text(json.dumps(doc))
    out = tmp_path / "c.json"
    dump_campaign(merge([path]).document, out)
    return load_campaign(out)


def test_the_page_draws_latency_against_size_and_tables_growth_and_ratio(tmp_path: Path) -> None:
    report = build_report(campaign(tmp_path, section()))
    assert report.scale is not None
    (chart,) = report.scale.charts
    assert chart.kind == "scale" and len(chart.panels) == len(QUERIES)
    assert all(p.log for p in chart.panels) and "<svg" in chart.svg
    assert {s.label for s in chart.panels[1].series} == {"A · SOAP · root", "A · SOAP · member"}
    page = render_html(report)
    assert '<section id="scale">' in page and 'href="#scale"' in page
    assert 'id="scale-0"' in page
    assert "1.00 linear" in page and "0.00 flat" in page  # by name grows, the rest does not
    # each cell's tooltip says what its word means, as the run wrote it
    assert 'title="the database scans: no index serves this query">1.00 linear' in page
    (ratio,) = report.scale.ratios
    assert ratio.size == 100_000 and all(v == 2.0 for v in ratio.cells)
    assert "2.00x" in page
    written = write_csv(report, tmp_path / "csv")
    with (tmp_path / "csv" / "scale.csv").open(encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert tmp_path / "csv" / "scale.csv" in written
    assert len(rows) == len(SIZES) * len(QUERIES) * 2
    assert {r["role"] for r in rows} == {"root", "member"}


def test_each_line_can_be_told_apart_and_has_its_sites_colour(tmp_path: Path) -> None:
    # root and member over SOAP and REST: four lines a reader must tell apart in each panel;
    # the site's colour is the one it has in every chart of the page (paler for the member),
    # its interface the dash; the key beside the chart shows both
    scale = section()
    for size in scale["sizes"]:
        size["queries"] += [{**q, "interface": "rest"} for q in size["queries"]]
    scale["growth"] += [{**g, "interface": "rest"} for g in scale["growth"]]
    merged = campaign(tmp_path, scale)
    report = build_report(merged)
    assert report.scale is not None
    (chart,) = report.scale.charts
    styles = {s.label: (s.colour, s.dash) for s in chart.panels[0].series}
    assert len(styles) == 4 and len(set(styles.values())) == 4
    site = chart_colours(merged)["A"]
    assert styles["A · SOAP · root"] == (site, SOLID)
    assert styles["A · REST · root"] == (site, DASHED)
    assert styles["A · SOAP · member"][1] == SOLID and styles["A · REST · member"][1] == DASHED
    assert styles["A · SOAP · member"][0] not in (site, NEUTRAL)
    page = render_html(report)
    assert f"3px dashed {site}" in page  # the key beside the chart shows the dash


def test_a_run_without_a_member_says_so_and_has_no_ratio(tmp_path: Path) -> None:
    scale = section()
    for size in scale["sizes"]:
        size["queries"] = [q for q in size["queries"] if q["role"] == "root"]
    scale["growth"] = [g for g in scale["growth"] if g["role"] == "root"]
    scale["member"] = {"account": None, "why": "no member account: pass --account member=…"}
    report = build_report(campaign(tmp_path, scale))
    assert report.scale is not None and not report.scale.ratios
    page = render_html(report)
    assert "measured as root only: no member account" in page
    assert "No data: no run measured both root and a member." in page


def test_no_scale_run_no_section(tmp_path: Path) -> None:
    path = write_result(tmp_path, "A", URL)
    out = tmp_path / "c.json"
    dump_campaign(merge([path]).document, out)
    report = build_report(load_campaign(out), charts=False)
    assert report.scale is None and 'id="scale"' not in render_html(report)
