"""Merging and rendering a campaign of 30 sites x 30 targets: the issue asks for under 10 s
and a page under 3 MB.

The 900 result files are synthetic but full-sized where it costs: every run has the service
checks, four workloads at two concurrency levels with real HdrHistograms, a five-step load sweep
and sampler series, so the report draws all its tables and charts. The figure is printed, not
asserted (machines differ); `tox -e bench` shows it.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from igestbench.report import build_report, render_html
from igestbench.report.charts import build_charts, render_all
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.merge import merge
from tests.campaign_helpers import REFUSED_PROBE, bench, check, sample, sweep, write_result

SITES = TARGETS = 30
UNIT_OPS = {"full-cycle": "full-cycle", "single-query": "single-query/jpql",
            "burst": "burst/create", "multi-query": "multi-query/whole/fetch"}

pytestmark = pytest.mark.benchmark(group="report")


def _entries() -> list[dict[str, Any]]:
    # encoded once and reused: encoding 7,200 histograms would dominate the setup, not the test
    return [bench(workload, op, level, [2.0 + (i * 7 % 13) / level for i in range(200)])
            for workload, op in UNIT_OPS.items() for level in (1, 2)]


@pytest.fixture(scope="module")
def result_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], CampaignConfig]:
    directory = tmp_path_factory.mktemp("campaign-30x30")
    entries = _entries()
    checks = [check(f"c{i}", "failed" if i == 3 else "passed", "timeout") for i in range(25)]
    samples = [sample(f"{w}/zeep/{n}", [20.0, 35.0, 50.0]) for w in UNIT_OPS for n in (1, 2)]
    files = []
    for s in range(SITES):
        for t in range(TARGETS):
            url = f"https://icat{t}.example:8181/ICATService/ICAT"
            if (s + t) % 11 == 0:  # some firewalls
                files.append(write_result(directory, f"SITE{s}", url, run_id=f"r{s}-{t}",
                                          status="failed", probe=REFUSED_PROBE,
                                          notes=[f"target unreachable: {url}: refused"]))
                continue
            files.append(write_result(
                directory, f"SITE{s}", url, run_id=f"r{s}-{t}", minutes=s + t,
                parts=("verify", *UNIT_OPS, "sweep"), checks=checks[: 20 + (s + t) % 6],
                benchmarks=entries, sweeps=[sweep([10, 20, 40, 80, 160], 1.0 + t / 10)],
                samples=samples))
    config = CampaignConfig(
        "bench", tuple(CampaignSite(f"SITE{s}") for s in range(SITES)),
        tuple(CampaignTarget(f"ICAT {t}", f"https://icat{t}.example:8181/ICATService/ICAT",
                             f"SITE{t}") for t in range(TARGETS)))
    return files, config


def _before_issue_14(files: list[Path], config: CampaignConfig, path: Path) -> str:
    """merge + render as it was before issue 14 (2026-11-23) where it still can be: the
    campaign file written with indent=1 (json's pure-Python encoder), and the charts drawn
    after the rest of the report was built. (Today's code against another checkout's, each in
    a fresh interpreter: tests/benchmarks/report_against.py.)"""
    dump_campaign(merge(files, config).document, path)  # to have the document to re-dump
    document = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False) + "\n",
                    encoding="utf-8")
    campaign = load_campaign(path)
    report = build_report(campaign, charts=False)
    specs = build_charts(campaign)
    drawn = tuple(replace(c, svg=d.svg, legend=d.legend, styles=d.styles)
                  for c, d in zip(specs, render_all(specs), strict=True))
    return render_html(replace(report, charts=drawn))


def test_merge_and_render_30_by_30(
    benchmark: BenchmarkFixture, capsys: pytest.CaptureFixture[str],
    result_files: tuple[list[Path], CampaignConfig], tmp_path: Path,
) -> None:
    """Today's merge + render beside the one before the change, alternating in one process (a
    busy shared machine makes figures of separate runs incomparable)."""
    files, config = result_files
    timings: dict[str, list[float]] = {"before": [], "now": []}
    parts: dict[str, float] = {}

    def merge_and_render() -> str:
        start = time.perf_counter()
        dump_campaign(merge(files, config).document, tmp_path / "campaign.json")
        merged = time.perf_counter()
        report = build_report(load_campaign(tmp_path / "campaign.json"))
        page = render_html(report)
        parts.update(merge=merged - start, report=time.perf_counter() - merged,
                     charts=len(report.charts))
        timings["now"].append(time.perf_counter() - start)
        return page

    def before() -> str:
        start = time.perf_counter()
        page = _before_issue_14(files, config, tmp_path / "before.json")
        timings["before"].append(time.perf_counter() - start)
        return page

    rounds = 1 if benchmark.disabled else 3
    old_page = before()
    page = benchmark.pedantic(merge_and_render, rounds=1, iterations=1)
    for _ in range(rounds - 1):
        before()
        merge_and_render()
    assert page.count('class="cell ') == SITES * TARGETS
    assert len(page) == len(old_page)  # the same page, however it was made
    svg = sum(len(m) for m in re.findall(r"<svg.*?</svg>", page, re.DOTALL))
    now, then = statistics.median(timings["now"]), statistics.median(timings["before"])
    with capsys.disabled():
        print(f"\n30 sites x 30 targets, merge + render (median of {rounds}, alternating): "
              f"{now:.2f} s (merge {parts['merge']:.2f} s, report {parts['report']:.2f} s, "
              f"{parts['charts']:.0f} charts) against {then:.2f} s before the change "
              f"({then / now:.2f}x; goal: under 10 s); page {len(page) / 1e6:.2f} MB, of it SVG "
              f"{svg / 1e6:.2f} MB (goal: under 3 MB; 12.2 MB before the SVG was compacted, "
              f"measured 2026-11-23); {os.cpu_count()} cores, load average "
              f"{os.getloadavg()[0]:.1f} at the end")
