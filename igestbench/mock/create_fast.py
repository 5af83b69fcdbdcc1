"""createMany's fast path: a batch of new objects of one type straight to one ``executemany``.

The common createMany — what the scale part, python-icat, the ingestion workloads and a REST
client populating a catalogue send — holds new objects of one entity type with plain
attributes and references by id only. Decoding each into a :class:`Bean` and storing it
through the store one INSERT at a time was most of the call (issue 21.6 wants 10,000
Datafiles in half a second). Here each object is one row: each front reads its request into a
:class:`Batch` — SOAP's createMany in :mod:`create_fast_xml`, REST's write in
:mod:`create_fast_json` — with its values read as that front's usual decoding reads them and
checked as the store checks them (types, lengths, required attributes). :func:`run` is the
one way in, the same for both around each front's reader, and :func:`store` puts every row in
by one ``executemany`` whose unique and foreign keys the database checks, looks references up
once per distinct id and judges the caller's CREATE rights by one query over the new ids (the
front holds the collector off over the whole request, once: mock/gc_pause.py). Contained
children (the DatafileParameter the scale part puts on one Datafile in four) go in the same
way beside their parents, so their ids come in the same order.

The fast path never reports a fault itself. Whatever it does not take (mixed types, unknown
fields, ids, references holding more than an id, parameters at the top, the authorization
tables, updates) makes its reader raise :class:`NotFast` before the store or the session is
touched, and whatever fault the store finds rolls its transaction back: the front then goes
its usual way, which finds and reports that fault exactly as ICAT would — first object first,
with its offset.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import apsw

from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatError
from igestbench.icat.schema import Entity, Field, Profile
from igestbench.mock import db
from igestbench.mock.jpql.model import correlated
from igestbench.mock.service import IcatService
from igestbench.mock.store import AUTHZ_ENTITIES, Store, _stamp_text, now
from igestbench.mock.tables import quote, table, to_sql
from igestbench.mock.values import DEFAULT, OTHER, REFUSE, attribute_plan, ones_plan, value_check

#: How a field of an object is read: an attribute as values.value_check says (TEXT, WHOLE,
#: OTHER), or a many-to-one reference (REF).
REF = OTHER + 1

#: Per field name: its index in the row, how it is read, its field, a string's limit.
Columns = dict[str, tuple[int, int, Field, int]]


class NotFast(Exception):
    """This batch is not one the fast path takes (or holds a fault): go the usual way."""


def takes(entity: Entity) -> bool:
    """Whether the fast path stores new objects of ``entity``: not a parameter at the top
    (each front judges its type its own way), not the authorization tables (their rows change
    who may do what, which the store's usual way follows)."""
    return entity.base != "Parameter" and entity.name not in AUTHZ_ENTITIES


class Plan:
    """Per entity, worked out once: the row's columns, how each field fills them, the
    INSERT statement, and which attributes need a look when an object lacks them."""

    def __init__(self, profile: Profile, entity: Entity) -> None:
        self.entity = entity
        self.profile = profile
        names = ["createId", "createTime", "modId", "modTime"]
        self.columns: Columns = {}
        #: (row index, default as stored) / row index of a required attribute
        self.defaults: list[tuple[int, Any]] = []
        self.required: list[int] = []
        for f, when_absent, default in attribute_plan(entity):
            index = len(names)
            names.append(f.name)
            how, limit = value_check(f)
            self.columns[f.name] = (index, how, f, limit)
            if when_absent == DEFAULT:
                self.defaults.append((index, to_sql(f, default)))
            elif when_absent == REFUSE:
                self.required.append(index)
        #: (row index, field) per many-to-one relation
        self.refs: list[tuple[int, Field]] = []
        for f, column in ones_plan(entity):
            self.columns[f.name] = (len(names), REF, f, 0)
            self.refs.append((len(names), f))
            names.append(column)
        #: per one-to-many relation: its field and the contained entity
        self.manys = {f.name: (f, profile.entity(f.type)) for f in entity.manys}
        #: a parameter's type, which each front judges its way (values.check_applicable)
        self.typed: Entity | None = None
        if entity.base == "Parameter":
            self.typed = profile.entity(entity.field("type").type)
        self.width = len(names)
        self.sql = (
            f"INSERT INTO {table(entity)} ({', '.join(quote(c) for c in names)}) "
            f"VALUES ({', '.join('?' * len(names))})"
        )

    def finish(self, row: list[Any]) -> None:
        """Fill in the defaults of absent attributes; NotFast where a required one is absent
        (the usual way's VALIDATION)."""
        for index, default in self.defaults:
            if row[index] is None:
                row[index] = default
        for index in self.required:
            if row[index] is None:
                raise NotFast
        if self.typed is not None and row[self.columns["type"][0]] is None:
            raise NotFast  # a parameter without a type

    def contained(self, relation: str) -> tuple[Plan, int] | None:
        """The plan of the objects a one-to-many ``relation`` contains and the index of the
        column naming their parent, where they can go in as rows (else None)."""
        f, target = self.manys[relation]
        inner = plan_of(self.profile, target)
        back = inner.columns.get(f.mapped_by or "")
        if target.name in AUTHZ_ENTITIES or back is None or back[1] != REF:
            return None
        return inner, back[0]


_PLANS: dict[int, tuple[Entity, Plan]] = {}


def plan_of(profile: Profile, entity: Entity) -> Plan:
    known = _PLANS.get(id(entity))
    if known is None or known[0] is not entity:
        known = _PLANS[id(entity)] = (entity, Plan(profile, entity))
    return known[1]


@dataclass
class Contained:
    """The children a batch's objects contain: as rows of one plan (each with the index of
    its parent in the batch, to be written into its column ``back``), or as Beans the store
    stores its usual way (children of several relations: only that way knows the order of
    their ids when two relations fill one table)."""

    plan: Plan | None = None
    rows: list[list[Any]] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    back: int = 0
    beans: list[tuple[int, Field, Bean]] = field(default_factory=list)


@dataclass
class Batch:
    """New objects of one entity, decoded by a front: one row per object (its first four
    columns, the create and mod stamps, filled in when stored), and their children."""

    plan: Plan
    rows: list[list[Any]]
    contained: Contained


def run(service: IcatService, sid: str | None, read: Callable[[], Batch]) -> list[int] | None:
    """A front's createMany by the fast path: the batch ``read`` makes of the request (each
    front its own decoding), stored; None where the caller goes its usual way — ``read`` did
    not take the request (NotFast: another shape), or the store found a fault, which that way
    reports. The caller holds the collector off (mock/gc_pause.py) over its whole request,
    decoding and the usual way included: once, so that nothing here holds it again."""
    try:
        batch = read()
    except NotFast:
        return None
    # the request decodes as the usual way would decode it: its next step is the session
    return store(service, sid, batch)


def store(service: IcatService, sid: str | None, batch: Batch) -> list[int] | None:
    """The ids of the batch's objects, created as :meth:`IcatService.create_many` would; None
    where the store found a fault (nothing is left of the batch: the caller goes its usual
    way, which reports the fault). A session fault is raised, as the usual way's next step
    after decoding would."""
    user = service.sessions.user(sid)
    service.check_batch_size(len(batch.rows))
    checked = service._check(user) is not None
    try:
        return _store(service, user, batch, checked)
    except NotFast:
        return None


def _store(service: IcatService, user: str, batch: Batch, checked: bool) -> list[int]:
    store = service.store
    clock = now()
    stamp = _stamp_text(clock)
    head = [user, stamp, user, stamp]
    plan, rows, contained = batch.plan, batch.rows, batch.contained
    with store.transaction():
        try:
            first = _insert_rows(store, plan, rows, head, None)
            if contained.plan is not None:
                back = contained.back
                for row, at in zip(contained.rows, contained.parents, strict=True):
                    row[back] = first + at
                _insert_rows(store, contained.plan, contained.rows, head, back)
            # children of several relations go the store's way, each beside its parent,
            # in the order the usual way creates them
            verified: dict[tuple[str, int], bool] = {}
            for at, f, child in contained.beans:
                assert f.mapped_by is not None
                store._insert(user, child, clock, verified, (f.mapped_by, first + at), None)
            if checked:
                _require_create(service, user, plan.entity, first, first + len(rows) - 1)
        except (apsw.ConstraintError, IcatError):
            raise NotFast from None  # a unique key, a reference: the usual way says which
    return list(range(first, first + len(rows)))


def _insert_rows(
    store: Store, plan: Plan, rows: list[list[Any]], head: list[Any], parent: int | None
) -> int:
    """Insert ``rows`` (their references checked to exist, but the parent's at ``parent``)
    by one executemany; the first new id (the others follow it)."""
    if not rows:
        return 0
    for index, f in plan.refs:
        ids = {row[index] for row in rows}
        if None in ids:
            if f.not_null:
                raise NotFast
            ids.discard(None)
        if index != parent:
            _require(store, f, ids)
    for row in rows:
        row[:4] = head
    conn = store.conn
    before = conn.total_changes()
    conn.executemany(plan.sql, rows)
    if conn.total_changes() - before != len(rows):
        raise NotFast
    last = conn.last_insert_rowid()
    first = int(last) - len(rows) + 1
    found = db.scalar(
        conn, f"SELECT count(*) FROM {table(plan.entity)} WHERE id BETWEEN ? AND ?", (first, last)
    )
    if found != len(rows):
        raise NotFast  # ids not contiguous: the usual way knows each one
    store._written += len(rows)
    return first


def _require(store: Store, f: Field, ids: set[int]) -> None:
    """Every referenced object exists (else the usual way reports the first missing one)."""
    wanted = sorted(ids)
    conn = store.conn
    for at in range(0, len(wanted), 500):
        part = wanted[at : at + 500]
        marks = ", ".join("?" * len(part))
        found = db.scalar(conn, f"SELECT count(*) FROM {table(f.type)} WHERE id IN ({marks})", part)
        if found != len(part):
            raise NotFast


def _require_create(
    service: IcatService, user: str, entity: Entity, first: int, last: int
) -> None:
    """The caller may CREATE every new object, by the rules (one query for all of them)."""
    restrictions = service.authz.restrictions(user, "CREATE")
    if restrictions is None or entity.name not in restrictions:
        return
    test, params = correlated("o", *restrictions[entity.name])
    allowed = db.scalar(
        service.store.conn,
        'WITH RECURSIVE o("id") AS (SELECT ? UNION ALL SELECT o."id" + 1 FROM o '
        f'WHERE o."id" < ?) SELECT count(*) FROM o WHERE {test}',
        (first, last, *params),
    )
    if allowed != last - first + 1:
        raise NotFast
