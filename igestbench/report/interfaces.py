"""SOAP and REST side by side: per run that measured REST, one row per operation and a column
group per interface (and the client that measured it), as the Handle.Net study reports each
operation per interface.

Every figure comes from the run's file (its ``benchmarks`` and ``sweeps``, each saying its
``interface``; a file from before REST was measured reads as SOAP), at the lowest concurrency
level the run measured, so that the interfaces are compared under the same load. A cell gives
operations per second and the latency of one call (p50 / p99, ms). Units differ by row and the
row says them: NeXus files ingested, lookups, Datafiles created (createMany's batches counted),
whole searches, and the load sweep's sustained rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from igestbench.report.series import failed
from igestbench.report.tables import _lowest, _pooled  # the benchmark table's own rules
from igestbench.results.campaign import Campaign, CampaignRun
from igestbench.results.format import DEFAULT_INTERFACE, INTERFACES
from igestbench.results.workloads import UNIT_OPS

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


def _interface(item: Mapping[str, Any]) -> str:
    return str(item.get("interface") or DEFAULT_INTERFACE)


def _op_cell(entry: Mapping[str, Any] | None, op: str, per_call: float) -> InterfaceCell:
    """One operation's calls: objects per second by one client calling back to back."""
    if entry is None:
        return InterfaceCell()
    stats = entry.get("ops", {}).get(op)
    if not isinstance(stats, dict) or not stats.get("ok"):
        return InterfaceCell(failed=failed(entry, str(entry["workload"])))
    mean = stats.get("mean_ms")
    rate = per_call * 1000.0 / mean if isinstance(mean, int | float) and mean > 0 else None
    pooled = _pooled(entry, (op,))  # percentiles from the histogram, as the other tables
    if pooled is None:
        return InterfaceCell(rate, _number(stats.get("p50_ms")), _number(stats.get("p99_ms")))
    return InterfaceCell(rate, pooled.percentile_ms(50.0), pooled.percentile_ms(99.0))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _unit_cell(entry: Mapping[str, Any] | None, workload: str) -> InterfaceCell:
    """A workload's unit of work: its throughput, and the pooled latency of its unit calls."""
    if entry is None:
        return InterfaceCell()
    if failed(entry, workload):
        return InterfaceCell(failed=True)
    pooled = _pooled(entry, UNIT_OPS[workload])
    return InterfaceCell(
        _number(entry.get("throughput_per_s")),
        pooled.percentile_ms(50.0) if pooled else None,
        pooled.percentile_ms(99.0) if pooled else None,
    )


def _whole_search(entry: Mapping[str, Any] | None) -> InterfaceCell:
    """The search returning every Datafile: calls per second on the client's whole time (the
    fetch and the decoding where a client times them apart); latency of the fetch (server and
    wire) there, of the whole call where the client cannot split it (python-icat)."""
    if entry is None:
        return InterfaceCell()
    ops = entry.get("ops", {})
    if "multi-query/whole/search" in ops:
        return _op_cell(entry, "multi-query/whole/search", 1)
    fetched = _op_cell(entry, "multi-query/whole/fetch", 1)
    decode = (ops.get("multi-query/whole/decode") or {}).get("mean_ms")
    if fetched.ops_per_s is None or not isinstance(decode, int | float):
        return fetched
    whole_ms = 1000.0 / fetched.ops_per_s + decode
    return InterfaceCell(1000.0 / whole_ms, fetched.p50_ms, fetched.p99_ms)


def _sweep_cell(sweep: Mapping[str, Any] | None) -> InterfaceCell:
    """The sustained rate, and the corrected latency of the step that sustained it."""
    if sweep is None:
        return InterfaceCell()
    rate = _number(sweep.get("sustained_rate"))
    step = next((s for s in sweep.get("steps") or () if isinstance(s, dict)
                 and rate is not None and s.get("demanded_rate") == rate), None)
    latency = ((step or {}).get("latency_ms") or {}).get("corrected") or {}
    return InterfaceCell(rate, _number(latency.get("p50")), _number(latency.get("p99")))


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
        by_column.append({w: _lowest(entries, w) for w in UNIT_OPS})
        sweeps.append(next((s for s in run.result.sweeps if _interface(s) == interface
                            and (s.get("flavour") or "lean") == flavour), None))
        found = [int(e["concurrency"]) for e in entries if isinstance(e.get("concurrency"), int)]
        levels.append(min(found) if found else None)

    def row(operation: str, unit: str, cell: Any) -> InterfaceRow:
        return InterfaceRow(operation, unit, tuple(cell(i) for i in range(len(columns))))

    sizes = [((e.get("checks") or {}).get("batch_size") if e else None)
             for e in (c["burst"] for c in by_column)]
    batch = [size if isinstance(size, int) and size > 0 else 1 for size in sizes]
    rows = [
        row("single-result lookup", "lookups/s",
            lambda i: _unit_cell(by_column[i]["single-query"], "single-query")),
        row("full cycle of one NeXus file", "files/s",
            lambda i: _unit_cell(by_column[i]["full-cycle"], "full-cycle")),
        row("create, one Datafile a call", "Datafiles/s",
            lambda i: _op_cell(by_column[i]["burst"], "burst/create", 1)),
        row("createMany", "Datafiles/s (batches counted)",
            lambda i: _op_cell(by_column[i]["burst"], "burst/createMany", batch[i])),
        row("search returning every Datafile", "searches/s (latency: server and wire)",
            lambda i: _whole_search(by_column[i]["multi-query"])),
        row("load sweep: sustained rate", "requests/s", lambda i: _sweep_cell(sweeps[i])),
    ]
    kept = tuple(r for r in rows if not all(c.empty and not c.failed for c in r.cells))
    return InterfaceTable(
        target=run.target, site=run.site, local=local,
        columns=tuple(InterfaceColumn(i, f, level)
                      for (i, f), level in zip(columns, levels, strict=True)),
        rows=kept,
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
                      key=lambda r: site_rank[r.site])
        tables += [_table(r, target.is_local_to(r.site)) for r in runs if _measured_rest(r)]
    return tables
