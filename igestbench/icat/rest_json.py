"""Beans to and from the JSON of ICAT's REST API (``/icat/entityManager``), as icat.server 6.2.0
writes and reads it; used by the local catalogue's REST front and by the ``rest`` client flavour.

The shapes, driven by the entity model of :mod:`igestbench.icat.schema`:

* an object travels as ``{"Dataset": {...}}``; inside, related objects are plain bodies without
  the entity name (a many-to-one is an object, a one-to-many an array of objects);
* an answer body starts with ``id, createId, createTime, modId, modTime``, then the entity's
  fields; null values are left out, but every one-to-many field is there, an empty array when it
  was not INCLUDEd (ICAT's pruned copies keep their empty lists);
* dates are ``yyyy-MM-dd'T'HH:mm:ss.SSSXXX`` in the server's zone (``2024-03-03T10:00:00.000Z``
  in UTC, ``…11:00:00.000+01:00`` in CET), and ICAT parses written dates with the same pattern:
  milliseconds and zone are required;
* enumerations are their names; a search answers a JSON array of objects, scalars, or arrays
  (one per row of a multi-field SELECT), a NaN double as null.

What a client writes differs from what a server answers: only ``id`` of EntityBaseBean's fields
may be sent (ICAT refuses the others), and a many-to-one is a reference ``{"id": n}``.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Sequence
from typing import Any

from igestbench.icat.beans import UTC, Bean
from igestbench.icat.faults import IcatBadParameter, IcatInternal
from igestbench.icat.schema import BASE_FIELD_NAMES, ENUMERATIONS, Entity, Field, Profile, RelType

#: ICAT's ISO 8601 form (Java ``yyyy-MM-dd'T'HH:mm:ss.SSSXXX``).
_DATE = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)$")
#: Written by the server itself; a client never sends them.
_SERVER_FIELDS = BASE_FIELD_NAMES - {"id"}


# --- dates -------------------------------------------------------------------------------------


def format_date(value: dt.datetime, zone: dt.tzinfo = UTC) -> str:
    """``value`` as ICAT's REST API writes a date, in the server's ``zone``."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    local = value.astimezone(zone)
    text = local.strftime("%Y-%m-%dT%H:%M:%S") + f".{local.microsecond // 1000:03d}"
    offset = local.utcoffset() or dt.timedelta(0)
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def parse_date(text: str) -> dt.datetime:
    """A date in ICAT's REST form as an aware datetime in UTC; ValueError otherwise."""
    match = _DATE.match(text)
    if match is None:
        raise ValueError(f"{text!r} is not a date of the form yyyy-MM-ddTHH:mm:ss.SSSXXX")
    zone = match.group(3)
    if zone != "Z" and ":" not in zone:
        zone = zone[:3] + ":" + (zone[3:] or "00")
    value = dt.datetime.fromisoformat(
        f"{match.group(1)}.{match.group(2)}{zone.replace('Z', '+00:00')}"
    )
    return value.astimezone(UTC)


def looks_like_date(value: Any) -> bool:
    """Whether a scalar search result is a date: the answer carries no types, and ICAT's date
    form (fixed milliseconds and zone) is what no other value of a catalogue looks like."""
    return isinstance(value, str) and _DATE.match(value) is not None


# --- answers: Beans and search results to JSON ------------------------------------------------


def _attribute_json(f: Field, value: Any, zone: dt.tzinfo) -> Any:
    if isinstance(value, dt.datetime):
        return format_date(value, zone)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if f.type == "Double" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def entity_body(profile: Profile, bean: Bean, zone: dt.tzinfo = UTC) -> dict[str, Any]:
    """The body of ``bean`` as ICAT answers it (without the entity name around it)."""
    entity = profile.entity(bean.entity)
    values = bean.values
    out: dict[str, Any] = {}
    for name in ("id", "createId", "createTime", "modId", "modTime"):
        value = values.get(name)
        if value is not None:
            out[name] = _attribute_json(entity.field(name), value, zone)
    for f in entity.fields:
        value = values.get(f.name)
        if f.rel is RelType.MANY:
            out[f.name] = [entity_body(profile, child, zone) for child in value or ()]
        elif value is None:
            continue
        elif f.rel is RelType.ONE:
            out[f.name] = entity_body(profile, value, zone)
        else:
            out[f.name] = _attribute_json(f, value, zone)
    return out


