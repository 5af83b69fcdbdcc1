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


def encode_bean_body(profile: Profile, bean: Bean, out: list[str]) -> None:
    """Append the child elements of ``bean`` (its fields, in wire order) to ``out``."""
    values = bean.values
    for name, rel, f in _plan(profile, bean.entity):
        value = values.get(name)
        if value is None:
            continue
        if rel is RelType.ATTRIBUTE:
            out.append(f"<{name}>{_scalar_text(f, value)}</{name}>")
        elif rel is RelType.ONE:
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


#: How each child element of an entity is read: field name → (field, kind, target entity).
_Decoders = dict[str, tuple[Field, RelType, "Entity | None"]]


#: by the entity object's identity: hashing a frozen Entity hashes all its fields, per call
_DECODERS: dict[int, tuple[Entity, _Decoders]] = {}


def _decoders(profile: Profile, entity: Entity) -> _Decoders:
    """Worked out once per entity: a createMany of 10,000 Datafiles reads 30,000 elements."""
    cached = _DECODERS.get(id(entity))
    if cached is None or cached[0] is not entity:
        decoders = {f.name: (f, f.rel, profile.entity(f.type) if f.rel is not RelType.ATTRIBUTE
                             else None) for f in entity.all_fields()}  # fmt: skip
        cached = _DECODERS[id(entity)] = (entity, decoders)
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
    decoders = _decoders(profile, entity)
    values: dict[str, Any] = {}
    for child in element:
        name = child.tag
        if not isinstance(name, str):  # comments and processing instructions
            continue
        if name[0] == "{":  # children are unqualified; a qualified one is read by its name
            name = name.rpartition("}")[2]
        found = decoders.get(name)
        if found is None:
            if on_unknown is not None and name:
                on_unknown(entity, name)
            continue
        f, rel, target = found
        text = child.text
        if text is None and child.get(XSI_NIL) in ("true", "1"):  # nil elements have no text
            values[name] = None
        elif rel is RelType.ATTRIBUTE:
            if f.type == "String" and text is not None:
                values[name] = text  # the common case, without a call
                continue
            try:
                values[name] = from_text(f, text or "", zone)
            except ValueError as exc:
                raise DecodeError(f"{entity.name}.{exc}") from None
        elif rel is RelType.ONE:
            values[name] = decode_bean(profile, child, target, on_unknown, zone)
        else:
            values.setdefault(name, []).append(
                decode_bean(profile, child, target, on_unknown, zone)
            )
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
