"""Entity values as plain Python objects, and the conversion of attribute values to and from text.

A :class:`Bean` is one ICAT object: its entity name and a dict of field values, where an attribute
is a Python scalar (str, int, float, bool, datetime, or an enum name), a ONE relation is another
Bean and a MANY relation is a list of Beans. Fields that were not sent or not included are simply
absent. Both the local catalogue and our clients speak in Beans; the XML codec and the SQLite store
convert from and to them using the profile's schema.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass, field
from typing import Any

from igestbench.icat.schema import Field

UTC = dt.UTC


@dataclass(slots=True)
class Bean:
    """One ICAT object (or a reference to one, when only ``id`` is set)."""

    entity: str
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> int | None:
        return self.values.get("id")

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    def __setitem__(self, name: str, value: Any) -> None:
        self.values[name] = value

    def __contains__(self, name: str) -> bool:
        return name in self.values

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly copy (relations nested, dates as ISO strings)."""
        out: dict[str, Any] = {"_type": self.entity}
        for key, value in self.values.items():
            if isinstance(value, Bean):
                out[key] = value.to_dict()
            elif isinstance(value, list):
                out[key] = [v.to_dict() for v in value]
            elif isinstance(value, dt.datetime):
                out[key] = format_datetime(value)
            else:
                out[key] = value
        return out


def format_datetime(value: dt.datetime) -> str:
    """xs:dateTime as ICAT sends it (JAXB): in the value's own offset, 'Z' for UTC, fractional
    seconds only when present. A naive value is UTC. A server in UTC answers
    ``2024-03-03T10:00:00Z``; one in CET the same instant as ``2024-03-03T11:00:00+01:00``.
    """
    # Cached on wall time and offset, not on the datetime: aware datetimes of one instant are
    # equal in any zone (10:00Z == 11:00+01:00), and in one zone the two 02:30 of a DST change
    # are equal whatever their offset; either would be given the other's text.
    return _format_datetime(value.replace(tzinfo=None), value.utcoffset() or dt.timedelta(0))


@functools.lru_cache(maxsize=8192)
def _format_datetime(value: dt.datetime, offset: dt.timedelta) -> str:
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}"
    if not offset:
        return text + "Z"
    minutes = int(offset.total_seconds()) // 60
    sign = "+" if minutes >= 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def parse_datetime(text: str, zone: dt.tzinfo = UTC) -> dt.datetime:
    """An xs:dateTime as an aware datetime in UTC; without a zone it is read in ``zone``, as
    ICAT reads it in its JVM's default time zone."""
    text = text.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone)
    return value.astimezone(UTC)


def parse_bool(text: str) -> bool:
    text = text.strip()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ValueError(f"{text!r} is not an xs:boolean")


#: Attribute types whose empty element JAXB reads as null (booleans: see :func:`from_text`).
_NULL_WHEN_EMPTY = frozenset({"Long", "Integer", "Double", "Date"})


def from_text(f: Field, text: str, zone: dt.tzinfo = UTC) -> Any:
    """The Python value of attribute ``f`` given as XML text; ValueError when it is not one.

    ``zone``: where a date without a zone is read (the server's time zone)."""
    t = f.type
    try:
        if t == "String":
            return text
        if t in _NULL_WHEN_EMPTY and not text.strip():
            # JAXB cannot parse an empty xs:long, xs:int, xs:double or xs:dateTime either
            # (DatatypeConverterImpl throws), but its unmarshaller recovers from every error
            # that is not fatal (UnmarshallerImpl.handleEvent) and leaves the field unset:
            # ICAT gets null, as for an empty xs:boolean (suds sends <fileSize/> for an unset
            # one).
            return None
        if t in ("Long", "Integer"):
            return int(text.strip())
        if t == "Double":
            return float(text.strip())
        if t in ("boolean", "Boolean"):
            if not text.strip():
                # JAXB reads an empty xs:boolean (suds sends <complete/> for an unset one) as
                # null, and null set on a Java primitive is its default: ICAT's entity
                # booleans are primitives, so they become false; a Boolean stays null.
                return False if t == "boolean" else None
            return parse_bool(text)
        if t == "Date":
            return parse_datetime(text, zone)
        return text.strip()  # enumerations travel as their names
    except ValueError as exc:
        raise ValueError(f"{f.name}: {text!r} is not a valid {t}") from exc


def to_text(f: Field, value: Any) -> str:
    """The XML text of attribute value ``value`` of field ``f``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dt.datetime):
        return format_datetime(value)
    if isinstance(value, float) and f.type == "Double":
        return (
            repr(value)
            if value == value and value not in (float("inf"), float("-inf"))
            else ("NaN" if value != value else ("INF" if value > 0 else "-INF"))
        )
    return str(value)
