"""How the local catalogue lays ICAT entities out in SQLite, derived from the schema.

One table per concrete entity, named like the entity (always quoted). Columns:

* ``id INTEGER PRIMARY KEY AUTOINCREMENT`` (ids are never reused, as in ICAT);
* ``createId``, ``createTime``, ``modId``, ``modTime`` (NOT NULL, set by the server);
* one column per attribute, named like the field;
* one column ``<field>_id`` per many-to-one relation, a foreign key to the target table,
  ``ON DELETE CASCADE`` because ICAT cascades every one-to-many relation on delete.

Types: String, Date and enums are TEXT; Long, Integer and boolean INTEGER; Double REAL.
Dates are stored as UTC text of fixed width (``2024-03-03T10:00:00.000000Z``) so that SQL
comparison and ordering of the text is chronological. The indexes are those of ICAT's own
database and no others, so that every query grows with the catalogue as it does on ICAT: a
uniqueness constraint becomes a UNIQUE index; every foreign key gets an index unless the unique
key starts with its column (as InnoDB does: ``Datafile(dataset, name)`` serves the dataset's);
and the indexes ICAT's deployments add (:attr:`Entity.indexes`: ``indices.sql`` and JPA
``@Index``). No other column is indexed: a Datafile by name alone is a scan, on ICAT too.

The query translator (:mod:`igestbench.mock.jpql`) and the store both use this module, so the
names below are the only place the layout is spelled out.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from igestbench.icat.beans import UTC, Bean, parse_datetime
from igestbench.icat.schema import BASE_FIELDS, Entity, Field, Profile, RelType

_SQL_TYPES = {
    "String": "TEXT",
    "Long": "INTEGER",
    "Integer": "INTEGER",
    "Double": "REAL",
    "boolean": "INTEGER",
    "Boolean": "INTEGER",
    "Date": "TEXT",
}


def quote(name: str) -> str:
    """A quoted SQL identifier (entity and field names are plain words, but some are keywords)."""
    return '"' + name + '"'


def table(entity: Entity | str) -> str:
    return quote(entity if isinstance(entity, str) else entity.name)


def column_name(f: Field) -> str:
    """The column holding field ``f`` (attributes and ONE relations only)."""
    if f.rel is RelType.ONE:
        return f.name + "_id"
    if f.rel is RelType.MANY:
        raise ValueError(f"{f.name} is a one-to-many relation and has no column")
    return f.name


def column(alias: str, f: Field) -> str:
    """``alias."column"`` for field ``f``."""
    return f"{alias}.{quote(column_name(f))}"


@functools.cache
def stored_fields(entity: Entity) -> tuple[Field, ...]:
    """The fields with a column, in column order: id, the base fields, attributes, ONE relations."""
    base = tuple(f for f in BASE_FIELDS if f.name != "id")
    return (BASE_FIELDS[2], *base, *entity.attributes, *entity.ones)


def attribute_width(entity: Entity) -> int:
    """How many leading columns of :func:`select_list` hold ``entity``'s attributes (its
    many-to-one ids come after them)."""
    return len(stored_fields(entity)) - len(entity.ones)


@functools.cache
def column_index(entity: Entity, name: str) -> int:
    """The position of field ``name``'s column in a row selected with :func:`select_list`."""
    for i, f in enumerate(stored_fields(entity)):
        if f.name == name:
            return i
    raise KeyError(f"{entity.name}.{name} has no column")


@functools.cache
def select_list(entity: Entity, alias: str) -> str:
    """The SELECT list of every stored column of ``entity`` under ``alias``, in column order."""
    return ", ".join(column(alias, f) for f in stored_fields(entity))


def format_stored_datetime(value: dt.datetime) -> str:
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@functools.lru_cache(maxsize=8192)
def parse_stored_datetime(text: str) -> dt.datetime:
    # cached: objects created together share their timestamps, so big results repeat them
    return dt.datetime.fromisoformat(text)


def to_sql(f: Field, value: Any) -> Any:
    """The SQL value of Python value ``value`` of attribute ``f``."""
    if value is None:
        return None
    if f.type == "Date":
        if isinstance(value, str):
            value = parse_datetime(value)
        return format_stored_datetime(value)
    if f.type in ("boolean", "Boolean"):
        return 1 if value else 0
    return value


