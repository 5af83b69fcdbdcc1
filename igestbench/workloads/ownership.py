"""Cleanup: delete what the server proves to be the run's — and nothing else.

Neither an id nor a line of a file proves anything: a journal applied to another catalogue, an id
someone else's object took over, a copied or edited journal would delete a partner's data. So
:func:`cleanup` trusts the journal only for three facts, and checks each before the first
request or against the server:

* the **run tag** must be exactly the form sv7 writes (:mod:`.run_tag`), else nothing happens;
* the **account** that created the run's objects must be the one cleaning up (getUserName);
* the **window** of the run, on the server's clock (:mod:`.run_window`).

Then it asks the server. The run's *roots* are the Facilities named after the run tag (the tag,
or the tag and a suffix) and the objects that name it without a Facility above them (a Rule's
query, a Grouping's name), each kept only if it was created by the account within the window.
Everything a delete of a root would cascade to is surveyed with aggregate queries
(:mod:`.survey`); anything created by someone else, outside the window, or hanging below another
Facility is *foreign*: reported, counted and kept, with every object of the run above it. The rest
is deleted top-down by cascade in bounded deleteMany calls (:mod:`.tree_delete`) — also what the
journal never saw (a create cut off by a stop still hangs below the run's Facility).

The journal's own lines are checked too, in batches (an id range or an IN list per query, never a
call per object): a journaled object that exists outside the run's tree is reported as foreign and
left alone; one that is gone is counted. ``sv7 cleanup`` records this check and its window in the
journal, so that a cleanup stopped hard (kill -9) resumes without redoing it, with only what is
left to survey and delete.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from igestbench.client.base import Catalogue
from igestbench.client.transport import profile_for_version
from igestbench.errors import Sv7Error
from igestbench.icat.beans import Bean
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import Profile
from igestbench.workloads.cascade import path_key, primary_path
from igestbench.workloads.journal import Journal
from igestbench.workloads.lanes import Lanes
from igestbench.workloads.run_tag import RunTag, like_containing, like_prefix
from igestbench.workloads.run_window import RunWindow
from igestbench.workloads.survey import (
    WHY_ACCOUNT,
    WHY_AFTER,
    WHY_BEFORE,
    WHY_ELSEWHERE,
    Survey,
    search_all,
    survey,
)
from igestbench.workloads.tree_delete import CleanupProgress, NoProgress, TreeDeleter, delete_batch

#: Journaled ids per IN list; runs of consecutive ids at least :data:`RANGE_MIN` long are asked
#: for as one id range instead (a createMany batch usually is one).
CHECK_BATCH = 1000
RANGE_MIN = 32
#: Deletes by id (the benchmark's baseline, delete_in_batches).
DELETE_BATCH = 200
#: Entities with no way up to a Facility that a run creates, with the field naming the run:
#: a Rule's query names the run's Facility (the scale part's membership rules); a Grouping's or
#: a User's name begins with the tag.
TAGGED: Mapping[str, str] = {"Rule": "what", "Grouping": "name", "User": "name"}
WHY_UNTAGGED = "does not name the run (no Facility of the run above it, no run tag in it)"
WHY_UNKNOWN = "not an entity of this catalogue"
#: Foreign objects listed in a journal's record of its verification (the count is kept whole).
RECORDED_FOREIGN = 1000


class ForeignAccount(Sv7Error):
    """The journal's objects were created by another account than the one cleaning up."""


@dataclass(frozen=True)
class CleanupReport:
    """What a cleanup did, and what it left alone and why."""

    #: objects deleted (below the run's roots, counted on the server, cascades included)
    deleted: int
    #: journaled objects that were no longer on the server when the cleanup began
    already_gone: int
    #: of ``deleted``, objects the journal did not list (a create whose answer never came)
    by_name: int = 0
    #: objects that are not the run's, found in the journal or below the run's roots: kept
    foreign: tuple[tuple[str, int], ...] = ()
    #: Facility names the journal lists that are not the run tag's: ignored
    refused_names: tuple[str, ...] = ()
    #: the run's own objects kept because something foreign hangs below them
    kept: int = 0
    #: why the foreign objects are foreign, with how many for each reason
    reasons: tuple[tuple[str, int], ...] = ()
    #: Facilities of the run whose trees were deleted
    facilities: int = 0
    #: whether the journal's file was removed, everything it lists being gone
    #: (:func:`igestbench.workloads.journal_cleanup.cleanup`; the engine never removes it)
    journal_removed: bool = False

    @property
    def complete(self) -> bool:
        """Nothing foreign in sight and nothing of the run kept."""
        return not self.foreign and not self.refused_names and not self.kept

    def describe_foreign(self, most: int = 5) -> str:
        """``Facility 3, Investigation 7 (and 4 more)``."""
        shown = ", ".join(f"{e} {i}" for e, i in self.foreign[:most])
        more = len(self.foreign) - most
        return shown + (f" (and {more} more)" if more > 0 else "")

    def describe_reasons(self) -> str:
        return "; ".join(f"{why}: {n}" for why, n in self.reasons)


