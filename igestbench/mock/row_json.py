"""Search and get answers of the REST front from the store's rows straight to ICAT's JSON text.

The JSON sibling of :mod:`igestbench.mock.row_xml` (issue 20: a 2,000-Datafile search took
96.5 ms over REST, 7 times its SOAP answer, because it built a Bean per row, a dict per Bean,
and only then JSON). Each entity gets an encoding plan once: its fields in the order ICAT writes
them (``id, createId, createTime, modId, modTime``, then the entity's fields, inherited first),
each attribute with its key and a text converter. Rows without INCLUDEd objects are written by
one f-string per row made for the entity; rows with INCLUDEd objects by one loop over the plan.

What is written is, byte for byte, what ``rest_json.search_json`` / ``bean_json`` of the Beans of
the same rows give through the REST front's ``json.dumps`` (compact separators, UTF-8 as it is):

* null attributes are left out, a non-finite double is ``null`` (it is kept, as a key);
* a many-to-one is its body when INCLUDEd and absent otherwise; every one-to-many is there, an
  empty array when not INCLUDEd (ICAT's pruned copies keep their lists);
* strings go through the json module's own escaping (``encode_basestring``, the C function
  ``json.dumps`` uses), doubles through ``float.__repr__`` as json writes them, dates in the
  server's zone as :func:`igestbench.icat.rest_json.format_date` writes them.

``tests/test_row_json.py`` compares the two on every kind of value, in UTC and Europe/Berlin.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from igestbench.icat import rest_json
from igestbench.icat.schema import BASE_FIELDS, Entity, Field, Profile, RelType
from igestbench.mock import tables
from igestbench.mock.row_xml import Manys, Ones, Row, _Texts

#: a str as a JSON string, quotes included (what json.dumps(ensure_ascii=False) writes)
string = json.encoder.encode_basestring
#: the order ICAT writes EntityBaseBean's fields in, before the entity's own
_BASE_ORDER = ("id", "createId", "createTime", "modId", "modTime")

_ATTRIBUTE, _ONE, _MANY = 0, 1, 2


# --- column value → JSON text ------------------------------------------------------------------


def date_converter(zone: dt.tzinfo) -> Callable[[str], str]:
    """Stored date (UTC text) → its JSON string on a server in ``zone``."""

    def convert(stored: str) -> str:
        return '"' + rest_json.format_date(tables.parse_stored_datetime(stored), zone) + '"'

    return convert


def _bool_text(value: Any) -> str:
    return "true" if value else "false"


def _double_text(value: Any) -> str:
    number = float(value)
    return float.__repr__(number) if math.isfinite(number) else "null"


def _converter(f: Field, dates: Callable[[str], str]) -> Callable[[Any], str]:
    """The JSON text of a non-null value of column ``f`` (String and enumerations are TEXT)."""
    if f.type == "Date":
        return dates
    if f.type in ("Long", "Integer"):
        return str  # the store lets only ints into these columns (values.check_value)
    if f.type in ("boolean", "Boolean"):
        return _bool_text
    if f.type == "Double":
        return _double_text
    return string


# --- entity rows ------------------------------------------------------------------------------

#: (kind, column index, field name, key text, converter for attributes)
_Step = tuple[int, int, str, str, Callable[[Any], str] | None]


class RowJsonEncoder:
    """Rows of one entity (selected with :func:`tables.select_list`) → ICAT's JSON objects.

    :meth:`rows_text` and :meth:`returns` give the texts of a search answer's elements
    (``{"Dataset":{…}}``), :meth:`bodies` those of INCLUDEd objects (``{…}``).
    """

    def __init__(self, profile: Profile, entity: Entity, zone: dt.tzinfo = dt.UTC) -> None:
        columns = {f.name: i for i, f in enumerate(tables.stored_fields(entity))}
        dates = _Texts(date_converter(zone)).__getitem__
        base = {f.name: f for f in BASE_FIELDS}
        order = (*(base[name] for name in _BASE_ORDER), *entity.fields)
        steps: list[_Step] = []
        for n, f in enumerate(order):
            key = ("" if n == 0 else ",") + string(f.name) + ":"
            if f.rel is RelType.ATTRIBUTE:
                steps.append((_ATTRIBUTE, columns[f.name], f.name, key, _converter(f, dates)))
            elif f.rel is RelType.ONE:
                steps.append((_ONE, columns[f.name], f.name, key, None))
            else:
                steps.append((_MANY, columns["id"], f.name, key, None))
        self.steps = tuple(steps)
        self.item_open = "{" + string(entity.name) + ":{"
        attributes = [f for f in order if f.rel is RelType.ATTRIBUTE]
        #: how many leading columns of :func:`tables.select_list` the attributes need
        self.attribute_columns = 1 + max(columns[f.name] for f in attributes)
        plan = [(f, columns.get(f.name, -1)) for f in order]
        #: one row's element of a search answer, without INCLUDEd objects
        self.row_text = _row_function(plan, dates, self.item_open, "}}")
        #: what goes between the row texts of a search answer
        self.separator = ","
        self._body = _row_function(plan, dates, "{", "}")

    def rows_text(self, rows: Iterable[Row]) -> str:
        """The elements of a search answer for ``rows`` (none with INCLUDEd objects), joined
        by commas: what goes between the brackets of the answer's array."""
        return ",".join(map(self.row_text, rows))

    def returns(self, rows: Sequence[Row], ones: Ones, manys: Manys) -> str:
        """The elements ``{"Dataset":{…}}`` of a search answer, one per row, joined by commas."""
        return ",".join(self._write(row, ones, manys, self.item_open, "}}") for row in rows)

    def bodies(self, rows: Sequence[Row], ones: Ones, manys: Manys) -> list[str]:
        """Each row's object as it goes inside its relation (``{…}``)."""
        if not ones and not manys:
            return list(map(self._body, rows))
        return [self._write(row, ones, manys, "{", "}") for row in rows]

    def _write(self, row: Row, ones: Ones, manys: Manys, head: str, tail: str) -> str:
        out = [head]
        append = out.append
        for kind, i, name, key, convert in self.steps:
            value = row[i]
            if convert is not None:
                if value is not None:
                    append(key)
                    append(convert(value))
            elif kind == _ONE:
                related = ones.get(name)
                body = None if related is None or value is None else related.get(value)
                if body is not None:  # not INCLUDEd, or not readable: left out, as ICAT does
                    append(key)
                    append(body)
            else:
                children = manys.get(name)
                append(key)
                append("[")
                append(",".join(() if children is None else children.get(value, ())))
                append("]")
        append(tail)
        return "".join(out)


