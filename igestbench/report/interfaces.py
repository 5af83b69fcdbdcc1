"""SOAP and REST side by side: per run that measured REST, one row per operation and a column
group per interface (and the client that measured it), as the Handle.Net study reports each
operation per interface.

Every figure comes from the run's file (its ``benchmarks`` and ``sweeps``, each saying its
``interface``; a file from before REST was measured reads as SOAP), at the lowest concurrency
level the run measured, so that the interfaces are compared under the same load. A cell gives
operations per second and the latency of one call (p50 / p99, ms), as the registry of figures
gives them (results/figures.py). Units differ by row and the row says them: cycles, searches,
Datafiles created (createMany's batches counted), result sets, and the load sweep's sustained
rate (requests/s).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from igestbench.report.tables import _lowest  # the benchmark table's own rule
from igestbench.results.campaign import Campaign, CampaignRun
from igestbench.results.figures import (
    MEASURES,
    P50,
    P99,
    RATE,
    Measure,
    RowIndex,
    SummaryRow,
    format_value,
)
from igestbench.results.format import DEFAULT_INTERFACE, INTERFACES
from igestbench.results.pieces import benchmark_piece, sweep_piece

WORKLOADS = tuple(dict.fromkeys(m.workload for m in MEASURES))
#: The table's rows: what the page calls each operation, and its measure (workload, name).
OPERATIONS = (
    ("single-result lookup", ("single-query", "")),
    ("full cycle of one NeXus file", ("full-cycle", "")),
    ("create, one Datafile a call", ("burst", "create")),
    ("createMany", ("burst", "createMany")),
    ("search returning every Datafile", ("multi-query", "")),
)

#: How the page names an interface.
INTERFACE_NAMES = {"soap": "SOAP", "rest": "REST"}
#: The catalogue's interfaces compared here; the Data Service's figures have their own table
#: (report/transfers.py).
COMPARED = ("soap", "rest")


@dataclass(frozen=True)
class InterfaceColumn:
    interface: str
    flavour: str
    #: the concurrency level of its figures (the lowest measured); None for the sweep alone
    clients: int | None

    @property
    def label(self) -> str:
        return f"{INTERFACE_NAMES.get(self.interface, self.interface)} · {self.flavour}"


@dataclass(frozen=True)
class InterfaceCell:
    ops_per_s: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    #: the workload's workers failed: it measured nothing (not a 0)
    failed: bool = False
    #: the figures as the registry writes them (results/figures.py)
    rate_text: str = "—"
    p50_text: str = "—"
    p99_text: str = "—"
    #: the registry's marks on the rate (client-bound, capped …)
    marks: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return self.ops_per_s is None and self.p50_ms is None and self.p99_ms is None


@dataclass(frozen=True)
class InterfaceRow:
    operation: str
    #: what ops/s counts in this row
    unit: str
    cells: tuple[InterfaceCell, ...]


@dataclass(frozen=True)
class InterfaceTable:
    target: str
    site: str
    #: the site tested its own catalogue
    local: bool
    columns: tuple[InterfaceColumn, ...]
    rows: tuple[InterfaceRow, ...]
    #: measured by sv7 swarm (a load sweep from many hosts), beside the site's campaign run
    swarm: bool = False
    #: a combined cell whose interfaces come from different runs: which file gave which
    #: (results/pieces.py), since the table's figures are then not of one run
    sources: str = ""


def _interface(item: Mapping[str, Any]) -> str:
    return str(item.get("interface") or DEFAULT_INTERFACE)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _cell(rate: SummaryRow | None, p50: SummaryRow | None, p99: SummaryRow | None
          ) -> InterfaceCell:
    if rate is None:
        return InterfaceCell()
    return InterfaceCell(
        rate.value, p50.value if p50 else None, p99.value if p99 else None,
        failed="failed" in rate.marks, rate_text=rate.text,
        p50_text=p50.text if p50 else "—", p99_text=p99.text if p99 else "—", marks=rate.marks)


def _measure_cell(index: RowIndex, entry: Mapping[str, Any] | None, measure: Measure
                  ) -> InterfaceCell:
    """A measure's rate and the latency of one of its calls, as the registry gives them."""
    if entry is None:
        return InterfaceCell()
    key = (measure.workload, _interface(entry), str(entry["flavour"]), entry.get("concurrency"))
    level = key[3] if isinstance(key[3], int) else None
    return _cell(*(index.get(key[0], key[1], key[2], level, measure.metric(stat))
                   for stat in (RATE, P50, P99)))


