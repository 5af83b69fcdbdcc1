"""The charts' axes as a reader reads them: enough labelled ticks on every log axis whatever
its span, labels that never overlap, and numbers written as the rest of the report writes them
(axes.py, plot.py; found by a new user's tryout)."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

import pytest

from igestbench.report import axes, build_report
from igestbench.report.axes import Axis
from igestbench.report.charts import Chart, draw_chart
from igestbench.report.series import Panel, Series
from tests.test_report_scale import campaign, section

_SVG = "{http://www.w3.org/2000/svg}"
#: a label's height and a little between, as a share of a panel of the report's height
GAP = 1.4 * 9.0 / (2.4 * 72.0)


def _number(label: str) -> float:
    assert re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d+)?", label), label  # grouped, no exponent
    return float(label.replace(",", ""))


def _readable(axis: Axis, ticks: list[float]) -> None:
    """At least three labels, at most eight, inside the axis, none nearer than GAP."""
    assert 3 <= len(ticks) <= 8, ticks
    assert all(axis.shows(t) for t in ticks)
    shares = [axis.share(t) for t in ticks]
    assert all(b - a >= GAP for a, b in itertools.pairwise(shares)), ticks


@pytest.mark.parametrize(("low", "decades", "expected"), [
    # 0.3 decade: 0.9 to 1.8 ms holds only 1 of the multiples 1, 2, 5: ISO 3's R''10
    (0.9, 0.3, ["1", "1.2", "1.5"]),
    # narrower: a linear axis's steps, as matplotlib's LogLocator falls back to
    (1.1, 0.15, ["1.1", "1.2", "1.3", "1.4", "1.5"]),
    # about a decade: 1, 2, 5 and the decade
    (1.3, 1.0, ["2", "5", "10"]),
    (2.0, 2.0, ["2", "5", "10", "20", "50", "100", "200"]),
    # 5 decades: 1, 2 and 5 of each would be 15 labels; the decades alone
    (1.0, 5.0, ["1", "10", "100", "1,000", "10,000", "100,000"]),
])
def test_a_log_axis_labels_enough_ticks_over_any_span(low: float, decades: float,
                                                       expected: list[str]) -> None:
    axis = axes.logarithmic([low, low * 10 ** decades])
    ticks = axes.log_ticks(axis, GAP)
    assert axes.log_labels(ticks) == expected
    _readable(axis, ticks)


@pytest.mark.parametrize(("low", "high"), [
    (0.9, 1.6), (1.1, 1.6), (1.02, 1.05), (1.5, 4.7), (6.0, 24.0), (1.2, 9.5), (3.0, 300.0),
    (0.012, 0.0131), (450.0, 2_600.0), (1.0, 1e12), (0.5, 0.5),
])
def test_every_log_axis_has_three_readable_labels(low: float, high: float) -> None:
    # the spans of the tryout's panels (get Datafile by id: 1.1 to 1.6 ms, no label at all;
    # numeric range: 0.9 to 1.6, "1" alone) and others, narrow and wide
    axis = axes.logarithmic([low, high])
    ticks = axes.log_ticks(axis, GAP)
    _readable(axis, ticks)
    for label in axes.log_labels(ticks):
        _number(label)
    # the minor marks are the multiples of each decade inside the axis
    assert all(axis.shows(t) for t in axes.log_minor_ticks(axis))


def test_a_log_axis_of_about_half_a_decade_labels_round_numbers_spread_along_it() -> None:
    # 1, 2, 5 gives two labels between 6 and 24 (10, 20): R''5 of ISO 3 gives four
    axis = axes.logarithmic([6.0, 24.0])
    assert axes.log_ticks(axis, GAP) == [6.0, 10.0, 15.0, 25.0]
    # the tryout's "Datafile by name only", 0.45 to 1.4 ms: labels below 1 and above
    axis = axes.logarithmic([0.45, 1.4])
    assert axes.log_labels(axes.log_ticks(axis, GAP)) == ["0.5", "0.6", "0.8", "1", "1.2"]


def test_labels_never_come_nearer_than_the_gap() -> None:
    axis = axes.logarithmic([1.2, 9.5])
    # 2 to 9 would be eight labels 0.05 of a decade apart at the top: too near for a small panel
    ticks = axes.log_ticks(axis, 0.1)
    shares = [axis.share(t) for t in ticks]
    assert all(b - a >= 0.1 for a, b in itertools.pairwise(shares))
    assert axes.spaced(axis, [2.0, 2.1, 3.0, 9.0, 9.2], 0.1) == [2.0, 3.0, 9.0]


def test_linear_labels_group_thousands_and_keep_their_decimals() -> None:
    assert axes.labels([0.0, 50_000.0, 100_000.0]) == ["0", "50,000", "100,000"]
    assert axes.labels([1_000.5, 2_000.0]) == ["1,000.5", "2,000.0"]
    assert axes.labels([-25_000.0, -0.0, 25_000.0]) == ["-25,000", "0", "25,000"]
    assert axes.labels([0.0, 2.5, 5.0]) == ["0.0", "2.5", "5.0"]
    assert axes.grouped(10_000_000_000.0) == "10,000,000,000"  # never "1e+10"
    assert axes.grouped(0.0125) == "0.0125"


def _texts(svg: str) -> list[ET.Element]:
    return list(ET.fromstring(svg).iter(f"{_SVG}text"))


def test_a_rate_axis_of_a_hundred_thousand_reads_with_its_separator() -> None:
    # burst createMany: rate, as `sv7 run --profile full` drew it: "100000" without a separator
    rates = (Series("A · SOAP zeep", (1.0, 2.0, 4.0), (61_000.0, 88_000.0, 97_500.0)),)
    panel = Panel("burst createMany: rate", "clients", "Datafiles/s", rates, ticks_at_data=True)
    svg = draw_chart(Chart("r", "scaling", "R", (panel, panel), columns=2)).svg
    texts = [t.text for t in _texts(svg)]
    assert "100,000" in texts and "50,000" in texts
    assert not any(t and re.fullmatch(r"\d{4,}", t) for t in texts), texts
    # the wider labels push the y label left: it stays inside the chart, and clear of the
    # panel on its left (a rotated label reaches about a font size left of its baseline)
    frames = sorted(float(r.get("x", "0")) + float(r.get("width", "0"))
                    for r in ET.fromstring(svg).iter(f"{_SVG}rect") if r.get("class"))
    label_xs = sorted(float(m) for m in re.findall(r'translate\((-?[\d.]+) [\d.]+\) rotate', svg))
    assert len(label_xs) == 2 and label_xs[0] - 9.0 >= 0
    assert label_xs[1] - 9.0 >= frames[0], (label_xs, frames)
    widest = max(axes.text_width(t, 9.0) for t in ("100,000", "50,000"))
    first = min(float(t.get("x", "0")) for t in _texts(svg) if t.text == "100,000")
    assert first - widest > label_xs[0] + 2  # the tick labels end right of the y label


def _frames_and_texts(svg: str, anchor: str) -> tuple[list[tuple[float, ...]],
                                                      list[tuple[float, float, str]]]:
    """The panels' frames (x, y, width, height) and the texts anchored at ``anchor`` (x, y,
    text)."""
    root = ET.fromstring(svg)
    frames = [tuple(float(r.get(k, "0")) for k in ("x", "y", "width", "height"))
              for r in root.iter(f"{_SVG}rect") if r.get("class") and r.get("width")
              and r.get("fill") is None]
    texts = [(float(t.get("x", "0")), float(t.get("y", "0")), t.text or "")
             for t in root.iter(f"{_SVG}text")
             if t.get("text-anchor") == anchor and t.get("x") is not None]
    return frames, texts


def _y_labels(svg: str) -> list[list[tuple[float, str]]]:
    """Each panel's y tick labels (right-aligned, just left of its frame) as (y, text)."""
    frames, texts = _frames_and_texts(svg, "end")
    found: dict[int, list[tuple[float, str]]] = defaultdict(list)
    for x, y, text in texts:
        (i,) = [i for i, (fx, fy, _, fh) in enumerate(frames)
                if 0 < fx - x < 10 and fy <= y <= fy + fh + 9]
        found[i].append((y, text))
    return [found[i] for i in sorted(found)]


