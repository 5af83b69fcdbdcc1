"""The report as HTML (one self-contained page), Markdown and CSV.

Every string from a partner's file reaches the page through Jinja with autoescape on, in HTML
and Markdown alike (a Markdown viewer renders raw HTML, so escaping there matters as much).
The charts are the one piece of markup inserted as is: plot.py wrote it and escaped every
label itself. CSV cells that a spreadsheet would take for a formula are quoted with ``'``.

The templates are package data of ``igestbench.report`` (``templates/`` at the top of the
repository points there), so they are found in a source checkout and after ``pip install``.
"""

from __future__ import annotations

import csv
import dataclasses
import functools
import io
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from secrets import token_hex
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from igestbench.report.matrices import Success, Summary
from igestbench.report.model import Report
from igestbench.report.scale import SCALE_CSV_HEADER
from igestbench.report.summary import CampaignSummary
from igestbench.report.tables import BenchmarkRow
from igestbench.results.rows import SUMMARY_CSV_FIELDS, summary_csv_cells

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} %"


def num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def plural(count: int, word: str) -> str:
    """"1 site", "2 sites": a count with its noun."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _markdown_cell(value: Any) -> Any:
    # a "|" would end the table cell and a newline the row; "<" and ">" are escaped so that a
    # partner's text cannot become HTML in a Markdown viewer, but nothing else is: HTML's
    # escaping would put "&#39;" for every apostrophe into a file people read as text
    if isinstance(value, str) and not isinstance(value, Markup):
        return Markup(value.replace("|", "\\|").replace("\n", " ")
                      .replace("<", "&lt;").replace(">", "&gt;"))
    return value


@functools.cache
def environment(markdown: bool = False) -> Environment:
    env = Environment(
        loader=PackageLoader("igestbench.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,  # a misspelt field fails the render, not the reader
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_markdown_cell if markdown else None,
    )
    env.filters.update(pct=pct, num=num, plural=plural)
    return env


@dataclass(frozen=True)
class Section:
    """A section of the page: its anchor (and template ``sections/<id>.html.j2``), its name in
    the navigation, and whether the report has anything for it."""

    id: str
    title: str
    shown: Callable[[Report], bool] = lambda report: True


#: The page's sections in order: the summary first, the matrices, the trend, then the detail.
SECTIONS = (
    Section("summary", "Summary", lambda r: r.summary is not None),
    Section("notices", "Notices", lambda r: bool(r.notices)),
    Section("participation", "Participation"),
    Section("success", "Success"),
    Section("ids_success", "IDS success", lambda r: r.ids_success is not None),
    Section("trend", "Trend", lambda r: r.trend is not None),
    Section("scores", "Scores"),
    Section("benchmarks", "Benchmarks"),
    Section("interfaces", "SOAP and REST", lambda r: bool(r.interfaces)),
    Section("scale", "Catalogue size", lambda r: r.scale is not None),
    Section("transfers", "Data Service", lambda r: bool(r.transfers)),
    Section("charts", "Charts"),
    Section("runs", "Runs"),
)


def render_html(report: Report) -> str:
    every = (*report.charts, *(report.scale.charts if report.scale else ()))
    charts = {chart.key: Markup(chart.svg) for chart in every}  # plot.py's SVG, every label escaped
    # the charts' styles, each once: class names are hashes of the declarations (svg.py)
    styles = dict(style for chart in every for style in chart.styles)
    chart_css = Markup("\n".join(f".{name}{{{rule}}}" for name, rule in sorted(styles.items())))
    sections = [s for s in SECTIONS if s.shown(report)]
    return environment().get_template("report.html.j2").render(
        r=report, svg=charts, chart_css=chart_css, sections=sections)


def render_markdown(report: Report) -> str:
    return environment(markdown=True).get_template("report.md.j2").render(r=report)


#: The columns of summary-targets.csv: one row per target and column of the page's summary.
SUMMARY_CSV = ("target", "operator", "figure", "value", "unit", "text", "best", "note")


def summary_csv_rows(summary: CampaignSummary) -> Iterable[Sequence[Any]]:
    """The page's summary as rows of :data:`SUMMARY_CSV`, each value with its unit and the
    text the page shows (the registry's, for the figures)."""
    for t in summary.rows:
        yield (t.target, t.operator, "works for", t.works, f"sites of {t.tried}",
               f"{t.works} of {t.tried} sites", t.target in summary.best_works,
               f"{t.cause_sites} sites: {t.cause}" if t.cause else "")
        cells = [*zip(summary.columns, t.figures, strict=True),
                 ("REST vs SOAP", t.rest_vs_soap), ("sustained", t.sustained),
                 ("score", t.score)]
        if summary.change_heading:
            cells.append((f"change {summary.change_heading}", t.change))
        for name, cell in cells:
            yield (t.target, t.operator, name, cell.value, cell.unit, cell.text, cell.best,
                   "; ".join(x for x in (cell.note, *cell.marks) if x))


#: A figure's text as the registry writes it (results/formatting.py): a bound, a number, and
#: a unit of words — ``-0.01 slope``, ``-3``, ``≥ 40.0 requests/s``. Nothing in it can call
#: anything, so it is written as it is, the same text as on the page and the terminal.
_FIGURE_TEXT = re.compile(r"[≥<]? ?[+-]?\d[\d,]*(\.\d+)?(e[+-]?\d+)?( [A-Za-z/%\u00d7 ]+)?")


def _safe(value: Any) -> Any:
    """A cell as the CSV holds it. Against CSV injection (OWASP): a text that a spreadsheet
    would read as a formula — starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return — gets a leading ``'``, so it stays text; but not a number, nor a figure's text
    (:data:`_FIGURE_TEXT`: ``-0.01 slope`` is a negative slope, not a formula)."""
    if isinstance(value, tuple):  # e.g. a row's failed workloads: one cell, space-separated
        value = " ".join(map(str, value))
    if isinstance(value, str) and value.startswith(_FORMULA_START) \
            and not _FIGURE_TEXT.fullmatch(value):
        return "'" + value
    return "" if value is None else value


def write_whole(path: Path, text: str) -> Path:
    """Write ``text`` to ``path`` whole or not at all: through a temporary file beside it,
    renamed over ``path`` once written, so that a full disk or a stop leaves no cut page or
    CSV behind (a browser shows a cut page without complaint) and an earlier file stays as it
    was. :class:`OSError` as the system gave it."""
    tmp = path.with_name(f".{path.name}.{token_hex(4)}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8", newline="")
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def _write(path: Path, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows([_safe(v) for v in row] for row in rows)
    return write_whole(path, out.getvalue())


def _ids_csv(report: Report, m: Success, directory: Path) -> list[Path]:
    """The IDS success matrix: ids-success.csv (a cell a row, ``no-ids`` where the target has
    none, with the reason a cell holds no count) and ids-success-summary.csv (its sums)."""
    return [
        _write(directory / "ids-success.csv",
               ["site", "target", "state", "passed", "total", "footnotes", "reason"],
               ([c.site, c.target, c.state, c.passed, c.total,
                 " ".join(report.ids_marks.get((c.site, c.target), ())), c.reason]
                for row in m.rows for c in row.cells)),
        _write(directory / "ids-success-summary.csv",
               ["kind", "name", "count", "ok", "fail", "no_ids", "success_percent",
                "coverage_percent"],
               [*(["site", row.site, *_sums(row.summary)] for row in m.rows),
                *(["target", name, *_sums(c)] for name, c in zip(m.targets, m.columns,
                                                                 strict=True)),
                ["total", "", *_sums(m.total)]]),
    ]


def _sums(s: Summary) -> list[Any]:
    return [s.count, s.ok, s.fail, s.absent, s.success, s.coverage]


def write_csv(report: Report, directory: Path) -> list[Path]:
    """The matrices and tables as CSV files in ``directory``; their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    p, s = report.participation, report.success
    written = [
        _write(directory / "participation.csv", ["site", "country", *p.parts, "count", "percent"],
               ([row.site, row.country, *row.cells, row.tally.count, row.tally.percent]
                for row in p.rows)),
        _write(directory / "success.csv",
               ["site", "target", "state", "passed", "total", "footnotes"],
               ([c.site, c.target, c.state, c.passed, c.total,
                 " ".join(report.marks.get((c.site, c.target), ()))]
                for row in s.rows for c in row.cells)),
        _write(directory / "success-summary.csv",
               ["kind", "name", "count", "ok", "fail", "success_percent", "coverage_percent"],
               [*(["site", row.site, row.summary.count, row.summary.ok, row.summary.fail,
                   row.summary.success, row.summary.coverage] for row in s.rows),
                *(["target", name, c.count, c.ok, c.fail, c.success, c.coverage]
                  for name, c in zip(s.targets, s.columns, strict=True)),
                ["total", "", s.total.count, s.total.ok, s.total.fail, s.total.success,
                 s.total.coverage]]),
        _write(directory / "footnotes.csv", ["letter", "target", "cause", "text", "hint", "sites"],
               ([f.letter, f.target, f.cause, f.text, f.hint, " ".join(f.sites)]
                for f in (*report.footnotes, *report.ids_footnotes))),
        _write(directory / "scores.csv",
               ["target", "aspect", "level", "score", "max", "evidence", "sites"],
               ([t.target, a.aspect, a.level, a.score, a.max, a.evidence, " ".join(a.sites)]
                for t in report.scores for a in t.aspects)),
    ]
    if report.ids_success is not None:  # the IDS's checks, apart from the catalogue's
        written += _ids_csv(report, report.ids_success, directory)
    written.append(_write(
        directory / "interfaces.csv",
        ["target", "site", "operation", "unit", "interface", "flavour", "clients",
         "ops_per_s", "p50_ms", "p99_ms", "failed", "text", "marks"],
        # text and marks: a capped sweep's 40.0 is "≥ 40.0 requests/s", a bound, as on the page
        ([t.target, t.site, row.operation, row.unit, col.interface, col.flavour, col.clients,
          cell.ops_per_s, cell.p50_ms, cell.p99_ms, cell.failed,
          cell.rate_text if cell.ops_per_s is not None else "", " ".join(cell.marks)]
         for t in report.interfaces for row in t.rows
         for col, cell in zip(t.columns, row.cells, strict=True)),
    ))
    if report.scale is not None:
        written.append(_write(directory / "scale.csv", SCALE_CSV_HEADER,
                              report.scale.cells))
    if report.transfers:  # the figures as numbers (the registry's values); texts on the page
        columns = [f for f in report.transfers[0].__dataclass_fields__ if not f.endswith("_text")]
        written.append(_write(directory / "transfers.csv", columns,
                              ([getattr(row, f) for f in columns] for row in report.transfers)))
    # the row's figures as numbers (the registry's values); their texts are on the page
    # every counted run's figures as the registry gives them (value and unit apart)
    written.append(_write(directory / "summary.csv", SUMMARY_CSV_FIELDS,
                          (summary_csv_cells(run, row) for run in report.figure_runs
                           for row in run.figures)))
    if report.summary is not None:  # the page's summary: one row per target and column
        written.append(_write(directory / "summary-targets.csv", SUMMARY_CSV,
                              summary_csv_rows(report.summary)))
    # the table's columns, rows or none (the Markdown's header, too)
    fields = [f.name for f in dataclasses.fields(BenchmarkRow) if f.name != "figures"]
    written.append(_write(directory / "benchmarks.csv", fields,
                          ([getattr(row, f) for f in fields] for row in report.benchmarks)))
    return written