def bean_json(profile: Profile, bean: Bean, zone: dt.tzinfo = UTC) -> dict[str, Any]:
    """``{"Dataset": {...}}``: one object as a search or get answers it."""
    return {bean.entity: entity_body(profile, bean, zone)}


def _scalar_json(value: Any, zone: dt.tzinfo) -> Any:
    if isinstance(value, dt.datetime):
        return format_date(value, zone)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def search_json(
    profile: Profile, items: Sequence[Any], entities: bool, multi: bool, zone: dt.tzinfo = UTC
) -> list[Any]:
    """A search answer: objects, scalars, or one array per row of a multi-field SELECT."""
    if entities:
        return [None if b is None else bean_json(profile, b, zone) for b in items]
    if multi:
        return [[_scalar_json(v, zone) for v in row] for row in items]
    return [_scalar_json(v, zone) for v in items]


# --- what a client writes ----------------------------------------------------------------------


def _write_value(f: Field, value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return format_date(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{f.name}: ICAT's JSON has no {value}")
    return value


def write_body(profile: Profile, bean: Bean, *, full: bool = False) -> dict[str, Any]:
    """The body a client sends for ``bean``: its id if set, its attributes, references to the
    objects it points at, and the one-to-many children to create with it.

    ``full``: also send null for every attribute and many-to-one the bean lacks, so that the
    object ends as the bean says (SOAP's ``update`` semantics; ICAT's write leaves unsent fields
    as they are). Primitive booleans cannot be null: an unset one is sent as false, as JAXB
    leaves it.
    """
    entity = profile.entity(bean.entity)
    values = bean.values
    out: dict[str, Any] = {}
    if values.get("id") is not None:
        out["id"] = int(values["id"])
    for f in entity.fields:
        value = values.get(f.name)
        if f.rel is RelType.ATTRIBUTE:
            if value is not None:
                out[f.name] = _write_value(f, value)
            elif full:
                out[f.name] = False if f.type == "boolean" else None
        elif f.rel is RelType.ONE:
            if isinstance(value, Bean) and value.id is not None:
                out[f.name] = {"id": int(value.id)}
            elif isinstance(value, Bean):
                out[f.name] = write_body(profile, value)  # ICAT refuses it, with its message
            elif full:
                out[f.name] = None
        elif value and not full:
            out[f.name] = [write_body(profile, child) for child in value]
    return out


def write_json(profile: Profile, beans: Sequence[Bean], *, full: bool = False) -> list[Any]:
    """The ``entities`` of a write: ``[{"Dataset": {...}}, …]``."""
    return [{b.entity: write_body(profile, b, full=full)} for b in beans]


def reference_json(beans: Sequence[Bean]) -> list[Any]:
    """The ``entities`` of a delete: ``[{"Dataset": {"id": 1}}, …]``."""
    return [{b.entity: {"id": None if b.id is None else int(b.id)}} for b in beans]


# --- JSON to Beans (answers on the client, writes on the server) -------------------------------


class _Decoder:
    """Reads bodies into Beans; ``writing``: a write as icat.server checks it."""

    def __init__(self, profile: Profile, writing: bool) -> None:
        self.profile = profile
        self.writing = writing

    def entity(self, name: str) -> Entity:
        entity = self.profile.entities.get(name)
        if entity is None:
            raise IcatBadParameter(f"{name} is not an ICAT entity")
        return entity

    def top(self, obj: Any) -> Bean:
        if not isinstance(obj, dict) or len(obj) != 1:
            raise IcatBadParameter(
                f"Entity must have one keyword followed by its values in json {dumps_text(obj)}"
            )
        ((name, body),) = obj.items()
        if not isinstance(body, dict):
            raise IcatBadParameter(f"Unexpected array found in JSON {dumps_text(body)}")
        return self.body(self.entity(name), body)

    def body(self, entity: Entity, body: dict[str, Any]) -> Bean:
        values: dict[str, Any] = {}
        for key, value in body.items():
            if not entity.has_field(key):
                raise IcatBadParameter(f"Field {key} not found in {entity.name}")
            f = entity.field(key)
            if self.writing and key in _SERVER_FIELDS:
                # ICAT has no setter for them and fails with a ClassCastException
                raise IcatInternal(f"class java.lang.ClassCastException {entity.name}.{key}")
            if f.rel is RelType.ATTRIBUTE:
                decoded = None if value is None else read_attribute(entity, f, value)
                if decoded is not None or self.writing:
                    values[key] = decoded
            elif f.rel is RelType.ONE:
                if value is None:
                    if self.writing:
                        values[key] = None
                    continue
                if not isinstance(value, dict):
                    raise IcatBadParameter(
                        f"Badly formatted relationship object {dumps_text(value)}"
                    )
                if self.writing and "id" not in value:
                    raise IcatBadParameter(
                        "One to many related objects should not have the id value set: "
                        + dumps_text(value)
                    )
                values[key] = self.body(self.entity(f.type), value)
            else:
                if not isinstance(value, list):
                    raise IcatInternal(f"class java.lang.ClassCastException {entity.name}.{key}")
                children = []
                for child in value:
                    if not isinstance(child, dict):
                        raise IcatInternal(
                            f"class java.lang.ClassCastException {dumps_text(child)}"
                        )
                    if self.writing and "id" in child:
                        raise IcatBadParameter(
                            "Many to one related objects should have the id value set: "
                            + dumps_text(child)
                        )
                    children.append(self.body(self.entity(f.type), child))
                if children:  # an empty array is "not INCLUDEd", as a SOAP answer leaves it out
                    values[key] = children
        return Bean(entity.name, values)


def read_attribute(entity: Entity, f: Field, value: Any) -> Any:
    """A written attribute's value (not null) as icat.server reads it from JSON; its fault
    (with its type and message) where it cannot."""
    t = f.type
    wrong = IcatInternal(
        f"class java.lang.ClassCastException: {entity.name}.{f.name} is not a {t}"
    )
    if t == "Date":
        try:
            if not isinstance(value, str):
                raise ValueError(value)
            return parse_date(value)
        except ValueError:
            raise IcatBadParameter(f"Badly formatted date {dumps_text(value)}") from None
    if t in ("boolean", "Boolean"):
        if not isinstance(value, bool):
            raise IcatBadParameter(f"Field {f.name} must be true or false in {entity.name}")
        return value
    if t in ("Long", "Integer"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong
        if isinstance(value, float) and not value.is_integer():
            raise IcatInternal(f"java.lang.ArithmeticException: Rounding necessary ({f.name})")
        return int(value)
    if t == "Double":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise wrong
        return float(value)
    if not isinstance(value, str):
        raise wrong
    if t in ENUMERATIONS:
        allowed = ENUMERATIONS[t]
        if value.upper() not in allowed:
            raise IcatBadParameter(
                f"Field {f.name} must be in [{', '.join(allowed)}] for {entity.name}"
            )
        return value.upper()
    return value


def dumps_text(value: Any) -> str:
    """``value`` as compact JSON text (how ICAT quotes JSON in its messages)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def beans_from_write(profile: Profile, data: Any) -> list[Bean]:
    """The Beans of a write's ``entities`` (one object or an array), checked as ICAT checks
    them; an IcatError carries the index of the failing object as its offset."""
    items = data if isinstance(data, list) else [data]
    decoder = _Decoder(profile, writing=True)
    beans = []
    for index, obj in enumerate(items):
        try:
            beans.append(decoder.top(obj))
        except (IcatBadParameter, IcatInternal) as exc:
            exc.offset = index
            raise
    return beans


def bean_from_answer(profile: Profile, obj: Any) -> Bean:
    """A ``{"Dataset": {...}}`` of an answer as a Bean (empty one-to-many arrays left out)."""
    return _Decoder(profile, writing=False).top(obj)


def _scalar(value: Any) -> Any:
    return parse_date(value) if looks_like_date(value) else value


def search_from_answer(profile: Profile, data: Any) -> list[Any]:
    """A search answer as the SOAP flavours return it: Beans, scalars, tuples for rows.

    A null item (an aggregate over no rows, which ICAT's REST API writes as null) is left out:
    its SOAP answer has no element for it, and all flavours return the same.
    """
    if not isinstance(data, list):
        raise ValueError("a search answer is a JSON array")
    decoder = _Decoder(profile, writing=False)
    out: list[Any] = []
    for item in data:
        if item is None:
            continue
        if isinstance(item, dict):
            out.append(decoder.top(item))
        elif isinstance(item, list):
            out.append(tuple(_scalar(v) for v in item))
        else:
            out.append(_scalar(item))
    return out
