"""Workload 4: one query that returns many results, whole and LIMIT-paged.

Each search is timed whole (``multi-query/whole``, ``multi-query/paged``) and in its steps: where
the client can hand over the raw answer before decoding it (:class:`RawSearch`), the time on the
server and the wire and the time spent decoding on the client are recorded apart
(``…/fetch``, ``…/decode``); otherwise ``…/search``.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from igestbench.icat.query import Condition, Query
from igestbench.workloads.base import WorkloadContext, WorkloadResult

NAME = "multi-query"


@runtime_checkable
class RawSearch(Protocol):
    """A client that can fetch a search answer and decode it in two steps."""

    def search_raw(self, query: str | Query) -> bytes: ...

    def decode_search(self, raw: bytes) -> list[Any]: ...


def _search(ctx: WorkloadContext, query: Query, op: str) -> list[Any]:
    """One search, timed whole (``multi-query/<op>``: what the client's user waits for) and in
    its steps (fetch and decode, or search where the client cannot split them)."""
    catalogue = ctx.catalogue
    with ctx.timer.measure(f"{NAME}/{op}") as call:
        if isinstance(catalogue, RawSearch):
            with call.step("fetch"):
                raw = catalogue.search_raw(query)
            with call.step("decode"):
                return catalogue.decode_search(raw)
        with call.step("search"):
            return catalogue.search(query)


def run_multi_query(
    ctx: WorkloadContext, dataset_id: int, expected: int, page_size: int = 500, repeat: int = 3
) -> WorkloadResult:
    """Fetch every Datafile of a Dataset ``repeat`` times, whole and by pages of ``page_size``."""
    base = Query("Datafile").where({"dataset.id": Condition("=", dataset_id)}).order_by("id")
    problems: list[str] = []
    found = 0
    for _ in range(repeat):
        whole = _search(ctx, base, "whole")
        found = len(whole)
        if found != expected:
            problems.append(f"one query returned {found} Datafiles, not {expected}")
        paged: list[Any] = []
        while True:
            page = _search(ctx, base.limit(len(paged), page_size), "paged")
            paged.extend(page)
            if len(page) < page_size:
                break
        if [b.id for b in paged] != [b.id for b in whole]:
            problems.append(f"paging by {page_size} returned {len(paged)} Datafiles")
    checks = {"expected": expected, "found": found, "page_size": page_size}
    return WorkloadResult(NAME, ctx.recorder.drain(), checks, problems)
