"""``POST /icat/port``: ICAT's import of an export file into the local catalogue.

As icat.server 6.2.0 imports (Porter.importData, processTuple): after the version line, each
table header says what the columns of the lines below it hold; each line becomes one object,
created as the importing user would create it (rules apply: CREATE, and UPDATE for OVERWRITE);
a relation is looked up by the attributes the header names (any of them, not only the key, and
without regard to READ rules) or, for ``name(?:n)``, by the local id an earlier line of the same
file gave its object. ``duplicate`` says what an object that already exists (by its uniqueness
key) does: THROW (the default) fails, IGNORE skips the line, CHECK fails unless every field the
line sets equals the stored one (dates within a second), OVERWRITE updates the stored object
with the line. ``attributes=ALL`` (root users only) keeps the create/mod fields of the file.

Unlike the real server, which commits each object on its own (a failure at line 900 leaves the
first 899 objects in the catalogue), the local catalogue imports a file in one transaction: all
of it or, on any fault, none of it. The fault is the server's, with " at line N" and the line
number in ``offset``.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from typing import Any

from igestbench.icat.beans import Bean
from igestbench.icat.faults import (
    IcatBadParameter,
    IcatError,
    IcatInternal,
    IcatNoSuchObject,
    IcatObjectAlreadyExists,
    IcatValidation,
)
from igestbench.icat.schema import Entity, Field, Profile, RelType
from igestbench.mock import db, tables
from igestbench.mock.port_format import FILE_VERSION, SYSTEM_FIELDS, entity_fields
from igestbench.mock.port_grammar import (
    Column,
    Input,
    PortSyntaxError,
    TableSpec,
    Token,
    TokenType,
    parse_header,
    tokens,
)
from igestbench.mock.port_values import (
    NumberFormat,
    Unforeseen,
    attribute_value,
    key_value,
    value_at,
)
from igestbench.mock.service import IcatService
from igestbench.mock.store import now

DUPLICATE_ACTIONS = ("THROW", "IGNORE", "CHECK", "OVERWRITE")
#: Lookups remembered (ICAT: importCacheSize, 50 by default; ours only saves statements).
_CACHE = 10_000
#: Characters Java's String.trim() removes from both ends of a line.
_TRIM = "".join(chr(c) for c in range(33))
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what BufferedReader.readLine splits on


class Importer:
    """Imports export files into one catalogue."""

    def __init__(self, service: IcatService) -> None:
        self.service = service
        self.store = service.store
        self.profile = service.profile
        self.zone = service.zone

    def run(self, sid: str, data: bytes, duplicate: str, all_attributes: bool) -> None:
        """Import ``data`` (an export file) for session ``sid``; all or nothing."""
        state = _State(sid, duplicate, all_attributes)
        with self.store.transaction():
            self._lines(_lines_of(data.decode("utf-8", "replace")), state)

    def _lines(self, lines: Iterator[str], state: _State) -> None:
        """Every line; each one's SQL has the time budget of one request (--query-timeout),
        the whole file as long as it needs (the server has no limit)."""
        number = 0
        try:
            version = None
            for raw in lines:
                number += 1
                line = raw.strip(_TRIM)
                if line and not line.startswith("#"):
                    version = line
                    break
            if version is None:
                raise IcatValidation("No version of file encountered")
            if version != FILE_VERSION:
                raise IcatValidation(f"Version of file must be {FILE_VERSION}")
            table: TableSpec | None = None
            for raw in lines:
                number += 1
                line = raw.strip(_TRIM)
                if line.startswith("#"):
                    continue
                if not line:
                    table = None
                elif table is None:
                    table = parse_header(self.profile, line)
                    state.key_sql = {
                        n: _key_sql(self.profile, self.profile.entities[c.field.type], c)
                        for n, c in enumerate(table.columns)
                        if c.kind == "key" and c.field is not None
                    }
                else:
                    with self.service.time_budget():
                        self._row(table, line, state)
        except Unforeseen:
            raise
        except IcatError as exc:
            raise type(exc)(f"{exc.message} at line {number}", number) from None
        except PortSyntaxError as exc:
            raise IcatBadParameter(f"{exc} at line {number}", number) from None
        except NumberFormat as exc:
            raise IcatInternal(f"NumberFormatException {exc} at line {number}", number) from None

    # --- one line ----------------------------------------------------------------------------

    def _row(self, table: TableSpec, line: str, state: _State) -> None:
        source = Input(tokens(line))
        values: list[Token] = []
        while (token := source.next()) is not None:
            values.append(token)
            if source.peek() is not None:
                source.take(TokenType.COMMA)
        entity = table.entity
        bean = Bean(entity.name)
        system: dict[str, Any] = {}
        local_id: str | None = None
        for n, column in enumerate(table.columns):
            if column.kind == "id":
                token = value_at(values, column.column)
                if token.type is not TokenType.STRING:
                    raise PortSyntaxError(f"Expected a String value for column {column.column}")
                local_id = token.value
            elif column.kind == "key":
                assert column.field is not None
                ref = self._by_key(column, state.key_sql[n], values, state)
                if ref is not None:
                    bean[column.field.name] = ref
            else:
                self._set(bean, system, column, values, state)
        new_id = self._store(entity, bean, system, state)
        if local_id is not None and new_id is not None:
            state.local_ids[f"{entity.name}.{local_id}"] = new_id

    def _set(
        self,
        bean: Bean,
        system: dict[str, Any],
        column: Column,
        values: list[Token],
        state: _State,
    ) -> None:
        """A ``name:n`` or ``name(?:n)`` column: the value of one field."""
        f = column.field
        assert f is not None
        token = value_at(values, column.column)
        if token.type is TokenType.NULL:
            return
        n = column.column
        value: Any
        if f.rel is RelType.ATTRIBUTE:
            value = attribute_value(f, token, n, self.zone)
        elif f.rel is RelType.ONE and column.kind == "local":
            target = state.local_ids.get(f"{f.type}.{token.value}")
            if target is None:
                raise PortSyntaxError(f"? field '{token.value}' not defined yet")
            # made by this import, in this transaction: it is there (the server looks again,
            # for "? field 'x' => id n no longer exists": another transaction may delete it)
            value = self._reference(f.type, target, state)
        else:  # a relation by ``name:n``, or a one-to-many field: the Java type is no value
            raise IcatInternal(
                f"Don't know how to process {f.type if f.rel is RelType.ONE else 'List'}"
            )
        if f.name in SYSTEM_FIELDS:
            system[f.name] = value
        elif f.name != "id":  # read, then dropped: the server gives every object a new id
            bean[f.name] = value

    # --- relations ---------------------------------------------------------------------------

    def _by_key(self, column: Column, sql: str, values: list[Token], state: _State) -> Bean | None:
        """The object a ``name(attr:n,…)`` column names; None where a value is NULL."""
        f = column.field
        assert f is not None
        params: list[Any] = []
        for part in column.key:
            token = value_at(values, part.column)
            if token.type is TokenType.NULL:
                return None
            params.append(token)
        cache_key = (sql, tuple(t.value for t in params))
        found = state.lookups.get(cache_key)
        if found is None:
            args = [
                key_value(part.type, token, part.column)
                for part, token in zip(column.key, params, strict=True)
            ]
            rows = db.rows(self.store.conn, sql, args)
            if not rows:
                raise IcatNoSuchObject(
                    f"Import failed when looking up existing object for attribute {f.name}"
                )
            if len(rows) > 1:
                raise IcatBadParameter(
                    "Import failed with multiple results when looking up existing object for "
                    f"attribute {f.name}"
                )
            found = int(rows[0][0])
            if len(state.lookups) >= _CACHE:
                state.lookups.clear()
            state.lookups[cache_key] = found
        return self._reference(f.type, found, state)

    def _reference(self, name: str, obj_id: int, state: _State) -> Bean:
        """A reference to a stored object. The server hands the new object the stored one, whose
        flags decide whether a parameter's type applies: a ParameterType comes whole."""
        if name != "ParameterType":
            return Bean(name, {"id": obj_id})
        key = (name, obj_id)
        bean = state.references.get(key)
        if bean is None:
            entity = self.profile.entities[name]
            row = db.one(
                self.store.conn,
                f"SELECT {tables.select_list(entity, 'o')} FROM {tables.table(entity)} o "
                "WHERE o.id = ?",
                (obj_id,),
            )
            bean = tables.row_decoder(entity)(row)
            if len(state.references) >= _CACHE:
                state.references.clear()
            state.references[key] = bean
        return bean

    # --- the object --------------------------------------------------------------------------

    def _store(
        self, entity: Entity, bean: Bean, system: dict[str, Any], state: _State
    ) -> int | None:
        """Create the object; what a duplicate does is ``state.duplicate``'s choice."""
        try:
            new_id = self.service.create(state.sid, bean)
        except IcatObjectAlreadyExists:
            if state.duplicate == "IGNORE":
                return None
            existing = self._existing(entity, bean)
            if state.duplicate == "CHECK":
                _check_same(entity, bean, existing, system if state.all_attributes else {})
                return None
            if state.duplicate != "OVERWRITE":
                raise
            bean["id"] = existing.id
            self.service.update(state.sid, bean)
            state.references.pop((entity.name, int(existing.id or 0)), None)
            if state.all_attributes:
                # an update with ALL sets every create/mod field: the file's, else the user's
                user, stamp = self.service.get_user_name(state.sid), now()
                defaults = {"createId": user, "modId": user, "createTime": stamp, "modTime": stamp}
                self._set_system(entity, int(existing.id or 0), {**defaults, **system})
            return int(existing.id or 0)
        if state.all_attributes and system:
            self._set_system(entity, new_id, system)
        return new_id

    def _set_system(self, entity: Entity, obj_id: int, system: dict[str, Any]) -> None:
        columns = [name for name in SYSTEM_FIELDS if name in system]
        values = [
            tables.format_stored_datetime(system[c]) if c.endswith("Time") else system[c]
            for c in columns
        ]
        assignments = ", ".join(f"{tables.quote(c)} = ?" for c in columns)
        self.store.conn.execute(
            f"UPDATE {tables.table(entity)} SET {assignments} WHERE id = ?", (*values, obj_id)
        )

    def _existing(self, entity: Entity, bean: Bean) -> Bean:
        """The stored object with the key of ``bean`` (EntityBeanManager.lookup)."""
        where, params = [], []
        for name in entity.constraint:
            f = entity.field(name)
            value = bean.values.get(name)
            if isinstance(value, Bean):
                value = value.id
            where.append(f"{tables.column('o', f)} = ?")
            params.append(tables.to_sql(f, value))
        row = self.store.conn.execute(
            f"SELECT {tables.select_list(entity, 'o')} FROM {tables.table(entity)} o "
            f"WHERE {' AND '.join(where)}",
            params,
        ).fetchone()
        if row is None:  # not reached: the create found it
            raise IcatInternal(f"lookup found no {entity.name} with the same key")
        return tables.row_decoder(entity)(row)


