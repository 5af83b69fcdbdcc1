"""The figures sv7 shows, each defined once, and the one way each is written with its unit.

A *figure* is a number a run reports: a workload's rate or latency at one concurrency level, its
error count, a load sweep's sustained rate. This module is the only definition of each — what is
counted, over which calls, its unit, what its sample count counts — and every printer asks it:
the terminal (the live line, the line ending each phase, the end-of-run summary), the result
file's ``summary`` list, the report's tables, charts, CSV and Markdown, and ``--fail-on``. So
the same figure is the same number, written the same way (:attr:`SummaryRow.text`), everywhere.

Figures are computed from the result file's own entries (a ``benchmarks`` or ``sweeps`` item),
never from a live run's objects: a file read back gives exactly what the run printed, and a file
written before ``summary`` existed gets its rows by the same rules (:func:`summary_rows`).

Use::

    from igestbench.results.figures import summary_rows, format_value

    for row in summary_rows(result):          # a ResultFile, or a result document (a dict)
        print(row.workload, row.interface, row.flavour, row.clients, row.metric, row.text)
    # e.g.  burst soap zeep 1 createMany rate  9,400 Datafiles/s

    entry_figures(entry)        # the rows of one ``benchmarks`` entry
    sweep_figures(sweep)        # the row of one ``sweeps`` entry (its sustained rate)
    figure("burst", "createMany rate")   # the definition: unit, what is counted, over what
    format_value(412.3, "Datafiles/s") == "412 Datafiles/s"

    index = RowIndex(summary_rows(result))   # look figures up one by one (tables, charts)
    index.get("burst", "soap", "zeep", 1, "createMany rate")

    for run, row in campaign_summary(campaign):    # summary.csv: SUMMARY_CSV_FIELDS columns
        writer.writerow(summary_csv_cells(run, row))

A row's ``marks`` (``client-bound``, ``machine-busy``, ``failed``, ``capped``) and ``bound``
(``lower``: ≥, ``upper``: <) are what the page marks on the figure; ``note`` says why, and
``reason`` is the figure's own part of it (why it failed or has no value). A sweep's verdict
and its lines for a terminal are in :mod:`igestbench.results.sweeps`
(``sweep_lines(entry, label)``, ``step_line(step, slo_ms)``). A new part with headline figures
adds its definitions to :data:`FIGURES` (in :mod:`~igestbench.results.figure_defs`) and its
section to :data:`SECTION_FIGURES`.

**The definitions** (:mod:`igestbench.results.figure_defs`, re-exported here): each workload's
unit of work is a :class:`Measure` with four figures (``rate``, ``mean``, ``p50``, ``p99``), and
:func:`figure` gives a figure's :class:`Figure` — what it counts, over what, its unit and its
samples.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from igestbench.results.campaign import Campaign, CampaignRun
from igestbench.results.contents import vouched
from igestbench.results.figure_defs import (
    ERRORS,
    FIGURES,
    GROWTH,
    IDS,
    MB_S,
    MEAN,
    MEASURES,
    MS,
    P50,
    P99,
    POPULATION_RATE,
    RATE,
    SCALE,
    STATS,
    SUSTAINED,
    Figure,
    Measure,
    figure,
    ids_sizes,
    measures_of,
)
from igestbench.results.format import DEFAULT_INTERFACE
from igestbench.results.formatting import format_number, format_value
from igestbench.results.loader import ResultFile
from igestbench.results.pooling import pooled_percentiles_ms
from igestbench.results.rows import (
    SUMMARY_CSV_FIELDS,
    SUMMARY_FIELDS,
    RowIndex,
    SummaryRow,
    summary_csv_cells,
)
from igestbench.results.sweeps import sweep_verdict

__all__ = [
    "BENCHMARK_CALLS",
    "ERRORS",
    "FIGURES",
    "GROWTH",
    "IDS",
    "MB_S",
    "MEAN",
    "MEASURES",
    "MS",
    "P50",
    "P99",
    "POPULATION_RATE",
    "RATE",
    "SCALE",
    "SECTION_FIGURES",
    "STATS",
    "SUMMARY_CSV_FIELDS",
    "SUMMARY_FIELDS",
    "SUSTAINED",
    "Figure",
    "Measure",
    "RowIndex",
    "SummaryRow",
    "benchmark_calls",
    "calls_of",
    "campaign_summary",
    "cap_option",
    "client_bound",
    "compute_summary",
    "entry_figures",
    "entry_rate",
    "figure",
    "format_number",
    "format_value",
    "ids_sizes",
    "measures_of",
    "section_rows",
    "summary_csv_cells",
    "summary_rows",
    "sweep_figures",
]

def _stored(value: float | None) -> float | None:
    """A value as the file keeps it: six significant digits (the text shows three)."""
    return None if value is None or not math.isfinite(value) else float(f"{value:.6g}")


#: What :func:`benchmark_calls` counts, in words (the reliability score's evidence says it).
BENCHMARK_CALLS = ("calls of the benchmark workloads, successful warm ones and failed ones (a "
                   "createMany call is one call, whatever its batch); load sweeps are not "
                   "counted")


def benchmark_calls(rows: Iterable[SummaryRow]) -> tuple[int, int]:
    """(calls, failed) of a run's benchmarks, from its summary rows: per measure and level the
    samples of its rate — the successful warm calls, never the Datafiles a batch makes — and the
    ``errors`` of each entry (failed calls and clients that stopped). The scale part's rows
    (its population rate's samples are Datafiles) and the sweeps' are not calls of a benchmark
    workload: see :data:`BENCHMARK_CALLS`; the scale part's query calls are counted from its
    section (``scale_rows.scale_calls``)."""
    workloads = {m.workload for m in MEASURES} | {IDS}
    calls = failed = 0
    for row in rows:
        if row.workload not in workloads:
            continue
        if row.metric == ERRORS:
            failed += int(row.value or 0)
        elif row.metric.rsplit(" ", 1)[-1] == RATE:
            calls += row.samples
    return calls + failed, failed


# --- figures of a benchmarks entry --------------------------------------------------------------

_WORKER = re.compile(r"^worker \d+: ")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _ops(entry: Mapping[str, Any], names: Iterable[str]) -> list[Mapping[str, Any]]:
    ops = entry.get("ops")
    if not isinstance(ops, Mapping):
        return []
    return [ops[n] for n in names if isinstance(ops.get(n), Mapping)]


def _listed(op: Mapping[str, Any], key: str) -> int:
    values = op.get(key)
    return len(values) if isinstance(values, list) else 0


def _clients(entry: Mapping[str, Any], calls: Sequence[Mapping[str, Any]]) -> int:
    """The clients that made the measure's calls: one cold call each (fewer than the level when
    a client stopped before); files without cold calls: the level."""
    started = max((_listed(op, "cold_ms") for op in calls), default=0)
    level = entry.get("concurrency")
    return started or (level if isinstance(level, int) and level > 0 else 1)


def _units_per_call(entry: Mapping[str, Any], measure: Measure,
                    calls: Sequence[Mapping[str, Any]]) -> float:
    if not measure.batched:
        return 1.0
    checks = entry.get("checks") if isinstance(entry.get("checks"), Mapping) else {}
    assert isinstance(checks, Mapping)
    expected = checks.get(f"{measure.name}.expected")
    made = sum(_count(op.get("count")) + _listed(op, "cold_ms") + _listed(op, "after_outage_ms")
               for op in calls)
    if isinstance(expected, int) and expected > 0 and made > 0:
        return expected / made  # every call's batch, the last smaller one included
    batch = checks.get("batch_size")
    return float(batch) if isinstance(batch, int) and batch > 0 else 1.0


def _weighted_mean(ops: Sequence[Mapping[str, Any]]) -> tuple[float, int] | None:
    """(mean ms, calls) of the successful calls of ``ops`` pooled; None without any."""
    pairs = [(mean, _count(op.get("ok"))) for op in ops
             if (mean := _number(op.get("mean_ms"))) is not None and _count(op.get("ok"))]
    calls = sum(n for _, n in pairs)
    return (sum(m * n for m, n in pairs) / calls, calls) if calls else None


def _busy_ms(ops: Sequence[Mapping[str, Any]]) -> float:
    total = 0.0
    for op in ops:
        mean = _number(op.get("mean_ms"))
        total += (mean or 0.0) * _count(op.get("ok")) + (_number(op.get("failed_ms")) or 0.0)
    return total


def _calls_parts(entry: Mapping[str, Any], measure: Measure
                 ) -> tuple[list[Mapping[str, Any]], list[Mapping[str, Any]]]:
    """The measure's call operations in ``entry``, and the parts timed apart inside them (the
    legacy names of files written before the call was timed whole)."""
    calls = _ops(entry, measure.calls)
    if calls or not measure.legacy[0]:
        return calls, []
    return _ops(entry, measure.legacy[0]), _ops(entry, measure.legacy[1])


def entry_rate(entry: Mapping[str, Any], measure: Measure) -> tuple[float | None, int]:
    """(rate in ``measure.unit``, successful calls) of one benchmark entry; see the module's
    docstring for the definition."""
    calls, parts = _calls_parts(entry, measure)
    ok = sum(_count(op.get("ok")) for op in calls)
    busy = _busy_ms(calls) + _busy_ms(parts)
    if not ok or busy <= 0:
        return None, ok
    units = ok * _units_per_call(entry, measure, calls)
    return units * _clients(entry, calls) * 1000.0 / busy, ok


def _latency(entry: Mapping[str, Any], measure: Measure) -> tuple[dict[str, float | None], int]:
    every, part_ops = _calls_parts(entry, measure)
    calls = [op for op in every if _count(op.get("ok"))]
    pooled = _weighted_mean(calls)
    if pooled is None:
        return {MEAN: None, P50: None, P99: None}, 0
    mean, n = pooled
    parts = _weighted_mean(part_ops)
    if parts is not None:
        mean += parts[0]
    if len(calls) == 1 and (p50 := _number(calls[0].get("p50_ms"))) is not None \
            and (p99 := _number(calls[0].get("p99_ms"))) is not None:
        return {MEAN: mean, P50: p50, P99: p99}, n  # the run's exact percentiles
    histograms = [op["histogram"] for op in calls if isinstance(op.get("histogram"), str)]
    p50, p99 = pooled_percentiles_ms(histograms, (50.0, 99.0)) if histograms else (None, None)
    return {MEAN: mean, P50: p50, P99: p99}, n


def calls_of(ops: Iterable[str]) -> set[str]:
    """The operations among ``ops`` that are calls, not steps timed inside another recorded
    operation (``full-cycle/lookup Dataset`` inside ``full-cycle``): a failed step fails its
    call too, and one failure is one error."""
    names = set(ops)
    return {op for op in names
            if not any("/".join(op.split("/")[:i]) in names for i in range(1, op.count("/") + 1))}


def _errors(entry: Mapping[str, Any]) -> int:
    recorded = entry.get("errors")
    if isinstance(recorded, Mapping) and "calls" in recorded:
        return _count(recorded.get("calls")) + _count(recorded.get("clients"))
    # files before the count: failed warm calls, and clients that stopped with an error
    ops = entry.get("ops") if isinstance(entry.get("ops"), Mapping) else {}
    assert isinstance(ops, Mapping)
    calls = calls_of(ops)
    failed = sum(_count(op.get("count")) - _count(op.get("ok")) for name, op in ops.items()
                 if name in calls and isinstance(op, Mapping))
    stopped = sum(1 for p in entry.get("problems") or () if _WORKER.match(str(p)))
    return failed + stopped


def _stop_cause(entry: Mapping[str, Any]) -> str | None:
    """Why the entry's clients stopped, as the first of them said it."""
    problems = [str(p) for p in entry.get("problems") or () if _WORKER.match(str(p))]
    return _WORKER.sub("", problems[0]) if problems else None


