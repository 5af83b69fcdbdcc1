"""What the server holds below the run's own objects, and which of it is not the run's.

Cleanup deletes by cascade: a Facility, Investigation or Dataset of the run takes everything below
it along. So before anything is deleted, :func:`survey` walks every relation a delete would
cascade along (:mod:`.cascade`), from the *roots* — the run's Facilities and its tagged objects
that have none (a Rule), each already proven the run's — with batched, aggregate queries over
the whole tree, never one call per object:

* a **tree** relation (the primary edges: Facility → Investigation → Dataset → Datafile →
  DatafileParameter, …): how many objects there are (no more queries when none), how many were
  not created by the account doing the cleanup (``createId``), and the earliest and latest
  ``createTime`` — outside the run's window means someone else's, or a leftover of another time;
* a **cross** relation (a DatafileFormat's Datafiles, a ParameterType's parameters): whether
  anything it reaches hangs below a Facility that is not the run's.

What fails is *foreign*: its ids are fetched (there are none in a clean run) and kept, and so is
every object a delete would cascade to it from (*needed*): its parents along every relation —
not only the tree's (a partner's Dataset below the run's Investigation also hangs below the run's
DatasetType) — and theirs, up to the Facilities. The counts
size the deletes (:mod:`.tree_delete`). The queries are ICAT's JPQL with aggregates, IN lists of
at most :data:`ROOTS_PER_SURVEY` root ids, ORDER BY and LIMIT: what every ICAT since 4.3 answers.

A tree of the run's takes some forty such queries (a Facility has eleven relations, an
Investigation twelve …), nearly all of them answered "none". Against a slow or distant server
their round trips, not the server's work, are the cleanup's time — and a stopped run must clean
up within seconds. So the tree is walked level by level, and the first query of every relation at
one level — each independent of the others — is sent side by side (:class:`.lanes.Lanes`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from igestbench.client.base import Catalogue
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import Profile
from igestbench.workloads.cascade import (
    Edge,
    edges_from,
    edges_into,
    is_primary,
    path_key,
    primary_path,
)
from igestbench.workloads.lanes import Lanes
from igestbench.workloads.run_window import RunWindow

#: Root ids per IN list: a survey of more roots runs in groups.
ROOTS_PER_SURVEY = 500
#: Ids per page when foreign objects (or parents) are fetched.
PAGE = 5000

WHY_ACCOUNT = "created by another account"
WHY_BEFORE = "created before the run began"
WHY_AFTER = "created after the run ended"
WHY_ELSEWHERE = "hangs below a Facility that is not the run's"


def pages(search: Callable[[Query], list[Any]], query: Query) -> Iterator[list[Any]]:
    """The answers of ``query`` (ordered, so that pages do not overlap), asked of ``search``
    :data:`PAGE` at a time: no answer passes the server's entity limit (ICAT's maxEntities,
    10,000 by default); a caller that has found what it looked for stops asking."""
    skip = 0
    while True:
        page = search(query.limit(skip, PAGE))
        skip += len(page)
        yield page
        if len(page) < PAGE:
            return


def search_all(catalogue: Catalogue, query: Query) -> list[Any]:
    """Every answer of ``query`` (ordered), in pages (:func:`pages`)."""
    return [answer for page in pages(catalogue.search, query) for answer in page]


@dataclass
class Node:
    """The objects of one entity that one chain of relations reaches from a group of roots."""

    entity: str
    #: the many-to-one fields from these objects up to the root objects (() for the roots)
    path: tuple[str, ...]
    count: int
    #: whether the roots are Facilities and every step is a tree (primary) edge
    in_tree: bool
    parent: Node | None = None
    children: list[Node] = field(default_factory=list)

    @property
    def total(self) -> int:
        """The objects here and below (as surveyed): what deleting all of them removes."""
        return self.count + sum(child.total for child in self.children)

    def nodes(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.nodes()


@dataclass(frozen=True)
class _Stats:
    """What one query says about the objects of a node."""

    count: int
    earliest: Any = None
    latest: Any = None
    #: the lowest and highest createId: the account's alone when both are it
    accounts: tuple[Any, Any] = (None, None)
    #: False: only the count is known (a server before ICAT 4.11 selects one item at a time)
    known: bool = False


@dataclass
class RootGroup:
    """One group of root objects (all of one entity) and the tree surveyed below them."""

    node: Node
    ids: list[int]


@dataclass
class Survey:
    """The run's objects below its roots, what is foreign among them, and what must stay."""

    groups: list[RootGroup] = field(default_factory=list)
    #: foreign objects found in the cascade of the roots: (entity, id) → why
    foreign: dict[tuple[str, int], str] = field(default_factory=dict)
    #: objects of the run kept because something foreign hangs below them
    needed: set[tuple[str, int]] = field(default_factory=set)
    queries: int = 0

    @property
    def total(self) -> int:
        """Every object surveyed, roots included (foreign ones and what hangs below them too)."""
        return sum(group.node.total for group in self.groups)

    def keeps(self, entity: str, obj_id: int) -> bool:
        key = (entity, obj_id)
        return key in self.foreign or key in self.needed


