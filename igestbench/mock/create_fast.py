"""createMany's fast path: from the request's XML elements straight to one ``executemany``.

The common createMany — what the scale part, python-icat and the ingestion workloads send —
holds beans of one entity type with plain attributes and references by id only. Decoding each
into a :class:`Bean` and storing it through :meth:`Store.create_many` one INSERT at a time was
most of the call (issue 21.6 wants 10,000 Datafiles in half a second): here each bean becomes
one row, read as :func:`soapxml.decode_bean` would read it and checked as the store checks it
(types, lengths, required attributes), every row goes in by one ``executemany`` whose unique
and foreign keys the database checks, references are looked up once per distinct id and the
caller's CREATE rights are judged by one query over the new ids. Contained children (the
DatafileParameter the scale part puts on one Datafile in four) are decoded and stored the
store's usual way, each beside its parent, so their ids come in the same order.

The fast path never reports a fault itself. Whatever it does not take (mixed types, unknown,
nil or id elements, references holding more than an id, parameters at the top, the
authorization tables, REST) makes it answer None before it touches the store or the session,
and whatever fault it finds rolls its transaction back and answers None too: the caller then
goes the usual way (decode, :meth:`Store.create_many`), which finds and reports that fault
exactly as ICAT would — first bean first, with its offset.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import Any

from lxml import etree

from igestbench.icat.beans import Bean, from_text
from igestbench.icat.faults import IcatBadParameter, IcatError, IcatValidation
from igestbench.icat.schema import Entity, Field, Profile
from igestbench.icat.soapxml import XSI_NIL, XSI_TYPE, DecodeError, decode_bean
from igestbench.mock.gc_pause import collector_held
from igestbench.mock.jpql.model import correlated
from igestbench.mock.service import IcatService
from igestbench.mock.store import AUTHZ_ENTITIES, Store, _stamp_text, now
from igestbench.mock.tables import quote, table, to_sql
from igestbench.mock.values import (
    DEFAULT,
    OTHER,
    REFUSE,
    TEXT,
    WHOLE,
    attribute_plan,
    check_applicable,
    check_value,
    ones_plan,
    value_check,
)

#: How one child element of a bean is read (codes of :data:`_Columns`): an attribute as
#: values.value_check says, or a reference.
_TEXT, _WHOLE, _OTHER, _REF = TEXT, WHOLE, OTHER, OTHER + 1

#: Per child element name: its index in the row, how it is read, its field, a string's limit.
_Columns = dict[str, tuple[int, int, Field, int]]


class _Plan:
    """Per entity, worked out once: the row's columns, how each element fills them, the
    INSERT statement, and which attributes need a look when a bean lacks them."""

    def __init__(self, profile: Profile, entity: Entity) -> None:
        self.entity = entity
        self.profile = profile
        names = ["createId", "createTime", "modId", "modTime"]
        self.columns: _Columns = {}
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
            self.columns[f.name] = (len(names), _REF, f, 0)
            self.refs.append((len(names), f))
            names.append(column)
        #: per one-to-many relation: its field and the contained entity
        self.manys = {f.name: (f, profile.entity(f.type)) for f in entity.manys}
        #: a parameter's type, which ICAT judges as sent (values.check_applicable)
        self.typed: Entity | None = None
        if entity.base == "Parameter":
            self.typed = profile.entity(entity.field("type").type)
        self.width = len(names)
        self.sql = (
            f"INSERT INTO {table(entity)} ({', '.join(quote(c) for c in names)}) "
            f"VALUES ({', '.join('?' * len(names))})"
        )


_PLANS: dict[int, tuple[Entity, _Plan]] = {}


def _plan(profile: Profile, entity: Entity) -> _Plan:
    known = _PLANS.get(id(entity))
    if known is None or known[0] is not entity:
        known = _PLANS[id(entity)] = (entity, _Plan(profile, entity))
    return known[1]


class _NotFast(Exception):
    """This createMany is not one the fast path takes (or holds a fault): go the usual way."""


def create_many_xml(
    service: IcatService, sid: str | None, beans: list[etree._Element], zone: dt.tzinfo
) -> list[int] | None:
    """The ids of the objects ``beans`` (a SOAP createMany's ``beans`` elements) describe,
    created as :meth:`IcatService.create_many` would; None where the caller must go the usual
    way (another shape, or a fault it then reports)."""
    with collector_held():  # 10,000 rows, no cycles (mock/gc_pause.py)
        return _create_many(service, sid, beans, zone)


def _create_many(
    service: IcatService, sid: str | None, beans: list[etree._Element], zone: dt.tzinfo
) -> list[int] | None:
    if not beans:
        return None
    xsi_type = beans[0].get(XSI_TYPE)
    if not xsi_type:
        return None
    try:
        entity = service.profile.by_xml_name(xsi_type.rpartition(":")[2])
    except KeyError:
        return None
    if entity.base == "Parameter" or entity.name in AUTHZ_ENTITIES:
        return None  # a parameter's type is judged as sent; rules change who may do what
    plan = _plan(service.profile, entity)
    contained: list[tuple[int, Field, etree._Element]] = []
    try:
        rows = [_row(plan, bean, xsi_type, zone, contained, i) for i, bean in enumerate(beans)]
        children = _children(plan, contained, zone)
    except _NotFast:
        return None
    # the beans decode as the usual way would decode them: its next step is the session
    user = service.sessions.user(sid)
    service.check_batch_size(len(rows))
    check = service._check(user)
    try:
        return _store(service, plan, user, rows, children, check is not None)
    except _NotFast:
        return None


def _row(
    plan: _Plan,
    bean: etree._Element,
    xsi_type: str | None,
    zone: dt.tzinfo,
    contained: list[tuple[int, Field, etree._Element]] | None,
    at: int,
    parent: str | None = None,
) -> list[Any]:
    """One bean's row (None where it holds nothing: an absent attribute and an empty
    xs:long are the same to the store), its values read as :func:`soapxml.decode_bean` reads
    them and checked as the store checks them, and its contained children (a Datafile's
    parameters) appended to ``contained`` (None: a contained bean, ``parent`` its relation to
    its parent, which it must not name itself); _NotFast for anything else."""
    if bean.get(XSI_NIL) is not None or (xsi_type is not None and bean.get(XSI_TYPE) != xsi_type):
        raise _NotFast
    row: list[Any] = [None] * plan.width
    columns = plan.columns
    for child in bean:
        name = child.tag
        if name.__class__ is not str:  # comments and processing instructions
            continue
        if name[0] == "{":
            name = name.rpartition("}")[2]
        found = columns.get(name)
        if found is None or name == parent:
            if name not in plan.manys or contained is None:
                raise _NotFast  # unknown, an id (a new object has none), nested deeper
            contained.append((at, plan.manys[name][0], child))
            continue
        index, how, f, limit = found
        text = child.text
        if text is None and child.get(XSI_NIL) is not None:
            raise _NotFast  # nil: rare, the usual way reads it
        if how == _TEXT:
            # no look for characters XML forbids (values._NOT_XML): a parsed text has none
            if text is None:
                text = ""
            elif len(text) > limit:
                raise _NotFast
            row[index] = text
        elif how == _REF:
            if plan.typed is not None and name == "type":
                row[index] = _parameter_type(plan, child, zone)
            else:
                row[index] = _reference(plan, f, child, zone)
        elif how == _WHOLE:
            if text is None:
                row[index] = None  # JAXB's null for an empty xs:long (beans.from_text)
                continue
            try:
                value = int(text)  # as decode_bean reads it
            except ValueError:
                if text.strip():
                    raise _NotFast from None
                row[index] = None
                continue
            if not -(2**63) <= value < 2**63:
                raise _NotFast
            row[index] = value
        else:
            try:
                value = from_text(f, text or "", zone)
                if value is not None:
                    check_value(plan.entity, f, value)
                    value = to_sql(f, value)
            except (ValueError, IcatValidation, IcatBadParameter):
                raise _NotFast from None
            row[index] = value
    for index, default in plan.defaults:
        if row[index] is None:
            row[index] = default
    for index in plan.required:
        if row[index] is None:
            raise _NotFast
    if plan.typed is not None and row[plan.columns["type"][0]] is None:
        raise _NotFast  # a parameter without a type: the usual way's VALIDATION
    return row


def _parameter_type(plan: _Plan, element: etree._Element, zone: dt.tzinfo) -> int:
    """The id of a parameter's type, which must say as sent that it applies to the
    parameter's parent (ICAT reads the flag on the reference: values.check_applicable)."""
    assert plan.typed is not None
    try:
        kind = decode_bean(plan.profile, element, plan.typed, zone=zone)
        check_applicable(plan.entity, kind)
    except (DecodeError, IcatValidation):
        raise _NotFast from None
    if kind.id is None:
        raise _NotFast
    return int(kind.id)


