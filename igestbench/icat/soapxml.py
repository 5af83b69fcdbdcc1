"""ICAT's SOAP XML: Beans and values to and from the elements ICAT puts on the wire.

Shared by the local catalogue (which decodes request beans and encodes results) and our clients
(which encode request beans and decode results with this model instead of trusting a generic SOAP
library, see the clients' docs). Encoding is string building over per-entity plans computed once,
because a 2,000-row search result must be rendered in a few milliseconds.

Wire conventions (JAX-WS RI as ICAT serves it): SOAP 1.1, document/literal wrapped, wrapper
elements in ``http://icatproject.org``, children unqualified, entity fields in XSD order, nested
relations without ``xsi:type``, polymorphic values (``bean``, ``beans``, search results) with it.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable
from typing import Any

from lxml import etree

from igestbench.icat.beans import Bean, format_datetime, from_text, to_text
from igestbench.icat.schema import (
    ATTRIBUTE_XSD_TYPES,
    BASE_FIELDS,
    Entity,
    Field,
    Profile,
    RelType,
)

ICAT_NS = "http://icatproject.org"
SOAP_ENV_NS = "http://schemas.xmlsoap.org/soap/envelope/"
XSI_NS = "http://www.w3.org/2001/XMLSchema-instance"
XS_NS = "http://www.w3.org/2001/XMLSchema"
XSI_TYPE = f"{{{XSI_NS}}}type"
XSI_NIL = f"{{{XSI_NS}}}nil"


# --- text escaping ---------------------------------------------------------------------------


def escape(text: str) -> str:
    """XML character data escaping (the common case, no special character, costs one scan)."""
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
    return text


def escape_attr(text: str) -> str:
    return escape(text).replace('"', "&quot;")


# --- encoding --------------------------------------------------------------------------------

_Plan = tuple[tuple[str, RelType, Field], ...]


@functools.cache
def _plan(profile: Profile, entity_name: str) -> _Plan:
    """(name, rel, field) of every field of an entity, in wire order."""
    entity = profile.entity(entity_name)
    fields = (*profile.base_fields_in_wire_order(), *entity.fields)
    return tuple((f.name, f.rel, f) for f in fields)


def _scalar_text(f: Field, value: Any) -> str:
    if isinstance(value, str):
        return escape(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, dt.datetime):
        return format_datetime(value)
    return escape(to_text(f, value))


#: (profile name, entity, the value names of a bean in their order) → the plan's steps for the
#: fields it holds: the beans of one batch hold the same fields, so each is walked over those
#: few, not over every field of its entity
_PRESENT: dict[tuple[str, str, tuple[str, ...]], _Plan] = {}
_PRESENT_KEPT = 4096


def _present(profile: Profile, entity: str, names: tuple[str, ...]) -> _Plan:
    key = (profile.name, entity, names)
    plan = _PRESENT.get(key)
    if plan is None:
        held = set(names)
        plan = tuple(step for step in _plan(profile, entity) if step[0] in held)
        if len(_PRESENT) >= _PRESENT_KEPT:
            _PRESENT.clear()
        _PRESENT[key] = plan
    return plan


def encode_bean_body(profile: Profile, bean: Bean, out: list[str]) -> None:
    """Append the child elements of ``bean`` (its fields, in wire order) to ``out``."""
    values = bean.values
    for name, rel, f in _present(profile, bean.entity, tuple(values)):
        value = values[name]
        if value is None:
            continue
        if rel is RelType.ATTRIBUTE:
            if value.__class__ is str:
                out.append(f"<{name}>{escape(value)}</{name}>")
            elif value.__class__ is int:  # not a bool (its own class)
                out.append(f"<{name}>{value}</{name}>")
            else:
                out.append(f"<{name}>{_scalar_text(f, value)}</{name}>")
        elif rel is RelType.ONE:
            ref = value.values
            if len(ref) == 1 and ref.get("id").__class__ is int:  # a reference by id alone
                out.append(f"<{name}><id>{ref['id']}</id></{name}>")
                continue
            out.append(f"<{name}>")
            encode_bean_body(profile, value, out)
            out.append(f"</{name}>")
        else:
            for child in value:
                out.append(f"<{name}>")
                encode_bean_body(profile, child, out)
                out.append(f"</{name}>")


def encode_bean(profile: Profile, bean: Bean, tag: str, prefix: str = "tns") -> str:
    """``<tag xsi:type="prefix:type">…</tag>`` (xsi and prefix declared by the caller)."""
    out = [f'<{tag} xsi:type="{prefix}:{profile.entity(bean.entity).xml_name}">']
    encode_bean_body(profile, bean, out)
    out.append(f"</{tag}>")
    return "".join(out)


def encode_scalar(value: Any, java_type: str, tag: str = "return") -> str:
    """A typed scalar result or fieldSet field: ``<return xsi:type="xs:long">17</return>``."""
    if value is None:
        return f'<{tag} xsi:nil="true"/>'
    # a search result is xs:anyType: an enumeration value travels as a plain string
    xsi_type = ATTRIBUTE_XSD_TYPES.get(java_type, "xs:string")
    if not xsi_type.startswith("xs:"):
        xsi_type = "xs:string"
    f = Field("value", RelType.ATTRIBUTE, java_type)
    return f'<{tag} xsi:type="{xsi_type}">{_scalar_text(f, value)}</{tag}>'


# --- decoding --------------------------------------------------------------------------------


def local_name(element: etree._Element) -> str:
    tag = element.tag
    if not isinstance(tag, str):  # comments and processing instructions
        return ""
    return tag.rpartition("}")[2]


def _type_local(value: str) -> str:
    return value.rpartition(":")[2]


class DecodeError(ValueError):
    """A request or response element that does not fit the schema (message says where)."""


#: How a child element is read: as a string, a whole number, another attribute, a many-to-one
#: relation, a one-to-many relation (the codes of :data:`_Decoders`).
_STRING, _WHOLE, _ATTRIBUTE, _ONE, _MANY = range(5)

#: How each child element of an entity is read: field name → (code, field, target entity, the
#: target's own decoders); worked out once per entity.
_Decoders = dict[str, tuple[int, Field, "Entity | None", "_Decoders | None"]]


#: by the entity object's identity: hashing a frozen Entity hashes all its fields, per call
_DECODERS: dict[int, tuple[Entity, _Decoders]] = {}


def _decoders(profile: Profile, entity: Entity) -> _Decoders:
    """Worked out once per entity: a createMany of 10,000 Datafiles reads 100,000 elements."""
    cached = _DECODERS.get(id(entity))
    if cached is None or cached[0] is not entity:
        decoders: _Decoders = {}
        cached = _DECODERS[id(entity)] = (entity, decoders)  # before the targets: cycles
        for f in entity.all_fields():
            if f.rel is RelType.ATTRIBUTE:
                code = (_STRING if f.type == "String" else
                        _WHOLE if f.type in ("Long", "Integer") else _ATTRIBUTE)
                decoders[f.name] = (code, f, None, None)
            else:
                target = profile.entity(f.type)
                decoders[f.name] = (_ONE if f.rel is RelType.ONE else _MANY, f, target,
                                    _decoders(profile, target))
    return cached[1]


def decode_bean(
    profile: Profile,
    element: etree._Element,
    entity: Entity | None = None,
    on_unknown: Callable[[Entity, str], None] | None = None,
    zone: dt.tzinfo = dt.UTC,
) -> Bean:
    """The Bean an element holds; its type from ``xsi:type`` unless ``entity`` is given.

    Unknown child elements are ignored (ICAT accepts them) unless ``on_unknown`` says otherwise.
    Dates without a zone are read in ``zone`` (the server's time zone).
    """
    if entity is None:
        xsi_type = element.get(XSI_TYPE)
        if not xsi_type:
            raise DecodeError(f"<{local_name(element)}> has no xsi:type")
        try:
            entity = profile.by_xml_name(_type_local(xsi_type))
        except KeyError:
            raise DecodeError(f"unknown entity type {xsi_type!r}") from None
    return _decode(element, entity, _decoders(profile, entity), on_unknown, zone)


def _decode(
    element: etree._Element,
    entity: Entity,
    decoders: _Decoders,
    on_unknown: Callable[[Entity, str], None] | None,
    zone: dt.tzinfo,
) -> Bean:
    values: dict[str, Any] = {}
    for child in element:
        name = child.tag
        if name.__class__ is not str:  # comments and processing instructions
            continue
        if name[0] == "{":  # children are unqualified; a qualified one is read by its name
            name = name.rpartition("}")[2]
        found = decoders.get(name)
        if found is None:
            if on_unknown is not None and name:
                on_unknown(entity, name)
            continue
        code, f, target, nested = found
        text = child.text
        if text is None and child.get(XSI_NIL) in ("true", "1"):  # nil elements have no text
            values[name] = None
        elif code == _STRING and text is not None:
            values[name] = text  # the common cases without a call
        elif code == _WHOLE and text is not None and text.strip():
            try:
                values[name] = int(text)  # as from_text reads it (int() strips the spaces)
            except ValueError:
                raise DecodeError(f"{entity.name}.{f.name}: {text!r} is not a valid "
                                  f"{f.type}") from None
        elif code < _ONE:
            try:
                values[name] = from_text(f, text or "", zone)
            except ValueError as exc:
                raise DecodeError(f"{entity.name}.{exc}") from None
        elif code == _ONE:
            assert target is not None and nested is not None
            values[name] = _decode(child, target, nested, on_unknown, zone)
        else:
            assert target is not None and nested is not None
            values.setdefault(name, []).append(_decode(child, target, nested, on_unknown, zone))
    return Bean(entity.name, values)


_XS_DECODERS: dict[str, Callable[[str], Any]] = {
    "string": str,
    "long": int,
    "int": int,
    "short": int,
    "double": float,
    "float": float,
    "boolean": lambda t: t.strip() in ("true", "1"),
    "dateTime": lambda t: from_text(BASE_FIELDS[1], t),
}


def decode_value(profile: Profile, element: etree._Element) -> Any:
    """A search result item: an entity Bean, a typed scalar, or a tuple for a fieldSet."""
    if element.get(XSI_NIL) in ("true", "1"):
        return None
    xsi_type = element.get(XSI_TYPE) or ""
    local = _type_local(xsi_type)
    if local == "fieldSet":
        return tuple(decode_value(profile, f) for f in element if local_name(f) == "fields")
    decoder = _XS_DECODERS.get(local)
    if decoder is not None:
        return decoder(element.text or "")
    if not xsi_type:
        return element.text
    return decode_bean(profile, element)


def decode_values(profile: Profile, elements: Iterable[etree._Element]) -> list[Any]:
    return [decode_value(profile, e) for e in elements]