class _Surveyor:
    def __init__(
        self,
        catalogue: Catalogue,
        profile: Profile,
        account: str,
        window: RunWindow,
        facility_ids: Sequence[int],
        lanes: Lanes,
    ) -> None:
        self.catalogue = catalogue
        self.profile = profile
        self.account = account
        self.window = window
        self.facility_ids = list(facility_ids)
        #: several items in one SELECT (a fieldSet): ICAT 4.11 and later (the 6.2 profile)
        self.fieldsets = profile.name != "4.3"
        self.result = Survey()
        self.lanes = lanes

    # --- queries -------------------------------------------------------------------------

    def _search(self, query: Query) -> list[Any]:
        self.result.queries += 1
        return self.catalogue.search(query)

    def _count(self, entity: str, where: Mapping[str, Condition]) -> int:
        self.result.queries += 1
        return self._count_query(entity, where)(self.catalogue).count

    def _aggregate(self, entity: str, function: str, where: Mapping[str, Condition]) -> Any:
        found = self._search(Query(entity).select("createTime").aggregate(function).where(where))
        return found[0] if found else None

    def ids(self, entity: str, where: Mapping[str, Condition], select: str = "id") -> list[int]:
        """Every ``select`` (an id path) of the ``entity`` objects matching ``where``, in pages."""
        base = Query(entity).select(select).where(where).order_by(select)
        return [int(i) for page in pages(self._search, base) for i in page if i is not None]

    def _outside(self, entity: str, where: Mapping[str, Condition], earliest: bool) -> list[int]:
        """Ids of the objects created before the window (``earliest``) or after it."""
        found: list[int] = []
        order = ("createTime", "ASC" if earliest else "DESC")
        base = Query(entity).where(where).order_by(order, "id")
        for page in pages(self._search, base):
            for bean in page:
                if bean.values.get("createTime") in self.window:
                    return found  # in time order: the rest were made in the window or beyond it
                found.append(int(bean.id))
        return found

    # --- the walk ------------------------------------------------------------------------

    def survey(self, root_entity: str, ids: Sequence[int]) -> None:
        for start in range(0, len(ids), ROOTS_PER_SURVEY):
            group = list(ids[start : start + ROOTS_PER_SURVEY])
            node = Node(root_entity, (), len(group), in_tree=root_entity == "Facility")
            self.result.groups.append(RootGroup(node, group))
            self._expand(node, group)

    def _expand(self, root: Node, roots: list[int]) -> None:
        """Walk the tree below ``root`` a level at a time."""
        level = [root]
        while level:
            relations = []
            for node in level:
                for edge in edges_from(self.profile, node.entity):
                    child_path = (edge.inverse, *node.path)
                    where = {path_key(child_path): Condition("IN", roots)}
                    tree = node.in_tree and is_primary(self.profile, edge)
                    cross = not tree and primary_path(self.profile, edge.child) is not None
                    if cross:
                        where = self._elsewhere(edge, where)
                    relations.append((node, edge, child_path, where, cross))
            # the first query of each relation: independent of the others', sent side by side
            self.result.queries += len(relations)
            firsts = self.lanes.map([
                self._count_query(edge.child, where) if cross
                else self._stats_query(edge.child, where)
                for _, edge, _, where, cross in relations
            ])  # fmt: skip
            level = []
            for (node, edge, child_path, where, cross), first in zip(
                relations, firsts, strict=True
            ):
                if cross:
                    if first.count:
                        self._found(edge.child, self.ids(edge.child, where), WHY_ELSEWHERE)
                    continue
                if first.count == 0:
                    continue
                child = Node(edge.child, child_path, first.count, node.in_tree, parent=node)
                node.children.append(child)
                self._check(child, where, first)
                level.append(child)

    def _count_query(
        self, entity: str, where: Mapping[str, Condition]
    ) -> Callable[[Catalogue], _Stats]:
        query = Query(entity).where(where).count()

        def count(catalogue: Catalogue) -> _Stats:
            (n,) = catalogue.search(query) or [0]
            return _Stats(int(n))

        return count

    def _stats_query(
        self, entity: str, where: Mapping[str, Condition]
    ) -> Callable[[Catalogue], _Stats]:
        """How many objects, and (ICAT 4.11 and later) the range of their createTime and
        createId, in one query: ``SELECT COUNT(o), MIN(o.createTime), …`` (a fieldSet)."""
        if not self.fieldsets:
            return self._count_query(entity, where)
        items = "COUNT(o), MIN(o.createTime), MAX(o.createTime), MIN(o.createId), MAX(o.createId)"
        text = str(Query(entity).where(where)).replace("SELECT o FROM", f"SELECT {items} FROM", 1)

        def stats(catalogue: Catalogue) -> _Stats:
            (row,) = catalogue.search(text) or [(0, None, None, None, None)]
            count, earliest, latest, lowest, highest = row
            return _Stats(int(count or 0), earliest, latest, (lowest, highest), known=True)

        return stats

    def _check(self, node: Node, where: dict[str, Condition], stats: _Stats) -> None:
        """The objects of a node must be the account's, created within the run's window."""
        others = {**where, "createId": Condition("<>", self.account)}
        if stats.known:
            someone_else = stats.accounts != (self.account, self.account)
            earliest, latest = stats.earliest, stats.latest
        else:
            someone_else = bool(self._count(node.entity, others))
            earliest = self._aggregate(node.entity, "MIN", where)
            latest = self._aggregate(node.entity, "MAX", where)
        if someone_else:
            self._found(node.entity, self.ids(node.entity, others), WHY_ACCOUNT)
        if earliest is not None and not _after(earliest, self.window.start):
            self._found(node.entity, self._outside(node.entity, where, earliest=True), WHY_BEFORE)
        if latest is not None and not _after(self.window.end, latest):
            self._found(node.entity, self._outside(node.entity, where, earliest=False), WHY_AFTER)

    def _elsewhere(self, edge: Edge, where: dict[str, Condition]) -> dict[str, Condition]:
        """What a cross edge reaches must hang below one of the run's own Facilities: the
        condition that finds what does not."""
        path = primary_path(self.profile, edge.child)
        assert path is not None
        elsewhere = dict(where)
        if self.facility_ids:
            elsewhere[path_key(path)] = Condition("NOT IN", self.facility_ids)
        return elsewhere

    # --- what must stay ------------------------------------------------------------------

    def _found(self, entity: str, found: list[int], why: str) -> None:
        """Keep ``found`` (foreign) and every object a delete would cascade to them from."""
        for obj_id in found:
            self.result.foreign.setdefault((entity, obj_id), why)
        work = [(entity, found)]
        while work:
            child, ids = work.pop()
            for edge in edges_into(self.profile, child):
                parents = [p for p in self._parents(child, edge.inverse, ids)
                           if (edge.parent, p) not in self.result.needed]  # fmt: skip
                if parents:
                    self.result.needed.update((edge.parent, p) for p in parents)
                    work.append((edge.parent, parents))

    def _parents(self, entity: str, field_name: str, ids: list[int]) -> list[int]:
        """The objects ``ids`` point to by ``field_name`` (the ones that point anywhere)."""
        parents: set[int] = set()
        for start in range(0, len(ids), ROOTS_PER_SURVEY):
            chunk = ids[start : start + ROOTS_PER_SURVEY]
            # the JOIN the path makes leaves out the objects that point nowhere
            parents.update(self.ids(entity, {"id": Condition("IN", chunk)}, f"{field_name}.id"))
        return sorted(parents)


