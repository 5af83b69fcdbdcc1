"""Deleting a surveyed tree of the run: top-down, by cascade, in calls of bounded size.

ICAT deletes everything below an object with it, so the fewest calls delete the highest objects.
But one call must not carry a million objects (a real ICAT loads each into its persistence
context; a timeout would leave the caller not knowing what happened), so each level is deleted
by cascade only where its objects carry few enough below them (the survey's counts say how
many, on average); otherwise the deleter first descends, one bounded group of parents at a
time, and deletes the level below. Children with the larger subtrees go first, so that a
relation that crosses over (a DatafileFormat's Datafiles) finds them gone.

Nothing the survey marked foreign is deleted, nor anything it needs (an object of the run with
something foreign below it): those stay, and the deleter descends into the needed ones to delete
the rest of what hangs below them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from igestbench.client.base import Catalogue
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatNoSuchObject
from igestbench.icat.query import Condition, Query
from igestbench.workloads.survey import Node, Survey, search_all

#: Objects one deleteMany may remove, cascades included (estimated from the survey's counts).
OBJECTS_PER_CALL = 5000
#: Objects named in one deleteMany.
BEANS_PER_CALL = 1000
#: Parents whose children are looked up at once.
PARENTS_PER_LOOKUP = 500


class CleanupProgress(Protocol):
    """Where a cleanup says how far it is (a live line on a terminal, a line per stage else)."""

    def stage(self, name: str, total: int | None = None) -> None: ...

    def advance(self, count: int) -> None: ...

    def finish(self, summary: str) -> None: ...


class NoProgress:
    """A cleanup that shows nothing."""

    def stage(self, name: str, total: int | None = None) -> None:
        pass

    def advance(self, count: int) -> None:
        pass

    def finish(self, summary: str) -> None:
        pass


def _chunks(ids: Sequence[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def delete_batch(catalogue: Catalogue, batch: list[Bean]) -> tuple[int, int]:
    """(deleted, already gone) for one deleteMany of ``batch``."""
    gone = 0
    while batch:
        try:
            catalogue.delete_many(batch)
        except IcatNoSuchObject as exc:
            if 0 <= exc.offset < len(batch):
                del batch[exc.offset]  # removed by an earlier cascade: the rest still goes
                gone += 1
                continue
            deleted = 0  # a server that names no index: one at a time
            for bean in batch:
                try:
                    catalogue.delete(bean)
                    deleted += 1
                except IcatNoSuchObject:
                    gone += 1
            return deleted, gone
        return len(batch), gone
    return 0, gone


class TreeDeleter:
    """Deletes every surveyed object but the foreign and the needed ones."""

    def __init__(
        self,
        catalogue: Catalogue,
        survey: Survey,
        progress: CleanupProgress | None = None,
        per_call: int | None = None,
        beans_per_call: int | None = None,
    ) -> None:
        self.catalogue = catalogue
        self.survey = survey
        self.progress = progress or NoProgress()
        self.per_call = per_call or OBJECTS_PER_CALL
        self.beans_per_call = beans_per_call or BEANS_PER_CALL
        self.calls = 0
        #: objects of the run met and kept, because something foreign hangs below them
        self.kept = 0

    def run(self) -> None:
        for group in self.survey.groups:
            self._delete(group.node, group.ids)

    def _delete(self, node: Node, ids: Sequence[int]) -> None:
        keeps = self.survey.keeps
        free = [i for i in ids if not keeps(node.entity, i)]
        needed = [i for i in ids if (node.entity, i) in self.survey.needed
                  and (node.entity, i) not in self.survey.foreign]  # fmt: skip
        weight = node.total / node.count if node.count else 1.0
        if weight <= self.per_call:
            batch = max(1, min(self.beans_per_call, int(self.per_call // weight)))
            self._delete_ids(node.entity, free, batch, weight)
        else:
            for chunk in _chunks(free, self._parents_per_lookup(node)):
                self._descend(node, chunk)
                self._delete_ids(node.entity, chunk, self.beans_per_call, 1.0)
        self.kept += len(needed)
        for chunk in _chunks(needed, self._parents_per_lookup(node)):
            self._descend(node, chunk)

    def _parents_per_lookup(self, node: Node) -> int:
        """Parents per group, so that the children of one group stay about one call's worth."""
        fan_out = max((child.count / max(node.count, 1) for child in node.children), default=1.0)
        return max(1, min(PARENTS_PER_LOOKUP, int(self.per_call / max(fan_out, 1.0))))

    def _descend(self, node: Node, ids: list[int]) -> None:
        for child in sorted(node.children, key=lambda c: -c.total):
            self._delete(child, self._children(child, ids))

    def _children(self, child: Node, parents: list[int]) -> list[int]:
        where = {f"{child.path[0]}.id": Condition("IN", parents)}
        base = Query(child.entity).select("id").where(where).order_by("id")
        return [int(i) for i in search_all(self.catalogue, base)]

    def _delete_ids(self, entity: str, ids: list[int], batch: int, weight: float) -> None:
        for chunk in _chunks(ids, batch):
            delete_batch(self.catalogue, [Bean(entity, {"id": i}) for i in chunk])
            self.calls += 1
            self.progress.advance(round(len(chunk) * weight))