#: Contained children: stored by rows (their plan, rows, each one's parent's index in the
#: batch, the parent's column in the row), or as Beans the store's usual way.
_Children = tuple["_Plan | None", list[list[Any]], list[int], int, list[tuple[int, Field, Bean]]]


def _children(
    plan: _Plan, contained: list[tuple[int, Field, etree._Element]], zone: dt.tzinfo
) -> _Children:
    """The batch's contained children as rows when they all belong to one relation (the
    scale part's DatafileParameters), else decoded as Beans for the store's usual way (two
    relations may fill one table: only the usual way knows the order of their ids)."""
    relations = {f.name for _, f, _ in contained}
    if len(relations) == 1:
        f, target = plan.manys[relations.pop()]
        inner = _plan(plan.profile, target)
        back = inner.columns.get(f.mapped_by or "")
        if target.name not in AUTHZ_ENTITIES and back is not None and back[1] == _REF:
            rows = [_row(inner, el, None, zone, None, at, f.mapped_by) for at, _, el in contained]
            return inner, rows, [at for at, _, _ in contained], back[0], []
    beans: list[tuple[int, Field, Bean]] = []
    for at, f, element in contained:
        try:
            bean = decode_bean(plan.profile, element, plan.manys[f.name][1], zone=zone)
        except DecodeError:
            raise _NotFast from None
        if bean.id is not None:
            raise _NotFast
        beans.append((at, f, bean))
    return None, [], [], 0, beans


