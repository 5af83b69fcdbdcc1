"""A chart as SVG text, written directly: its panels in a grid, each with its frame, ticks,
labels, lines, bands, dots, bars and reference lines.

matplotlib drew the report's charts until a 30 x 30 campaign's 90 charts took most of the
report's time (a quarter of a second of CPU each, spread over thousands of artists); what the
page needs is only lines, rectangles and text at known places, and the browser lays the text
out. The geometry is matplotlib's as the report used it (figure 10.4 in wide, in points, the
same margins, ticks and limits: axes.py), so the charts read as before.

Every label is XML-escaped here, and is text: a partner's "$x$" or "<b>" is shown as written.
Shared styles are CSS classes of the page (named by :func:`style_class`, defined once per page
by render.py); a line's own colour and dash are attributes on it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from html import escape
from typing import TYPE_CHECKING

from igestbench.report import axes
from igestbench.report.axes import Axis
from igestbench.report.colours import DASHDOT, DASHED, DOTTED
from igestbench.report.series import Panel, Series

if TYPE_CHECKING:
    from igestbench.report.charts import Chart

#: points per inch: the SVG's user unit is the point, as matplotlib's was
PT = 72.0
#: inches: as wide as the page's column less its key on the right (shown at about that size)
FIGURE_W, PANEL_H = 10.4, 2.4
#: inches per bar and the least per group of bars (a phase's name needs a line of text)
BAR_H, GROUP_H = 0.09, 0.24
FONT = 9.0
_TICK, _PAD, _LABEL_PAD, _TITLE_PAD = 3.5, 3.5, 4.0, 6.0
#: points from one tick label's middle to the next one's above it, at least
_LABEL_GAP = 1.4 * FONT
#: points between two x tick labels side by side, at least
_LABEL_SPACE = 2 * _PAD
#: dash patterns of a line 1 pt wide (matplotlib's lines.*_pattern), scaled by its width
_DASHES = {DASHED: (3.7, 1.6), DOTTED: (1.0, 1.65), DASHDOT: (6.4, 1.6, 1.0, 1.6)}
LINE_W, DOT_W, STAR_SIZE = 1.3, 3.5, 11.0
REFERENCE = "#b22222"  # firebrick: the objective, the saturation line
NOTE = "#4b5566"

#: the shared looks, by role
_LOOKS = {
    "frame": "fill:none;stroke:#000;stroke-width:0.8;stroke-linecap:square",
    "tick": "stroke:#000;stroke-width:0.8",
    "minor": "stroke:#000;stroke-width:0.6",
    "grid": "stroke:#b0b0b0;stroke-opacity:0.3;stroke-width:0.8",
    "text": f"font-size:{FONT:g}px",
    "small": f"font-size:{FONT - 1:g}px;fill:{REFERENCE}",
    "note": f"font-size:{FONT:g}px;fill:{NOTE}",
    "line": f"fill:none;stroke-width:{LINE_W:g}",
    "dots": f"fill:none;stroke-width:{DOT_W:g};stroke-linecap:round",
    "band": "fill-opacity:0.18;stroke:none",
    "star": "stroke-width:1.1",
    "ref": f"stroke:{REFERENCE};stroke-width:0.9;stroke-dasharray:3.6 1.8",
    "diagonal": "stroke:#808080;stroke-width:0.8;stroke-dasharray:2.96 1.28",
    "bar": "stroke:none",
    "median": "stroke:#000;stroke-width:1.5",
}


def style_class(declarations: str) -> str:
    """A class name for a style: the same style gets the same name in every chart."""
    return "s" + hashlib.blake2b(declarations.encode(), digest_size=3).hexdigest()


def num(value: float) -> str:
    """A coordinate to a tenth of a point (below a screen pixel at the size shown)."""
    text = f"{value:.1f}"
    if text.endswith(".0"):
        text = text[:-2]
    return "0" if text == "-0" else text


def chart_svg(chart: Chart) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The chart's SVG and the CSS classes it uses with their declarations."""
    rows, columns = chart.layout
    panel_h, left, bottom = panel_height(chart), left_margin(chart), 0.45
    gap = 0.8  # between rows: an x label and the next row's title
    height = rows * panel_h + bottom + 0.35 + gap * (rows - 1)
    width, tall = FIGURE_W * PT, height * PT
    space = (0.06 if any(p.bars for p in chart.panels) else 0.28 if columns < 4 else 0.5)
    used: dict[str, str] = {}

    def cls(role: str) -> str:
        name = style_class(_LOOKS[role])
        used[name] = _LOOKS[role]
        return f'class="{name}"'

    # left of every line panel: its ticks, its widest tick label ("100,000") and its y label
    room = y_axis_room(chart, panel_h, cls)
    x_left, x_right = max(left, room / PT) * PT, 0.99 * width
    axis_w = (x_right - x_left) / (columns + space * (columns - 1))
    if columns > 1 and space * axis_w < room:
        axis_w = (x_right - x_left - room * (columns - 1)) / columns
        space = room / axis_w

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{num(width)}pt" '
           f'height="{num(tall)}pt" viewBox="0 0 {num(width)} {num(tall)}" version="1.1">',
           f'<rect width="{num(width)}" height="{num(tall)}" fill="#fff"/>']
    for i, panel in enumerate(chart.panels):
        row, column = divmod(i, columns)
        box = (x_left + column * axis_w * (1 + space), 0.35 * PT + row * (panel_h + gap) * PT,
               axis_w, panel_h * PT)
        out.extend(_PanelWriter(panel, box, f"{chart.key}-{i}", column == 0, cls).write())
    out.append("</svg>")
    return "\n".join(out), tuple(sorted(used.items()))


