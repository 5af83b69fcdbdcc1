"""Cleanup: delete what a journal lists — only what still belongs to the run, on the server.

An id alone proves nothing: a journal applied to another catalogue (a typo in the URL is
enough), or an id that someone else's object took over, would delete a partner's data. So
before deleting, :func:`cleanup` asks the server which of the journaled objects still hang below
one of the run's own Facilities (or, for an entity with no way up to a Facility, carry the run
tag in their name): one search per entity type and batch of ids (an id range joined to the
Facility name, its answer intersected with the journal), never one call per object. Those are
deleted, newest first, in deleteMany batches; the others are reported as foreign and left alone,
or counted as already gone.

A create can reach the catalogue while its id never comes back (a stop between the request and
the answer). Such an object is not in the journal, but it still hangs below the run's Facility,
whose name the journal holds; so afterwards :func:`cleanup` deletes the run's Facilities that
are still there, by their exact names (ICAT cascades to everything below). The names are the
run's own tags — timestamp and random token — so never a partner's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cache

from igestbench.client.base import Catalogue
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatNoSuchObject
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import Profile, RelType, get_profile
from igestbench.workloads.journal import Journal

#: journaled ids per ownership search: far fewer calls than deletes
CHECK_BATCH = 1000
DELETE_BATCH = 200


@dataclass(frozen=True)
class CleanupReport:
    deleted: int
    already_gone: int
    #: run Facilities deleted by name, found after the journaled objects (ids lost in a create)
    by_name: int = 0
    #: journaled (entity, id) that exist but no longer belong to the run: left alone
    foreign: tuple[tuple[str, int], ...] = ()

    def describe_foreign(self, most: int = 5) -> str:
        """``Facility 3, Investigation 7 (and 4 more)``."""
        shown = ", ".join(f"{e} {i}" for e, i in self.foreign[:most])
        more = len(self.foreign) - most
        return shown + (f" (and {more} more)" if more > 0 else "")


@cache
def facility_path(entity: str, profile_name: str = "6.2") -> str | None:
    """The shortest path of required many-to-one relations from ``entity`` to its Facility.

    ``Datafile`` → ``dataset.investigation.facility``; ``Facility`` → ``""``; None when there
    is no such path (or the entity is unknown).
    """
    profile: Profile = get_profile(profile_name)
    if entity == "Facility":
        return ""
    if entity not in profile.entities:
        return None
    paths = {entity: ""}
    frontier = [entity]
    while frontier:
        following: list[str] = []
        for name in frontier:
            for rel in profile.entity(name).ones:
                if not rel.not_null or rel.type in paths:
                    continue
                path = f"{paths[name]}.{rel.name}".lstrip(".")
                if rel.type == "Facility":
                    return path
                paths[rel.type] = path
                following.append(rel.type)
        frontier = following
    return None


def _ownership(entity: str, run: str | None, facilities: Sequence[str]) -> dict[str, Condition]:
    """Conditions that hold for an object of the run; empty when nothing can prove it."""
    path = facility_path(entity)
    if path is not None and facilities:
        key = f"{path}.name" if path else "name"
        return {key: Condition("IN", list(facilities))}
    profile = get_profile()
    tag = run or (min(facilities, key=len) if facilities else None)
    if tag is None or entity not in profile.entities:
        return {}
    if entity == "Rule":
        # no way up to a Facility and no name: a run's Rule (the scale part's membership
        # rules) names the run's Facility, hence its tag, in its query
        return {"what": Condition("LIKE", f"%{tag}%")}
    model = profile.entity(entity)
    if not model.has_field("name") or model.field("name").rel is not RelType.ATTRIBUTE:
        return {}
    # a run tag is letters, digits and "-" only (RunTag.name): no LIKE wildcard in it
    return {"name": Condition("LIKE", tag + "%")}


def _found(catalogue: Catalogue, entity: str, ids: Sequence[int]) -> set[int]:
    """Which of ``ids`` exist (whoever's they are)."""
    found: set[int] = set()
    for start in range(0, len(ids), CHECK_BATCH):
        chunk = list(ids[start : start + CHECK_BATCH])
        query = Query(entity).select("id").where({"id": Condition("IN", chunk)})
        found.update(int(i) for i in catalogue.search(query))
    return found


def _owned(
    catalogue: Catalogue, entity: str, ids: Sequence[int], conditions: dict[str, Condition]
) -> set[int]:
    """Which of ``ids`` exist and meet the run's ``conditions``.

    Asked by id range (``BETWEEN`` the lowest and highest of :data:`CHECK_BATCH` sorted ids),
    not by an IN list: a long IN list costs a server far more to parse than a range, and the
    answer is intersected with the journal, so an id of the range that the run did not journal
    never counts. The conditions keep the answer to the run's own objects, so a range over a
    busy catalogue returns no more than the run created there.
    """
    owned: set[int] = set()
    ordered = sorted(ids)
    for start in range(0, len(ordered), CHECK_BATCH):
        chunk = ordered[start : start + CHECK_BATCH]
        span = Condition("BETWEEN", (chunk[0], chunk[-1]))
        query = Query(entity).select("id").where({"id": span, **conditions})
        wanted = set(chunk)
        owned.update(i for i in (int(x) for x in catalogue.search(query)) if i in wanted)
    return owned


def check_ownership(
    catalogue: Catalogue, journal: Journal
) -> tuple[set[tuple[str, int]], set[tuple[str, int]]]:
    """(owned, foreign): which journaled objects still belong to the run, which to others.

    Whatever is in neither set is gone already. Batched: one search per entity type and
    :data:`CHECK_BATCH` ids, plus one for the ids that did not prove to be the run's.
    """
    by_entity: dict[str, list[int]] = {}
    for entity, obj_id in journal.entries:
        by_entity.setdefault(entity, []).append(obj_id)
    owned: set[tuple[str, int]] = set()
    foreign: set[tuple[str, int]] = set()
    for entity, ids in by_entity.items():
        ids = list(dict.fromkeys(ids))
        conditions = _ownership(entity, journal.run, journal.facilities)
        mine = _owned(catalogue, entity, ids, conditions) if conditions else set()
        rest = [i for i in ids if i not in mine]
        others = _found(catalogue, entity, rest) if rest else set()
        owned.update((entity, i) for i in mine)
        foreign.update((entity, i) for i in others)
    return owned, foreign


def _batches(entries: Sequence[tuple[str, int]], size: int) -> Iterator[list[Bean]]:
    for start in range(0, len(entries), size):
        yield [Bean(e, {"id": i}) for e, i in entries[start : start + size]]


def _delete(catalogue: Catalogue, batch: list[Bean]) -> tuple[int, int]:
    """(deleted, already gone) for one batch."""
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


def delete_in_batches(
    catalogue: Catalogue, entries: Sequence[tuple[str, int]], batch_size: int = DELETE_BATCH
) -> tuple[int, int]:
    """(deleted, already gone): ``entries`` in deleteMany batches, in the order given.

    No check of whose the objects are: callers pass only what :func:`check_ownership` proved.
    """
    deleted = gone = 0
    for batch in _batches(entries, batch_size):
        d, g = _delete(catalogue, batch)
        deleted += d
        gone += g
    return deleted, gone


def _delete_run_facilities(catalogue: Catalogue, names: Sequence[str]) -> int:
    """Delete the run's Facilities still there, by exact name; how many."""
    removed = 0
    for start in range(0, len(names), CHECK_BATCH):
        chunk = list(names[start : start + CHECK_BATCH])
        for facility in catalogue.search(Query("Facility").where(name=Condition("IN", chunk))):
            try:
                catalogue.delete(facility)
                removed += 1
            except IcatNoSuchObject:
                pass
    return removed


def cleanup(
    catalogue: Catalogue, journal: Journal, batch_size: int = DELETE_BATCH
) -> CleanupReport:
    """Delete what the journal lists and the server proves to be the run's, newest first."""
    owned, foreign = check_ownership(catalogue, journal)
    mine: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    for entry in reversed(journal.entries):  # children before their parents
        if entry in owned and entry not in seen:
            seen.add(entry)
            mine.append(entry)
    deleted, gone = delete_in_batches(catalogue, mine, batch_size)
    unique = len(set(journal.entries))
    gone += unique - len(owned) - len(foreign)
    by_name = _delete_run_facilities(catalogue, journal.facilities)
    order = {entry: n for n, entry in enumerate(journal.entries)}
    return CleanupReport(
        deleted + by_name, gone, by_name, tuple(sorted(foreign, key=order.__getitem__))
    )


def count_left(catalogue: Catalogue, names: Sequence[str]) -> int:
    """How many of the run's Facilities (by exact name) are still on the server."""
    left = 0
    for start in range(0, len(names), CHECK_BATCH):
        chunk = list(names[start : start + CHECK_BATCH])
        (n,) = catalogue.search(Query("Facility").where(name=Condition("IN", chunk)).count())
        left += int(n)
    return left


__all__ = [
    "CleanupReport",
    "check_ownership",
    "cleanup",
    "count_left",
    "delete_in_batches",
    "facility_path",
]
