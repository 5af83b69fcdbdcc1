"""Workload 3: burst ingestion of many Datafiles into one existing Dataset.

The same number of Datafiles goes in one ``create`` per file and in ``createMany`` batches, and
afterwards the server is asked how many there are: exactly N, or the run says so.
"""

from __future__ import annotations

from igestbench.icat.beans import Bean
from igestbench.icat.query import Condition, Query
from igestbench.workloads.base import WorkloadContext, WorkloadResult

NAME = "burst"


def _datafile(dataset_id: int, prefix: str, i: int) -> Bean:
    name = f"{prefix}-{i:06d}.nxs"
    return Bean(
        "Datafile",
        {
            "name": name,
            "location": f"/sv7/burst/{name}",
            "fileSize": 1024,
            "dataset": Bean("Dataset", {"id": dataset_id}),
        },
    )


def count_prefixed(ctx: WorkloadContext, dataset_id: int, prefix: str) -> int:
    query = (
        Query("Datafile")
        .where({"dataset.id": Condition("=", dataset_id), "name": Condition("LIKE", f"{prefix}-%")})
        .count()
    )
    (n,) = ctx.catalogue.search(query)
    return int(n)


def run_burst(
    ctx: WorkloadContext,
    dataset_id: int,
    count: int,
    batch_size: int = 500,
    modes: tuple[str, ...] = ("create", "createMany"),
) -> WorkloadResult:
    """Create ``count`` Datafiles per mode in Dataset ``dataset_id``; verify the counts."""
    checks: dict[str, int] = {"batch_size": batch_size}
    problems: list[str] = []
    for mode in modes:
        prefix = f"burst-{mode}"
        if mode == "create":
            for i in range(count):
                with ctx.timer.measure(f"{NAME}/create"):
                    new_id = ctx.catalogue.create(_datafile(dataset_id, prefix, i))
                ctx.journal.add("Datafile", new_id)
        elif mode == "createMany":
            for start in range(0, count, batch_size):
                beans = [
                    _datafile(dataset_id, prefix, i)
                    for i in range(start, min(start + batch_size, count))
                ]
                with ctx.timer.measure(f"{NAME}/createMany"):
                    ids = ctx.catalogue.create_many(beans)
                ctx.journal.add_many("Datafile", ids)
        else:
            raise ValueError(f"unknown burst mode {mode!r}")
        found = count_prefixed(ctx, dataset_id, prefix)
        checks[f"{mode}.expected"] = count
        checks[f"{mode}.found"] = found
        if found != count:
            problems.append(f"burst by {mode}: {count} Datafiles sent, {found} found")
    return WorkloadResult(NAME, ctx.recorder.drain(), checks, problems)