@dataclass
class _Roots:
    """The run's roots on the server, and what bore the run's name without being the run's."""

    ids: dict[str, list[int]] = field(default_factory=dict)
    foreign: dict[tuple[str, int], str] = field(default_factory=dict)


def _why_not(bean: Bean, account: str, window: RunWindow) -> str | None:
    if bean.values.get("createId") != account:
        return WHY_ACCOUNT
    when = bean.values.get("createTime")
    if when in window:
        return None
    if isinstance(when, dt.datetime) and when.replace(tzinfo=when.tzinfo or dt.UTC) > window.end:
        return WHY_AFTER
    return WHY_BEFORE


def _named(catalogue: Catalogue, tag: RunTag) -> list[Bean]:
    """The Facilities named after the run tag — the tag, or tag-suffix — whoever made them."""
    exact = catalogue.search(Query("Facility").where(name=Condition("=", tag.name)))
    below = search_all(catalogue, Query("Facility").where(name=like_prefix(tag.name + "-"))
                        .order_by("id"))  # fmt: skip
    # LIKE is case-insensitive on most databases: the exact form is checked here
    return [f for f in [*exact, *below] if tag.owns_name(str(f.values.get("name")))]


def _names_run(value: str, field_name: str, tag: RunTag) -> bool:
    """Whether ``value`` names the run: a query (``what``) that contains its tag, a name that
    begins with it (LIKE matched case-insensitively: the exact form is checked here)."""
    return tag.name in value if field_name == "what" else value.startswith(tag.name)


def _tagged_one(catalogue: Catalogue, entity: str, tag: RunTag) -> list[Bean]:
    """The ``entity`` objects (one of :data:`TAGGED`, without a Facility) that name the run."""
    name = TAGGED[entity]
    match = like_containing(tag.name) if name == "what" else like_prefix(tag.name)
    beans = search_all(catalogue, Query(entity).where({name: match}).order_by("id"))
    return [b for b in beans if _names_run(str(b.values.get(name)), name, tag)]


def _tagged(catalogue: Catalogue, profile: Profile, tag: RunTag) -> dict[str, list[Bean]]:
    """The objects without a Facility that name the run (:data:`TAGGED`)."""
    return {e: _tagged_one(catalogue, e, tag) for e in TAGGED if e in profile.entities}


def find_roots(
    catalogue: Catalogue,
    profile: Profile,
    tag: RunTag,
    account: str,
    window: RunWindow,
    lanes: Lanes | None = None,
) -> _Roots:
    """The run's roots: named after the run, created by ``account`` within ``window``."""
    roots = _Roots()
    entities = [e for e in TAGGED if e in profile.entities]
    asked: list[Callable[[Catalogue], Any]] = [lambda c: _named(c, tag)]
    asked += [functools.partial(_tagged_one, entity=e, tag=tag) for e in entities]
    with contextlib.ExitStack() as stack:
        lanes = lanes or stack.enter_context(Lanes(catalogue))
        answers = lanes.map(asked)
    for entity, beans in zip(["Facility", *entities], answers, strict=True):
        mine = roots.ids.setdefault(entity, [])
        for bean in beans:
            obj_id = int(bean.id or 0)
            why = _why_not(bean, account, window)
            if why is None:
                mine.append(obj_id)
            else:
                roots.foreign[(entity, obj_id)] = why
    return roots


def _id_chunks(ids: Sequence[int]) -> Iterator[tuple[Condition, int]]:
    """Conditions on ``id`` covering exactly ``ids`` (sorted, unique): ranges for long runs of
    consecutive ids, IN lists of :data:`CHECK_BATCH` for the rest; with how many ids each."""
    loose: list[int] = []
    start = 0
    while start < len(ids):
        end = start
        while end + 1 < len(ids) and ids[end + 1] == ids[end] + 1:
            end += 1
        if end - start + 1 >= RANGE_MIN:
            yield Condition("BETWEEN", (ids[start], ids[end])), end - start + 1
        else:
            loose += ids[start : end + 1]
        start = end + 1
    for at in range(0, len(loose), CHECK_BATCH):
        chunk = loose[at : at + CHECK_BATCH]
        yield Condition("IN", chunk), len(chunk)


