"""SOAP and REST side by side: the interface of every figure in result files, and the report's
table of each operation per interface (issue 12)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from igestbench.report import build_report, render_html, render_markdown, write_csv
from igestbench.results import ResultFileError, load_result
from igestbench.results.campaign import Campaign, dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.merge import merge
from tests.campaign_helpers import bench, sweep, write_result

ROOT = Path(__file__).resolve().parent.parent
U1 = "https://t1.example/ICATService/ICAT"
U2 = "https://t2.example/ICATService/ICAT"


def over(interface: str, entry: dict[str, Any]) -> dict[str, Any]:
    return {**entry, "interface": interface}


def campaign(tmp_path: Path) -> Campaign:
    """Site A measured T1 over SOAP (zeep) and REST; site A measured T2 before REST existed."""
    soap_lookups = bench("single-query", "single-query/jpql", 1, [2.0, 2.0, 4.0, 4.0])
    rest_lookups = bench("single-query", "single-query/jpql", 1, [1.0, 1.0, 1.0, 1.0], "rest")
    soap_burst = bench("burst", "burst/createMany", 1, [100.0, 100.0])  # batch_size 10
    rest_burst = bench("burst", "burst/createMany", 1, [50.0, 50.0], "rest")
    soap_sweep, rest_sweep = sweep([10, 20], 2.0), {**sweep([20, 40], 1.0), "flavour": "rest"}
    files = [
        write_result(
            tmp_path, "A", U1, parts=("single-query", "burst", "sweep"),
            benchmarks=[over("soap", soap_lookups), over("rest", rest_lookups),
                        over("soap", soap_burst), over("rest", rest_burst),
                        # a higher level: the table compares the lowest
                        over("rest", bench("single-query", "single-query/jpql", 2, [9.0], "rest"))],
            sweeps=[over("soap", soap_sweep), over("rest", rest_sweep)],
        ),
        write_result(tmp_path, "A", U2, parts=("single-query",),
                     benchmarks=[soap_lookups], sweeps=[soap_sweep]),  # no interface keys
    ]
    config = CampaignConfig(name="c", parts=("single-query", "burst", "sweep"),
                            sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T1", U1), CampaignTarget("T2", U2)))
    path = tmp_path / "c.json"
    dump_campaign(merge(files, config).document, path)
    return load_campaign(path)


def test_a_file_without_interfaces_reads_as_soap(tmp_path: Path) -> None:
    path = write_result(tmp_path, "A", U2, benchmarks=[bench("full-cycle", "full-cycle", 1, [1.0])],
                        sweeps=[sweep([10], 1.0)])
    doc = json.loads(path.read_text())
    assert "interface" not in doc["benchmarks"][0]  # as a file from before issue 12
    result = load_result(path)
    assert [b["interface"] for b in result.benchmarks] == ["soap"]
    assert [s["interface"] for s in result.sweeps] == ["soap"]
    fixtures = ROOT / "fixtures" / "results"
    for old in (*fixtures.glob("v1/*.json"), *fixtures.glob("before-rest/*.json")):
        loaded = load_result(old)
        assert loaded.benchmarks and all(b["interface"] == "soap" for b in loaded.benchmarks)
        assert loaded.sweeps and all(s["interface"] == "soap" for s in loaded.sweeps)
    (current,) = fixtures.glob("v2/*.json")  # as the writer writes it today
    interfaces = [(b["flavour"], b["interface"]) for b in load_result(current).benchmarks]
    assert ("rest", "rest") in interfaces and ("zeep", "soap") in interfaces


def test_an_unknown_interface_is_refused(tmp_path: Path) -> None:
    path = write_result(tmp_path, "A", U1)
    doc = json.loads(path.read_text())
    doc["benchmarks"] = [over("corba", bench("full-cycle", "full-cycle", 1, [1.0]))]
    path.write_text(json.dumps(doc))
    with pytest.raises(ResultFileError, match=r"benchmarks\[0\]\.interface is 'corba'"):
        load_result(path)


def test_each_operation_side_by_side_per_interface(tmp_path: Path) -> None:
    report = build_report(campaign(tmp_path), charts=False)
    (table,) = report.interfaces  # T2 measured SOAP only: no table
    assert (table.target, table.site) == ("T1", "A")
    assert [(c.interface, c.flavour, c.clients) for c in table.columns] == [
        ("soap", "zeep", 1), ("soap", "lean", None), ("rest", "rest", 1)]
    rows = {row.operation: row.cells for row in table.rows}
    assert set(rows) == {"single-result lookup", "createMany", "load sweep: sustained rate"}
    soap, lean, rest = rows["single-result lookup"]
    assert soap.ops_per_s == pytest.approx(1000 / 3.0)  # the 1-client level's throughput
    assert rest.ops_per_s == pytest.approx(1000 / 1.0)
    assert soap.p50_ms == pytest.approx(2.0, rel=1e-2)
    assert soap.p99_ms == pytest.approx(4.0, rel=1e-2)
    assert rest.p99_ms == pytest.approx(1.0, rel=1e-2) and lean.empty
    soap, _, rest = rows["createMany"]  # 10 Datafiles a call: 100 ms → 100/s, 50 ms → 200/s
    assert (soap.ops_per_s, rest.ops_per_s) == (pytest.approx(100.0), pytest.approx(200.0))
    zeep, lean, rest = rows["load sweep: sustained rate"]
    assert zeep.empty and lean.ops_per_s == 10 and rest.ops_per_s == 20


def test_the_page_markdown_and_csv_show_the_table(tmp_path: Path) -> None:
    report = build_report(campaign(tmp_path), charts=False)
    page = render_html(report)
    assert 'id="interfaces"' in page and "REST · rest" in page and "SOAP · zeep" in page
    markdown = render_markdown(report)
    section = markdown.split("## SOAP and REST", 1)[1]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| operation | rate counts | SOAP · zeep rate |")
    assert "| single-result lookup | searches/s | 333 searches/s | 2.00 ms | 4.00 ms |" in section
    # every row of the table has as many cells as its header
    assert len({line.count("|") for line in lines}) == 1
    written = {p.name: p for p in write_csv(report, tmp_path / "csv")}
    rows = list(csv.DictReader(written["interfaces.csv"].read_text().splitlines()))
    rest = [r for r in rows if r["interface"] == "rest" and r["operation"] == "createMany"]
    assert [float(r["ops_per_s"]) for r in rest] == [pytest.approx(200.0)]


def test_a_capped_sweep_is_a_bound_in_the_csv_as_on_the_page(tmp_path: Path) -> None:
    """Tryout 4: interfaces.csv gave a capped sweep's cap (40.0) as its sustained rate, with
    nothing to say it was a bound, while the page wrote "≥ 40.0 requests/s"."""
    capped = {**sweep([10, 20, 40], 2.0), "sustained_rate": 40}
    capped["steps"] = [{**step, "errors": {}} for step in capped["steps"]]
    path = write_result(tmp_path, "A", U1, parts=("single-query", "sweep"),
                        benchmarks=[over("rest", bench("single-query", "single-query/jpql", 1,
                                                       [1.0], "rest"))],
                        sweeps=[over("soap", capped)])
    config = CampaignConfig(name="c", parts=("single-query", "sweep"), sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T1", U1),))
    dump_campaign(merge([path], config).document, tmp_path / "c.json")
    report = build_report(load_campaign(tmp_path / "c.json"), charts=False)
    written = {p.name: p for p in write_csv(report, tmp_path / "csv")}
    rows = list(csv.DictReader(written["interfaces.csv"].read_text().splitlines()))
    (row,) = [r for r in rows if r["operation"] == "load sweep: sustained rate" and r["ops_per_s"]]
    assert float(row["ops_per_s"]) == 40.0
    assert row["text"] == "≥ 40.0 requests/s" and "capped" in row["marks"].split()
    assert row["text"] in render_html(report)
    (lookup,) = [r for r in rows if r["operation"] == "single-result lookup" and r["ops_per_s"]]
    assert lookup["text"] == "1,000 searches/s" and lookup["marks"] == ""


def test_a_campaign_without_rest_has_no_table(tmp_path: Path) -> None:
    path = write_result(tmp_path, "A", U2, benchmarks=[bench("full-cycle", "full-cycle", 1, [1.0])])
    config = CampaignConfig(name="c", parts=("full-cycle",), sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T2", U2),))
    dump_campaign(merge([path], config).document, tmp_path / "c.json")
    report = build_report(load_campaign(tmp_path / "c.json"), charts=False)
    assert report.interfaces == () and 'id="interfaces"' not in render_html(report)


def test_rest_missing_gets_its_footnote(tmp_path: Path) -> None:
    from tests.campaign_helpers import check

    missing = {**check("test_rest_version", "failed", "rest-missing"), "part": "rest"}
    path = write_result(tmp_path, "A", U1, checks=[check("test_login"), missing])
    config = CampaignConfig(name="c", parts=("verify",), sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T1", U1),))
    dump_campaign(merge([path], config).document, tmp_path / "c.json")
    (note,) = build_report(load_campaign(tmp_path / "c.json"), charts=False).footnotes
    assert note.text == ("T1 answers over SOAP but not over REST (/icat/): a proxy or firewall "
                         "in the way; checks of sites A flag it")


def test_the_whole_search_counts_fetch_and_decode(tmp_path: Path) -> None:
    def multi(flavour: str, fetch_ms: float, decode_ms: float) -> dict[str, Any]:
        entry = bench("multi-query", "multi-query/whole/fetch", 1, [fetch_ms] * 4, flavour)
        decode = bench("multi-query", "multi-query/whole/decode", 1, [decode_ms] * 4, flavour)
        return {**entry, "ops": {**entry["ops"], **decode["ops"]}}

    path = write_result(tmp_path, "A", U1, parts=("multi-query",),
                        benchmarks=[over("soap", multi("zeep", 10.0, 5.0)),
                                    over("rest", multi("rest", 20.0, 5.0))])
    config = CampaignConfig(name="c", parts=("multi-query",), sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T1", U1),))
    dump_campaign(merge([path], config).document, tmp_path / "c.json")
    (table,) = build_report(load_campaign(tmp_path / "c.json"), charts=False).interfaces
    (row,) = table.rows
    soap, rest = row.cells
    assert soap.ops_per_s == pytest.approx(1000 / 15) and rest.ops_per_s == pytest.approx(40.0)
    assert soap.p50_ms == pytest.approx(10.0, rel=1e-2)  # the fetch: server and wire


def test_the_example_campaign_puts_soap_and_rest_side_by_side() -> None:
    report = build_report(load_campaign(ROOT / "fixtures" / "campaign" / "campaign.json"),
                          charts=False)
    assert {(t.target, t.site) for t in report.interfaces} >= {
        ("ESRF ICAT", "ESRF"), ("ELETTRA ICAT", "ELETTRA")}
    for table in report.interfaces:
        assert [c.interface for c in table.columns][-1] == "rest"
        lookups = next(r for r in table.rows if r.operation == "single-result lookup")
        assert all(c.ops_per_s or c.failed for c in lookups.cells[:1] + lookups.cells[-1:])
