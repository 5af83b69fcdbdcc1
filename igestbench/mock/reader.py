"""Reads of the local catalogue: search and get, with INCLUDE resolved set-wise.

A query is compiled once (:mod:`igestbench.mock.jpql`, cached) and run as one SQL statement; each
INCLUDE level costs one more statement for all parent objects at once (``WHERE id IN (…)`` for
many-to-one, ``WHERE parent_id IN (…)`` for one-to-many), never one per row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatInsufficientPrivileges, IcatNoSuchObject, IcatValidation
from igestbench.icat.schema import Entity, Field, Profile, RelType
from igestbench.mock import tables
from igestbench.mock.jpql import IncludeNode, compile_get, compile_search
from igestbench.mock.store import Store

#: entity name → (SQL selecting the ids the user may read, params); None: everything readable.
Restrictions = Mapping[str, tuple[str, tuple[Any, ...]]] | None

_CHUNK = 5000  # ids per IN (…) list, well under SQLite's bound-parameter limit


@dataclass(frozen=True)
class SearchResult:
    """What a search returns: entity Beans, or scalars typed for the wire."""

    items: list[Any]
    #: Java type per value column ("" for entities); several columns → each item is a tuple.
    value_types: tuple[str, ...] = ()
    multi: bool = False


class Reader:
    """Runs searches and gets against a :class:`Store`."""

    def __init__(self, store: Store, max_entities: int) -> None:
        self.store = store
        self.profile: Profile = store.profile
        self.max_entities = max_entities

    def search(self, user: str, query: str, restrict: Restrictions) -> SearchResult:
        key = None if restrict is None else tuple(sorted(restrict.items()))
        compiled = compile_search(self.profile, query, user=user, restrict=key)
        cursor = self.store.conn.execute(compiled.sql, compiled.params)
        if compiled.kind == "entity":
            assert compiled.entity is not None
            entity = self.profile.entity(compiled.entity)
            rows = cursor.fetchmany(self.max_entities + 1)
            self._check_size(len(rows))
            decode = tables.row_decoder(entity)
            beans = [decode(r) for r in rows]
            budget = [self.max_entities - len(beans)]
            self._include(
                entity, beans, compiled.includes, compiled.include_all_ones, restrict, budget
            )
            return SearchResult(beans)
        types = compiled.value_types
        converters = [_value_converter(t) for t in types]
        items: list[Any] = []
        for row in cursor.fetchmany(self.max_entities + 1):
            if compiled.aggregate and all(v is None for v in row):
                continue  # MIN/MAX/AVG/SUM over no rows: ICAT returns nothing at all
            values = tuple(c(v) for c, v in zip(converters, row, strict=True))
            items.append(values if compiled.multi else values[0])
        self._check_size(len(items))
        return SearchResult(items, types, compiled.multi)

    def get(self, user: str, query: str, obj_id: int, restrict: Restrictions) -> Bean:
        compiled = compile_get(self.profile, query)
        entity = self.profile.entity(compiled.entity)
        sql = (
            f"SELECT {tables.select_list(entity, 'o')} FROM {tables.table(entity)} o WHERE o.id = ?"
        )
        row = self.store.conn.execute(sql, (obj_id,)).fetchone()
        if row is None:
            raise IcatNoSuchObject(f"{entity.name}[id:{obj_id}] not found.")
        if restrict is not None and entity.name in restrict:
            allowed_sql, params = restrict[entity.name]
            hit = self.store.conn.execute(
                f"SELECT 1 WHERE ? IN ({allowed_sql})", (obj_id, *params)
            ).fetchone()
            if hit is None:
                raise IcatInsufficientPrivileges(
                    f"READ access to this {entity.name} is not allowed."
                )
        bean = tables.row_decoder(entity)(row)
        budget = [self.max_entities - 1]
        self._include(
            entity, [bean], compiled.includes, compiled.include_all_ones, restrict, budget
        )
        return bean

    def _check_size(self, n: int) -> None:
        if n > self.max_entities:
            raise IcatValidation(f"attempt to return more than {self.max_entities} entities")

    def _include(
        self,
        entity: Entity,
        beans: list[Bean],
        nodes: Iterable[IncludeNode],
        all_ones: bool,
        restrict: Restrictions,
        budget: list[int],
    ) -> None:
        """Replace the relation references of ``beans`` by the INCLUDEd objects; drop the rest."""
        wanted: dict[str, tuple[IncludeNode, ...]] = {}
        if all_ones:
            wanted = {f.name: () for f in entity.ones}
        for node in nodes:
            wanted[node.field] = node.children
        for f in entity.ones:
            if f.name not in wanted:
                for b in beans:
                    b.values.pop(f.name, None)
        if not beans:
            return
        for name, children in wanted.items():
            f = entity.field(name)
            target = self.profile.entity(f.type)
            if f.rel is RelType.ONE:
                found = self._fetch_ones(f, target, beans, restrict)
            else:
                found = self._fetch_manys(f, target, beans, restrict)
            budget[0] -= len(found)
            self._check_size(self.max_entities - budget[0])
            self._include(target, found, children, False, restrict, budget)

    def _allowed(self, target: Entity, restrict: Restrictions) -> tuple[str, tuple[Any, ...]]:
        if restrict is None or target.name not in restrict:
            return "", ()
        sql, params = restrict[target.name]
        return f" AND o.id IN ({sql})", params

    def _fetch_ones(
        self, f: Field, target: Entity, beans: list[Bean], restrict: Restrictions
    ) -> list[Bean]:
        ids = sorted({b.values[f.name].id for b in beans if f.name in b.values})
        extra, extra_params = self._allowed(target, restrict)
        by_id: dict[int, Bean] = {}
        decode = tables.row_decoder(target)
        select = f"SELECT {tables.select_list(target, 'o')} FROM {tables.table(target)} o"
        for chunk in _chunks(ids):
            sql = f"{select} WHERE o.id IN ({','.join('?' * len(chunk))}){extra}"
            for row in self.store.conn.execute(sql, (*chunk, *extra_params)):
                bean = decode(row)
                by_id[bean.values["id"]] = bean
        for b in beans:
            ref = b.values.get(f.name)
            if ref is not None:
                full = by_id.get(ref.id)
                if full is None:
                    del b.values[f.name]  # not readable: silently dropped, as ICAT does
                else:
                    b.values[f.name] = full
        return list(by_id.values())

    def _fetch_manys(
        self, f: Field, target: Entity, beans: list[Bean], restrict: Restrictions
    ) -> list[Bean]:
        assert f.mapped_by is not None
        back = target.field(f.mapped_by)
        parent_col = tables.column("o", back)
        by_parent: dict[int, Bean] = {b.values["id"]: b for b in beans}
        for b in beans:
            b.values[f.name] = []
        extra, extra_params = self._allowed(target, restrict)
        decode = tables.row_decoder(target)
        select = f"SELECT {tables.select_list(target, 'o')} FROM {tables.table(target)} o"
        found: list[Bean] = []
        for chunk in _chunks(sorted(by_parent)):
            sql = (
                f"{select} WHERE {parent_col} IN ({','.join('?' * len(chunk))}){extra} "
                f"ORDER BY o.id"
            )
            for row in self.store.conn.execute(sql, (*chunk, *extra_params)):
                child = decode(row)
                parent_id = child.values[back.name].id
                by_parent[parent_id].values[f.name].append(child)
                found.append(child)
        for b in beans:
            if not b.values[f.name]:
                del b.values[f.name]
        return found


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def _value_converter(java_type: str) -> Callable[[Any], Any]:
    f = Field("value", RelType.ATTRIBUTE, java_type)
    if java_type in ("Date", "boolean", "Boolean", "Double"):
        return lambda v: tables.from_sql(f, v)
    return lambda v: v
