"""Workload 2: many queries that each return exactly one object.

The queries mix the JPQL syntax (python-icat's form), the concise syntax and ``get`` by id, the
three ways clients look objects up; each is timed under its own name, and an answer that is not
exactly the expected object counts as a failed operation (``WrongResult``).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from igestbench.client.transport import TransportFailure
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatError
from igestbench.icat.query import Condition, Query
from igestbench.workloads.base import WorkloadContext, WorkloadResult, WrongResult

NAME = "single-query"
KINDS = ("jpql", "concise", "get")


def _jpql(ctx: WorkloadContext, target: Bean) -> list[Bean]:
    query = Query("Datafile").where(
        {"dataset.id": Condition("=", target["dataset"].id), "name": Condition("=", target["name"])}
    )
    return ctx.catalogue.search(query)


def _concise(ctx: WorkloadContext, target: Bean) -> list[Bean]:
    name = str(target["name"]).replace("'", "''")
    return ctx.catalogue.search(
        f"Datafile [name = '{name}' AND dataset.id = {target['dataset'].id}]"
    )


def _get(ctx: WorkloadContext, target: Bean) -> list[Bean]:
    return [ctx.catalogue.get("Datafile", int(target["id"]))]


_LOOKUPS = {"jpql": _jpql, "concise": _concise, "get": _get}


def run_single_queries(
    ctx: WorkloadContext, targets: Sequence[Bean], count: int, kinds: Sequence[str] = KINDS
) -> WorkloadResult:
    """``count`` lookups of the Datafiles ``targets`` (each with id, name, dataset), round-robin."""
    if not targets:
        raise ValueError("single-result queries need at least one Datafile to look up")
    plan = zip(range(count), itertools.cycle(targets), itertools.cycle(kinds), strict=False)
    correct = 0
    for _, target, kind in plan:
        try:
            with ctx.timer.measure(f"{NAME}/{kind}"):
                found = _LOOKUPS[kind](ctx, target)
                if len(found) != 1 or found[0].id != target["id"]:
                    raise WrongResult(f"{kind} lookup of Datafile {target['id']} gave {len(found)}")
            correct += 1
        except (WrongResult, IcatError, TransportFailure):
            # recorded as a failed lookup; the next one goes on (after an outage, once the
            # client's guard has seen the target back)
            continue
    # counted here, not from the records: a worker streams those away while it runs
    return WorkloadResult(NAME, ctx.recorder.drain(), {"requests": count, "correct": correct})
