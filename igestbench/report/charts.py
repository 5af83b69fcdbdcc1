"""The report's charts: plain data built from the campaign, drawn as inline SVG by matplotlib.

* per target, **concurrency scaling**: throughput and mean latency of each workload's unit of
  work against the number of clients, one line per site and flavour;
* per target, **load sweeps**: achieved against demanded rate (the diagonal is "keeping up"),
  latency against demanded rate with its 95 % confidence band, errors per step;
* per site, **client CPU and network per phase**: the sampler's mean per phase of each run, one
  line per target, with the 90 % line above which a client counts as saturated.

Building (:func:`build_charts`) and drawing (:func:`render_all`) are apart so that the chart
data can be tested without parsing SVG, and so that drawing — most of a large report's time —
can run in worker processes. The SVG text is matplotlib's; every label in it is XML-escaped by
matplotlib, and math parsing is off, so a partner's "$x$" stays text.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

from igestbench.report.series import Panel, history_panels, scaling_panels, sweep_panels
from igestbench.results.campaign import Campaign

_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
#: Below this many charts, starting worker processes costs more than it saves.
PARALLEL_FROM = 12
_PANEL_W, _PANEL_H = 4.4, 2.5  # inches
_RC: dict[str, Any] = {
    "svg.fonttype": "none",  # text as <text>: searchable, smaller, no glyph paths
    "text.parse_math": False,  # "$" in a site name is a dollar sign, not TeX
    # a fixed title height: left to itself matplotlib places every title by measuring the
    # bounding boxes of the tick labels, 40 % of the drawing time of a chart
    "axes.titley": 1.0,
    "font.size": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
}


@dataclass(frozen=True)
class Chart:
    #: unique in the page; also salts matplotlib's SVG ids so that charts never share one
    key: str
    kind: str
    title: str
    panels: tuple[Panel, ...]
    columns: int = 2
    svg: str = field(default="", compare=False)


def build_charts(campaign: Campaign) -> list[Chart]:
    """The charts of every target and site that has something to draw."""
    charts = []
    for i, target in enumerate(campaign.targets):
        runs = [r for r in campaign.runs if r.target == target.name]
        panels = scaling_panels(runs, campaign.sites)
        if panels:
            charts.append(Chart(f"scaling-{i}", "scaling",
                                f"Concurrency scaling against {target.name}", panels))
        panels = sweep_panels(runs, campaign.sites)
        if panels:
            charts.append(Chart(f"sweep-{i}", "sweep", f"Load sweeps against {target.name}",
                                panels, columns=3))
    for i, site in enumerate(campaign.sites):
        runs = [r for r in campaign.runs if r.site == site.name]
        panels = history_panels(runs, campaign.targets)
        if panels:
            charts.append(Chart(f"history-{i}", "history",
                                f"Client CPU and network per phase at {site.name}", panels))
    return charts


def render_all(charts: Sequence[Chart], workers: int | None = None) -> list[str]:
    """The SVG of each chart, in order; in worker processes when there are many."""
    workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
    if workers < 2 or len(charts) < PARALLEL_FROM:
        return [render_svg(chart) for chart in charts]
    # spawn, not fork: a fork of a process with threads (a test runner's, a server's) may hang
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        return list(pool.map(render_svg, charts, chunksize=max(1, len(charts) // workers // 2)))


def render_svg(chart: Chart) -> str:
    """One chart as an ``<svg>`` element (no XML prolog: it goes inside HTML)."""
    import matplotlib

    matplotlib.use("svg")  # no display, no Agg rasteriser needed
    from matplotlib.figure import Figure

    with matplotlib.rc_context({**_RC, "svg.hashsalt": chart.key}):  # type: ignore[dict-item]
        columns = min(chart.columns, len(chart.panels))
        rows = -(-len(chart.panels) // columns)
        labels = list(dict.fromkeys(s.label for p in chart.panels for s in p.series))
        legend_rows = -(-len(labels) // 4)
        height = rows * _PANEL_H + 0.25 * legend_rows + 0.5
        fig = Figure(figsize=(columns * _PANEL_W, height))
        axes = fig.subplots(rows, columns, squeeze=False).flat
        palette: Any = matplotlib.colormaps["tab10" if len(labels) <= 10 else "tab20"]
        colours = palette.colors  # a ListedColormap: its colours in order
        colour = {label: colours[i % len(colours)] for i, label in enumerate(labels)}
        for ax, panel in zip(axes, chart.panels, strict=False):
            _draw(ax, panel, colour)
        for ax in list(axes)[len(chart.panels):]:
            ax.set_visible(False)
        handles = [matplotlib.lines.Line2D([], [], color=colour[label], marker="o", ms=3,
                                           label=label) for label in labels]
        fig.legend(handles=handles, loc="lower center", ncol=min(4, len(labels)) or 1,
                   frameon=False, fontsize=7)
        bottom = (0.25 * legend_rows + 0.45) / height
        fig.subplots_adjust(left=0.08, right=0.98, top=1 - 0.35 / height, bottom=bottom,
                            hspace=0.55, wspace=0.28)
        out = io.StringIO()
        fig.savefig(out, format="svg", metadata={"Date": None, "Creator": "igestbench"})
    text = out.getvalue()
    # the RDF metadata block only names its vocabularies (purl.org …): no use inside a page
    return _METADATA.sub("", text[text.index("<svg"):], count=1)


def _draw(ax: Any, panel: Panel, colour: dict[str, Any]) -> None:
    # one collection per kind of mark, not one artist per series: a 30-site campaign draws
    # hundreds of lines, and matplotlib's cost is per artist far more than per point
    from matplotlib.collections import LineCollection, PolyCollection

    lines, colours, points, point_colours, bands, band_colours = [], [], [], [], [], []
    for series in panel.series:
        xy = [(x, y) for x, y in zip(series.x, series.y, strict=True) if y is not None]
        if not xy:
            continue
        lines.append(xy)
        colours.append(colour[series.label])
        points.extend(xy)
        point_colours.extend([colour[series.label]] * len(xy))
        if series.low is not None and series.high is not None:
            band = [(x, lo, hi) for x, lo, hi in zip(series.x, series.low, series.high,
                                                     strict=True)
                    if lo is not None and hi is not None]
            if band:
                upper = [(x, hi) for x, _, hi in band]
                lower = [(x, lo) for x, lo, _ in reversed(band)]
                bands.append(upper + lower)
                band_colours.append(colour[series.label])
    if bands:
        ax.add_collection(PolyCollection(bands, facecolors=band_colours, alpha=0.18,
                                         linewidths=0))
    if lines:
        ax.add_collection(LineCollection(lines, colors=colours, linewidths=1.2))
        xs, ys = zip(*points, strict=True)
        ax.scatter(xs, ys, s=9, c=point_colours, zorder=3)
    ax.autoscale_view()
    if panel.diagonal:
        ax.axline((0, 0), slope=1, color="grey", lw=0.8, ls="--")
    if panel.hline is not None:
        ax.axhline(panel.hline, color="firebrick", lw=0.8, ls=":")
    # a few ticks: enough to read a small panel, and matplotlib's drawing cost grows with
    # every tick (4 instead of ~8 makes a report a third faster); explicit ticks below win
    ax.locator_params(nbins=4)
    if panel.categories:
        ax.set_xticks(range(len(panel.categories)), panel.categories, rotation=35,
                      ha="right", fontsize=6)
    if panel.ticks_at_data:
        ax.set_xticks(sorted({x for series in panel.series for x in series.x}))
    ax.set_title(panel.title, fontsize=8)
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_ylim(bottom=0)