def _literal(text: str) -> str:
    """``text`` as literal text inside a generated ``f"…"`` (quotes, backslashes, braces)."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("{", "{{").replace("}", "}}")


def _row_function(
    plan: Sequence[tuple[Field, int]], dates: Callable[[str], str], head: str, tail: str
) -> Callable[[Row], str]:
    """A function writing one row without INCLUDEd objects between ``head`` and ``tail``.

    As in :func:`row_xml._row_function`, one f-string per row instead of a loop over the
    columns. The source holds only the schema's field names (checked to be identifiers),
    column indices and the names of the converters in ``names``, never a value from the store
    or a request. A key that is written only when its value is not null is a name too (an
    expression inside the f-string cannot hold the string's own quote).
    """
    names: dict[str, Any] = {
        "string": string,
        "dates": dates,
        "boolean": _bool_text,
        "double": _double_text,
        "users": _Texts(string).__getitem__,
    }
    parts = [_literal(head)]
    for n, (f, i) in enumerate(plan):
        if not f.name.isidentifier():  # pragma: no cover - the schema's names are identifiers
            raise ValueError(f"field name {f.name!r} cannot be written into source")
        key = ("" if n == 0 else ",") + string(f.name) + ":"
        if f.rel is RelType.ONE:
            continue  # not INCLUDEd: left out
        if f.rel is RelType.MANY:
            parts.append(_literal(key + "[]"))
            continue
        value = f"r[{i}]"
        if f.type == "Date":
            text = f"dates({value})"
        elif f.type in ("Long", "Integer"):
            text = value  # the store lets only ints into these columns: formatted as str()
        elif f.type in ("boolean", "Boolean"):
            text = f"boolean({value})"
        elif f.type == "Double":
            text = f"double({value})"
        elif f.name in ("createId", "modId"):
            text = f"users({value})"
        else:
            text = f"string({value})"
        if f.not_null or f.name == "id":
            parts.append(_literal(key) + "{" + text + "}")
        else:
            if text == value:  # an int, which the f-string formatted by itself
                text = f"str({value})"
            names[f"k{n}"] = key
            parts.append(f"{{'' if {value} is None else k{n} + {text}}}")
    parts.append(_literal(tail))
    source = f'lambda r: f"{"".join(parts)}"'
    function: Callable[[Row], str] = eval(source, names)
    return function


@functools.cache
def row_encoder(profile: Profile, entity_name: str, zone: dt.tzinfo = dt.UTC) -> RowJsonEncoder:
    return RowJsonEncoder(profile, profile.entity(entity_name), zone)


def encode_values(
    profile: Profile,
    items: Sequence[Any],
    value_types: Sequence[str],
    multi: bool,
    empty_aggregates: int,
    zone: dt.tzinfo,
) -> str:
    """A search for values: scalars, or one array per row of a multi-field SELECT.

    An aggregate over no rows (left out of ``items`` and counted in ``empty_aggregates``) is
    JPA's one row of nulls, which ICAT's REST API writes as null. Few columns and no Beans:
    written by the json module from :func:`rest_json.search_json`.
    """
    empty = tuple(None for _ in value_types) if multi else None
    rows = [*items, *([empty] * empty_aggregates)]
    answer = rest_json.search_json(profile, rows, False, multi, zone)
    return json.dumps(answer, separators=(",", ":"), ensure_ascii=False)