def _after(later: Any, earlier: Any) -> bool:
    """``later >= earlier`` for two datetimes, one possibly without its zone (then UTC)."""
    if not isinstance(later, dt.datetime) or not isinstance(earlier, dt.datetime):
        return False  # not a time: prove nothing
    if later.tzinfo is None:
        later = later.replace(tzinfo=dt.UTC)
    if earlier.tzinfo is None:
        earlier = earlier.replace(tzinfo=dt.UTC)
    return bool(later >= earlier)


def survey(
    catalogue: Catalogue,
    profile: Profile,
    roots: Mapping[str, Sequence[int]],
    account: str,
    window: RunWindow,
    lanes: Lanes | None = None,
) -> Survey:
    """Survey the cascade of ``roots`` (entity → ids of objects proven the run's).

    ``roots["Facility"]`` are the run's Facilities: what hangs below them must be the
    account's, within ``window``; what any relation reaches must hang below one of them.
    ``lanes``: the connections for queries side by side (None: opened here and closed after).
    """
    with contextlib.ExitStack() as stack:
        if lanes is None:
            lanes = stack.enter_context(Lanes(catalogue))
        facilities = roots.get("Facility", ())
        surveyor = _Surveyor(catalogue, profile, account, window, facilities, lanes)
        for entity, ids in roots.items():
            if ids:
                surveyor.survey(entity, sorted(set(ids)))
    return surveyor.result