@dataclass
class _JournalCheck:
    """What the journal's own lines come to on the server."""

    foreign: dict[tuple[str, int], str] = field(default_factory=dict)
    journaled: int = 0
    existing: int = 0

    def record(self) -> dict[str, Any]:
        listed = [[e, i, why] for (e, i), why in list(self.foreign.items())[:RECORDED_FOREIGN]]
        return {"foreign": listed, "foreign_count": len(self.foreign),
                "journaled": self.journaled, "existing": self.existing}  # fmt: skip

    @classmethod
    def recorded(cls, data: Mapping[str, Any]) -> _JournalCheck:
        check = cls(journaled=int(data.get("journaled", 0)), existing=int(data.get("existing", 0)))
        for entity, obj_id, why in data.get("foreign", []):
            check.foreign[(str(entity), int(obj_id))] = str(why)
        return check


def check_journal(
    catalogue: Catalogue,
    profile: Profile,
    journal: Journal,
    roots: _Roots,
    lanes: Lanes | None = None,
) -> _JournalCheck:
    """Which journaled objects exist, and which of those are outside the run's roots' reach.

    One question per entity and group of ids, each independent: sent side by side."""
    check = _JournalCheck()
    facilities = roots.ids.get("Facility", [])
    owned = set(facilities)
    fieldsets = profile.name != "4.3"  # ICAT 4.11 and later select several items
    asked: list[tuple[str, str, set[int], Callable[[Catalogue], Any]]] = []
    for entity, ids in journal.ids_by_entity().items():
        unique = sorted(set(ids))
        check.journaled += len(unique)
        if entity not in profile.entities:
            check.foreign.update(((entity, i), WHY_UNKNOWN) for i in unique)
            continue
        path = primary_path(profile, entity)
        wanted = set(unique)
        for condition, size in _id_chunks(array("q", unique)):
            query = Query(entity).where({"id": condition})
            ask: Callable[[Catalogue], Any]
            if path is None:
                ask = functools.partial(search_all, query=query.order_by("id"))
                asked.append((entity, "beans", wanted, ask))
            elif fieldsets and size <= CHECK_BATCH:
                # one query: each object that exists, with the Facility it hangs below
                selected = query.select("id", path_key(path))
                ask = functools.partial(_search, query=selected)
                asked.append((entity, "rows", wanted, ask))
            else:
                ask = functools.partial(_count_and_elsewhere, query=query,
                                        facility=path_key(path), facilities=facilities)  # fmt: skip
                asked.append((entity, "elsewhere", wanted, ask))
    with contextlib.ExitStack() as stack:
        lanes = lanes or stack.enter_context(Lanes(catalogue))
        answers = lanes.map([ask for *_, ask in asked])
    for (entity, kind, wanted, _), answer in zip(asked, answers, strict=True):
        mine = set(roots.ids.get(entity, ()))
        if kind == "beans":
            for bean in answer:
                if int(bean.id or 0) in wanted:
                    check.existing += 1
                    if int(bean.id or 0) not in mine:
                        check.foreign.setdefault((entity, int(bean.id or 0)), WHY_UNTAGGED)
        elif kind == "rows":
            check.existing += len(answer)
            for obj_id, facility in answer:
                if int(facility) not in owned and int(obj_id) in wanted:
                    check.foreign.setdefault((entity, int(obj_id)), WHY_ELSEWHERE)
        else:
            count, elsewhere = answer
            check.existing += count
            for obj_id in elsewhere:
                if obj_id in wanted:
                    check.foreign.setdefault((entity, obj_id), WHY_ELSEWHERE)
    return check


def _search(catalogue: Catalogue, query: Query) -> list[Any]:
    return catalogue.search(query)


def _count_and_elsewhere(
    catalogue: Catalogue, query: Query, facility: str, facilities: Sequence[int]
) -> tuple[int, list[int]]:
    """How many objects ``query`` finds, and the ids of those below none of ``facilities``."""
    (n,) = catalogue.search(query.count()) or [0]
    if facilities:
        query = query.where({facility: Condition("NOT IN", list(facilities))})
    elsewhere = search_all(catalogue, query.select("id").order_by("id"))
    return int(n), [int(i) for i in elsewhere]


