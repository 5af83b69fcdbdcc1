"""SOAP's createMany into the fast path (:mod:`create_fast`): from the request's XML elements
straight to rows.

Each ``beans`` element becomes one row, read as :func:`soapxml.decode_bean` would read it and
checked as the store checks it. A parameter's type is judged as sent, as ICAT's SOAP create
does (values.check_applicable). Whatever the reader does not take (mixed types, unknown, nil
or id elements, references without an id, parameters at the top, REST) makes it answer None
before it touches the store or the session: the caller goes the usual way (decode,
:meth:`Store.create_many`).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from lxml import etree

from igestbench.icat.beans import Bean, from_text
from igestbench.icat.faults import IcatBadParameter, IcatValidation
from igestbench.icat.schema import Field
from igestbench.icat.soapxml import XSI_NIL, XSI_TYPE, DecodeError, decode_bean
from igestbench.mock import create_fast
from igestbench.mock.create_fast import REF, Batch, Contained, NotFast, Plan, plan_of
from igestbench.mock.service import IcatService
from igestbench.mock.tables import to_sql
from igestbench.mock.values import TEXT, WHOLE, check_applicable, check_value


def create_many_xml(
    service: IcatService, sid: str | None, beans: list[etree._Element], zone: dt.tzinfo
) -> list[int] | None:
    """The ids of the objects ``beans`` (a SOAP createMany's ``beans`` elements) describe,
    created as :meth:`IcatService.create_many` would; None where the caller must go the usual
    way (another shape, or a fault it then reports). The caller holds the collector off
    (:func:`create_fast.run`)."""
    return create_fast.run(service, sid, lambda: _batch(service, beans, zone))


def _batch(service: IcatService, beans: list[etree._Element], zone: dt.tzinfo) -> Batch:
    if not beans:
        raise NotFast
    xsi_type = beans[0].get(XSI_TYPE)
    if not xsi_type:
        raise NotFast
    try:
        entity = service.profile.by_xml_name(xsi_type.rpartition(":")[2])
    except KeyError:
        raise NotFast from None
    if not create_fast.takes(entity):
        raise NotFast  # a parameter's type is judged as sent; rules change who may do what
    plan = plan_of(service.profile, entity)
    contained: list[tuple[int, Field, etree._Element]] = []
    rows = [_row(plan, bean, xsi_type, zone, contained, i) for i, bean in enumerate(beans)]
    return Batch(plan, rows, _children(plan, contained, zone))


def _row(
    plan: Plan,
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
    its parent, which it must not name itself); NotFast for anything else."""
    if bean.get(XSI_NIL) is not None or (xsi_type is not None and bean.get(XSI_TYPE) != xsi_type):
        raise NotFast
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
                raise NotFast  # unknown, an id (a new object has none), nested deeper
            contained.append((at, plan.manys[name][0], child))
            continue
        index, how, f, limit = found
        text = child.text
        if text is None and child.get(XSI_NIL) is not None:
            raise NotFast  # nil: rare, the usual way reads it
        if how == TEXT:
            # no look for characters XML forbids (values._NOT_XML): a parsed text has none
            if text is None:
                text = ""
            elif len(text) > limit:
                raise NotFast
            row[index] = text
        elif how == REF:
            if plan.typed is not None and name == "type":
                row[index] = _parameter_type(plan, child, zone)
            else:
                row[index] = _reference(plan, f, child, zone)
        elif how == WHOLE:
            if text is None:
                row[index] = None  # JAXB's null for an empty xs:long (beans.from_text)
                continue
            try:
                value = int(text)  # as decode_bean reads it
            except ValueError:
                if text.strip():
                    raise NotFast from None
                row[index] = None
                continue
            if not -(2**63) <= value < 2**63:
                raise NotFast
            row[index] = value
        else:
            try:
                value = from_text(f, text or "", zone)
                if value is not None:
                    check_value(plan.entity, f, value)
                    value = to_sql(f, value)
            except (ValueError, IcatValidation, IcatBadParameter):
                raise NotFast from None
            row[index] = value
    plan.finish(row)
    return row


def _parameter_type(plan: Plan, element: etree._Element, zone: dt.tzinfo) -> int:
    """The id of a parameter's type, which must say as sent that it applies to the
    parameter's parent (ICAT reads the flag on the reference: values.check_applicable)."""
    assert plan.typed is not None
    try:
        kind = decode_bean(plan.profile, element, plan.typed, zone=zone)
        check_applicable(plan.entity, kind)
    except (DecodeError, IcatValidation):
        raise NotFast from None
    if kind.id is None:
        raise NotFast
    return int(kind.id)


def _children(
    plan: Plan, contained: list[tuple[int, Field, etree._Element]], zone: dt.tzinfo
) -> Contained:
    """The batch's contained children as rows when they all belong to one relation (the
    scale part's DatafileParameters), else decoded as Beans for the store's usual way."""
    relations = {f.name for _, f, _ in contained}
    if len(relations) == 1:
        f = contained[0][1]
        found = plan.contained(f.name)
        if found is not None:
            inner, back = found
            rows = [_row(inner, el, None, zone, None, at, f.mapped_by) for at, _, el in contained]
            return Contained(inner, rows, [at for at, _, _ in contained], back)
    beans: list[tuple[int, Field, Bean]] = []
    for at, f, element in contained:
        try:
            bean = decode_bean(plan.profile, element, plan.manys[f.name][1], zone=zone)
        except DecodeError:
            raise NotFast from None
        if bean.id is not None:
            raise NotFast
        beans.append((at, f, bean))
    return Contained(beans=beans)


def _reference(plan: Plan, f: Field, element: etree._Element, zone: dt.tzinfo) -> int:
    """The id of a reference. One that holds more than its id (python-icat sends the whole
    object it was given) is decoded as the usual way decodes it — a value it cannot read
    is a fault there — and only its id kept; one without an id is NotFast."""
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
                raise NotFast from None
    try:
        ref = decode_bean(plan.profile, element, plan.profile.entity(f.type), zone=zone)
    except DecodeError:
        raise NotFast from None
    if ref.id is None:
        raise NotFast
    return int(ref.id)
