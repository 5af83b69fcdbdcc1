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


@functools.lru_cache(maxsize=8192)
def format_datetime(value: dt.datetime) -> str:
    """xs:dateTime as ICAT 6.2 sends it: UTC, 'Z', fractional seconds only when present."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    if value.microsecond:
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_datetime(text: str) -> dt.datetime:
    """An xs:dateTime (with Z, an offset or no zone, which means UTC) as an aware datetime."""
    text = text.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    value = dt.datetime.fromisoformat(text)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def parse_bool(text: str) -> bool:
    text = text.strip()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise ValueError(f"{text!r} is not an xs:boolean")


def from_text(f: Field, text: str) -> Any:
    """The Python value of attribute ``f`` given as XML text; ValueError when it is not one."""
    t = f.type
    try:
        if t == "String":
            return text
        if t in ("Long", "Integer"):
            return int(text.strip())
        if t == "Double":
            return float(text.strip())
        if t in ("boolean", "Boolean"):
            return parse_bool(text)
        if t == "Date":
            return parse_datetime(text)
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
