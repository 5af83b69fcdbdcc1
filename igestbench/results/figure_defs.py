"""The definition of each figure sv7 shows: what it counts, over which calls, its unit, and
what its sample count counts. :mod:`igestbench.results.figures` computes them from result files
and is what every printer asks; this module is only the definitions it and the registry share.

Each workload's unit of work is a :class:`Measure` (burst has two, one
``create`` per Datafile and ``createMany`` batches); each measure has four figures:

* ``rate`` (``cycles/s``, ``searches/s``, ``Datafiles/s``, ``result sets/s``): units of work per
  second, *over the time the clients spent in the measure's calls* —
  ``ok calls x units per call x clients / total call time`` (the failed calls' time counted). At one
  client it is 1000 / the mean in ms (times the Datafiles a createMany makes); at N clients it
  is Little's law with N calls in flight: what N clients calling back to back achieve at the
  latency they saw. It covers exactly the calls of ``mean``, so a rate never contradicts the
  latency beside it, and what a workload does between its unit calls (the paged searches of
  multi-query, the server-side counts, burst's other mode) cannot dilute it.
* ``mean``, ``p50``, ``p99`` (ms): latency of one call, over the successful *warm* calls. Each
  client's first call of an operation (cold connections and caches) is in the file apart
  (``cold_ms``) and in no figure. Operations of one measure are pooled (HdrHistograms added,
  means weighted by calls), never averaged. (Files written before a whole search was timed as
  one call have it in two parts, fetch and the client's decoding: their means are added in
  ``mean``, the percentiles are the fetch's.)

The sample count (:attr:`SummaryRow.samples`) is the successful warm calls behind the figure.
``errors`` (per entry) counts failed calls, the cold ones included, and clients that stopped
without one (a refused login, a failed preparation): it agrees with the stop cause. The sweep's
``sustained`` (requests/s) is the highest demanded rate meeting the objective; when the sweep
never broke it the value is a lower bound (``≥``, capped), when no step met it an upper bound
(``<`` the lowest step) — see :mod:`igestbench.results.sweeps`. Never ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

RATE, MEAN, P50, P99 = "rate", "mean", "p50", "p99"
#: The figures of every measure, in the order they are shown.
STATS = (RATE, MEAN, P50, P99)
#: Per benchmark entry: failed calls and clients that stopped.
ERRORS = "errors"
#: Per sweep: the highest demanded rate that met the objective.
SUSTAINED = "sustained"
#: The unit of every latency figure.
MS = "ms"
#: The scale part's figures (its ``scale`` section): per query latency, per size the rate at
#: which the tree grew, per query the growth of its latency with the tree.
SCALE, POPULATION_RATE, GROWTH = "scale", "population rate", "growth"


@dataclass(frozen=True)
class Measure:
    """A workload's unit of work: which operations' calls make it, and what its rate counts."""

    workload: str
    #: "" for a workload's only measure; burst's are "create" and "createMany"
    name: str
    #: the operations each of whose calls is one unit of work (or a batch of them)
    calls: tuple[str, ...]
    #: the rate's unit, naming what is counted
    unit: str
    #: what one unit is, in words
    counts: str
    #: a call makes several units: ``checks["<name>.expected"]`` ÷ the calls made
    batched: bool = False
    #: files written before the call was timed whole: (calls, parts) — operations timed apart
    #: inside one call (the fetch of a whole search, and the client's decoding of it)
    legacy: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    @property
    def ops(self) -> tuple[str, ...]:
        """Every operation the measure may read."""
        return (*self.calls, *self.legacy[0], *self.legacy[1])

    def metric(self, stat: str) -> str:
        """The figure's name in a summary row: ``rate``, or ``createMany rate`` for burst."""
        return f"{self.name} {stat}" if self.name else stat


MEASURES: tuple[Measure, ...] = (
    Measure("full-cycle", "", ("full-cycle",), "cycles/s",
            "full ingestion cycles of one NeXus file: read it, look up or create Facility to "
            "Dataset, create the Datafile"),
    Measure("single-query", "", ("single-query/jpql", "single-query/concise", "single-query/get"),
            "searches/s", "single-result lookups (JPQL, concise syntax and get), each answered "
            "with the right Datafile"),
    Measure("burst", "create", ("burst/create",), "Datafiles/s",
            "Datafiles created by one create call each"),
    Measure("burst", "createMany", ("burst/createMany",), "Datafiles/s",
            "Datafiles created by createMany calls (each call's batch counted)", batched=True),
    Measure("multi-query", "", ("multi-query/whole",), "result sets/s",
            "searches returning every Datafile of a Dataset, fetched and decoded",
            legacy=(("multi-query/whole/search", "multi-query/whole/fetch"),
                    ("multi-query/whole/decode",))),
)


#: The ids part (ingestion with the bytes through the IDS): its measures are per file size, so
#: they come from what a run asked for — a benchmark entry's ``checks["file_sizes"]``, or the
#: metrics of its summary rows (``put 1MiB rate``) — as :data:`MEASURES` would list them.
IDS = "ids"
#: Each file's bandwidth, beside the ids part's rate in files/s (the rate x the file's size).
MB_S = "MB/s"
_IDS_DIRECTIONS = {
    "put": "uploaded through the ICAT Data Service (put), each Datafile then checked on the "
           "catalogue for the size and checksum sent",
    "getData": "downloaded back through the IDS (getData), compared byte for byte with what "
               "was sent",
}
_IDS_METRIC = re.compile(r"(put|getData) (\S+) (rate|mean|p50|p99|MB/s)")


