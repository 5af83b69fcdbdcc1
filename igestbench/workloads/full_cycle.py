"""Workload 1: complete ingestion cycles, Facility to Datafile, one NeXus file each."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from igestbench.client.transport import TransportFailure
from igestbench.icat.faults import IcatError
from igestbench.icat.query import Condition, Query
from igestbench.workloads.base import WorkloadContext, WorkloadResult
from igestbench.workloads.ingest import Ingestor

NAME = "full-cycle"


def run_full_cycle(ctx: WorkloadContext, files: Sequence[Path]) -> WorkloadResult:
    """Ingest ``files`` (generated for ``ctx.tag``) and check that every Datafile arrived."""
    ingestor = Ingestor(ctx.catalogue, ctx.profile, ctx.journal, ctx.timer)
    for path in files:
        try:
            ingestor.ingest(path)
        except (IcatError, TransportFailure):
            # recorded as a failed cycle; the next file may still go through (after an outage,
            # once the client's guard has seen the target back)
            continue
    found = count_datafiles(ctx)
    problems = [] if found == len(files) else [f"{len(files)} files, {found} Datafiles found"]
    checks = {"expected": len(files), "found": found}
    return WorkloadResult(NAME, ctx.recorder.drain(), checks, problems)


def count_datafiles(ctx: WorkloadContext) -> int:
    """Datafiles below this run's Facility, counted by the server."""
    query = (
        Query("Datafile")
        .where({"dataset.investigation.facility.name": Condition("=", ctx.tag.name)})
        .count()
    )
    (count,) = ctx.catalogue.search(query)
    return int(count)