def test_every_scale_panel_of_a_narrow_span_has_readable_y_labels(tmp_path: Path) -> None:
    # every query between 1.1 and 1.5 ms at 1,000 to 100,000 Datafiles (the member 5 % slower):
    # no 1, 2 or 5 of a decade inside, which gave panels with one label or none
    scale = section(member_factor=1.05)
    for i, size in enumerate(scale["sizes"]):
        for q in size["queries"]:
            q["p50_ms"] = (1.1 + 0.2 * i) * (1.05 if q["role"] == "member" else 1.0)
    report = build_report(campaign(tmp_path, scale))
    assert report.scale is not None
    (chart,) = report.scale.charts
    panels = _y_labels(chart.svg)
    assert len(panels) == len(chart.panels)
    for labels in panels:
        assert len(labels) >= 3, labels
        ys = sorted(y for y, _ in labels)
        assert all(b - a >= 9.0 for a, b in itertools.pairwise(ys)), labels  # 9 px font
        values = [_number(text) for _, text in sorted(labels, reverse=True)]
        assert values == sorted(values) and values[0] >= 1.0 and values[-1] <= 1.6
    # the x axis: the sizes measured, as every number of the page is written
    texts = [t.text for t in _texts(chart.svg)]
    assert {"1,000", "10,000", "100,000"} <= set(texts)