def client_bound(entry: Mapping[str, Any]) -> bool | None:
    """Whether the suite's own clients were saturated while they measured ``entry`` (its
    figures then understate the server); None when the file cannot say: files written before
    the suite measured its own processes flagged a busy *machine*, which says nothing of the
    client, so their flag is not taken."""
    cpu = entry.get("client_cpu")
    if not isinstance(cpu, Mapping) or not isinstance(cpu.get("bound"), bool):
        return None
    return bool(cpu["bound"])


def _client_marks(entry: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The marks the client's CPU puts on an entry's figures, and their notes: ``client-bound``
    (the suite's clients saturated), ``machine-busy`` (they waited for a core: other jobs, a
    catalogue on the same host — the figures include that wait)."""
    cpu = entry.get("client_cpu")
    if not isinstance(cpu, Mapping):
        return (), ()
    marks, notes = [], []
    if client_bound(entry):
        marks.append("client-bound")
        notes.append(f"client-bound: {cpu['why']}" if cpu.get("why") else "client-bound")
    if cpu.get("machine_busy") is True:
        marks.append("machine-busy")
        notes.append(f"machine busy: {cpu['busy_why']}" if cpu.get("busy_why")
                     else "machine busy")
    return tuple(marks), tuple(notes)


def _row(entry: Mapping[str, Any], metric: str, value: float | None, unit: str, samples: int,
         marks: Sequence[str] = (), notes: Sequence[str | None] = ()) -> SummaryRow:
    kept = _stored(value)
    concurrency = entry.get("concurrency")
    return SummaryRow(
        workload=str(entry.get("workload")),
        interface=str(entry.get("interface") or DEFAULT_INTERFACE),
        flavour=str(entry.get("flavour")),
        clients=concurrency if isinstance(concurrency, int) else None,
        metric=metric, value=kept, unit=unit,
        text="failed" if kept is None and "failed" in marks else format_value(kept, unit),
        samples=samples, marks=tuple(marks),
        note="; ".join(n for n in notes if n) or None,
    )


def entry_figures(entry: Mapping[str, Any]) -> list[SummaryRow]:
    """Every figure of one ``benchmarks`` entry: each measure's rate, mean, p50 and p99, then
    the entry's error count. A measure without a successful warm call has no value: ``failed``
    (with the cause) when the entry's clients stopped, else ``—`` saying why."""
    workload = str(entry.get("workload"))
    errors = _errors(entry)
    cause = _stop_cause(entry)
    common_marks, common_notes = _client_marks(entry)
    rows: list[SummaryRow] = []
    sizes = dict(ids_sizes(entry)) if workload == IDS else {}
    for measure in measures_of(workload, entry):
        rate, ok = entry_rate(entry, measure)
        latency, _ = _latency(entry, measure)
        marks, notes = list(common_marks), list(common_notes)
        if not ok:
            calls = _calls_parts(entry, measure)[0]
            if cause is not None or any(_count(op.get("count")) for op in calls):
                marks.append("failed")  # the clients stopped, or every warm call failed
                notes.insert(0, f"failed: {cause}" if cause else "failed: no call succeeded")
            elif any(_listed(op, "cold_ms") for op in calls):
                notes.insert(0, "no warm call: each client's first call is reported apart "
                                "(cold); more calls measure it (--files, --batch-size)")
            else:
                notes.insert(0, "not measured")
        rows.append(_row(entry, measure.metric(RATE), rate, measure.unit, ok, marks, notes))
        if workload == IDS:  # the same calls' bandwidth: files/s x the file's size
            size = sizes.get(measure.name.split(" ", 1)[1], 0)
            mb_s = rate * size / 1e6 if rate is not None else None
            rows.append(_row(entry, measure.metric(MB_S), mb_s, MB_S, ok, marks, notes))
        for stat in (MEAN, P50, P99):
            rows.append(_row(entry, measure.metric(stat), latency[stat], MS, ok, marks, notes))
    if measures_of(workload, entry):
        rows.append(_row(entry, ERRORS, float(errors), "errors", errors, (),
                         (cause,) if cause else ()))
    return rows


# --- figures of a sweep, and of a whole result -------------------------------------------------

def sweep_figures(sweep: Mapping[str, Any], cap_option: str = "--max-rate") -> list[SummaryRow]:
    """The figure of one ``sweeps`` entry: its sustained rate, bounded when the sweep could not
    place it (``≥`` capped, ``<`` the lowest step), with the verdict as the row's note."""
    verdict = sweep_verdict(sweep, cap_option)
    value = _stored(verdict.value)
    unit = figure("sweep", SUSTAINED).unit
    return [SummaryRow(
        workload="sweep", interface=str(sweep.get("interface") or DEFAULT_INTERFACE),
        flavour=str(sweep.get("flavour") or "lean"), clients=None, metric=SUSTAINED,
        value=value, unit=unit, text=format_value(value, unit, verdict.bound),
        samples=verdict.samples, bound=verdict.bound if value is not None else None,
        marks=verdict.marks, note=verdict.reason,
    )]


def cap_option(run: Mapping[str, Any]) -> str:
    """The option that set a run's highest demanded rate, as a capped sweep names it."""
    return "--rates/--max-rate" if run.get("mode") == "swarm" else "--max-rate"


def _benchmark_rows(entry: Mapping[str, Any], run: Mapping[str, Any]) -> list[SummaryRow]:
    return entry_figures(entry)


def _sweep_rows(sweep: Mapping[str, Any], run: Mapping[str, Any]) -> list[SummaryRow]:
    return sweep_figures(sweep, cap_option(run))


def _scale_rows(section: Mapping[str, Any], run: Mapping[str, Any]) -> list[SummaryRow]:
    from igestbench.results.scale_rows import scale_rows  # it asks this registry (no cycle)

    return scale_rows(section)


#: The sections whose contents have figures in the summary, in the summary's order, and the
#: rows of one of their items (of a list section) or of the section itself (an object), given
#: the file's ``run``. A new part with headline figures adds its section here: the writer and
#: :func:`compute_summary` then keep its rows.
SECTION_FIGURES: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[SummaryRow]]] = {
    "benchmarks": _benchmark_rows,
    "sweeps": _sweep_rows,
    "scale": _scale_rows,
}


