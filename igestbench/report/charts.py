"""The report's charts: plain data built from the campaign, drawn as inline SVG (plot.py).

* per target, **concurrency scaling**: throughput and mean latency of each workload's unit of
  work against the number of clients, one line per site and flavour;
* per target, **load sweeps**: achieved against demanded rate (the diagonal is "keeping up"),
  latency against demanded rate with its 95 % confidence band, errors per step;
* per site, **client CPU and the machine's network per phase**: the sampler's mean per phase of
  each run, as bars, with the 90 % line above which a client counts as saturated.

Building (:func:`build_charts`) and drawing (:func:`render_all`) are apart so that the chart
data can be tested without parsing SVG.

A chart's key (which colour and dash is which site or target) is HTML beside the SVG, not
inside it: as HTML its names can be selected and searched like the rest of the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from igestbench.report.colours import CSS_DASH, page_colours
from igestbench.report.plot import chart_svg
from igestbench.report.series import Panel, history_panels, scaling_panels, sweep_panels
from igestbench.results.campaign import Campaign


@dataclass(frozen=True)
class LineStyle:
    """How the lines of one site or target are drawn: colour (``#rrggbb``) and dash."""

    label: str
    colour: str
    dash: str

    @property
    def css_dash(self) -> str:
        return CSS_DASH.get(self.dash, "solid")


@dataclass(frozen=True)
class Chart:
    #: unique in the page; also names the chart's clip paths so that charts never share one
    key: str
    kind: str
    title: str
    panels: tuple[Panel, ...]
    columns: int = 2
    svg: str = field(default="", compare=False)
    #: colour and dash of each line, in the order the lines first appear
    legend: tuple[LineStyle, ...] = field(default=(), compare=False)
    #: the CSS classes ``svg`` uses and their declarations (see plot.style_class)
    styles: tuple[tuple[str, str], ...] = field(default=(), compare=False)

    @property
    def labels(self) -> list[str]:
        return list(dict.fromkeys(s.label for p in self.panels for s in p.series))

    @property
    def line_key(self) -> tuple[LineStyle, ...]:
        """Colour and dash of each line, in the order the lines first appear."""
        seen: dict[str, LineStyle] = {}
        for panel in self.panels:
            for series in panel.series:
                seen.setdefault(series.label, LineStyle(series.label, series.colour,
                                                        series.dash))
        return tuple(seen.values())

    @property
    def layout(self) -> tuple[int, int]:
        """Rows and columns of panels."""
        columns = min(self.columns, len(self.panels))
        return -(-len(self.panels) // columns), columns


@dataclass(frozen=True)
class Drawing:
    svg: str
    legend: tuple[LineStyle, ...]
    #: the CSS classes the SVG uses and their declarations (see plot.style_class)
    styles: tuple[tuple[str, str], ...] = ()


def chart_colours(campaign: Campaign) -> dict[str, str]:
    """The page's colour of every site, then of each catalogue no site of the campaign
    operates (keyed by its name): the same in every chart (colours.py)."""
    sites = [s.name for s in campaign.sites]
    return page_colours([*sites, *(t.name for t in campaign.targets
                                   if (t.operator or t.name) not in sites)])


def build_charts(campaign: Campaign) -> list[Chart]:
    """The charts of every target and site that has something to draw."""
    colours = chart_colours(campaign)
    charts = []
    for i, target in enumerate(campaign.targets):
        runs = [r for r in campaign.runs if r.target == target.name]
        panels = scaling_panels(runs, campaign.sites, colours)
        if panels:
            # a column per measure: its rate above its latency
            charts.append(Chart(f"scaling-{i}", "scaling",
                                f"Concurrency scaling against {target.name}", panels,
                                columns=max(1, len(panels) // 2)))
        panels = sweep_panels(runs, campaign.sites, colours)
        if panels:
            charts.append(Chart(f"sweep-{i}", "sweep", f"Load sweeps against {target.name}",
                                panels, columns=3))
    for i, site in enumerate(campaign.sites):
        runs = [r for r in campaign.runs if r.site == site.name]
        panels = history_panels(runs, campaign.targets, colours)
        if panels:
            # CPU and network side by side, the phases' names once, on the left
            charts.append(Chart(f"history-{i}", "history",
                                f"Client CPU and the machine's network per phase at {site.name}",
                                panels, columns=2))
    return charts


def draw_chart(chart: Chart) -> Drawing:
    """The chart's SVG (plot.py), its key and the CSS classes the SVG uses."""
    svg, styles = chart_svg(chart)
    return Drawing(svg, chart.line_key, styles)


def render_all(charts: Sequence[Chart]) -> list[Drawing]:
    """Each chart drawn, in order."""
    return [draw_chart(chart) for chart in charts]
