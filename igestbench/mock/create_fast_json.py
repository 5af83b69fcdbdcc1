"""REST's write into the fast path (:mod:`create_fast`): a list of new objects of one type,
from the decoded JSON straight to rows.

ICAT's write (``POST /icat/entityManager``, :mod:`rest_write`) creates the objects of a list
that have no id and updates those that have one. When every object is new, of one type the
fast path takes, each becomes one row: its values read as :func:`rest_json.read_attribute`
reads them for the usual way and checked as the store checks them, references by ``{"id":
n}`` alone, and the children of one relation (a Datafile's parameters) as rows beside it. A
parameter's type is judged as stored, as REST's usual way judges it (it loads the type a
reference names: rest_write._loaded_types), where SOAP's judges the type as sent.

Anything else — an update, mixed types, an unknown or server-written field, a reference
naming more than its id, a value the usual way would convert or refuse, children of several
relations or nested deeper — makes :func:`create_many_json` answer None before the store is
written: the caller goes the usual way (``rest_json.beans_from_write``, then
``rest_write.write``), which reports every fault as ICAT would, with its offset.
"""

from __future__ import annotations

from typing import Any

from igestbench.icat import rest_json
from igestbench.icat.faults import IcatError
from igestbench.icat.schema import Field
from igestbench.mock import create_fast
from igestbench.mock.create_fast import REF, Batch, Contained, NotFast, Plan, plan_of
from igestbench.mock.service import IcatService
from igestbench.mock.tables import to_sql
from igestbench.mock.values import _NOT_XML, TEXT, WHOLE, check_applicable, check_value

#: The range of a Java long, which SQLite's integers share.
_LONG = range(-(2**63), 2**63)


def create_many_json(service: IcatService, sid: str | None, data: Any) -> list[int] | None:
    """The ids of the objects ``data`` (a write's decoded ``entities``: one object or a list)
    describes, when all are new and of one type, created as :func:`rest_write.write` would
    create them; None where the caller must go the usual way (another shape, or a fault it
    then reports). The caller holds the collector off (:func:`create_fast.run`)."""
    items = data if isinstance(data, list) else [data]
    return create_fast.run(service, sid, lambda: _batch(service, sid, items))


def _batch(service: IcatService, sid: str | None, items: list[Any]) -> Batch:
    if not items or items[0].__class__ is not dict or len(items[0]) != 1:
        raise NotFast
    name = next(iter(items[0]))
    entity = service.profile.entities.get(name)
    if entity is None or not create_fast.takes(entity):
        raise NotFast
    plan = plan_of(service.profile, entity)
    contained: list[tuple[int, Field, Any]] = []
    rows = []
    for at, item in enumerate(items):
        if item.__class__ is not dict or len(item) != 1:
            raise NotFast
        body = item.get(name)
        if body.__class__ is not dict:
            raise NotFast  # another entity, or not an object
        rows.append(_row(plan, body, contained, at))
    return Batch(plan, rows, _children(service, sid, plan, contained))


def _row(
    plan: Plan,
    body: dict[str, Any],
    contained: list[tuple[int, Field, Any]] | None,
    at: int,
    parent: str | None = None,
) -> list[Any]:
    """One object's row (None where it holds nothing: an absent field and a null one are the
    same to a create), its values read as the usual way reads them and checked as the store
    checks them, and its contained children appended to ``contained`` (None: a contained
    object, ``parent`` its relation to its parent, which it must not name itself); NotFast
    for anything else."""
    row: list[Any] = [None] * plan.width
    columns = plan.columns
    for name, value in body.items():
        found = columns.get(name)
        if found is None or name == parent:
            many = plan.manys.get(name)
            if many is None or contained is None or value.__class__ is not list:
                raise NotFast  # unknown, an id (an update), written by the server, nested
            contained += [(at, many[0], child) for child in value]
            continue
        if value is None:
            continue
        index, how, f, limit = found
        if how == TEXT:
            if value.__class__ is not str or len(value) > limit or _NOT_XML.search(value):
                raise NotFast
        elif how == WHOLE:
            if value.__class__ is not int or value not in _LONG:
                raise NotFast  # a float the usual way rounds, a bool it refuses
        elif how == REF:
            if value.__class__ is not dict or len(value) != 1:
                raise NotFast
            value = value.get("id")
            if value.__class__ is not int or value not in _LONG:
                raise NotFast
        else:
            try:
                value = rest_json.read_attribute(plan.entity, f, value)
                check_value(plan.entity, f, value)
            except IcatError:
                raise NotFast from None
            value = to_sql(f, value)
        row[index] = value
    plan.finish(row)
    return row


def _children(
    service: IcatService, sid: str | None, plan: Plan, contained: list[tuple[int, Field, Any]]
) -> Contained:
    """The batch's contained children as rows, when they all belong to one relation whose
    objects go in as rows; a parameter's type must apply to its parent as stored."""
    if not contained:
        return Contained()
    f = contained[0][1]
    found = plan.contained(f.name)
    if found is None or any(g is not f for _, g, _ in contained):
        raise NotFast  # several relations: the usual way knows the order of their ids
    inner, back = found
    rows = []
    for at, _, child in contained:
        if child.__class__ is not dict:
            raise NotFast
        rows.append(_row(inner, child, None, at, f.mapped_by))
    if inner.typed is not None:
        _require_applicable(service, sid, inner, {row[inner.columns["type"][0]] for row in rows})
    return Contained(inner, rows, [at for at, _, _ in contained], back)


def _require_applicable(service: IcatService, sid: str | None, plan: Plan, types: set[int]) -> None:
    """Each parameter type, as stored, applies to the parameters' parent: what the usual way
    judges once it has loaded the type (rest_write._loaded_types)."""
    try:
        user = service.sessions.user(sid)
        for type_id in types:
            check_applicable(plan.entity, service.reader.get(user, "ParameterType", type_id, None))
    except IcatError:
        raise NotFast from None
