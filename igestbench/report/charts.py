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

A chart's key (which colour and dash is which site or target) is HTML beside the SVG, not a
matplotlib legend: laying out a legend of 30 sites cost a fifth of a chart's drawing time, and
as HTML its names can be selected and searched like the rest of the page.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any

from igestbench.report.colours import CSS_DASH, page_colours
from igestbench.report.series import Panel, history_panels, scaling_panels, sweep_panels
from igestbench.report.svg import compact_svg
from igestbench.results.campaign import Campaign

_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
#: Below this many charts, starting worker processes costs more than it saves.
PARALLEL_FROM = 12
#: inches: a figure as wide as the page's column less its key on the right, so that it is shown
#: at about the size it was drawn (text at its point size, a tenth of a point below a pixel)
_FIGURE_W, _PANEL_H = 10.4, 2.4
#: inches per bar and the least per group of bars (a phase's name needs a line of text)
_BAR_H, _GROUP_H = 0.09, 0.24
_RC: dict[str, Any] = {
    "svg.fonttype": "none",  # text as <text>: searchable, smaller, no glyph paths
    "text.parse_math": False,  # "$" in a site name is a dollar sign, not TeX
    # a fixed title height: left to itself matplotlib places every title by measuring the
    # bounding boxes of the tick labels, 40 % of the drawing time of a chart
    "axes.titley": 1.0,
    "font.size": 9,
    "axes.grid": True,
    "axes.grid.axis": "y",  # the values are read against y; x holds a few known levels
    "grid.alpha": 0.3,
}


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
    #: unique in the page; also salts matplotlib's SVG ids so that charts never share one
    key: str
    kind: str
    title: str
    panels: tuple[Panel, ...]
    columns: int = 2
    svg: str = field(default="", compare=False)
    #: colour and dash of each line, in the order the lines first appear
    legend: tuple[LineStyle, ...] = field(default=(), compare=False)
    #: the CSS classes ``svg`` uses and their declarations (see svg.compact_svg)
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
    #: the CSS classes the SVG uses and their declarations (see svg.compact_svg)
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
                                f"Client CPU and network per phase at {site.name}", panels,
                                columns=2))
    return charts


def likely_charts(campaign: Campaign) -> int:
    """How many charts :func:`build_charts` will make, counted cheaply before it runs (at most
    one too many per target or site whose data turns out unusable)."""
    runs = campaign.runs
    return (len({r.target for r in runs if r.result.benchmarks})
            + len({r.target for r in runs if r.result.sweeps})
            + len({r.site for r in runs if r.result.samples}))