def panel_height(chart: Chart) -> float:
    """Inches of one panel: fixed for lines; for bars, enough for every group of bars."""
    bar_panels = [p for p in chart.panels if p.bars]
    if not bar_panels:
        return PANEL_H
    groups = max(len(p.categories) for p in bar_panels)
    bars = max(len(p.series) for p in bar_panels)
    return max(1.2, groups * max(GROUP_H, bars * BAR_H + 0.06))


def y_axis_room(chart: Chart, panel_h: float, cls: Callable[[str], str]) -> float:
    """Points a line panel's y axis takes left of its frame: tick, tick label, y label."""
    texts = [t for p in chart.panels
             for t in _PanelWriter(p, (0.0, 0.0, 1.0, panel_h * PT), "", False, cls).y_texts()]
    widest = max((axes.text_width(t, FONT) for t in texts), default=0.0)
    return _TICK + _PAD + widest + _LABEL_PAD + 1 + FONT  # a rotated label's height: FONT


def left_margin(chart: Chart) -> float:
    """Inches left of the first column: the bars' category names, written out once."""
    names = [c for p in chart.panels if p.bars for c in p.categories]
    return max(0.6, 0.2 + 0.068 * max(map(len, names))) if names else 0.6


class _PanelWriter:
    """One panel's SVG elements, inside ``box`` (x, y of its top left corner, width, height)."""

    def __init__(self, panel: Panel, box: tuple[float, float, float, float], clip: str,
                 first_column: bool, cls: Callable[[str], str]) -> None:
        self.panel, self.clip, self.first_column, self.cls = panel, escape(clip), first_column, cls
        self.x0, self.y0, self.w, self.h = box
        self.out: list[str] = []
        self.x = self.y = Axis(0.0, 1.0)
        #: where the grid goes: under the data, inside the panel's clip
        self._under = 0

    def write(self) -> list[str]:
        panel = self.panel
        if panel.bars:
            self._bars()
        else:
            self._lines()
        self.out.append(f'<rect x="{num(self.x0)}" y="{num(self.y0)}" width="{num(self.w)}" '
                        f'height="{num(self.h)}" {self.cls("frame")}/>')
        self._text(self.x0 + self.w / 2, self.y0 - _TITLE_PAD, panel.title, "middle")
        return self.out

    # -- coordinates --------------------------------------------------------------------------

    def px(self, value: float) -> float:
        return self.x0 + self.x.share(value) * self.w

    def py(self, value: float) -> float:
        return self.y0 + self.h - self.y.share(value) * self.h

    def _path(self, points: Sequence[tuple[float, float]], dots: bool = False) -> str:
        """Path data: a polyline, or (``dots``) a zero-length stroke at each point."""
        coordinates = [f"{num(self.px(x))} {num(self.py(y))}" for x, y in points]
        if dots:
            return "".join(f"M{c}h0" for c in coordinates)
        return "M" + "L".join(coordinates)

    # -- what every panel has -----------------------------------------------------------------

    def _text(self, x: float, y: float, text: str, anchor: str, role: str = "text",
              extra: str = "") -> None:
        self.out.append(f'<text x="{num(x)}" y="{num(y)}" text-anchor="{anchor}" '
                        f'{self.cls(role)}{extra}>{escape(text)}</text>')

    def _axis_labels(self, y_ticks: Sequence[str]) -> None:
        """The x label under the tick labels, the y label left of the widest of them."""
        panel = self.panel
        bottom = self.y0 + self.h + _TICK + _PAD + FONT * 0.8
        if panel.xlabel:
            self._text(self.x0 + self.w / 2, bottom + _LABEL_PAD + FONT, panel.xlabel, "middle")
        if panel.ylabel:
            widest = max((axes.text_width(t, FONT) for t in y_ticks), default=0.0)
            x = self.x0 - _TICK - _PAD - widest - _LABEL_PAD - 1
            y = self.y0 + self.h / 2
            self.out.append(f'<text transform="translate({num(x)} {num(y)}) rotate(-90)" '
                            f'text-anchor="middle" {self.cls("text")}>'
                            f'{escape(panel.ylabel)}</text>')

    def _x_ticks(self, ticks: Sequence[float], texts: Sequence[str], grid: bool,
                 regular: bool = True) -> None:
        """Every tick's mark; the labels that fit side by side at the panel's width
        (axes.thinned: every n-th where ``regular``, else those that keep clear)."""
        bottom = self.y0 + self.h
        marks, lines = [], []
        shown = [(t, text) for t, text in zip(ticks, texts, strict=True) if self.x.shows(t)]
        kept = set(axes.thinned(self.x, [t for t, _ in shown], [x for _, x in shown], self.w,
                                FONT, _LABEL_SPACE, regular))
        for i, (tick, text) in enumerate(shown):
            x = num(self.px(tick))
            marks.append(f"M{x} {num(bottom)}v{_TICK}")
            lines.append(f"M{x} {num(self.y0)}V{num(bottom)}")
            if i in kept:
                self._text(self.px(tick), bottom + _TICK + _PAD + FONT * 0.8, text, "middle")
        self._marks(marks, lines if grid else [])

    def _y_ticks(self, ticks: Sequence[float], texts: Sequence[str], grid: bool,
                 labelled: bool = True) -> list[str]:
        marks, lines, shown = [], [], []
        right = num(self.x0 + self.w)
        for tick, text in zip(ticks, texts, strict=True):
            if not self.y.shows(tick):
                continue
            y = self.py(tick)
            marks.append(f"M{num(self.x0)} {num(y)}h-{_TICK}")
            lines.append(f"M{num(self.x0)} {num(y)}H{right}")
            if labelled:
                shown.append(text)
                self._text(self.x0 - _TICK - _PAD, y + FONT * 0.35, text, "end")
        self._marks(marks, lines if grid else [])
        return shown

    def _marks(self, marks: list[str], grid: list[str]) -> None:
        if grid:  # under the data, as matplotlib's grid is (axes.axisbelow "line")
            self.out.insert(self._under, f'<path d="{"".join(grid)}" {self.cls("grid")}/>')
        if marks:
            self.out.append(f'<path d="{"".join(marks)}" {self.cls("tick")}/>')

    def _clip_open(self) -> None:
        """Marks that reach the frame stop at it: a clip path of the panel's box."""
        self.out.append(f'<clipPath id="c{self.clip}"><rect x="{num(self.x0)}" '
                        f'y="{num(self.y0)}" width="{num(self.w)}" height="{num(self.h)}"/>'
                        f'</clipPath><g clip-path="url(#c{self.clip})">')
        self._under = len(self.out)

    def _empty(self) -> None:
        """Nothing measured: say so, without an axis of made-up numbers."""
        self._under = len(self.out)
        self._text(self.x0 + self.w / 2, self.y0 + self.h / 2 + FONT * 0.35,
                   self.panel.empty_note, "middle", "note")
        self._axis_labels([])

    # -- lines --------------------------------------------------------------------------------

    def y_texts(self) -> list[str]:
        """The y tick labels this line panel writes, known before it is placed (the chart
        leaves room for the widest); none for bars, whose names are the chart's left margin."""
        if self.panel.bars or not self._limits()[0]:
            return []
        ticks, texts = self._y_tick_marks()
        return [text for tick, text in zip(ticks, texts, strict=True) if self.y.shows(tick)]

    def _limits(self) -> tuple[list[tuple[Series, list[tuple[float, float]]]],
                               list[tuple[Series, list[tuple[float, float]]]], list[float]]:
        """The lines and bands to draw and the x values measured; the axes set to show them
        (when there is something to draw)."""
        panel = self.panel
        drawn = [(s, [(x, y) for x, y in zip(s.x, s.y, strict=True)
                      if y is not None and (not panel.log or (x > 0 and y > 0))])
                 for s in panel.drawing_order]
        drawn = [(s, xy) for s, xy in drawn if xy]
        bands = [(s, b) for s, _ in drawn if (b := _band(s, panel.log))]
        xs = [x for _, xy in drawn for x, _ in xy]
        ys = [y for _, xy in drawn for _, y in xy] + [v for _, b in bands for _, v in b]
        ys += [m.y for m in panel.markers] if not panel.log else []
        if drawn and panel.log:
            self.x, self.y = axes.logarithmic(xs), axes.logarithmic(ys)
        elif drawn:
            self._linear_limits(xs, ys)
        return drawn, bands, xs

    def _lines(self) -> None:
        panel = self.panel
        drawn, bands, xs = self._limits()
        if not drawn:
            self._empty()
            return
        self._clip_open()
        for series, band in bands:
            self.out.append(f'<path d="{self._path(band)}Z" fill="{series.colour}" '
                            f'{self.cls("band")}/>')
        for series, xy in drawn:
            self.out.append(f'<path d="{self._path(xy)}" stroke="{series.colour}"'
                            f'{_dash(series.dash)} {self.cls("line")}/>')
        # where every x is a labelled tick, a line's ends and bends are its points: only a
        # line of one point needs its dot there
        at_ticks = panel.ticks_at_data or bool(panel.categories)
        for series, xy in drawn:
            if not at_ticks or len(xy) == 1:
                self.out.append(f'<path d="{self._path(xy, dots=True)}" '
                                f'stroke="{series.colour}" {self.cls("dots")}/>')
        if not panel.log:
            self._references()
        self.out.append("</g>")
        for m in panel.markers if not panel.log else ():
            fill = "#fff" if m.hollow else m.colour
            self.out.append(f'<path d="{_star(self.px(m.x), self.py(m.y))}" fill="{fill}" '
                            f'stroke="{m.colour}" {self.cls("star")}/>')
        if panel.hline is not None and not panel.log:
            self._text(self.x0 + 0.995 * self.w, self.py(panel.hline) - 2, panel.hline_label,
                       "end", "small")
        self._line_ticks(xs)

    def _linear_limits(self, xs: list[float], ys: list[float]) -> None:
        panel = self.panel
        # the diagonal passes through (0, 0), and shows it (as matplotlib's axline did)
        self.x = axes.linear([*xs, 0.0] if panel.diagonal else xs)
        if panel.categories:  # every category's tick in view (matplotlib's set_xticks widens)
            self.x = Axis(min(self.x.low, 0.0), max(self.x.high, len(panel.categories) - 1.0))
        # y starts at 0; with 0 in the data the top margin is a share of the whole axis
        low = [0.0, *ys, *([panel.hline * 1.08] if panel.hline is not None else [])]
        top = axes.linear(low).high
        if top <= 0 or (panel.counts and max(ys) == 0):
            top = 1.0
        self.y = Axis(0.0, top)

    def _references(self) -> None:
        panel = self.panel
        if panel.diagonal:  # y = x: keeping up with the demand
            low, high = min(self.x.low, self.y.low), max(self.x.high, self.y.high)
            self.out.append(f'<path d="M{num(self.px(low))} {num(self.py(low))}'
                            f'L{num(self.px(high))} {num(self.py(high))}" '
                            f'{self.cls("diagonal")}/>')
        if panel.hline is not None:
            y = num(self.py(panel.hline))
            self.out.append(f'<path d="M{num(self.x0)} {y}H{num(self.x0 + self.w)}" '
                            f'{self.cls("ref")}/>')

    def _line_ticks(self, xs: list[float]) -> None:
        panel = self.panel
        if panel.log:
            x_ticks = self._log_x_ticks(sorted(set(xs)))
            self._x_ticks(x_ticks, [axes.grouped(x) for x in x_ticks], grid=False)
            y_ticks, texts = self._y_tick_marks()
            shown = self._y_ticks(y_ticks, texts, grid=True)
            minor = [t for t in axes.log_minor_ticks(self.y) if t not in y_ticks]
            if minor:  # unlabelled, as matplotlib marks the rest of each decade
                self.out.append('<path d="' + "".join(
                    f"M{num(self.x0)} {num(self.py(t))}h-2" for t in minor)
                    + f'" {self.cls("minor")}/>')
        else:
            if panel.categories:
                ticks: list[float] = [float(i) for i in range(len(panel.categories))]
                texts = list(panel.categories)
            else:
                ticks = (sorted({x for s in panel.series for x in s.x}) if panel.ticks_at_data
                         else axes.nice_ticks_fitting(self.x, self.w, FONT, _LABEL_SPACE))
                texts = axes.labels(ticks)
            self._x_ticks(ticks, texts, grid=False, regular=not panel.ticks_at_data)
            y_ticks, texts = self._y_tick_marks()
            shown = self._y_ticks(y_ticks, texts, grid=True)
        self._axis_labels(shown)

    def _y_tick_marks(self) -> tuple[list[float], list[str]]:
        """A line panel's y ticks and their labels."""
        if self.panel.log:
            # a label's height and a little between: labels one above the other never touch
            ticks = axes.log_ticks(self.y, gap=_LABEL_GAP / self.h)
            return ticks, axes.log_labels(ticks)
        ticks = axes.nice_ticks(self.y, integer=self.panel.counts)
        return ticks, axes.labels(ticks)

    def _log_x_ticks(self, sizes: list[float]) -> list[float]:
        """The x values measured (the catalogue sizes a run chose), those that fit side by side;
        beside a single one, the log axis's own ticks that keep clear of it."""
        widest = axes.text_width(axes.grouped(round(10 ** self.x.high)), FONT)
        gap = (widest + _LABEL_SPACE) / self.w
        kept = axes.spaced(self.x, sizes, gap)
        if len(kept) > 1:
            return kept
        clear = [t for t in axes.log_ticks(self.x, gap)
                 if all(abs(self.x.share(t) - self.x.share(s)) >= gap for s in kept)]
        return sorted([*kept, *clear])

    # -- bars ---------------------------------------------------------------------------------

    def _bars(self) -> None:
        """Horizontal bars: the categories top to bottom, each a group of one bar per series
        (or one bar spanning a range, its middle marked); the names once, left of the first
        panel."""
        panel = self.panel
        groups = len(panel.categories)
        shown = [s for s in panel.series if any(v is not None for v in s.y)]
        if not shown or not groups:
            self._empty()
            return
        height = min(0.8 / len(shown), 0.5)
        bars, medians = [], []
        for k, series in enumerate(shown):
            for i, x in enumerate(series.x):
                value = series.y[i]
                if value is None:
                    continue
                top = groups - 1 - x + 0.4 - k * height  # category 0 at the top
                low = series.low[i] if series.low is not None else None
                high = series.high[i] if series.high is not None else None
                start, end = ((low, high) if low is not None and high is not None
                              else (0.0, value))
                bars.append((series.colour, start, end, top))
                if low is not None:
                    medians.append((value, top))
        right = max(max(max(s, e) for _, s, e, _ in bars), panel.hline or 0.0) * 1.08
        self.x, self.y = Axis(0.0, right or 1.0), Axis(-0.6, groups - 0.4)
        self._clip_open()
        for colour, start, end, top in bars:
            left, wide = self.px(min(start, end)), abs(self.px(end) - self.px(start))
            self.out.append(f'<rect x="{num(left)}" y="{num(self.py(top))}" '
                            f'width="{num(wide)}" height="{num(height * self.h / self.y_span)}" '
                            f'fill="{colour}" {self.cls("bar")}/>')
        if medians:
            self.out.append('<path d="' + "".join(
                f"M{num(self.px(v))} {num(self.py(top))}V{num(self.py(top - height))}"
                for v, top in medians) + f'" {self.cls("median")}/>')
        if panel.hline is not None:
            at = num(self.px(panel.hline))
            self.out.append(f'<path d="M{at} {num(self.y0)}V{num(self.y0 + self.h)}" '
                            f'{self.cls("ref")}/>')
        self.out.append("</g>")
        if panel.hline is not None:
            # ending at the line: a label longer than the room right of it stays in the panel
            self._text(self.px(panel.hline), self.y0 - 2, f"{panel.hline_label} ", "end",
                       "small")
        x_ticks = axes.nice_ticks_fitting(self.x, self.w, FONT, _LABEL_SPACE)
        self._x_ticks(x_ticks, axes.labels(x_ticks), grid=True)
        names = list(reversed(panel.categories))
        self._y_ticks([float(i) for i in range(groups)], names, grid=False,
                      labelled=self.first_column)
        self._axis_labels([])

    @property
    def y_span(self) -> float:
        return self.y.high - self.y.low


def _band(series: Series, log: bool) -> list[tuple[float, float]]:
    """The outline of a series' band: along its highs, back along its lows."""
    if series.low is None or series.high is None:
        return []
    band = [(x, lo, hi) for x, lo, hi in zip(series.x, series.low, series.high, strict=True)
            if lo is not None and hi is not None and (not log or (x > 0 and lo > 0))]
    return [(x, hi) for x, _, hi in band] + [(x, lo) for x, lo, _ in reversed(band)]


def _dash(dash: str) -> str:
    pattern = _DASHES.get(dash)
    if pattern is None:
        return ""
    return ' stroke-dasharray="' + " ".join(f"{p * LINE_W:.3g}" for p in pattern) + '"'


def _star(x: float, y: float) -> str:
    """A five-pointed star of :data:`STAR_SIZE` points across, centred on (x, y)."""
    outer, inner = STAR_SIZE / 2, STAR_SIZE / 2 * 0.381966
    points = []
    for i in range(10):
        radius = outer if i % 2 == 0 else inner
        angle = math.pi / 2 + i * math.pi / 5
        points.append(f"{num(x + radius * math.cos(angle))} {num(y - radius * math.sin(angle))}")
    return "M" + "L".join(points) + "Z"
