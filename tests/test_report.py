"""sv7 report: matrix arithmetic, footnotes, escaping, exports, trend, and the page in Chromium."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from igestbench.cli import main
from igestbench.report import build_report, render_html, render_markdown, write_csv
from igestbench.report.footnotes import letters
from igestbench.results.campaign import Campaign, dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.merge import merge
from tests.campaign_helpers import (
    REFUSED_PROBE,
    SELF_SIGNED_PROBE,
    bench,
    check,
    sample,
    sweep,
    write_result,
)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "campaign" / "campaign.json"
U1 = "https://t1.example:8181/ICATService/ICAT"
U2 = "https://t2.example/ICATService/ICAT"
UNREACHABLE = "target unreachable: {}: connection refused: [Errno 111] Connection refused"


def build_campaign(tmp_path: Path, sites: tuple[str, str, str] = ("A", "B", "C"),
                   name: str = "c") -> Campaign:
    """3 sites x 2 targets; the hand-computed expectations are in the tests below."""
    a, b, c = sites
    files = [
        write_result(tmp_path, a, U1, parts=("verify", "full-cycle"),
                     checks=[check("x"), check("y"), check("z")],
                     benchmarks=[bench("full-cycle", "full-cycle", 1, [10.0, 12.0, 14.0]),
                                 bench("full-cycle", "full-cycle", 2, [11.0, 13.0, 18.0])],
                     sweeps=[sweep([10, 20], 2.0)],
                     samples=[sample("full-cycle/zeep/1", [70, 90], client=[10, 30])]),
        write_result(tmp_path, a, U2, parts=("verify", "full-cycle"),
                     checks=[check("x"), check("y"), check("login", "failed", "auth-refused")]),
        write_result(tmp_path, b, U1, status="failed", probe=REFUSED_PROBE,
                     notes=[UNREACHABLE.format(U1)]),
        write_result(tmp_path, b, U2, checks=[check("x"), check("y"), check("z"),
                                              check("w", "skipped")]),
        write_result(tmp_path, c, U1, status="failed", probe=REFUSED_PROBE,
                     notes=[UNREACHABLE.format(U1)]),
    ]
    config = CampaignConfig(
        name=name, parts=("verify", "full-cycle"),
        sites=tuple(CampaignSite(s) for s in sites),
        targets=(CampaignTarget("T1", U1, a), CampaignTarget("T2", U2, b)))
    path = tmp_path / f"{name}.json"
    dump_campaign(merge(files, config).document, path)
    return load_campaign(path)


def test_participation_arithmetic(tmp_path: Path) -> None:
    p = build_report(build_campaign(tmp_path), charts=False).participation
    assert [(r.site, r.cells, r.tally.count, r.tally.percent) for r in p.rows] == [
        ("A", (2, 2), 2, 100.0), ("B", (2, 0), 1, 50.0), ("C", (1, 0), 1, 50.0)]
    assert [(t.count, t.percent) for t in p.columns] == [(3, 100.0),
                                                         (1, pytest.approx(100 / 3))]
    assert (p.total.count, p.total.expected) == (4, 6)


def test_success_arithmetic(tmp_path: Path) -> None:
    s = build_report(build_campaign(tmp_path), charts=False).success
    cells = [[(c.state, c.text) for c in row.cells] for row in s.rows]
    assert cells == [[("ok", "3/3"), ("partial", "2/3")],
                     [("failed", "✗"), ("ok", "3/3")],
                     [("failed", "✗"), ("not-run", "\u2013")]]
    rows = [(r.summary.count, r.summary.ok, r.summary.fail, r.summary.success,
             r.summary.coverage) for r in s.rows]
    assert rows == [(2, 1, 1, 50.0, 100.0), (2, 1, 1, 50.0, 100.0), (1, 0, 1, 0.0, 50.0)]
    columns = [(c.count, c.ok, c.fail, c.success, c.coverage) for c in s.columns]
    assert columns == [(3, 1, 2, pytest.approx(100 / 3), 100.0),
                       (2, 1, 1, 50.0, pytest.approx(200 / 3))]
    t = s.total
    assert (t.count, t.ok, t.fail, t.success, t.coverage) == (5, 2, 3, 40.0,
                                                            pytest.approx(500 / 6))


def test_footnotes_come_from_the_diagnoses(tmp_path: Path) -> None:
    report = build_report(build_campaign(tmp_path), charts=False)
    notes = [(f.letter, f.text, f.sites) for f in report.footnotes]
    assert notes == [
        ("A", "the firewall at A refused connections from outside its site (B, C)", ("B", "C")),
        ("B", "T2 refused logins of sites A (user name or password wrong)", ("A",)),
    ]
    assert report.footnotes[0].hint is not None and "port" in report.footnotes[0].hint
    assert report.marks == {("B", "T1"): ("A",), ("C", "T1"): ("A",), ("A", "T2"): ("B",)}


def test_a_self_signed_certificate_footnote(tmp_path: Path) -> None:
    url = "https://hzb.example:8443/ICATService/ICAT"
    files = [write_result(tmp_path, site, url, status="failed", probe=SELF_SIGNED_PROBE,
                          notes=[f"target unreachable: {url}: TLS failed: certificate verify "
                                 "failed: self-signed certificate"])
             for site in ("P", "Q", "R")]
    files.append(write_result(tmp_path, "HZB", url, checks=[check("x")]))
    config = CampaignConfig("c", tuple(CampaignSite(s) for s in ("HZB", "P", "Q", "R")),
                            (CampaignTarget("HZB ICAT", url, "HZB"),))
    dump_campaign(merge(files, config).document, tmp_path / "c.json")
    (note,) = build_report(load_campaign(tmp_path / "c.json"), charts=False).footnotes
    assert note.text == ("HZB ICAT presents a self-signed certificate on port 8443; "
                         "sites P, Q, R could not connect")
    assert note.cause == "tls-self-signed"


def test_benchmark_figures_pool_the_histograms(tmp_path: Path) -> None:
    (row,) = build_report(build_campaign(tmp_path), charts=False).benchmarks
    assert (row.site, row.target, row.flavour, row.clients) == ("A", "T1", "zeep", 1)
    assert row.full_cycle_mean_ms == pytest.approx(12.0, rel=1e-3)  # of the 1-client level
    assert row.full_cycle_sd_ms == pytest.approx(2.0, rel=1e-2)
    assert row.query_p50_ms is None and row.errors == 0


def test_footnote_letters_go_on_past_z() -> None:
    gen = letters()
    names = [next(gen) for _ in range(28)]
    assert names[:3] == ["A", "B", "C"] and names[25:] == ["Z", "AA", "AB"]


HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "=cmd|' /C calc'!A0")


def test_every_partner_string_is_escaped(tmp_path: Path) -> None:
    report = build_report(build_campaign(tmp_path, sites=HOSTILE))
    page = render_html(report)
    assert report.charts  # the legends carry the names too
    for raw in ("<script>alert(1)</script>", "<img src=x", "onerror=alert(2)>"):
        assert raw not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page.lower()  # and the page itself runs no script at all
    markdown = render_markdown(report)
    assert "<script>" not in markdown and "<img" not in markdown
    assert "=cmd\\|" in markdown  # a "|" cannot end a Markdown table cell
    written = write_csv(report, tmp_path / "csv")
    text = (tmp_path / "csv" / "participation.csv").read_text(encoding="utf-8")
    rows = list(csv.reader(text.splitlines()))
    assert rows[3][0] == "'=cmd|' /C calc'!A0"  # a spreadsheet must not run it
    assert {p.name for p in written} >= {"participation.csv", "success.csv", "footnotes.csv"}


def test_the_page_is_self_contained(tmp_path: Path) -> None:
    page = render_html(build_report(build_campaign(tmp_path)))
    for needle in ("http://", "https://"):
        # the only URLs are the targets' (shown as text) and the SVG namespace
        others = [line for line in page.splitlines() if needle in line
                  and "t1.example" not in line and "t2.example" not in line
                  and "www.w3.org" not in line]
        assert others == []
    assert "<link" not in page and " src=" not in page
    assert page.count("<svg") == 3  # T1's scaling and sweep, A's client history
    assert "<style>" in page


def test_trend_against_a_previous_campaign(tmp_path: Path) -> None:
    before = build_campaign(tmp_path / "before", name="before")
    now_files = [write_result(tmp_path / "now", "B", U1, checks=[check("x")]),
                 write_result(tmp_path / "now", "A", U1, checks=[check("x", "failed", "timeout")])]
    config = CampaignConfig("now", (CampaignSite("A"), CampaignSite("B"), CampaignSite("C")),
                            (CampaignTarget("T1", U1, "A"), CampaignTarget("T2", U2, "B")),
                            parts=("verify",))
    dump_campaign(merge(now_files, config).document, tmp_path / "now.json")
    trend = build_report(load_campaign(tmp_path / "now.json"), before, charts=False).trend
    assert trend is not None and trend.previous == "before (2026-11-21)"  # with its dates
    changes = {(c.site, c.target): c.direction for c in trend.changes}
    assert changes == {("A", "T1"): "worse", ("A", "T2"): "worse", ("B", "T1"): "better",
                       ("B", "T2"): "worse", ("C", "T1"): "worse"}
    assert (trend.success[0].ok, trend.success[1].ok) == (2, 1)


def test_the_command_writes_html_markdown_and_csv(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    out = tmp_path / "reports" / "nov.html"
    assert main(["report", str(campaign.path), "-o", str(out), "--markdown",
                 "--csv", str(tmp_path / "csv"), "--previous", str(campaign.path)]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert "## Success matrix" in out.with_suffix(".md").read_text(encoding="utf-8")
    text = (tmp_path / "csv" / "success-summary.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    assert rows[-1] == {"kind": "total", "name": "", "count": "5", "ok": "2", "fail": "3",
                        "success_percent": "40.0", "coverage_percent": str(500 / 6)}


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get "
                    "install chromium); CI installs it")
def test_the_example_campaign_in_headless_chromium(tmp_path: Path) -> None:
    from PIL import Image

    assert CHROMIUM is not None
    html = tmp_path / "example.html"
    html.write_text(render_html(build_report(load_campaign(EXAMPLE))), encoding="utf-8")
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--no-first-run",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*flags, "--dump-dom", html.as_uri()], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    for needle in ('class="matrix participation"', 'class="matrix success"',
                   'class="cell ok"', 'class="cell failed"', 'class="footnotes"',
                   'class="benchmarks"', 'class="chart scaling"', 'class="chart sweep"',
                   'class="chart history"', 'class="key"', 'class="swatch"',
                   'class="interfaces"'):
        assert needle in dom, needle
    assert dom.count("<svg") >= 5
    # the states a coordinator must see without hovering: a run that stopped on a fault shown
    # as failed (DESY ICAT), panels with nothing in them saying so instead of a 0-0.04 axis,
    # local connections framed and summed apart. (No client-bound mark: the example's files
    # flagged a busy machine, which the registry does not take for a saturated client.)
    assert '<span class="legend client-bound">' not in dom
    for needle in ('<td class="failed-run">failed</td>', 'class="failed-row"',
                   "stopped</span> (", 'class="cell ok local"', 'class="local-vs-remote"',
                   'class="scale"', 'id="summary"', 'class="summary"',
                   '<details class="charts', 'class="table-legend"'):
        assert needle in dom, needle
    # the summary opens the page, before the matrices
    assert dom.index('id="summary"') < dom.index('id="participation"')
    assert not re.search(r">0\.0[1-9]<", dom)  # no tick of a made-up axis
    png = tmp_path / "page.png"
    subprocess.run([*flags, f"--screenshot={png}", "--window-size=1400,3000", html.as_uri()],
                   capture_output=True, timeout=120, check=True)
    with Image.open(png) as image:
        colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # not a blank page
    # the success matrix's state colours were painted (ok green, failed red)
    painted = {rgb for _, rgb in colours}
    assert (191, 229, 191) in painted and (244, 184, 180) in painted
    assert (59, 111, 182) in painted  # the frame of the local connections


def test_pooled_percentiles_match_the_pooled_calls() -> None:
    from igestbench.measure.stats import LatencyStats
    from igestbench.results.figures import entry_figures
    from igestbench.results.pooling import pool

    calls = [1.0 + (i * 37 % 101) / 7 for i in range(500)]
    entry = bench("single-query", "single-query/jpql", 1, calls)
    entry["ops"].update(bench("single-query", "single-query/get", 1,
                              [2 * c for c in calls])["ops"])
    pooled = pool([op["histogram"] for op in entry["ops"].values()])
    figures = {r.metric: r for r in entry_figures(entry)}
    exact = LatencyStats.of(round(c * 1e6) for c in calls + [2 * c for c in calls])
    assert pooled is not None
    for p, metric in ((50.0, "p50"), (99.0, "p99")):  # within HdrHistogram's 3 digits
        assert pooled.percentile_ms(p) == pytest.approx(exact.percentile_ms(p), rel=2e-3)
        assert figures[metric].value == pytest.approx(pooled.percentile_ms(p), rel=1e-5)
    assert figures["mean"].value == pytest.approx(exact.mean_ms, rel=1e-5)
    assert pooled.stdev_ms(exact.mean_ms) == pytest.approx(exact.stdev_ms, rel=1e-3)


def test_network_checks_alone_are_no_connection(tmp_path: Path) -> None:
    """What sv7 run writes when a firewall refuses: DNS resolved, TCP refused, the rest failed."""
    url = "https://isis.example:8182/ICATService/ICAT"

    def refused_run(site: str) -> Path:
        dns = {**check("dns"), "part": "connectivity"}
        tcp = {**check("tcp", "failed", "refused"), "part": "connectivity"}
        soap = {**check("wsdl", "failed", "refused"), "part": "soap"}
        return write_result(tmp_path, site, url, status="failed", checks=[dns, tcp, soap],
                            notes=[UNREACHABLE.format(url)])

    files = [refused_run("P"), refused_run("Q"),
             write_result(tmp_path, "ISIS", url, checks=[check("x"), check("y")])]
    config = CampaignConfig("c", tuple(CampaignSite(s) for s in ("ISIS", "P", "Q")),
                            (CampaignTarget("ISIS ICAT", url, "ISIS"),))
    dump_campaign(merge(files, config).document, tmp_path / "c.json")
    report = build_report(load_campaign(tmp_path / "c.json"), charts=False)
    cells = {row.site: (row.cells[0].state, row.cells[0].text) for row in report.success.rows}
    assert cells == {"ISIS": ("ok", "2/2"), "P": ("failed", "✗"), "Q": ("failed", "✗")}
    (note,) = report.footnotes
    assert note.text == "the firewall at ISIS refused connections from outside its site (P, Q)"


def test_the_markdown_page_is_text_and_a_partner_s_name_cannot_become_html(
        tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path, sites=("O'Neill's lab", "<img src=x onerror=alert(1)>",
                                               "C | D"))
    markdown = render_markdown(build_report(campaign, charts=False))
    assert "| O'Neill's lab |" in markdown  # an apostrophe stays one, not HTML's &#39;
    assert "<img" not in markdown and "&lt;img src=x onerror=alert(1)&gt;" in markdown
    assert "| C \\| D |" in markdown  # a "|" does not end the table's cell
