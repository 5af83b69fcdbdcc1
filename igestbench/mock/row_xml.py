"""Search and get answers from the store's rows straight to ICAT's XML text, with no Bean between.

A search returning 2,000 Datafiles spent most of its server time (over four fifths) building a
Bean per row and then walking the Beans to encode them (issue 11: it was slower than a real ICAT
6.2.0; the SQL statement itself takes about 5 ms). Here each entity
gets an encoding plan once: its fields in wire order (the XSD's, which is not the column order),
each attribute with its opening and closing tag, its column and a text converter, each relation
with the column that finds its INCLUDEd objects. Rows are then written by one loop into one list
of strings. The text is, byte for byte, what :func:`igestbench.icat.soapxml.encode_bean` gives for
the Bean of the same row; ``tests/test_row_xml.py`` compares the two on every kind of value.

INCLUDEd objects come from :class:`igestbench.mock.reader.Reader`, which fetches them set-wise
and hands their encoded bodies to :meth:`RowEncoder.bodies` / :meth:`RowEncoder.returns` as
``ones`` (field → id → body) and ``manys`` (field → parent id → bodies).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from igestbench.icat import soapxml
from igestbench.icat.beans import format_datetime, to_text
from igestbench.icat.schema import Entity, Field, Profile, RelType
from igestbench.icat.soapxml import escape
from igestbench.mock import tables

Row = Sequence[Any]
#: field name → id of the related object → its encoded body (many-to-one INCLUDEs).
Ones = Mapping[str, Mapping[int, str]]
#: field name → id of the parent → encoded bodies of its children (one-to-many INCLUDEs).
Manys = Mapping[str, Mapping[int, Sequence[str]]]

_ATTRIBUTE, _ONE, _MANY = 0, 1, 2


# --- column value → XML text, as from_sql + soapxml's encoding do it --------------------------


@functools.lru_cache(maxsize=8192)
def _date_text(stored: str) -> str:
    # cached: objects created together share their timestamps, so big answers repeat them
    return format_datetime(tables.parse_stored_datetime(stored))


def _bool_text(value: Any) -> str:
    return "true" if value else "false"


def _converter(f: Field) -> Callable[[Any], str]:
    """The XML text of a non-null value of column ``f`` (String and enumerations are TEXT)."""
    if f.type == "Date":
        return _date_text
    if f.type in ("Long", "Integer"):
        return str  # the store lets only ints into these columns (store._check_value)
    if f.type in ("boolean", "Boolean"):
        return _bool_text
    if f.type == "Double":
        return lambda value: escape(to_text(f, float(value)))
    return escape


# --- entity rows ------------------------------------------------------------------------------

#: (kind, column index, field name, opening tag, closing tag, converter for attributes)
_Step = tuple[int, int, str, str, str, Callable[[Any], str] | None]


class RowEncoder:
    """Rows of one entity (selected with :func:`tables.select_list`) → ICAT's XML."""

    def __init__(self, profile: Profile, entity: Entity) -> None:
        columns = {f.name: i for i, f in enumerate(tables.stored_fields(entity))}
        steps: list[_Step] = []
        for f in (*profile.base_fields_in_wire_order(), *entity.fields):
            tags = f"<{f.name}>", f"</{f.name}>"
            if f.rel is RelType.ATTRIBUTE:
                steps.append((_ATTRIBUTE, columns[f.name], f.name, *tags, _converter(f)))
            elif f.rel is RelType.ONE:
                steps.append((_ONE, columns[f.name], f.name, *tags, None))
            else:
                steps.append((_MANY, columns["id"], f.name, *tags, None))
        self.steps = tuple(steps)
        #: without INCLUDEd relations only the attributes are written (the common, fast case)
        self.attributes = tuple(
            (i, open_, close, convert)
            for kind, i, _, open_, close, convert in steps
            if convert is not None
        )
        self.return_open = f'<return xsi:type="ns2:{entity.xml_name}">'

    def returns(self, rows: Sequence[Row], ones: Ones, manys: Manys) -> str:
        """The ``<return xsi:type=…>`` elements of a search answer, one per row."""
        out: list[str] = []
        self._write(rows, ones, manys, self.return_open, "</return>", out)
        return "".join(out)

    def bodies(self, rows: Sequence[Row], ones: Ones, manys: Manys) -> list[str]:
        """The child elements of each row's object (what goes inside its relation element)."""
        result = []
        for row in rows:
            out: list[str] = []
            self._write((row,), ones, manys, "", "", out)
            result.append("".join(out))
        return result

    def _write(
        self, rows: Sequence[Row], ones: Ones, manys: Manys, head: str, tail: str, out: list[str]
    ) -> None:
        append = out.append
        if not ones and not manys:
            attributes = self.attributes
            for row in rows:
                append(head)
                for i, open_, close, text in attributes:
                    value = row[i]
                    if value is not None:
                        append(open_)
                        append(text(value))
                        append(close)
                append(tail)
            return
        for row in rows:
            append(head)
            for kind, i, name, open_, close, convert in self.steps:
                value = row[i]
                if value is None:
                    continue
                if convert is not None:
                    append(open_)
                    append(convert(value))
                    append(close)
                elif kind == _ONE:
                    related = ones.get(name)
                    body = None if related is None else related.get(value)
                    if body is not None:  # not INCLUDEd, or not readable: dropped, as ICAT does
                        append(open_)
                        append(body)
                        append(close)
                else:
                    children = manys.get(name)
                    for body in () if children is None else children.get(value, ()):
                        append(open_)
                        append(body)
                        append(close)
            append(tail)


@functools.cache
def row_encoder(profile: Profile, entity_name: str) -> RowEncoder:
    # keyed on the name: hashing an Entity (a dataclass of all its fields) costs microseconds,
    # which a single-result search would pay on every call
    return RowEncoder(profile, profile.entity(entity_name))


# --- values (attributes, aggregates, fieldSets) -----------------------------------------------


def encode_values(items: Sequence[Any], value_types: Sequence[str], multi: bool) -> str:
    """The ``return`` elements of a search for values; each item a tuple when ``multi``."""
    if multi:
        return "".join(
            '<return xsi:type="ns2:fieldSet">'
            + "".join(
                soapxml.encode_scalar(v, t, "fields") for v, t in zip(row, value_types, strict=True)
            )
            + "</return>"
            for row in items
        )
    java_type = value_types[0]
    return "".join(soapxml.encode_scalar(v, java_type) for v in items)
