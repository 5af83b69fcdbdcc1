"""What the terminal says of the figures: the line ending each phase, and the summary at the end
of a run (as Locust and k6 end theirs) — every value as the registry writes it
(:mod:`igestbench.results.figures`), so the terminal, the file and the page say the same.

The end of a run is a table of the summary rows, one line per workload, interface, client and
concurrency level (its rate, mean, p50 and p99, calls and errors), then each load sweep: what it
sustained and why it ended there (:func:`igestbench.results.sweeps.sweep_lines`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from igestbench.results import ResultFileError, load_result
from igestbench.results.figures import (
    ERRORS,
    GROWTH,
    MB_S,
    MEAN,
    P50,
    P99,
    POPULATION_RATE,
    RATE,
    SCALE,
    SummaryRow,
    cap_option,
    measures_of,
    summary_rows,
)
from igestbench.results.formatting import format_slope
from igestbench.results.growth import FELL
from igestbench.results.scale_rows import growth_of, query_of
from igestbench.results.sweeps import interface_label, sweep_lines

__all__ = ["end_summary", "file_summary", "phase_line", "summary_table"]

_INTERFACES = {"soap": "SOAP", "rest": "REST", "ids": "IDS"}


def _by_metric(rows: Sequence[SummaryRow]) -> dict[str, SummaryRow]:
    return {r.metric: r for r in rows}


def phase_line(rows: Sequence[SummaryRow]) -> str:
    """One phase's figures in a line: ``29.4 cycles/s, mean 34.1 ms, p99 40.2 ms, 0 errors``
    (burst: each measure, ``create 344 Datafiles/s (mean 2.90 ms), createMany …``), with a
    measure's mark or why it has no value."""
    if not rows:
        return "no figures"
    figures = _by_metric(rows)
    parts = []
    measures = measures_of(rows[0].workload, metrics=[r.metric for r in rows])
    for measure in measures:
        rate = figures.get(measure.metric(RATE))
        mean = figures.get(measure.metric(MEAN))
        p99 = figures.get(measure.metric(P99))
        if rate is None:
            continue
        name = f"{measure.name} " if measure.name else ""
        if rate.value is None:
            why = (rate.reason or "")
            if "failed" in rate.marks:
                parts.append(f"{name}{why or 'failed'}")
            else:  # no value, and why in a word ("no warm call", "not measured")
                parts.append(f"{name}{rate.text}" + (f" ({why.split(':')[0]})" if why else ""))
            continue
        latency = ", ".join(f"{label} {r.text}" for label, r in (("mean", mean), ("p99", p99))
                            if r is not None)
        text = f"{name}{rate.text}"
        bandwidth = figures.get(measure.metric(MB_S))  # the ids part's: the same calls' MB/s
        if bandwidth is not None and bandwidth.value is not None:
            text += f" = {bandwidth.text}"
        parts.append(f"{text} ({latency})" if measure.name else f"{text}, {latency}")
    errors = figures.get(ERRORS)
    if errors is not None:
        parts.append(errors.text)
    line = ", ".join(parts)
    if any("client-bound" in r.marks for r in rows):
        line += " [client-bound]"
    return line


def _cells(row_rate: SummaryRow | None, figures: Mapping[str, SummaryRow], prefix: str
           ) -> list[str]:
    rate = row_rate.text if row_rate is not None else "—"
    bandwidth = figures.get(prefix + MB_S)  # the ids part's: the same calls' MB/s
    if row_rate is not None and row_rate.value is not None and bandwidth is not None \
            and bandwidth.value is not None:
        rate += f" = {bandwidth.text}"  # as the phase's line writes it
    cells = [rate]
    for stat in (MEAN, P50, P99):
        found = figures.get(prefix + stat)
        cells.append(found.text if found is not None else "—")
    return cells


#: How the table's last column names each mark.
_MARKS = {"client-bound": "client-bound", "machine-busy": "busy", "failed": "failed",
          "capped": "capped"}


def _mark_notes(flagged: dict[str, list[SummaryRow]]) -> list[str]:
    """One line per kind of mark: a failed measure each with its cause; the client's marks
    once, with how many lines carry them (their reasons differ only in their numbers)."""
    lines = []
    for row in flagged.get("failed", []):
        lines.append(f"failed: {_where(row)}: {(row.reason or '').removeprefix('failed: ')}")
    for mark, what in (("client-bound", "client-bound"), ("machine-busy", "machine busy")):
        rows = flagged.get(mark, [])
        if rows:
            reason = next((n.removeprefix(f"{what}: ") for n in (rows[0].note or "").split("; ")
                           if n.startswith(what)), "")
            alike = len(rows) - 1
            more = f"; {alike} more line{'s' if alike > 1 else ''} alike" if alike else ""
            lines.append(f"{_MARKS[mark]}: {_where(rows[0])}: {reason}{more}")
    for row in flagged.get("", []):
        lines.append(f"—: {_where(row)}: {row.reason}")
    return lines


def _where(row: SummaryRow) -> str:
    name = row.workload + (f" {row.metric.removesuffix(' rate')}" if row.metric != RATE else "")
    return (f"{name} · {_INTERFACES.get(row.interface, row.interface)} · {row.flavour} · "
            f"{row.clients} client{'s' if row.clients != 1 else ''}")


