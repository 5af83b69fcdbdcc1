"""The report's charts: their data, their key, and figures reused between charts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from igestbench.report import build_report, render_html
from igestbench.report.charts import Chart, ChartArtist, build_charts, chart_colours
from igestbench.report.colours import PALETTE
from igestbench.report.series import Panel, Series
from tests.test_report import build_campaign


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
    assert cpu.categories == ("full-cycle/zeep/1",) and cpu.series[0].y == (20.0,)
    assert cpu.hline == 90.0


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


def test_a_reused_figure_draws_what_a_new_one_draws() -> None:
    # one kind and layout (2 x 2), so one figure, but every feature a panel can switch on,
    # in turns: whatever one chart left set would show in the next one's SVG
    charts = [
        Chart("a", "k", "A", (_panel("categories", categories=("phase/one", "two", "3", "4")),
                              _panel("reference line", hline=5.0, hline_label="limit"),
                              _panel("diagonal", diagonal=True))),
        Chart("b", "k", "B", (_panel("at the data", ticks_at_data=True), _panel("nothing", True),
                              _panel("counts", counts=True), _panel("more", hline=1.0,
                                                                   categories=("a", "b")))),
        Chart("c", "k", "C", (_panel("plain"), _panel("at the data", ticks_at_data=True),
                              _panel("categories", categories=("a", "b", "c", "d")))),
        # bars (the resource charts) in the same figure: ticks, grid and labels put back
        Chart("d", "k", "D", (_bars(), _bars(hline=90.0, hline_label="90 %"), _panel("plain"),
                              _panel("diagonal", diagonal=True))),
    ]
    artist = ChartArtist()
    for chart in [*charts, *charts]:
        reused, fresh = artist.draw(chart), ChartArtist().draw(chart)
        assert reused == fresh, chart.key
    assert len(artist._figures) == 2  # the bars need their names' margin: a figure of their own


def test_the_svg_is_inline_and_escapes_names() -> None:
    drawing = ChartArtist().draw(Chart("x", "k", "X", (_panel("plain"),)))
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
