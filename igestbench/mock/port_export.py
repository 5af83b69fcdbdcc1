"""``GET /icat/port``: ICAT's export, written from the SQL rows of the local catalogue.

As icat.server 6.2.0 exports (EntityBeanManager.export, Porter.exportData):

* without a query, every entity type in export order, each table's objects by ascending id; a
  user who is not root gets only what the rules let them read, but the relations of what they
  get are written by key whatever they point to;
* with a query (JPQL or concise, INCLUDE allowed), the objects it returns and those it INCLUDEs
  (what a search would return), per entity type in the order of the Java HashSet that collects
  their ids (:func:`java_hash_set_order`); a query that returns nothing, or values instead of
  objects, exports nothing at all (HTTP 204);
* anyone may ask for ``attributes=ALL`` (only an import with ALL needs a root user).

Rows are read in blocks of 500 and the keys of the objects they refer to are resolved set-wise,
one statement per referenced type and block, never one per row; the whole export reads one
snapshot of the database (a single read transaction), so a write while it runs cannot leave a
relation in the file that points at nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import apsw

from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatValidation
from igestbench.icat.schema import BASE_FIELDS, Entity, Profile, RelType
from igestbench.mock import db, tables
from igestbench.mock.port_format import (
    FILE_VERSION,
    HEADER_PREFIX,
    SYSTEM_FIELDS,
    attribute_text,
    export_fields,
    export_order,
    key_fields,
    null_key,
    quote_string,
    table_header,
)
from igestbench.mock.service import IcatService

#: Objects per SELECT (ICAT pages its tables by 500 too).
BLOCK = 500
#: Keys remembered per entity type before the memory is given back (a key is ~100 bytes).
KEY_CACHE = 100_000

Restrictions = Mapping[str, tuple[str, tuple[Any, ...]]] | None


class Exporter:
    """Writes export files of one catalogue."""

    def __init__(self, service: IcatService) -> None:
        self.service = service
        self.store = service.store
        self.profile: Profile = service.profile

    def export_all(self, user: str, all_attributes: bool) -> bytes:
        """The whole catalogue, as ``user`` may read it."""
        with self.service.time_budget():
            restrict = self.service.authz.read_restrictions(user)
        with self._snapshot():
            writer = _Writer(self.service, all_attributes)
            writer.begin(user)
            for name in export_order(self.profile):
                writer.table(name, self._all_rows(self.profile.entities[name], restrict))
            return writer.finish()

    def export_query(self, sid: str, user: str, query: str, all_attributes: bool) -> bytes | None:
        """What ``query`` returns and INCLUDEs; None when that is no object at all."""
        try:
            with self.service.time_budget():
                result = self.service.search(sid, query)
        except IcatValidation as exc:
            # the same limit, in the words of the export (EntityBeanManager.getEntitySet)
            raise IcatValidation(exc.message.replace("return more", "process more", 1)) from None
        if result.value_types or not result.items:
            return None
        ids: dict[str, dict[int, None]] = {}
        for bean in result.items:
            _collect(bean, ids)
        with self._snapshot():
            writer = _Writer(self.service, all_attributes)
            writer.begin(user)
            for name in export_order(self.profile):
                if name in ids:
                    order = java_hash_set_order(ids[name])
                    writer.table(name, self._rows_by_id(self.profile.entities[name], order))
            return writer.finish()

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        conn = self.store.conn
        if conn.in_transaction:  # already inside one (never the case for a request)
            yield
            return
        conn.execute("BEGIN")
        try:
            yield
        finally:
            # a read transaction: nothing to undo, COMMIT only ends it
            with contextlib.suppress(apsw.Error):
                conn.execute("COMMIT")

    def _all_rows(self, entity: Entity, restrict: Restrictions) -> Iterator[Sequence[Any]]:
        extra, params = "", ()
        if restrict is not None and entity.name in restrict:
            sql, params = restrict[entity.name]
            extra = f" AND o.id IN ({sql})"
        select = (
            f"SELECT {tables.select_list(entity, 'o')} FROM {tables.table(entity)} o "
            f"WHERE o.id > ?{extra} ORDER BY o.id LIMIT {BLOCK}"
        )
        last = 0
        while True:
            with self.service.time_budget():  # each block of rows is one query
                rows = db.rows(self.store.conn, select, (last, *params))
            yield from rows
            if len(rows) < BLOCK:
                return
            last = rows[-1][0]

    def _rows_by_id(self, entity: Entity, ids: Sequence[int]) -> Iterator[Sequence[Any]]:
        select = f"SELECT {tables.select_list(entity, 'o')} FROM {tables.table(entity)} o"
        for start in range(0, len(ids), BLOCK):
            chunk = ids[start : start + BLOCK]
            with self.service.time_budget():  # each block of rows is one query
                rows = self.store.conn.execute(
                    f"{select} WHERE o.id IN ({','.join('?' * len(chunk))})", chunk
                ).fetchall()
            by_id = {row[0]: row for row in rows}
            # an object deleted since the search is left out, as the server's find() gives null
            yield from (by_id[i] for i in chunk if i in by_id)


def _collect(bean: Bean, ids: dict[str, dict[int, None]]) -> None:
    """The ids of ``bean`` and of what it INCLUDEs, per entity type, in the order met."""
    if bean.id is not None:
        ids.setdefault(bean.entity, {})[int(bean.id)] = None
    for value in bean.values.values():
        if isinstance(value, Bean):
            _collect(value, ids)
        elif isinstance(value, list):
            for child in value:
                if isinstance(child, Bean):
                    _collect(child, ids)


def java_hash_set_order(ids: Iterable[int]) -> list[int]:
    """The iteration order of a ``java.util.HashSet<Long>`` holding ``ids`` (added in order).

    The table has the smallest power-of-two size ≥ 16 that holds them at load factor 0.75; an id
    goes to bucket ``spread(Long.hashCode(id)) & (size - 1)``, and a bucket keeps the order ids
    were added in (resizing splits buckets without reordering). Buckets the JDK turns into trees
    (more than 8 ids in one, which needs ids far apart) are not modelled.
    """
    unique = list(dict.fromkeys(ids))
    size = 16
    while len(unique) > size * 3 // 4:
        size *= 2
    mask = size - 1

    def bucket(value: int) -> int:
        h = (value ^ (value >> 32)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(unique, key=bucket)


class _Writer:
    """Assembles an export file: header, then one table after another."""

    def __init__(self, service: IcatService, all_attributes: bool) -> None:
        self.service = service
        self.profile = service.profile
        self.zone = service.zone
        self.all_attributes = all_attributes
        self.keys = _Keys(service.store.conn, service.profile, service.zone)
        #: The file so far, a block of lines at a time (bytes: a large export is held once more
        #: only while the parts are joined).
        self.parts: list[bytes] = []

    def begin(self, user: str) -> None:
        self.parts.append(f"{HEADER_PREFIX}{user}\n{FILE_VERSION}\n".encode())

    def finish(self) -> bytes:
        return b"".join(self.parts)

    def table(self, name: str, rows: Iterable[Sequence[Any]]) -> None:
        entity = self.profile.entities[name]
        self.parts.append(f"\n{table_header(self.profile, name, self.all_attributes)}\n".encode())
        block: list[Sequence[Any]] = []
        for row in rows:
            block.append(row)
            if len(block) == BLOCK:
                self._block(entity, block)
                block = []
        if block:
            self._block(entity, block)

    def _block(self, entity: Entity, rows: Sequence[Sequence[Any]]) -> None:
        with self.service.time_budget():  # the keys of a block's relations: one query each
            self._lines(entity, rows)

    def _lines(self, entity: Entity, rows: Sequence[Sequence[Any]]) -> None:
        fields = export_fields(entity)
        columns = [tables.column_index(entity, f.name) for f in fields]
        keys: dict[str, dict[int, str]] = {}
        for f, i in zip(fields, columns, strict=True):
            if f.rel is RelType.ONE:
                refs = {row[i] for row in rows if row[i] is not None}
                keys[f.name] = self.keys.texts(f.type, refs)
        system = [tables.column_index(entity, name) for name in SYSTEM_FIELDS]
        local_id = not entity.constraint
        zone = self.zone
        lines: list[str] = []
        for row in rows:
            values: list[str] = []
            if local_id:
                values.append(f'"{row[0]}"')
            if self.all_attributes:
                # as the server writes them: the user names quoted but not escaped
                create_id, create_time, mod_id, mod_time = (row[i] for i in system)
                values += [
                    f'"{create_id}"',
                    attribute_text(_DATE, tables.parse_stored_datetime(create_time), zone),
                    f'"{mod_id}"',
                    attribute_text(_DATE, tables.parse_stored_datetime(mod_time), zone),
                ]
            for f, i in zip(fields, columns, strict=True):
                value = row[i]
                if f.rel is RelType.ONE:
                    values.append(
                        null_key(self.profile, f.type) if value is None else keys[f.name][value]
                    )
                else:
                    values.append(attribute_text(f, tables.from_sql(f, value), zone))
            lines.append(",".join(values))
        self.parts.append(("\n".join(lines) + "\n").encode("utf-8"))


_DATE = next(f for f in BASE_FIELDS if f.name == "createTime")


class _Keys:
    """The key text of referenced objects (``"Facility A"``, ``"EXAMPLE","inv 1","1"`` …),
    resolved a set of ids at a time and remembered per entity type."""

    def __init__(self, conn: apsw.Connection, profile: Profile, zone: Any) -> None:
        self.conn = conn
        self.profile = profile
        self.zone = zone
        self.cache: dict[str, dict[int, str]] = {}

    def texts(self, name: str, ids: Iterable[int]) -> dict[int, str]:
        """The key text of each of ``ids`` (objects of type ``name``)."""
        asked = list(ids)
        known = self.cache.setdefault(name, {})
        wanted = [i for i in asked if i not in known]
        if not wanted:
            return {i: known[i] for i in asked}
        found = self._resolve(self.profile.entities[name], wanted)
        result = {i: known[i] if i in known else found[i] for i in asked}
        if len(known) + len(found) > KEY_CACHE:
            known.clear()  # memory stays bounded on a catalogue of millions
        known.update(found)
        return result

    def _resolve(self, entity: Entity, ids: Sequence[int]) -> dict[int, str]:
        if not entity.constraint:
            return {i: f'"{i}"' for i in ids}
        fields = key_fields(entity)
        columns = ", ".join(tables.column("o", f) for f in fields)
        rows: list[Sequence[Any]] = []
        for start in range(0, len(ids), BLOCK):
            chunk = ids[start : start + BLOCK]
            rows += self.conn.execute(
                f"SELECT o.id, {columns} FROM {tables.table(entity)} o "
                f"WHERE o.id IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
        nested = {
            f.name: self.texts(f.type, {row[n + 1] for row in rows})
            for n, f in enumerate(fields)
            if f.rel is RelType.ONE
        }
        found: dict[int, str] = {}
        for row in rows:
            parts = []
            for n, f in enumerate(fields):
                value = row[n + 1]
                if f.rel is RelType.ONE:
                    parts.append(nested[f.name][value])
                elif f.type == "String":
                    parts.append(quote_string(value))
                else:
                    parts.append(attribute_text(f, tables.from_sql(f, value), self.zone))
            found[row[0]] = ",".join(parts)
        return found
