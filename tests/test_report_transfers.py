"""The ids part's figures in the registry (files/s and MB/s per direction and file size) and the
report's Data Service table: the same numbers in the file's summary, the page, the Markdown and
transfers.csv; the SOAP/REST tables and the charts leave the IDS out."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from igestbench.measure.stats import LatencyStats
from igestbench.report import build_report, render_html, render_markdown, write_csv
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.figures import entry_figures, figure, measures_of
from igestbench.results.merge import merge
from tests.campaign_helpers import bench, write_result

URL = "https://t1.example/ICATService/ICAT"
KiB, MiB = 1024, 1024 * 1024


def op(latencies_ms: list[float], clients: int) -> dict[str, Any]:
    stats = LatencyStats.of(round(ms * 1e6) for ms in latencies_ms)
    return {"count": len(latencies_ms), "ok": len(latencies_ms), "errors": {},
            "mean_ms": sum(latencies_ms) / len(latencies_ms), "histogram": stats.encode(),
            "cold_ms": [1.0] * clients}  # fmt: skip


def ids_entry(clients: int) -> dict[str, Any]:
    """An ``ids`` entry: per client 2 warm puts of each size, 1 warm getData."""
    entry = bench("ids", "ids/put/1KiB", clients, [10.0], "lean")
    entry["interface"] = "ids"
    entry["ops"] = {
        "ids/put/1KiB": op([10.0] * 2 * clients, clients),
        "ids/put/1MiB": op([20.0] * 2 * clients, clients),
        "ids/getData/1KiB": op([5.0] * clients, clients),
        "ids/getData/1MiB": op([8.0] * clients, clients),
    }
    entry["checks"] = {"expected": 6 * clients, "stored": 6 * clients, "downloaded": 4 * clients,
                       "identical": 4 * clients, "file_sizes": {"1MiB": MiB, "1KiB": KiB}}
    return entry


def test_the_registry_has_the_ids_figures_per_size_and_direction() -> None:
    entry = ids_entry(2)
    names = [m.name for m in measures_of("ids", entry)]
    assert names == ["put 1KiB", "getData 1KiB", "put 1MiB", "getData 1MiB"]  # smallest first
    rows = {r.metric: r for r in entry_figures(entry)}
    # 2 clients each calling back to back at 20 ms a call: 100 files/s, 104.9 MB/s of 1 MiB
    assert rows["put 1MiB rate"].value == 100.0 and rows["put 1MiB rate"].unit == "files/s"
    assert rows["put 1MiB MB/s"].value == 104.858 and rows["put 1MiB MB/s"].text == "105 MB/s"
    assert rows["getData 1KiB p50"].unit == "ms" and rows["put 1MiB rate"].samples == 4
    assert figure("ids", "put 1MiB MB/s").unit == "MB/s"
    assert rows["put 1MiB rate"].definition is not None
    # the summary rows name their sizes: the terminal's table finds the measures from them
    assert [m.name for m in measures_of("ids", metrics=rows)] == names


def test_the_report_shows_the_data_service_table(tmp_path: Path) -> None:
    path = write_result(tmp_path, "A", URL, parts=("full-cycle", "ids"),
                        benchmarks=[bench("full-cycle", "full-cycle", 1, [5.0, 5.0]),
                                    ids_entry(1), ids_entry(2)])  # fmt: skip
    config = CampaignConfig(name="c", parts=("full-cycle", "ids"), sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T1", URL),))  # fmt: skip
    campaign_path = tmp_path / "c.json"
    dump_campaign(merge([path], config).document, campaign_path)
    report = build_report(load_campaign(campaign_path))
    rows = [(t.flavour, t.clients, t.size, t.put_files_per_s, t.put_mb_text)
            for t in report.transfers]  # fmt: skip
    assert rows == [
        ("lean", 1, "1KiB", 100.0, "0.102 MB/s"), ("lean", 1, "1MiB", 50.0, "52.4 MB/s"),
        ("lean", 2, "1KiB", 200.0, "0.205 MB/s"), ("lean", 2, "1MiB", 100.0, "105 MB/s"),
    ]  # fmt: skip
    # a phase's files are checked together: its counts are said once, on its first row, and
    # cover its sizes' rows (tryout, 2026-11-26; TRYOUT4 #10: not repeated on each size's row)
    assert [(t.stored, t.identical, t.checked_sizes) for t in report.transfers] == [
        ("6 / 6 (all sizes)", "4 / 4 (all sizes)", 2), ("", "", 0),
        ("12 / 12 (all sizes)", "8 / 8 (all sizes)", 2), ("", "", 0)]
    assert report.interfaces == ()  # the IDS is no column of the SOAP/REST tables
    page = render_html(report)
    assert 'id="transfers"' in page and "52.4 MB/s" in page and 'href="#transfers"' in page
    assert "| lean | 2 | 1MiB | 100 files/s | 105 MB/s |" in render_markdown(report)
    written = write_csv(report, tmp_path / "csv")
    (transfers,) = [p for p in written if p.name == "transfers.csv"]
    with transfers.open() as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == 4 and lines[1]["put_mb_per_s"] == "52.4288"
    assert [line["stored"] for line in lines] == ["6 / 6 (all sizes)", "", "12 / 12 (all sizes)",
                                                  ""]
    # on the page each count is one cell across its phase's sizes
    assert page.count(">6 / 6 (all sizes)<") == 1 and page.count(">8 / 8 (all sizes)<") == 1
    assert page.count('rowspan="2" title="counted once') == 4


def test_the_benchmarks_table_has_no_row_or_error_of_the_ids_clients(tmp_path: Path) -> None:
    """An IDS client shares its name with a catalogue flavour (python-icat, lean) but is none:
    an ids-only flavour gets no empty row in the metadata table, and the IDS's failed calls are
    no errors of the catalogue's row of the same name (they are in the Data Service table)."""
    failing = ids_entry(1)
    failing["flavour"] = "python-icat"
    # one of the two puts of 1 MiB failed
    failing["ops"]["ids/put/1MiB"] = {**op([20.0], 1), "count": 2, "errors": {"IdsFault": 1}}
    path = write_result(tmp_path, "A", URL, parts=("full-cycle", "ids"), benchmarks=[
        bench("full-cycle", "full-cycle", 1, [5.0, 5.0], "python-icat"), failing, ids_entry(1),
    ])  # fmt: skip
    config = CampaignConfig(name="c", parts=("full-cycle", "ids"), sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T1", URL),))  # fmt: skip
    campaign_path = tmp_path / "c.json"
    merged = merge([path], config)
    assert not merged.damaged
    dump_campaign(merged.document, campaign_path)
    report = build_report(load_campaign(campaign_path))
    assert [(b.flavour, b.errors) for b in report.benchmarks] == [("python-icat", 0)]
    assert {t.flavour for t in report.transfers} == {"python-icat", "lean"}


def test_an_ids_only_campaign_points_from_the_benchmarks_to_the_data_service(
    tmp_path: Path,
) -> None:
    path = write_result(tmp_path, "A", URL, parts=("ids",), benchmarks=[ids_entry(1)])
    config = CampaignConfig(name="c", parts=("ids",), sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T1", URL),))  # fmt: skip
    campaign_path = tmp_path / "c.json"
    dump_campaign(merge([path], config).document, campaign_path)
    page = render_html(build_report(load_campaign(campaign_path)))
    benchmarks = page.split('id="benchmarks"')[1].split("</section>")[0]
    assert "no run measured the catalogue's workloads" in benchmarks
    assert 'href="#transfers"' in benchmarks and "no run measured a benchmark." not in benchmarks