class ChartDrawers:
    """Draws charts, in worker processes when there are many.

    The workers are started when the drawers are made — before the charts are known — and each
    imports matplotlib at once: starting a Python with matplotlib takes a second or two, which
    the caller spends building the rest of the report instead of waiting (build_report).
    """

    def __init__(self, expected: int, workers: int | None = None) -> None:
        """``expected``: about how many charts will come (see :func:`likely_charts`)."""
        workers = workers if workers is not None else min(os.cpu_count() or 1, 8)
        self._pool: ProcessPoolExecutor | None = None
        self._workers = workers
        if workers >= 2 and expected >= PARALLEL_FROM:
            # spawn, not fork: a fork of a process with threads (a test runner's, a server's)
            # may hang
            self._pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"),
                                             initializer=_start_worker)
            self._pool.submit(int)  # a pool starts its processes at the first task

    def draw(self, charts: Sequence[Chart]) -> Callable[[], list[Drawing]]:
        """Start drawing ``charts``; the function returned waits for their drawings, in order."""
        if self._pool is None:
            return lambda: [_artist().draw(chart) for chart in charts]
        # small chunks keep both workers busy to the end; each keeps its figures between
        # charts whatever the chunk (see ChartArtist)
        drawings = self._pool.map(_draw_in_worker, charts,
                                  chunksize=max(1, len(charts) // self._workers // 6))
        return lambda: list(drawings)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)

    def __enter__(self) -> ChartDrawers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def render_all(charts: Sequence[Chart], workers: int | None = None) -> list[Drawing]:
    """Each chart drawn, in order; in worker processes when there are many."""
    with ChartDrawers(len(charts), workers) as drawers:
        return drawers.draw(charts)()


_worker_artist: ChartArtist | None = None


def _artist() -> ChartArtist:
    """This process's artist, which keeps its figures from chart to chart."""
    global _worker_artist
    if _worker_artist is None:
        _worker_artist = ChartArtist()
    return _worker_artist


def _start_worker() -> None:
    _artist()  # matplotlib imported and set up before the first chart comes


def _draw_in_worker(chart: Chart) -> Drawing:
    return _artist().draw(chart)


class ChartArtist:
    """Draws charts into figures it keeps: one per kind and layout of chart.

    Making a figure's axes — their spines, ticks, tick labels and grid lines — is half of what
    drawing a small chart costs, and is the same for every chart of a kind. So the artist makes
    them once and, for each further chart, takes the previous chart's marks off and puts back
    every setting that drawing a panel changes (``_reset``). What comes out is the SVG a fresh
    figure would give, byte for byte (tests/test_report_charts.py checks it).
    """

    def __init__(self, compact: bool = True) -> None:
        import matplotlib

        matplotlib.use("svg")  # no display, no Agg rasteriser needed
        #: False: matplotlib's SVG as it writes it (the benchmark compares the two)
        self.compact = compact
        self._figures: dict[tuple[str, int, int, float, float, float], tuple[Any, list[Any]]] = {}

    def draw(self, chart: Chart) -> Drawing:
        import matplotlib

        legend = chart.line_key
        with matplotlib.rc_context({**_RC, "svg.hashsalt": chart.key}):  # type: ignore[dict-item]
            figure, axes = self._figure(chart)
            for i, ax in enumerate(axes):
                _reset(ax)
                ax.set_visible(i < len(chart.panels))
                if i < len(chart.panels):
                    _draw(ax, chart.panels[i])
            out = io.StringIO()
            figure.savefig(out, format="svg", metadata={"Date": None, "Creator": "igestbench"})
        text = out.getvalue()
        # the RDF metadata block only names its vocabularies (purl.org …): no use inside a page
        svg = _METADATA.sub("", text[text.index("<svg"):], count=1)
        if not self.compact:
            return Drawing(svg, legend)
        compact = compact_svg(svg)
        return Drawing(compact.svg, legend, compact.styles)

    def _figure(self, chart: Chart) -> tuple[Any, list[Any]]:
        rows, columns = chart.layout
        bottom = _bottom_margin(chart)
        panel_h, left = _panel_height(chart), _left_margin(chart)
        key = (chart.kind, rows, columns, bottom, panel_h, left)
        if key not in self._figures:
            from matplotlib.figure import Figure

            # between rows: an x label and the next row's title
            gap = 0.8
            height = rows * panel_h + bottom + 0.35 + gap * (rows - 1)
            figure = Figure(figsize=(_FIGURE_W, height))
            axes = list(figure.subplots(rows, columns, squeeze=False).flat)
            figure.subplots_adjust(left=left / _FIGURE_W, right=0.99, top=1 - 0.35 / height,
                                   bottom=bottom / height, hspace=gap / panel_h,
                                   wspace=0.06 if any(p.bars for p in chart.panels)
                                   else 0.28 if columns < 4 else 0.5)
            self._figures[key] = figure, axes
        return self._figures[key]


def _bottom_margin(chart: Chart) -> float:
    """Inches below the last row: its x label."""
    return 0.45


def _panel_height(chart: Chart) -> float:
    """Inches of one panel: fixed for lines; for bars, enough for every group of bars."""
    bar_panels = [p for p in chart.panels if p.bars]
    if not bar_panels:
        return _PANEL_H
    groups = max(len(p.categories) for p in bar_panels)
    bars = max(len(p.series) for p in bar_panels)
    return max(1.2, groups * max(_GROUP_H, bars * _BAR_H + 0.06))


def _left_margin(chart: Chart) -> float:
    """Inches left of the first column: the bars' category names, written out once."""
    names = [c for p in chart.panels if p.bars for c in p.categories]
    return max(0.6, 0.2 + 0.068 * max(map(len, names))) if names else 0.6


def _log_axes(ax: Any, panel: Panel) -> None:
    """Both axes logarithmic, fitted to the data (no 0 on a log axis): x ticks at the sizes
    measured, y at 1-2-5 steps, every label plain text (math parsing is off: no TeX)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.autoscale_view()
    sizes = sorted({x for series in panel.series for x in series.x})
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticks(sizes, [f"{x:,.0f}" for x in sizes])
    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=8))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.10g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.set_title(panel.title, fontsize=_RC["font.size"])
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)


def _reset(ax: Any) -> None:
    # everything _draw changes, back to how a new Axes has it
    from matplotlib.ticker import AutoLocator, ScalarFormatter

    for artist in [*ax.collections, *ax.lines, *ax.texts, *ax.patches]:
        artist.remove()
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(AutoLocator())
        axis.set_major_formatter(ScalarFormatter())
    ax.tick_params(labelleft=True)
    ax.grid(True, axis="y")
    ax.grid(False, axis="x")
    ax.ignore_existing_data_limits = True
    ax.set_autoscale_on(True)


def _draw(ax: Any, panel: Panel) -> None:
    if panel.bars:
        _draw_bars(ax, panel)
    else:
        _draw_lines(ax, panel)


def _empty(ax: Any, panel: Panel) -> None:
    """A panel with nothing measured: say so, without an axis of made-up numbers."""
    ax.set_xticks([])
    ax.set_yticks([])
    ax.text(0.5, 0.5, panel.empty_note, transform=ax.transAxes, ha="center", va="center",
            color="#4b5566")
    ax.set_title(panel.title, fontsize=_RC["font.size"])
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)


def _draw_lines(ax: Any, panel: Panel) -> None:
    # one collection per kind of mark, not one artist per series: a 30-site campaign draws
    # hundreds of lines, and matplotlib's cost is per artist far more than per point
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection
    from matplotlib.path import Path
    from matplotlib.ticker import MaxNLocator

    lines, colours, dashes, points, bands, band_colours = [], [], [], [], [], []
    for series in panel.drawing_order:
        xy = [(x, y) for x, y in zip(series.x, series.y, strict=True) if y is not None]
        if not xy:
            continue
        lines.append(xy)
        colours.append(series.colour)
        dashes.append(series.dash)
        points.extend(xy)
        if series.low is not None and series.high is not None:
            band = [(x, lo, hi) for x, lo, hi in zip(series.x, series.low, series.high,
                                                     strict=True)
                    if lo is not None and hi is not None]
            if band:
                upper = [(x, hi) for x, _, hi in band]
                lower = [(x, lo) for x, lo, _ in reversed(band)]
                bands.append(upper + lower)
                band_colours.append(series.colour)
    if not lines:
        _empty(ax, panel)
        return
    if bands:
        ax.add_collection(PolyCollection(bands, facecolors=band_colours, alpha=0.18,
                                         linewidths=0))
    ax.add_collection(LineCollection(lines, colors=colours, linestyles=dashes, linewidths=1.3))
    # the measured points as round dots: one path of zero-length strokes per line, whose round
    # caps are the dots (a scatter writes an SVG element per point: 4 MB of a 30 x 30 page).
    # Where every x is a labelled tick (clients, phases), a line's ends and bends are its
    # points: only a line of one point needs its dot there.
    at_ticks = panel.ticks_at_data or bool(panel.categories)
    dotted = [(line, colour) for line, colour in zip(lines, colours, strict=True)
              if not at_ticks or len(line) == 1]
    if dotted:
        ax.add_collection(PathCollection(
            [Path([p for xy in line for p in (xy, xy)], [Path.MOVETO, Path.LINETO] * len(line))
             for line, _ in dotted],
            facecolors="none", edgecolors=[c for _, c in dotted], linewidths=3.5,
            capstyle="round", zorder=3, transform=ax.transData))
    if panel.log:
        _log_axes(ax, panel)
        return
    for m in panel.markers:  # sustained rates: a star, hollow where it is only the sweep's cap
        # a marker line, not a scatter: its style stays on the marker's definition, which
        # svg.py keeps (a scatter's colours sit on each <use>, where svg.py drops ticks' styles)
        ax.plot([m.x], [m.y], linestyle="none", marker="*", markersize=11, zorder=4,
                markeredgewidth=1.1, markeredgecolor=m.colour,
                markerfacecolor="white" if m.hollow else m.colour)
    xs, ys = zip(*points, strict=True)
    # y starts at 0 (set_ylim below); with 0 in the data limits the top margin is a share of
    # the whole axis, so a line near the top is not drawn on the frame
    ax.update_datalim([(xs[0], 0.0)])
    if panel.hline is not None:  # the reference line is always in view
        ax.update_datalim([(xs[0], panel.hline * 1.08)])
    ax.autoscale_view()
    if panel.diagonal:
        ax.axline((0, 0), slope=1, color="grey", lw=0.8, ls="--")
    if panel.hline is not None:
        ax.axhline(panel.hline, color="firebrick", lw=0.9, ls=(0, (4, 2)))
        ax.text(0.995, panel.hline, panel.hline_label, transform=ax.get_yaxis_transform(),
                ha="right", va="bottom", color="firebrick", fontsize=_RC["font.size"] - 1)
    # a few ticks: enough to read a small panel, and matplotlib's drawing cost grows with
    # every tick (4 instead of ~8 makes a report a third faster); explicit ticks below win
    ax.locator_params(nbins=4)
    if panel.counts:  # errors: whole numbers, and 0 to 1 when there were none
        ax.yaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    if panel.categories:
        ax.set_xticks(range(len(panel.categories)), panel.categories)
    if panel.ticks_at_data:
        ax.set_xticks(sorted({x for series in panel.series for x in series.x}))
    ax.set_title(panel.title, fontsize=_RC["font.size"])
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_ylim(bottom=0)
    if panel.counts and max(ys) == 0:
        ax.set_ylim(top=1)


def _draw_bars(ax: Any, panel: Panel) -> None:
    """Horizontal bars: the categories top to bottom, each a group of one bar per series (or
    one bar spanning a range, its middle marked); the names once, left of the first panel."""
    from matplotlib.collections import LineCollection, PolyCollection

    groups = len(panel.categories)
    shown = [s for s in panel.series if any(v is not None for v in s.y)]
    if not shown or not groups:
        _empty(ax, panel)
        return
    height = min(0.8 / len(shown), 0.5)
    rects, colours, ticks = [], [], []
    for k, series in enumerate(shown):
        for i, x in enumerate(series.x):
            value = series.y[i]
            if value is None:
                continue
            top = groups - 1 - x + 0.4 - k * height  # category 0 at the top
            low = series.low[i] if series.low is not None else None
            high = series.high[i] if series.high is not None else None
            start, end = (low, high) if low is not None and high is not None else (0.0, value)
            rects.append([(start, top), (end, top), (end, top - height), (start, top - height)])
            colours.append(series.colour)
            if low is not None:
                ticks.append([(value, top), (value, top - height)])
    ax.add_collection(PolyCollection(rects, facecolors=colours, edgecolors="none"))
    if ticks:
        ax.add_collection(LineCollection(ticks, colors="black", linewidths=1.5))
    right = max(max(x for rect in rects for x, _ in rect), panel.hline or 0.0) * 1.08
    ax.set_xlim(0, right or 1.0)
    ax.set_ylim(-0.6, groups - 0.4)
    ax.grid(False, axis="y")
    ax.grid(True, axis="x")
    if panel.hline is not None:
        ax.axvline(panel.hline, color="firebrick", lw=0.9, ls=(0, (4, 2)))
        ax.text(panel.hline, 1.0, f" {panel.hline_label}", transform=ax.get_xaxis_transform(),
                ha="left", va="bottom", color="firebrick", fontsize=_RC["font.size"] - 1)
    ax.locator_params(axis="x", nbins=4)
    ax.set_yticks(range(groups), list(reversed(panel.categories)))
    if ax.get_subplotspec().colspan.start > 0:
        ax.tick_params(labelleft=False)  # the names once, beside the first panel
    ax.set_title(panel.title, fontsize=_RC["font.size"])
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