def summary_table(rows: Sequence[SummaryRow]) -> list[str]:
    """The benchmark rows as a table: one line per workload (burst: per measure), interface,
    client and level, with the rate, mean, p50, p99, the calls behind them, the errors and the
    marks; then what the marks mean, once per kind."""
    groups: dict[tuple[str, str, str, int | None], dict[str, SummaryRow]] = {}
    for row in rows:
        if row.workload in ("sweep", SCALE):  # a sweep's verdict and the scale part's lines
            continue
        groups.setdefault((row.workload, row.interface, row.flavour, row.clients), {})[
            row.metric] = row
    header = ["workload", "interface", "client", "clients", "rate", "mean", "p50", "p99",
              "calls", "errors", "marks"]
    table: list[list[str]] = []
    flagged: dict[str, list[SummaryRow]] = {}
    for (workload, interface, flavour, clients), figures in groups.items():
        errors = figures.get(ERRORS)
        for measure in measures_of(workload, metrics=figures):
            prefix = f"{measure.name} " if measure.name else ""
            rate = figures.get(measure.metric(RATE))
            name = f"{workload} {measure.name}" if measure.name else workload
            marks = rate.marks if rate is not None else ()
            table.append([name, _INTERFACES.get(interface, interface), flavour,
                          "—" if clients is None else str(clients), *_cells(rate, figures, prefix),
                          f"{rate.samples:,}" if rate is not None else "0",
                          errors.text if errors is not None else "—",
                          ", ".join(_MARKS.get(m, m) for m in marks)])
            if rate is None:
                continue
            for mark in marks:
                flagged.setdefault(mark, []).append(rate)
            if rate.value is None and "failed" not in marks:
                flagged.setdefault("", []).append(rate)  # no value: say why
    if not table:
        return []
    widths = [max(len(r[i]) for r in (header, *table)) for i in range(len(header))]
    numeric = {3, 4, 5, 6, 7, 8}

    def fmt(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    return [fmt(header), *(fmt(r) for r in table), *_mark_notes(flagged)]


def scale_lines(rows: Sequence[SummaryRow]) -> list[str]:
    """The scale part's summary rows in lines: how fast the tree grew, then per interface and
    query its p50 as root and as the member at the largest size, and its growth word."""
    scale = [r for r in rows if r.workload == SCALE]
    if not scale:
        return []
    lines = ["scale (p50 at the largest size, as root / as the member; growth of root's p50 "
             "with the tree):"]
    lines += [f"  population: {r.text} ({r.note})" for r in scale if r.metric == POPULATION_RATE]
    by_query: dict[tuple[str, str], dict[str, SummaryRow]] = {}
    for r in scale:
        if r.metric != POPULATION_RATE:
            query, rest = query_of(r.metric)
            by_query.setdefault((r.interface, query), {})[rest] = r
    for (interface, query), figures in by_query.items():
        p50s = " / ".join(figures[f"{role} {P50}"].text for role in ("root", "member")
                          if f"{role} {P50}" in figures)  # fmt: skip
        lines.append(f"  {_INTERFACES.get(interface, interface):4} {query:17} {p50s}"
                     f"{_growth_text(figures.get(f'root {GROWTH}'))}")
    return lines


def _growth_text(growth: SummaryRow | None) -> str:
    """``; flat (slope 0.03)``, and what a growing cost means (read from its note, as
    :mod:`igestbench.results.scale_rows` wrote it: ``linear: the database scans …``)."""
    if growth is None or growth.value is None or not growth.note:
        return ""
    word, meaning = growth_of(growth.note)
    # a flat line that stayed flat needs no words; one that fell does (it is noise, not a gain)
    said = word != "flat" or meaning == FELL
    return f"; {word} (slope {format_slope(growth.value)})" + (f": {meaning}" if said else "")


def end_summary(rows: Sequence[SummaryRow], sweeps: Sequence[Mapping[str, Any]],
                cap_option: str = "--max-rate") -> list[str]:
    """The end of a run: the summary table, the scale part's lines, then each sweep's verdict
    and steps."""
    lines: list[str] = []
    table = summary_table(rows)
    if table:
        lines += ["summary (rate: units of work per second of the clients' time in those "
                  "calls; latency of the successful warm calls):", *(f"  {t}" for t in table)]
    lines += scale_lines(rows)
    for sweep in sweeps:
        lines += sweep_lines(sweep, interface_label(sweep), cap_option)
    return lines


def file_summary(path: Path) -> list[str]:
    """The end-of-run summary of the result file at ``path``, from the file itself: the terminal
    prints exactly what the file (and so the report) holds."""
    try:
        result = load_result(path)
    except ResultFileError as exc:
        return [f"no summary: {exc}"]
    status = result.raw["run"].get("status")
    if status != "complete":  # the figures below are not the run asked for: say so first
        return [f"the run is {status}: the summary holds only what was measured before it "
                "stopped (the result file's notes say why)",
                *end_summary(summary_rows(result), result.sweeps, cap_option(result.raw["run"]))]
    return end_summary(summary_rows(result), result.sweeps, cap_option(result.raw["run"]))
