"""Search and get answers from the store's rows straight to ICAT's XML text, with no Bean between.

A search returning 2,000 Datafiles spent most of its server time (over four fifths) building a
Bean per row and then walking the Beans to encode them (issue 11: it was slower than a real ICAT
6.2.0). Here each entity gets an encoding plan once: its fields in wire order (the XSD's, which
is not the column order), each attribute with its opening and closing tag, its column and a text
converter, each relation with the column that finds its INCLUDEd objects. Rows without INCLUDEd
objects are written by one f-string per row made for the entity from that plan (a loop over the
columns cost about twice as much: on a 2-core machine, 2,000 rows took ~5 ms that way, ~2.5 ms
now, beside ~4 ms for SQLite to hand over the rows); rows with INCLUDEd objects by one loop.
Dates are written in the server's zone (``sv7 serve --timezone``) by one converter for every
zone. The text is, byte for byte, what :func:`igestbench.icat.soapxml.encode_bean` gives for the
Bean of the same row with its dates in that zone; ``tests/test_row_xml.py`` compares the two on
every kind of value, in UTC and in Europe/Berlin.

INCLUDEd objects come from :class:`igestbench.mock.reader.Reader`, which fetches them set-wise
and hands their encoded bodies to :meth:`RowEncoder.bodies` / :meth:`RowEncoder.returns` as
``ones`` (field → id → body) and ``manys`` (field → parent id → bodies).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
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

#: Texts a :class:`_Texts` keeps at most (then it starts afresh).
_CACHED_TEXTS = 4096


class _Texts(dict[str, str]):
    """Stored value → its text, each converted once while kept.

    Big answers repeat their dates (objects created together share their timestamps), and a
    dict lookup is cheaper than even a cached function call. Shared by threads: a dict's item
    operations are atomic.
    """

    def __init__(self, convert: Callable[[str], str]) -> None:
        super().__init__()
        self.convert = convert

    def __missing__(self, stored: str) -> str:
        text = self.convert(stored)
        if len(self) >= _CACHED_TEXTS:
            self.clear()
        self[stored] = text
        return text


def date_converter(zone: dt.tzinfo) -> Callable[[str], str]:
    """Stored date (UTC text) → its xs:dateTime text on a server in ``zone``.

    As JAXB prints a java.util.Date in the JVM's default zone: the same instant, in the zone's
    offset at that instant ("Z" when it is 0). One converter for every zone, UTC included.
    """

    def convert(stored: str) -> str:
        return format_datetime(tables.parse_stored_datetime(stored).astimezone(zone))

    return convert


def _bool_text(value: Any) -> str:
    return "true" if value else "false"


def _double_text(f: Field) -> Callable[[Any], str]:
    # never cached by value: 0.0 and -0.0 are equal keys with different texts, NaN no key at all
    return lambda value: escape(to_text(f, float(value)))


def _converter(f: Field, dates: Callable[[str], str]) -> Callable[[Any], str]:
    """The XML text of a non-null value of column ``f`` (String and enumerations are TEXT)."""
    if f.type == "Date":
        return dates
    if f.type in ("Long", "Integer"):
        return str  # the store lets only ints into these columns (values.check_value)
    if f.type in ("boolean", "Boolean"):
        return _bool_text
    if f.type == "Double":
        return _double_text(f)
    return escape


# --- entity rows ------------------------------------------------------------------------------

#: (kind, column index, field name, opening tag, closing tag, converter for attributes)
_Step = tuple[int, int, str, str, str, Callable[[Any], str] | None]


class RowEncoder:
    """Rows of one entity (selected with :func:`tables.select_list`) → ICAT's XML.

    Without INCLUDE (the common case, and the 2,000-row search) each row is written by one
    f-string made for the entity (:func:`_row_function`): no loop over the columns, no call per
    value but the conversions that need one. With INCLUDE, one loop follows the plan's steps.
    """

    def __init__(self, profile: Profile, entity: Entity, zone: dt.tzinfo = dt.UTC) -> None:
        columns = {f.name: i for i, f in enumerate(tables.stored_fields(entity))}
        #: stored date → its text in the server's zone (one converter for every zone)
        dates = _Texts(date_converter(zone)).__getitem__
        wire = (*profile.base_fields_in_wire_order(), *entity.fields)
        steps: list[_Step] = []
        for f in wire:
            tags = f"<{f.name}>", f"</{f.name}>"
            if f.rel is RelType.ATTRIBUTE:
                steps.append((_ATTRIBUTE, columns[f.name], f.name, *tags, _converter(f, dates)))
            elif f.rel is RelType.ONE:
                steps.append((_ONE, columns[f.name], f.name, *tags, None))
            else:
                steps.append((_MANY, columns["id"], f.name, *tags, None))
        self.steps = tuple(steps)
        self.return_open = f'<return xsi:type="ns2:{entity.xml_name}">'
        attributes = [f for f in wire if f.rel is RelType.ATTRIBUTE]
        #: how many leading columns of :func:`tables.select_list` the attributes need (the
        #: many-to-one ids come last, and a search without INCLUDE need not fetch them)
        self.attribute_columns = 1 + max(columns[f.name] for f in attributes)
        plan = [(f, columns[f.name]) for f in attributes]
        #: one row's ``return`` element, without INCLUDEd objects
        self.row_text = _row_function(plan, dates, self.return_open, "</return>")
        #: what goes between the row texts of a search answer
        self.separator = ""
        self._body = _row_function(plan, dates, "", "")

    def rows_text(self, rows: Iterable[Row]) -> str:
        """The ``return`` elements of ``rows``, none with INCLUDEd objects."""
        return "".join(map(self.row_text, rows))

    def returns(self, rows: Sequence[Row], ones: Ones, manys: Manys) -> str:
        """The ``<return xsi:type=…>`` elements of a search answer, one per row."""
        if not ones and not manys:
            return self.rows_text(rows)
        out: list[str] = []
        self._write(rows, ones, manys, self.return_open, "</return>", out)
        return "".join(out)

    def bodies(self, rows: Sequence[Row], ones: Ones, manys: Manys) -> list[str]:
        """The child elements of each row's object (what goes inside its relation element)."""
        if not ones and not manys:
            return list(map(self._body, rows))
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
                    bodies = () if children is None else children.get(value, ())
                    if bodies:  # one join, not three appends per child (400 in a Dataset)
                        append(open_)
                        append((close + open_).join(bodies))
                        append(close)
            append(tail)


