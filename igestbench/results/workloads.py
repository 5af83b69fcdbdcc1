"""The benchmark workloads a result file reports, and which operations make one unit of each.

The runner counts throughput in these units when it writes a ``benchmarks`` entry, and the
report reads the same entries back: both take the table from here, so that the report needs
nothing but the file (and this vocabulary of it).
"""

from __future__ import annotations

#: The operations that count as one unit of work of each workload (for throughput).
UNIT_OPS: dict[str, tuple[str, ...]] = {
    "full-cycle": ("full-cycle",),
    "single-query": ("single-query/jpql", "single-query/concise", "single-query/get"),
    "burst": ("burst/create", "burst/createMany"),
    "multi-query": ("multi-query/whole/search", "multi-query/whole/fetch"),
}
#: The ids part's unit: one file uploaded through the IDS (its ops name the size:
#: ``ids/put/1MiB`` …); its figures per size are the entry's ``transfers``.
IDS_UNIT = "ids/put"