def section_rows(name: str, content: Any, run: Mapping[str, Any]) -> list[SummaryRow]:
    """The rows of one section of a result document (:data:`SECTION_FIGURES`)."""
    rows_of = SECTION_FIGURES[name]
    if isinstance(content, list):
        return [row for item in content if isinstance(item, Mapping) for row in rows_of(item, run)]
    return rows_of(content, run) if isinstance(content, Mapping) else []


def compute_summary(doc: Mapping[str, Any]) -> list[SummaryRow]:
    """The summary rows of a result document, computed from its entries (what the runner
    writes as ``summary``, and what a file without one reads as)."""
    run = doc.get("run") if isinstance(doc.get("run"), Mapping) else {}
    assert isinstance(run, Mapping)
    return [row for name in SECTION_FIGURES for row in section_rows(name, doc.get(name), run)]


def summary_rows(result: ResultFile | Mapping[str, Any]) -> list[SummaryRow]:
    """The summary rows of a run, computed from its measurements by the registry's rules —
    what its file's ``summary`` holds when nothing edited it. The figures shown are always the
    ones its entries give: a file's own rows are a copy for its readers (jq, a spreadsheet),
    and one that disagrees with its entry, or has none, is named as damage where the file is
    loaded (:mod:`.contents`) instead of shown (a row edited to 999 ms was shown as measured).
    A file from before the list existed, or cut short before it was written, reads the same."""
    doc = result.raw if isinstance(result, ResultFile) else result
    cached = _READ.get(id(doc))
    if cached is not None and cached[0] is doc:  # the tables and every chart ask per run
        return list(cached[1])
    stored = doc.get("summary")
    if vouched(doc) and isinstance(stored, list):
        # merge checked these rows against the measurements, and the seal says no edit since:
        # read as they are (computing them again costs a 900-run report over a second)
        rows = [row for item in stored if isinstance(item, Mapping)
                and (row := SummaryRow.from_dict(item)) is not None]
        if doc.get("scale") and not any(row.workload == SCALE for row in rows):
            # written before the scale part's figures were in the summary: the same rules
            run = doc.get("run") if isinstance(doc.get("run"), Mapping) else {}
            assert isinstance(run, Mapping)
            rows += section_rows("scale", doc.get("scale"), run)
    else:
        rows = compute_summary(doc)
    remember(doc, rows)
    return rows


def remember(doc: Mapping[str, Any], rows: Sequence[SummaryRow]) -> None:
    """Keep ``rows`` as the summary rows of ``doc`` (computed where it was loaded), keeping
    the document too, so that its id cannot be reused."""
    if len(_READ) >= _READ_LIMIT:
        _READ.clear()
    _READ[id(doc)] = (doc, tuple(rows))


#: The rows of the documents read lately, by the document's id (documents are not changed once
#: read: a ResultFile's raw document is the loader's).
_READ: dict[int, tuple[Mapping[str, Any], tuple[SummaryRow, ...]]] = {}
_READ_LIMIT = 4096


def campaign_summary(campaign: Campaign) -> list[tuple[CampaignRun, SummaryRow]]:
    """Every run's summary rows, with the run each comes from, in the campaign's order: what
    ``sv7 report --csv`` writes as summary.csv (:data:`SUMMARY_CSV_FIELDS`,
    :func:`summary_csv_cells`)."""
    return [(run, row) for run in campaign.runs for row in summary_rows(run.result)]