def _row_function(
    attributes: Sequence[tuple[Field, int]], dates: Callable[[str], str], head: str, tail: str
) -> Callable[[Row], str]:
    """A function writing one row's attributes between ``head`` and ``tail``, made from source.

    A loop over the columns costs a Python step per column and row, which was most of a
    2,000-row search's time; a single f-string per row costs a fraction. The source holds only
    the schema's field names (checked to be identifiers), column indices, and the names of the
    converters passed in ``names``, never a value from the store or a request.
    """
    names: dict[str, Any] = {
        "escape": escape,
        "dates": dates,
        "boolean": _bool_text,
        # the creators and modifiers of a big answer are few: a lookup, not a call, per row
        "users": _Texts(escape).__getitem__,
    }
    parts = []
    for f, i in attributes:
        if not f.name.isidentifier():  # pragma: no cover - the schema's names are identifiers
            raise ValueError(f"field name {f.name!r} cannot be written into source")
        value = f"r[{i}]"
        if f.type == "Date":
            text = f"dates({value})"
        elif f.type in ("Long", "Integer"):
            text = value  # the store lets only ints into these columns: formatted as str()
        elif f.type in ("boolean", "Boolean"):
            text = f"boolean({value})"  # no quotes: they would end the inner f-string
        elif f.type == "Double":
            names[f"double_{i}"] = _double_text(f)
            text = f"double_{i}({value})"
        elif f.name in ("createId", "modId"):
            text = f"users({value})"
        else:
            text = f"escape({value})"
        element = f"<{f.name}>{{{text}}}</{f.name}>"
        if f.not_null or f.name == "id":
            parts.append(element)
        else:  # an f-string in the f-string: in other quotes, as Python < 3.12 needs
            parts.append(f"{{'' if {value} is None else f'{element}'}}")
    names["head"], names["tail"] = head, tail
    source = f'lambda r: f"{{head}}{"".join(parts)}{{tail}}"'
    function: Callable[[Row], str] = eval(source, names)
    return function


@functools.cache
def row_encoder(profile: Profile, entity_name: str, zone: dt.tzinfo = dt.UTC) -> RowEncoder:
    # keyed on the name: hashing an Entity (a dataclass of all its fields) costs microseconds,
    # which a single-result search would pay on every call
    return RowEncoder(profile, profile.entity(entity_name), zone)


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