def from_sql(f: Field, value: Any) -> Any:
    """The Python value of SQL value ``value`` of attribute ``f``."""
    if value is None:
        return None
    if f.type == "Date":
        return parse_stored_datetime(value)
    if f.type in ("boolean", "Boolean"):
        return bool(value)
    if f.type == "Double":
        return float(value)
    return value


@functools.cache
def row_decoder(entity: Entity) -> Callable[[Sequence[Any]], Bean]:
    """A row → Bean function for rows selected with :func:`select_list`.

    ONE relations become Beans holding only ``id``; the reader replaces them with full Beans when
    they are INCLUDEd and drops them otherwise. The plan is worked out once per entity because a
    2,000-row search decodes 2,000 rows.
    """
    plan = []
    for f in stored_fields(entity):
        if f.rel is RelType.ONE:
            plan.append((f.name, 1, f.type, f))
        elif f.type in ("Date", "boolean", "Boolean", "Double"):
            plan.append((f.name, 2, "", f))
        else:
            plan.append((f.name, 0, "", f))
    name = entity.name

    def decode(row: Sequence[Any]) -> Bean:
        values: dict[str, Any] = {}
        for (fname, kind, target, f), v in zip(plan, row, strict=True):
            if v is None:
                continue
            if kind == 0:
                values[fname] = v
            elif kind == 1:
                values[fname] = Bean(target, {"id": v})
            else:
                values[fname] = from_sql(f, v)
        return Bean(name, values)

    return decode


def create_table_sql(profile: Profile, entity: Entity) -> Iterator[str]:
    """The DDL of one entity's table and its indexes."""
    cols = ["id INTEGER PRIMARY KEY AUTOINCREMENT"]
    for f in BASE_FIELDS:
        if f.name != "id":
            cols.append(f"{quote(f.name)} TEXT NOT NULL")
    for f in entity.attributes:
        nn = " NOT NULL" if f.not_null else ""
        cols.append(f"{quote(f.name)} {_SQL_TYPES.get(f.type, 'TEXT')}{nn}")
    for f in entity.ones:
        nn = " NOT NULL" if f.not_null else ""
        cols.append(
            f"{quote(column_name(f))} INTEGER{nn} REFERENCES {table(f.type)}(id) ON DELETE CASCADE"
        )
    yield f"CREATE TABLE IF NOT EXISTS {table(entity)} ({', '.join(cols)})"
    for name, columns in index_columns(entity).items():
        yield f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {table(entity)} ({columns})"
    if entity.constraint:
        cols_u = ", ".join(quote(column_name(entity.field(n))) for n in entity.constraint)
        yield (
            f"CREATE UNIQUE INDEX IF NOT EXISTS {quote('ux_' + entity.name)} "
            f"ON {table(entity)} ({cols_u})"
        )


def index_columns(entity: Entity) -> dict[str, str]:
    """The non-unique indexes of ``entity``'s table: name → quoted column list."""
    leading = column_name(entity.field(entity.constraint[0])) if entity.constraint else None
    found: dict[str, str] = {}
    for f in entity.ones:
        if column_name(f) != leading:  # the unique index serves this foreign key
            found["ix_" + entity.name + "_" + f.name] = quote(column_name(f))
    for fields in entity.indexes:
        columns = ", ".join(quote(column_name(entity.field(n))) for n in fields)
        found["ix_" + entity.name + "_" + "_".join(fields)] = columns
    return found


def stale_indexes(profile: Profile, existing: Sequence[Sequence[str]]) -> list[str]:
    """Of ``existing`` (index name, table name) pairs of a database made by an older layout,
    the ``ix_`` indexes the layout no longer has (a kept ``--db`` file is brought up to it)."""
    wanted = {(name, e.name) for e in profile for name in index_columns(e)}
    return [name for name, tbl in existing if name.startswith("ix_") and (name, tbl) not in wanted]


def schema_sql(profile: Profile) -> Iterator[str]:
    """The DDL of every table of ``profile``."""
    for entity in profile:
        yield from create_table_sql(profile, entity)