def _ids_measure(direction: str, label: str) -> Measure:
    return Measure(IDS, f"{direction} {label}", (f"ids/{direction}/{label}",), "files/s",
                   f"files of {label} {_IDS_DIRECTIONS[direction]}")


def ids_sizes(entry: Mapping[str, Any]) -> list[tuple[str, int]]:
    """(label, bytes) of the file sizes an ids entry measured, smallest first."""
    checks = entry.get("checks")
    sizes = checks.get("file_sizes") if isinstance(checks, Mapping) else None
    if not isinstance(sizes, Mapping):
        return []
    found = [(str(k), v) for k, v in sizes.items() if isinstance(v, int) and v > 0]
    return sorted(found, key=lambda pair: pair[1])


def measures_of(
    workload: str, entry: Mapping[str, Any] | None = None, metrics: Iterable[str] = ()
) -> tuple[Measure, ...]:
    """The measures of ``workload`` (none for a workload this version does not know); those of
    the ids part from ``entry`` (a benchmarks entry) or ``metrics`` (its summary rows')."""
    if workload == IDS:
        if entry is not None:
            labels = [label for label, _ in ids_sizes(entry)]
        else:
            found = (m for m in (_IDS_METRIC.fullmatch(x) for x in metrics) if m is not None)
            labels = list(dict.fromkeys(m.group(2) for m in found))
        return tuple(_ids_measure(d, label) for label in labels for d in _IDS_DIRECTIONS)
    return tuple(m for m in MEASURES if m.workload == workload)


@dataclass(frozen=True)
class Figure:
    """The definition of one figure: what a summary row with this workload and metric means."""

    workload: str
    metric: str
    unit: str
    #: what is counted
    counts: str
    #: over which calls or interval
    over: str
    #: what the sample count counts
    samples: str


_WARM = "the successful warm calls (each client's first call of an operation is apart, cold)"


def _figures() -> tuple[Figure, ...]:
    found: list[Figure] = []
    for m in MEASURES:
        found.append(Figure(m.workload, m.metric(RATE), m.unit, m.counts,
                            "the clients' time in these calls (failed ones included): ok calls x "
                            "units per call x clients / total call time", _WARM))
        for stat, what in ((MEAN, "mean"), (P50, "median"), (P99, "99th percentile")):
            part = (" (older files timed a whole search in parts: mean = fetch + decode, "
                    "percentiles of the fetch)" if m.legacy[1] else "")
            found.append(Figure(m.workload, m.metric(stat), MS,
                                f"{what} latency of one call{part}", _WARM, _WARM))
    for workload in dict.fromkeys(m.workload for m in MEASURES):
        found.append(Figure(workload, ERRORS, "errors",
                            "failed calls (cold ones included) and clients that stopped without "
                            "a failed call (refused login, failed preparation)",
                            "the whole run of the workload at this level", "the calls made"))
    for stat, what in ((MEAN, "mean"), (P50, "median"), (P99, "99th percentile")):
        found.append(Figure(SCALE, stat, MS, f"{what} latency of one call of one query of the "
                            "scale part's set, at one size of the tree, as one role over one "
                            "interface (answer checked)", "the timed calls after the warm-up, "
                            "each on another part of the tree", "the successful timed calls"))
    found.append(Figure(SCALE, POPULATION_RATE, "Datafiles/s", "Datafiles created by "
                        "createMany batches growing the tree to one size (their parameters, "
                        "Datasets and Investigations ride along)", "the wall time of that "
                        "size's creates", "the Datafiles added"))
    found.append(Figure(SCALE, GROWTH, "slope", "slope of log p50 latency against log size "
                        "(least squares): flat, logarithmic or linear (results/growth.py)",
                        "every size measured", "the sizes"))
    found.append(Figure("sweep", SUSTAINED, "requests/s",
                        "the highest demanded rate whose corrected mean and p99 stayed under the "
                        "objective with under 1 % errors; >= when no step broke it (capped), < "
                        "the lowest step when none met it",
                        "one step of the open-loop sweep", "the calls sent in that step"))
    return tuple(found)


#: Every figure this version defines.
FIGURES: tuple[Figure, ...] = _figures()
_BY_NAME = {(f.workload, f.metric): f for f in FIGURES}


def figure(workload: str, metric: str) -> Figure:
    """The definition of ``metric`` of ``workload``; KeyError for one that is not defined.

    The scale part's summary names its figures with their query and role (``name member
    p50``: results/scale_rows.py); the definition is that of the figure the name ends with.
    The ids part's are per direction and file size (``put 1MiB rate``)."""
    found = _BY_NAME.get((workload, metric))
    if found is None and workload == SCALE:
        found = _BY_NAME.get((workload, metric.rsplit(" ", 1)[-1]))
    if found is None and workload == IDS:
        found = _ids_figure(metric)
    if found is None:
        raise KeyError((workload, metric))
    return found


def _ids_figure(metric: str) -> Figure | None:
    """The ids part's figures, per direction and file size (``put 1MiB rate`` …)."""
    match = _IDS_METRIC.fullmatch(metric)
    if match is None:
        return None
    direction, label, stat = match.groups()
    counts = f"files of {label} {_IDS_DIRECTIONS[direction]}"
    if stat == MB_S:
        return Figure(IDS, metric, MB_S, f"megabytes (10^6 bytes) of those {counts}",
                      "the rate of the same calls x the file's size", _WARM)
    if stat == RATE:
        return Figure(IDS, metric, "files/s", counts,
                      "the clients' time in these calls (failed ones included): ok calls x "
                      "clients / total call time", _WARM)
    what = {MEAN: "mean", P50: "median", P99: "99th percentile"}[stat]
    return Figure(IDS, metric, MS, f"{what} latency of one call: {counts}", _WARM, _WARM)
