"""The report's charts: their data, their key, and the SVG written for them (plot.py, axes.py)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from igestbench.report import axes, build_report, render_html
from igestbench.report.axes import Axis
from igestbench.report.charts import Chart, build_charts, chart_colours, draw_chart
from igestbench.report.colours import PALETTE
from igestbench.report.series import Panel, Series, history_panels
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.machine_net import phase_machine_net
from igestbench.results.merge import merge
from tests.campaign_helpers import bench, sample, write_result
from tests.test_report import U1, U2, build_campaign


def test_the_charts_hold_the_figures_of_the_files(tmp_path: Path) -> None:
    charts = {c.key: c for c in build_charts(build_campaign(tmp_path))}
    # only site A measured anything, against T1 (target 0); its history is site 0's
    assert set(charts) == {"scaling-0", "sweep-0", "history-0"}
    throughput, latency = charts["scaling-0"].panels
    (line,) = throughput.series
    assert line.label == "A · SOAP zeep" and line.x == (1.0, 2.0)
    # bench(): throughput = 1000 x clients / mean latency; means 12 ms and 14 ms
    assert line.y == pytest.approx((1000 / 12, 2000 / 14), rel=1e-5)
    assert latency.series[0].y == pytest.approx((12.0, 14.0))
    achieved, band, errors = charts["sweep-0"].panels
    assert achieved.diagonal and band.series[0].low == pytest.approx((1.8, 3.8))
    assert errors.series[0].y == (0.0, 1.0)
    cpu, _network = charts["history-0"].panels
    # the client's own CPU (10 and 30 % of its core), not the machine's (70 and 90 %)
    assert cpu.categories == ("full-cycle/zeep/1",) and cpu.series[0].y == (20.0,)
    assert cpu.hline == 90.0


def test_the_network_chart_draws_the_machines_traffic_with_a_loopback_byte_once(
        tmp_path: Path) -> None:
    # T1's run: 10 and 30 Mbit/s in and out of every interface, 10 of each over loopback —
    # the machine's traffic is 10 and 50 Mbit/s (a loopback byte once), 30 on the mean, not
    # the 40 that in + out gave; T2's file was written before loopback was counted apart
    files = [write_result(tmp_path, "A", url, parts=("full-cycle",),
                          benchmarks=[bench("full-cycle", "full-cycle", 1, [10.0, 12.0])],
                          samples=[sample("full-cycle/zeep/1", [50.0, 50.0], client=[10.0, 10.0],
                                          net=net)], run_id=f"r{i}")
             for i, (url, net) in enumerate(
                 ((U1, ([10.0, 30.0], [10.0, 30.0], [10.0, 10.0])),
                  (U2, ([10.0, 30.0], [10.0, 30.0], None))))]
    config = CampaignConfig(name="n", parts=("full-cycle",), sites=(CampaignSite("A"),),
                            targets=(CampaignTarget("T1", U1, "A"), CampaignTarget("T2", U2, "A")))
    dump_campaign(merge(files, config).document, tmp_path / "n.json")
    campaign = load_campaign(tmp_path / "n.json")
    (chart,) = [c for c in build_charts(campaign) if c.kind == "history"]
    assert chart.title == "Client CPU and the machine's network per phase at A"
    _cpu, network = chart.panels
    assert "machine" in network.title and "not the clients'" in network.title
    assert "all interfaces" in network.xlabel and "loopback byte once" in network.xlabel
    assert [(s.label, s.y) for s in network.series] == [("T1", (30.0,)), ("T2", (None,))]
    # a site whose files all came before: the panel says why it is empty
    old = history_panels([r for r in campaign.runs if r.target == "T2"], campaign.targets)
    assert old[1].empty_note == "no data: written before loopback was counted apart"
    assert 'no data: written before loopback was counted apart' in draw_chart(
        Chart("history-9", "history", "old", old, columns=2)).svg
    page = render_html(build_report(campaign))
    assert "Network per phase: the machine&#39;s traffic, not the clients&#39; own" in page \
        or "Network per phase: the machine's traffic, not the clients' own" in page
    assert "client network per phase" not in page


def test_the_machines_traffic_of_a_phase_is_weighted_by_the_time_each_sample_covers() -> None:
    entry = {"net_in_mbit_s": [10.0, 30.0], "net_out_mbit_s": [10.0, 30.0],
             "net_loopback_mbit_s": [10.0, 10.0], "dt_s": [1.0, 3.0]}
    assert phase_machine_net(entry) == pytest.approx((10.0 * 1 + 50.0 * 3) / 4)
    # before loopback was counted apart, or of another length: not a figure to draw
    assert phase_machine_net({**entry, "net_loopback_mbit_s": None}) is None
    assert phase_machine_net({**entry, "net_loopback_mbit_s": [1.0]}) is None


def test_one_colour_per_site_across_the_page(tmp_path: Path) -> None:
    campaign = build_campaign(tmp_path)
    colours = chart_colours(campaign)
    assert [colours[s] for s in ("A", "B", "C")] == list(PALETTE[:3])
    assert len(set(PALETTE)) == len(PALETTE) == 40
    charts = build_charts(campaign)
    # site A's lines in every chart, and the bars of T1 (operated by A), have A's colour
    for chart in charts:
        for entry in chart.line_key:
            assert entry.colour == colours["A"], (chart.key, entry)


def _panel(title: str, empty: bool = False, **features: object) -> Panel:
    series = (Series("<b>site</b> · zeep", (1.0, 2.0, 4.0), (3.0, None, 9.5),
                     low=(2.0, None, 8.0), high=(4.0, None, 11.0)),
              Series("P & Q", (1.0, 2.0, 4.0), (1.0, 2.0, 2.5)))
    if empty:
        series = (Series("P & Q", (1.0, 2.0), (None, None)),)
    return Panel(title, "x", "y", series, **features)  # type: ignore[arg-type]


def _bars(**features: object) -> Panel:
    series = (Series("T1", (0.0, 1.0, 2.0, 3.0), (50.0, None, 95.0, 10.0), colour="#1f77b4"),
              Series("T2", (0.0, 1.0, 2.0, 3.0), (20.0, 30.0, None, 5.0), colour="#ff7f0e"))
    return Panel("bars", "CPU %", "", series, bars=True,  # type: ignore[arg-type]
                 categories=("idle", "full-cycle/zeep/1", "burst/zeep/2", "sweep/lean/40"),
                 **features)


_SVG = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg).iter(f"{_SVG}text")]


def test_every_feature_of_a_panel_is_drawn_as_well_formed_svg() -> None:
    # every feature a panel can switch on, lines and bars in one grid
    charts = [
        Chart("a", "k", "A", (_panel("categories", categories=("phase/one", "two", "3", "4")),
                              _panel("reference line", hline=5.0, hline_label="limit"),
                              _panel("diagonal", diagonal=True))),
        Chart("b", "k", "B", (_panel("at the data", ticks_at_data=True), _panel("nothing", True),
                              _panel("counts", counts=True), _panel("log", log=True))),
        Chart("d", "k", "D", (_bars(), _bars(hline=90.0, hline_label="90 %"), _panel("plain"),
                              _panel("diagonal", diagonal=True))),
    ]
    a, b, d = (draw_chart(chart) for chart in charts)
    for drawing in (a, b, d):
        ET.fromstring(drawing.svg)  # well formed: every name escaped
    texts = _texts(a.svg)
    assert {"categories", "reference line", "diagonal", "limit", "phase/one", "x", "y"} <= set(
        texts)
    assert 'class="' + axes_class("diagonal") + '"' in a.svg
    texts = _texts(b.svg)
    assert "no data" in texts and "1" in texts and "4" in texts  # ticks at the data: 1, 2, 4
    # the bars' names once, beside the first column; the line panels' own ticks after them
    texts = _texts(d.svg)
    assert texts.count("full-cycle/zeep/1") == 1 and "90 % " in texts
    # every clip path is the chart's own: two charts on one page never share an id
    ids = re.findall(r'<clipPath id="([^"]+)"', a.svg + b.svg + d.svg)
    assert len(ids) == len(set(ids)) > 0


def axes_class(role: str) -> str:
    from igestbench.report.plot import _LOOKS, style_class

    return style_class(_LOOKS[role])


def test_a_point_sits_on_the_grid_line_of_its_value() -> None:
    series = (Series("s", (1.0, 2.0), (200.0, 400.0), colour="#1f77b4"),)
    svg = draw_chart(Chart("p", "k", "P", (Panel("p", "clients", "y", series,
                                                 ticks_at_data=True),))).svg
    grid = re.search(r'<path d="([^"]*)" class="' + axes_class("grid"), svg)
    assert grid is not None
    levels = [float(y) for y in re.findall(r"M[\d.]+ ([\d.]+)H", grid[1])]
    line = re.search(r'<path d="M([^"]*)" stroke="#1f77b4"', svg)
    assert line is not None
    ys = [float(point.split()[1]) for point in line[1].split("L")]
    # the y ticks are 0, 200, 400 (at most four intervals of a 1-2-2.5-5 step)
    assert "200" in _texts(svg) and "400" in _texts(svg) and len(levels) == 3
    assert ys[0] == pytest.approx(levels[1], abs=0.1) and ys[1] == pytest.approx(levels[2],
                                                                                  abs=0.1)


def test_ticks_and_their_labels_read_as_matplotlibs_did() -> None:
    # the axes of the 30 x 30 campaign's charts, as matplotlib's locator and formatter put them
    assert axes.nice_ticks(axes.linear([0.0, 400.0])) == [0.0, 200.0, 400.0]
    latency = axes.linear([0.0, 7.9])
    assert axes.labels(axes.nice_ticks(latency)) == ["0.0", "2.5", "5.0", "7.5"]
    assert axes.nice_ticks(Axis(0.0, 4.2), integer=True) == [0.0, 2.0, 4.0]
    assert axes.nice_ticks(Axis(0.0, 1.0), integer=True) == [0.0, 1.0]
    assert axes.labels([0.0, 0.5, 1.0, 1.5]) == ["0.0", "0.5", "1.0", "1.5"]
    assert axes.labels([-0.0, 25.0, 50.0]) == ["0", "25", "50"]
    assert axes.nice_ticks(Axis(0.0, 0.3)) == [0.0, 0.1, 0.2, 0.3]  # no float noise
    log = axes.logarithmic([100.0, 10_000.0])
    assert axes.log_ticks(log, 0.05) == [100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0,
                                         10_000.0]
    assert axes.log_ticks(axes.logarithmic([1.0, 1e6]), 0.05) == [1.0, 10.0, 100.0, 1e3, 1e4,
                                                                  1e5, 1e6]
    assert axes.grouped(10_000.0) == "10,000" and axes.grouped(0.2) == "0.2"


def test_the_svg_is_inline_and_escapes_names() -> None:
    drawing = draw_chart(Chart("x", "k", "X", (_panel("plain"),)))
    assert drawing.svg.startswith("<svg") and "<metadata>" not in drawing.svg
    assert "<b>" not in drawing.svg  # only labels inside the SVG: titles, axes, ticks
    assert [e.label for e in drawing.legend] == ["<b>site</b> · zeep", "P & Q"]


def test_the_key_is_html_beside_each_chart(tmp_path: Path) -> None:
    report = build_report(build_campaign(tmp_path, sites=("<i>A</i>", "B", "C")))
    page = render_html(report)
    keys = re.findall(r'<ul class="key">(.*?)</ul>', page, re.DOTALL)
    assert len(keys) == len(report.charts) == 3
    assert "&lt;i&gt;A&lt;/i&gt; · SOAP zeep" in keys[0]
    assert re.search(r'style="border-top: 3px solid #[0-9a-f]{6}"', keys[0])
    assert "<i>A</i>" not in page