def _sweep_cell(index: RowIndex, sweep: Mapping[str, Any] | None) -> InterfaceCell:
    """The sustained rate (bounded as the registry bounds it), and the corrected latency of the
    step that sustained it."""
    if sweep is None:
        return InterfaceCell()
    row = index.get("sweep", _interface(sweep), str(sweep.get("flavour") or "lean"), None,
                    "sustained")
    if row is None:
        return InterfaceCell()
    step = next((s for s in sweep.get("steps") or () if isinstance(s, dict)
                 and row.value is not None and _number(s.get("demanded_rate")) == row.value),
                None)
    latency = ((step or {}).get("latency_ms") or {}).get("corrected") or {}
    p50, p99 = _number(latency.get("p50")), _number(latency.get("p99"))
    return InterfaceCell(row.value, p50, p99, failed="failed" in row.marks, rate_text=row.text,
                         p50_text=format_value(p50, "ms"), p99_text=format_value(p99, "ms"),
                         marks=row.marks)


def _columns(run: CampaignRun) -> list[tuple[str, str]]:
    """(interface, flavour) pairs the run measured: SOAP first, in the file's order."""
    seen = dict.fromkeys((_interface(b), str(b["flavour"])) for b in run.result.benchmarks
                         if _interface(b) in COMPARED)
    seen.update(dict.fromkeys((_interface(s), str(s.get("flavour") or "lean"))
                              for s in run.result.sweeps if _interface(s) in COMPARED))
    rank = {name: i for i, name in enumerate(INTERFACES)}
    return sorted(seen, key=lambda pair: rank.get(pair[0], len(rank)))


def _table(run: CampaignRun, local: bool) -> InterfaceTable:
    columns = _columns(run)
    by_column: list[dict[str, Mapping[str, Any] | None]] = []
    sweeps: list[Mapping[str, Any] | None] = []
    levels: list[int | None] = []
    for interface, flavour in columns:
        entries = [b for b in run.result.benchmarks
                   if _interface(b) == interface and b["flavour"] == flavour]
        by_column.append({w: _lowest(entries, w) for w in WORKLOADS})
        sweeps.append(next((s for s in run.result.sweeps if _interface(s) == interface
                            and (s.get("flavour") or "lean") == flavour), None))
        found = [int(e["concurrency"]) for e in entries if isinstance(e.get("concurrency"), int)]
        levels.append(min(found) if found else None)

    def row(operation: str, unit: str, cell: Any) -> InterfaceRow:
        return InterfaceRow(operation, unit, tuple(cell(i) for i in range(len(columns))))

    index = RowIndex(run.figures)
    measures = {(m.workload, m.name): m for m in MEASURES}
    rows = []
    for operation, key in OPERATIONS:
        chosen = measures[key]
        rows.append(row(operation, chosen.unit,
                        lambda i, m=chosen: _measure_cell(index, by_column[i][m.workload], m)))
    rows.append(row("load sweep: sustained rate", "requests/s",
                    lambda i: _sweep_cell(index, sweeps[i])))
    kept = tuple(r for r in rows if not all(c.empty and not c.failed for c in r.cells))
    files: dict[str, list[str]] = {}
    for entry in (*run.result.benchmarks, *run.result.sweeps):
        piece = benchmark_piece(entry) if "workload" in entry else sweep_piece(entry)
        if piece.interface in COMPARED:
            names = files.setdefault(piece.interface.upper(), [])
            names += [f for f in (run.origin(str(piece)).file,) if f not in names]
    sources = "; ".join(f"{name} from {', '.join(found)}" for name, found in  # SOAP first
                        sorted(files.items(), key=lambda item: item[0] != "SOAP")) \
        if len({f for found in files.values() for f in found}) > 1 else ""
    return InterfaceTable(
        target=run.target, site=run.site, local=local, swarm=run.kind == "swarm",
        columns=tuple(InterfaceColumn(i, f, level)
                      for (i, f), level in zip(columns, levels, strict=True)),
        rows=kept, sources=sources,
    )


def _measured_rest(run: CampaignRun) -> bool:
    items: Sequence[Mapping[str, Any]] = (*run.result.benchmarks, *run.result.sweeps)
    return any(_interface(item) not in (DEFAULT_INTERFACE, "ids") for item in items)


def interface_tables(campaign: Campaign) -> list[InterfaceTable]:
    """One table per run that measured an interface besides SOAP, in matrix order (target,
    then site)."""
    site_rank = {s.name: i for i, s in enumerate(campaign.sites)}
    tables = []
    for target in campaign.targets:
        runs = sorted((r for r in campaign.runs if r.target == target.name),
                      key=lambda r: (site_rank[r.site], r.kind))
        tables += [_table(r, target.is_local_to(r.site)) for r in runs if _measured_rest(r)]
    return tables