def _reference(plan: _Plan, f: Field, element: etree._Element, zone: dt.tzinfo) -> int:
    """The id of a reference. One that holds more than its id (python-icat sends the whole
    object it was given) is decoded as the usual way decodes it — a value it cannot read
    is a fault there — and only its id kept; one without an id is _NotFast."""
    if len(element) == 1 and not (element.text is not None and element.text.strip()):
        child = element[0]
        name = child.tag
        if name.__class__ is str and name[0] == "{":
            name = name.rpartition("}")[2]
        text = child.text
        if name == "id" and not len(child) and text is not None:
            try:
                return int(text)
            except ValueError:
                raise _NotFast from None
    try:
        ref = decode_bean(plan.profile, element, plan.profile.entity(f.type), zone=zone)
    except DecodeError:
        raise _NotFast from None
    if ref.id is None:
        raise _NotFast
    return int(ref.id)


def _store(
    service: IcatService,
    plan: _Plan,
    user: str,
    rows: list[list[Any]],
    children: _Children,
    checked: bool,
) -> list[int]:
    store = service.store
    clock = now()
    stamp = _stamp_text(clock)
    head = [user, stamp, user, stamp]
    child_plan, child_rows, parents, back, child_beans = children
    with store.transaction():
        try:
            first = _insert_rows(store, plan, rows, head, None)
            if child_plan is not None:
                for row, at in zip(child_rows, parents, strict=True):
                    row[back] = first + at
                _insert_rows(store, child_plan, child_rows, head, back)
            # children of several relations go the store's way, each beside its parent,
            # in the order the usual way creates them
            verified: dict[tuple[str, int], bool] = {}
            for at, f, child in child_beans:
                assert f.mapped_by is not None
                store._insert(user, child, clock, verified, (f.mapped_by, first + at), None)
            if checked:
                _require_create(service, user, plan.entity, first, first + len(rows) - 1)
        except (sqlite3.IntegrityError, IcatError):
            raise _NotFast from None  # a unique key, a reference: the usual way says which
    return list(range(first, first + len(rows)))


def _insert_rows(
    store: Store, plan: _Plan, rows: list[list[Any]], head: list[Any], parent: int | None
) -> int:
    """Insert ``rows`` (their references checked to exist, but the parent's at ``parent``)
    by one executemany; the first new id (the others follow it)."""
    if not rows:
        return 0
    for index, f in plan.refs:
        ids = {row[index] for row in rows}
        if None in ids:
            if f.not_null:
                raise _NotFast
            ids.discard(None)
        if index != parent:
            _require(store, f, ids)
    for row in rows:
        row[:4] = head
    conn = store.conn
    before = conn.total_changes
    conn.executemany(plan.sql, rows)
    if conn.total_changes - before != len(rows):
        raise _NotFast
    (last,) = conn.execute("SELECT last_insert_rowid()").fetchone()
    first = int(last) - len(rows) + 1
    (found,) = conn.execute(
        f"SELECT count(*) FROM {table(plan.entity)} WHERE id BETWEEN ? AND ?", (first, last)
    ).fetchone()
    if found != len(rows):
        raise _NotFast  # ids not contiguous: the usual way knows each one
    store._written += len(rows)
    return first


def _require(store: Store, f: Field, ids: set[int]) -> None:
    """Every referenced object exists (else the usual way reports the first missing one)."""
    wanted = sorted(ids)
    conn = store.conn
    for at in range(0, len(wanted), 500):
        part = wanted[at : at + 500]
        marks = ", ".join("?" * len(part))
        (found,) = conn.execute(
            f"SELECT count(*) FROM {table(f.type)} WHERE id IN ({marks})", part
        ).fetchone()
        if found != len(part):
            raise _NotFast


def _require_create(
    service: IcatService, user: str, entity: Entity, first: int, last: int
) -> None:
    """The caller may CREATE every new object, by the rules (one query for all of them)."""
    restrictions = service.authz.restrictions(user, "CREATE")
    if restrictions is None or entity.name not in restrictions:
        return
    test, params = correlated("o", *restrictions[entity.name])
    (allowed,) = service.store.conn.execute(
        'WITH RECURSIVE o("id") AS (SELECT ? UNION ALL SELECT o."id" + 1 FROM o '
        f'WHERE o."id" < ?) SELECT count(*) FROM o WHERE {test}',
        (first, last, *params),
    ).fetchone()
    if allowed != last - first + 1:
        raise _NotFast