def _lines_of(text: str) -> Iterator[str]:
    """The lines of ``text`` as BufferedReader.readLine gives them (no line after a final
    break), one at a time."""
    start = 0
    for m in _LINE_BREAK.finditer(text):
        yield text[start : m.start()]
        start = m.end()
    if start < len(text):
        yield text[start:]


class _State:
    """What one import remembers from line to line."""

    def __init__(self, sid: str, duplicate: str, all_attributes: bool) -> None:
        self.sid = sid
        self.duplicate = duplicate
        self.all_attributes = all_attributes
        #: "Entity.localId" → id of the object created for it (the ``?`` columns).
        self.local_ids: dict[str, int] = {}
        #: (statement, values) → id of the object a key column found.
        self.lookups: dict[tuple[str, tuple[str, ...]], int] = {}
        #: The lookup statement of each key column of the table being read, by column index.
        self.key_sql: dict[int, str] = {}
        #: Stored objects handed to new ones whole (ParameterTypes), by type and id.
        self.references: dict[tuple[str, int], Bean] = {}


def _key_sql(profile: Profile, target: Entity, column: Column) -> str:
    """SELECT the ids of ``target`` objects whose attributes equal those of a key column (the
    server's JPQL: ``SELECT n0 FROM Dataset n0 JOIN n0.investigation n0n0 WHERE …``)."""
    joins: dict[tuple[str, ...], str] = {(): "n0"}
    entities: dict[tuple[str, ...], Entity] = {(): target}
    clauses: list[str] = []
    join_sql: list[str] = []
    for part in column.key:
        for depth in range(1, len(part.path)):
            prefix = part.path[:depth]
            if prefix in joins:
                continue
            parent = entities[prefix[:-1]]
            f = parent.field(prefix[-1])
            alias = f"n{len(joins)}"
            joins[prefix] = alias
            entities[prefix] = profile.entities[f.type]
            join_sql.append(
                f"JOIN {tables.table(f.type)} {alias} ON {alias}.id = "
                f"{tables.column(joins[prefix[:-1]], f)}"
            )
        owner = entities[part.path[:-1]]
        f = owner.field(part.path[-1])
        clauses.append(f"{tables.column(joins[part.path[:-1]], f)} = ?")
    return (
        f"SELECT n0.id FROM {tables.table(target)} n0 {' '.join(join_sql)} "
        f"WHERE {' AND '.join(clauses)} LIMIT 2"
    )