def test_a_log_panel_of_one_size_has_more_than_one_x_label() -> None:
    one = (Series("A · SOAP · root", (1_000.0,), (1.3,)),)
    svg = draw_chart(Chart("s", "scale", "S", (Panel("get", "Datafiles", "p50 (ms)", one,
                                                     log=True),))).svg
    middle = [t for t in _texts(svg) if t.get("text-anchor") == "middle" and t.text
              and re.fullmatch(r"[\d,.]+", t.text)]
    xs = [float(t.get("x", "0")) for t in middle]
    assert "1,000" in [t.text for t in middle] and len(middle) >= 2
    assert all(b - a >= 30 for a, b in itertools.pairwise(xs))  # "1,000" is ~25 pt
    (labels,) = _y_labels(svg)
    assert len(labels) >= 3


def _x_labels(svg: str) -> list[list[tuple[float, str]]]:
    """Each panel's x tick labels (centred, one tick and a pad below its frame) as (x, text),
    left to right."""
    frames, texts = _frames_and_texts(svg, "middle")
    found: dict[int, list[tuple[float, str]]] = defaultdict(list)
    for x, y, text in texts:
        for i, (fx, fy, fw, fh) in enumerate(frames):
            # the row of tick labels: 3.5 pt of tick, 3.5 of pad, 0.8 of the 9 pt font
            if abs(y - (fy + fh + 3.5 + 3.5 + 7.2)) < 0.15 and fx - 0.15 <= x <= fx + fw + 0.15:
                found[i].append((x, text))
    return [sorted(found[i]) for i in range(len(frames))]


def _apart_side_by_side(labels: list[tuple[float, str]]) -> None:
    """No two labels' boxes (their estimated width at the charts' 9 pt, centred) overlap."""
    for (a, left), (b, right) in itertools.pairwise(labels):
        gap = (b - axes.text_width(right, 9.0) / 2) - (a + axes.text_width(left, 9.0) / 2)
        assert gap >= 0, (left, right, gap, labels)


CLIENTS = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0)
NAMES = tuple(f"burst/createMany/python-icat/{n}" for n in range(1, 13))


@pytest.mark.parametrize(("name", "panel", "columns"), [
    # concurrency levels on a linear axis: 1, 2, 4 and 8 crowd at its low end
    ("clients", Panel("burst create: rate", "clients", "Datafiles/s",
                      (Series("A", CLIENTS, tuple(1_000.0 * c for c in CLIENTS)),),
                      ticks_at_data=True), 5),
    # a sweep's demand up to 900,000 requests/s in a fifth of the width
    ("demand", Panel("sweep", "requests/s demanded", "requests/s answered",
                     (Series("A", (0.0, 909_000.0), (0.0, 909_000.0)),), diagonal=True), 5),
    # twelve long category names along a line panel
    ("categories", Panel("per phase", "phase", "ms",
                         (Series("A", tuple(float(i) for i in range(12)), (1.0,) * 12),),
                         categories=NAMES), 2),
    # bars of millions: the value axis under them
    ("bars", Panel("network", "Mbit/s", "", (Series("A", (0.0, 1.0), (9_170_000.0, 5.0)),),
                   categories=("a", "b"), bars=True), 4),
])
def test_no_two_labels_of_a_linear_x_axis_overlap(name: str, panel: Panel, columns: int) -> None:
    svg = draw_chart(Chart("x", "scaling", "X", (panel,) * columns, columns=columns)).svg
    rows = _x_labels(svg)
    assert len(rows) == columns
    for labels in rows:
        assert len(labels) >= 2, (name, labels)
        _apart_side_by_side(labels)
    labels = rows[0]
    texts = [t for _, t in labels]
    if name == "clients":  # the least and the most clients are always written
        assert texts[0] == "1" and texts[-1] == "128", texts
        # every level keeps its tick mark, labelled or not
        marks = re.findall(r"M([\d.]+) [\d.]+v3\.5", svg)
        assert len(marks) == len(CLIENTS) * columns
    elif name == "categories":  # every n-th, from the first
        positions = [NAMES.index(t) for t in texts]
        assert positions[0] == 0 and len({b - a for a, b in itertools.pairwise(positions)}) == 1
    else:  # a longer step of the same 1-2-2.5-5 kind, evenly spaced
        values = [_number(t) for t in texts]
        steps = {b - a for a, b in itertools.pairwise(values)}
        assert len(steps) == 1, values


def test_labels_that_fit_are_all_written() -> None:
    axis = Axis(0.0, 10.0)
    ticks = [0.0, 2.5, 5.0, 7.5, 10.0]
    assert axes.nice_ticks_fitting(axis, 400.0, 9.0, 7.0) == axes.nice_ticks(axis)
    assert axes.thinned(axis, ticks, axes.labels(ticks), 400.0, 9.0, 7.0, False) == [0, 1, 2,
                                                                                      3, 4]
    # 40 points: "0.0" and "10.0" alone keep 7 points apart
    assert axes.thinned(axis, ticks, axes.labels(ticks), 40.0, 9.0, 7.0, False) == [0, 4]
    assert axes.thinned(axis, ticks, axes.labels(ticks), 60.0, 9.0, 7.0, True) == [0, 2, 4]