def cleanup(
    catalogue: Catalogue,
    journal: Journal,
    batch_size: int = DELETE_BATCH,
    *,
    progress: CleanupProgress | None = None,
    resume: bool = False,
    profile: Profile | None = None,
) -> CleanupReport:
    """Delete what the server proves to be the run's (see the module docstring).

    ``resume``: record the verification in the journal (its file) and honour one recorded
    before (``sv7 cleanup``). ``batch_size`` is kept for callers of the journal-order cleanup;
    deletes now go by cascade in calls of bounded size.
    """
    del batch_size
    began = time.monotonic()
    progress = progress or NoProgress()
    tag = journal.run_tag()  # before any request: an invalid tag stops everything here
    refused = tuple(n for n in journal.facilities if not tag.owns_name(n))
    account = catalogue.user_name()
    if journal.account is not None and journal.account != account:
        raise ForeignAccount(
            f"the run's objects were created by {journal.account}, but this cleanup is logged "
            f"in as {account}: nothing deleted (log in as {journal.account})"
        )
    window = journal.window()
    profile = profile or profile_for_version(catalogue.version())
    with Lanes(catalogue) as lanes:
        roots = find_roots(catalogue, profile, tag, account, window, lanes)
        recorded = journal.verified if resume else None
        if recorded is not None and "journaled" in recorded:
            checked = _JournalCheck.recorded(recorded)
        else:
            progress.stage(f"checking {len(journal):,} journaled objects")
            checked = check_journal(catalogue, profile, journal, roots, lanes)
            if resume:
                record = {"window": window.to_dict(), "account": account,
                          "refused_names": list(refused), **checked.record()}  # fmt: skip
                journal.record_verified(record)
        n_roots = sum(len(ids) for ids in roots.ids.values())
        progress.stage(f"surveying what hangs below the run's {n_roots} root object(s)")
        found = survey(catalogue, profile, roots.ids, account, window, lanes)
    total = found.total
    progress.stage("deleting", total=total)
    deleter = TreeDeleter(catalogue, found, progress)
    deleter.run()
    deleted = total - _left_below(catalogue, profile, roots, found, account, window)
    progress.finish(f"deleted {deleted:,} objects in {deleter.calls} calls "
                    f"({time.monotonic() - began:.1f} s)")  # fmt: skip
    foreign = {**checked.foreign, **roots.foreign, **found.foreign}
    reasons = Counter(foreign.values())
    journaled_deleted = max(0, checked.existing - len(checked.foreign))
    return CleanupReport(
        deleted=deleted,
        already_gone=max(0, checked.journaled - checked.existing),
        by_name=max(0, deleted - journaled_deleted),
        foreign=tuple(sorted(foreign)),
        refused_names=refused,
        kept=deleter.kept,
        reasons=tuple(sorted(reasons.items(), key=lambda kv: -kv[1])),
        facilities=len(roots.ids.get("Facility", ())),
    )


def _left_below(
    catalogue: Catalogue,
    profile: Profile,
    roots: _Roots,
    found: Survey,
    account: str,
    window: RunWindow,
) -> int:
    """How many of the surveyed objects are still there (none, unless some had to stay)."""
    if not found.foreign and not found.needed:
        return 0
    remaining: dict[str, list[int]] = {}
    for entity, ids in roots.ids.items():
        for start in range(0, len(ids), CHECK_BATCH):
            chunk = ids[start : start + CHECK_BATCH]
            query = Query(entity).select("id").where({"id": Condition("IN", chunk)})
            remaining.setdefault(entity, []).extend(int(i) for i in catalogue.search(query))
    return survey(catalogue, profile, remaining, account, window).total


def count_left(catalogue: Catalogue, tag: RunTag | str) -> int:
    """How many objects named after the run are on the server: its Facilities (whoever made
    them: one another account named so is not the run's, but is left all the same) and the
    objects without a Facility that name it."""
    run = tag if isinstance(tag, RunTag) else RunTag.parse(tag)
    profile = profile_for_version(catalogue.version())
    return len(_named(catalogue, run)) + sum(
        len(beans) for beans in _tagged(catalogue, profile, run).values()
    )


def delete_in_batches(
    catalogue: Catalogue, entries: Sequence[tuple[str, int]], batch_size: int = DELETE_BATCH
) -> tuple[int, int]:
    """(deleted, already gone): ``entries`` in deleteMany batches, in the order given.

    No check of whose the objects are: the benchmark's baseline (cleanup without the check).
    """
    deleted = gone = 0
    for start in range(0, len(entries), batch_size):
        batch = [Bean(e, {"id": i}) for e, i in entries[start : start + batch_size]]
        d, g = delete_batch(catalogue, batch)
        deleted += d
        gone += g
    return deleted, gone


def facility_path(entity: str, profile_name: str = "6.2") -> str | None:
    """The primary path from ``entity`` to its Facility as a Query path (``Datafile`` →
    ``dataset.investigation.facility``; ``Facility`` → ``""``); None when there is none."""
    from igestbench.icat.schema import get_profile

    path = primary_path(get_profile(profile_name), entity)
    return None if path is None else ".".join(path)


__all__ = [
    "CleanupReport",
    "ForeignAccount",
    "check_journal",
    "cleanup",
    "count_left",
    "delete_in_batches",
    "facility_path",
    "find_roots",
]