def _check_same(entity: Entity, bean: Bean, stored: Bean, system: dict[str, Any]) -> None:
    """CHECK: fail unless the line describes the stored object (Porter's comparison)."""
    for name in SYSTEM_FIELDS:
        if name in system and not _equal(system[name], stored.values.get(name)):
            raise IcatValidation(f'Duplicate check fails for field "{name}" of {entity.name}')
    for f in entity_fields(entity):
        if f.rel is RelType.MANY:
            continue
        mine, theirs = _effective(f, bean), stored.values.get(f.name)
        if f.rel is RelType.ONE:
            same = getattr(mine, "id", None) == getattr(theirs, "id", None)
        else:
            same = _equal(mine, theirs)
        if not same:
            declared = entity.base if f in entity.inherited and entity.base else entity.name
            raise IcatValidation(f"Duplicate check fails for field {f.name} of {declared}")


def _effective(f: Field, bean: Bean) -> Any:
    """A field of a new object as the server's Java object holds it before it is stored."""
    value = bean.values.get(f.name)
    if value is None and f.default is not None:
        return f.default
    if value is None and f.type == "boolean":
        return False
    return value


def _equal(mine: Any, theirs: Any) -> bool:
    if isinstance(mine, dt.datetime) and isinstance(theirs, dt.datetime):
        return abs((mine - theirs).total_seconds()) <= 1.0  # "Milliseconds get lost"
    return bool(mine == theirs)
