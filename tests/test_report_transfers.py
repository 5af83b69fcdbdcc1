"""The report's Data Service table: the ids part's files/s and MB/s per size, from the file only,
in the page, the Markdown and transfers.csv; the SOAP/REST tables and charts leave it out."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from igestbench.report import build_report, render_html, render_markdown, write_csv
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.merge import merge
from igestbench.run.benchmarks import _merge_checks
from igestbench.workloads.ids_ingest import transfer_figures
from tests.campaign_helpers import bench, write_result

URL = "https://t1.example/ICATService/ICAT"
KiB, MiB = 1024, 1024 * 1024


def ids_entry(clients: int) -> dict[str, Any]:
    """An ``ids`` benchmark entry as the runner writes it from its workers' checks."""
    per_worker = {
        "expected": 4, "stored": 4, "downloaded": 2, "identical": 2,
        "file_sizes": {"1KiB": KiB, "1MiB": MiB},
        "transfers": {
            "ids/put/1KiB": {"files": 2, "bytes": 2 * KiB, "ns": 20_000_000},
            "ids/put/1MiB": {"files": 2, "bytes": 2 * MiB, "ns": 40_000_000},
            "ids/getData/1KiB": {"files": 1, "bytes": KiB, "ns": 5_000_000},
            "ids/getData/1MiB": {"files": 1, "bytes": MiB, "ns": 10_000_000},
        },
    }  # fmt: skip
    checks = _merge_checks([per_worker] * clients)
    entry = bench("ids", "ids/put/1MiB", clients, [20.0, 20.0], "lean")
    return {**entry, "interface": "ids", "checks": checks,
            "transfers": transfer_figures(checks["transfers"], clients)}


def test_figures_are_over_the_time_in_the_calls_with_every_client_counted() -> None:
    one, two = ids_entry(1)["transfers"], ids_entry(2)["transfers"]
    # one client: 2 files of 1 MiB in 40 ms → 50 files/s, 52.4 MB/s
    assert one["ids/put/1MiB"] == {"files": 2, "bytes": 2 * MiB, "seconds": 0.04,
                                   "files_per_s": 50.0, "mb_per_s": 52.429}  # fmt: skip
    # two clients, each the same: twice the files over twice the time, two in flight
    assert two["ids/put/1MiB"]["files"] == 4 and two["ids/put/1MiB"]["files_per_s"] == 100.0


def test_the_report_shows_the_data_service_table(tmp_path: Path) -> None:
    path = write_result(tmp_path, "A", URL, parts=("full-cycle", "ids"),
                        benchmarks=[bench("full-cycle", "full-cycle", 1, [5.0, 5.0]),
                                    ids_entry(1), ids_entry(2)])  # fmt: skip
    config = CampaignConfig(name="c", parts=("full-cycle", "ids"), sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T1", URL),))  # fmt: skip
    campaign_path = tmp_path / "c.json"
    dump_campaign(merge([path], config).document, campaign_path)
    report = build_report(load_campaign(campaign_path))
    rows = [(t.flavour, t.clients, t.size, t.put_files_per_s, t.put_mb_per_s)
            for t in report.transfers]  # fmt: skip
    assert rows == [("lean", 1, "1KiB", 100.0, 0.102), ("lean", 1, "1MiB", 50.0, 52.429),
                    ("lean", 2, "1KiB", 200.0, 0.205), ("lean", 2, "1MiB", 100.0, 104.858)]
    assert report.transfers[0].stored == "4 / 4" and report.transfers[3].identical == "4 / 4"
    assert report.interfaces == ()  # the IDS is no column of the SOAP/REST tables
    page = render_html(report)
    assert 'id="transfers"' in page and "52.4" in page and 'href="#transfers"' in page
    assert "| lean | 2 | 1MiB | 100.0 | 104.9 |" in render_markdown(report)
    written = write_csv(report, tmp_path / "csv")
    (transfers,) = [p for p in written if p.name == "transfers.csv"]
    with transfers.open() as handle:
        lines = list(csv.DictReader(handle))
    assert len(lines) == 4 and lines[1]["put_mb_per_s"] == "52.429"
