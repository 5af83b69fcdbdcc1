"""Reads of the local catalogue: search and get, with INCLUDE resolved set-wise.

A query is compiled once (:mod:`igestbench.mock.jpql`, cached) and run as one SQL statement; each
INCLUDE level costs one more statement for all parent objects at once (``WHERE id IN (…)`` for
many-to-one, ``WHERE parent_id IN (…)`` for one-to-many), never one per row.
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

import apsw

from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatInsufficientPrivileges, IcatNoSuchObject, IcatValidation
from igestbench.icat.schema import BASE_FIELDS, Entity, Field, Profile, RelType
from igestbench.mock import db, row_json, row_xml, tables
from igestbench.mock.jpql import CompiledSearch, IncludeNode, compile_get, compile_search
from igestbench.mock.jpql.model import correlated
from igestbench.mock.plans import Plans
from igestbench.mock.row_texts import ByIds, KeptTexts, Texts
from igestbench.mock.store import Store

#: entity name → (SQL selecting the ids the user may read, params); None: everything readable.
Restrictions = Mapping[str, tuple[str, tuple[Any, ...]]] | None

Row = Sequence[Any]
T = TypeVar("T")
#: (profile, entity, rows, INCLUDEd many-to-one objects by field and id, INCLUDEd one-to-many
#: objects by field and parent id) → one object per row: Beans, or encoded XML bodies.
Build = Callable[
    [
        Profile,
        Entity,
        Sequence[Row],
        Mapping[str, Mapping[int, T]],
        Mapping[str, Mapping[int, list[T]]],
    ],
    list[T],
]

_CHUNK = 5000  # ids per IN (…) list, well under SQLite's bound-parameter limit
#: Statements whose narrowed form (Reader._attributes_only) is kept (then it starts afresh).
_NARROWED_KEPT = 4096


class RowTextEncoder(Protocol):
    """What :mod:`row_xml` and :mod:`row_json` make per entity: rows → answer text."""

    attribute_columns: int
    #: one row's element of a search answer, and what goes between two of them
    row_text: Callable[[Row], str]
    separator: str

    def rows_text(self, rows: Iterable[Row]) -> str: ...

    def returns(self, rows: Sequence[Row], ones: row_xml.Ones, manys: row_xml.Manys) -> str: ...

    def bodies(
        self, rows: Sequence[Row], ones: row_xml.Ones, manys: row_xml.Manys
    ) -> list[str]: ...


@dataclass(frozen=True)
class Codec:
    """One way of writing answers from rows: ICAT's SOAP XML or its REST JSON."""

    name: str
    row_encoder: Callable[[Profile, str, dt.tzinfo], RowTextEncoder]
    #: a search for values (the result with dates in the server's zone) → answer text
    values: Callable[[Profile, SearchResult, dt.tzinfo], str]
    #: the text of an entity search's elements → answer text
    entities: Callable[[str], str]


XML = Codec(
    "xml",
    row_xml.row_encoder,
    lambda profile, r, zone: row_xml.encode_values(r.items, r.value_types, r.multi),
    lambda text: text,
)
JSON = Codec(
    "json",
    row_json.row_encoder,
    lambda profile, r, zone: row_json.encode_values(
        profile, r.items, r.value_types, r.multi, r.empty_aggregates, zone
    ),
    lambda text: "[" + text + "]",
)


@dataclass(frozen=True)
class SearchResult:
    """What a search returns: entity Beans, or scalars typed for the wire."""

    items: list[Any]
    #: Java type per value column ("" for entities); several columns → each item is a tuple.
    value_types: tuple[str, ...] = ()
    multi: bool = False
    #: Rows of MIN/MAX/AVG/SUM over no rows left out of ``items`` (SOAP answers nothing for
    #: them, ICAT's REST API a null).
    empty_aggregates: int = 0


class Reader:
    """Runs searches and gets against a :class:`Store`.

    Both answer forms share one way of reading: the result rows by one statement, then per
    INCLUDE level one set-based statement (:meth:`_related`), and only then are the rows turned
    into Beans (:meth:`search`, :meth:`get`, for Python callers) or straight into ICAT's XML
    (:meth:`search_xml`, :meth:`get_xml`, what the SOAP face sends).
    """

    def __init__(self, store: Store, max_entities: int, zone: dt.tzinfo = dt.UTC) -> None:
        self.store = store
        self.profile: Profile = store.profile
        self.max_entities = max_entities
        #: The server's time zone, which the XML answers give their dates in (as ICAT does).
        self.zone = zone
        #: Where each read may run, and the shape it runs in (before any of its SQL runs).
        self.plans = Plans(store)
        #: (answer form, entity) → the texts of rows written before (:mod:`row_texts`)
        self._kept: dict[tuple[str, str], KeptTexts] = {}
        #: the searches that ask for their ids first
        self._by_ids = ByIds()
        #: (compiled statement, columns) → its SELECT list and the statement narrowed to them
        self._narrowed: dict[tuple[str, int], tuple[str, str]] = {}

    def search(self, user: str, query: str, restrict: Restrictions) -> SearchResult:
        compiled = self._compile(user, query, restrict)
        with self.plans.timed(compiled.sql):
            cursor = self._run(compiled.sql, compiled.params)
            if compiled.kind == "values":
                return self._values(compiled, cursor)
            entity, rows, ones, manys = self._entities(compiled, cursor, restrict, _beans)
            return SearchResult(_beans(self.profile, entity, rows, ones, manys))

    def search_xml(self, user: str, query: str, restrict: Restrictions) -> str:
        """The ``return`` elements of ICAT's search answer, as text (the body of searchResponse)."""
        return self._search_text(user, query, restrict, XML)

    def search_json(self, user: str, query: str, restrict: Restrictions) -> str:
        """ICAT's REST search answer (a JSON array), as text."""
        return self._search_text(user, query, restrict, JSON)

    def _search_text(self, user: str, query: str, restrict: Restrictions, codec: Codec) -> str:
        """A search answer written from the rows by ``codec``, with no Bean per row.

        Without INCLUDE, the many-to-one ids are not fetched (nothing of them is written).
        """
        compiled = self._compile(user, query, restrict)
        if compiled.kind == "entity" and not compiled.includes and not compiled.include_all_ones:
            assert compiled.entity is not None
            entity = self.profile.entity(compiled.entity)
            encoder = codec.row_encoder(self.profile, entity.name, self.zone)
            select, sql = self._attributes_only(compiled, entity, encoder.attribute_columns)
            with self.plans.timed(sql):
                texts = self._rows_text(compiled, select, sql, entity, codec, encoder)
                return codec.entities(texts)
        with self.plans.timed(compiled.sql):
            cursor = self._run(compiled.sql, compiled.params)
            if compiled.kind == "values":
                values = self._values(compiled, cursor, self.zone)
                return codec.values(self.profile, values, self.zone)
            build = functools.partial(self._bodies, codec)
            found = self._entities(compiled, cursor, restrict, build, narrow=True)
            entity, rows, ones, manys = found
            encoder = codec.row_encoder(self.profile, entity.name, self.zone)
            return codec.entities(encoder.returns(rows, ones, manys))

    def _attributes_only(
        self, compiled: CompiledSearch, entity: Entity, columns: int
    ) -> tuple[str, str]:
        """The SELECT list of ``compiled.sql`` and the statement selecting its first
        ``columns`` only (the attributes: no many-to-one ids), made once per statement."""
        key = (compiled.sql, columns)
        made = self._narrowed.get(key)
        if made is None:
            select = tables.select_list(entity, compiled.alias)
            narrow = ", ".join(select.split(", ")[:columns])
            made = (select, compiled.sql.replace(select, narrow, 1))
            if len(self._narrowed) >= _NARROWED_KEPT:
                self._narrowed.clear()
            self._narrowed[key] = made
        return made

    def _rows_text(
        self, compiled: CompiledSearch, select: str, sql: str, entity: Entity, codec: Codec,
        encoder: RowTextEncoder,
    ) -> str:
        """The elements of an entity search's answer without INCLUDE: ``sql`` is
        ``compiled.sql`` selecting the attributes only. Texts written before are used again,
        and a big answer mostly kept the last time asks for its ids first (:mod:`row_texts`)."""
        kept = self._kept_texts(codec, entity)
        texts: list[str]
        if kept is not None and self._by_ids.wanted(sql):
            self.plans.check(sql)  # a read too slow for the event loop stays so by ids too
            id_sql = compiled.sql.replace(select, f'{compiled.alias}."id"', 1)
            cursor = self._run(id_sql, compiled.params)
            ids = [row[0] for row in db.at_most(cursor, self.max_entities + 1)]
            self._check_size(len(ids))
            known, hits = kept.known(ids)
            if hits < len(ids):
                missing = [i for i, text in zip(ids, known, strict=True) if text is None]
                rows = self._fetch(entity, _ID, missing, None, encoder.attribute_columns)
                written = dict(zip(map(_first, rows), map(encoder.row_text, rows), strict=True))
                kept.keep(list(written), list(written.values()))
                # a row deleted since its id was found is left out, as if it had gone before
                texts = [text for i, known_text in zip(ids, known, strict=True)
                         if (text := known_text or written.get(i)) is not None]  # fmt: skip
            else:
                texts = cast("list[str]", known)
            rows_found = len(ids)
        else:
            rows = db.at_most(self._run(sql, compiled.params), self.max_entities + 1)
            self._check_size(len(rows))
            rows_found = len(rows)
            hits, texts = self._written(kept, rows, encoder.row_text)
        self._by_ids.note(sql, rows_found, hits)
        return encoder.separator.join(texts)

    def get(self, user: str, query: str, obj_id: int, restrict: Restrictions) -> Bean:
        with self.plans.timed(_get_key(query)):
            entity, row, ones, manys = self._get(user, query, obj_id, restrict, _beans)
            return _beans(self.profile, entity, [row], ones, manys)[0]

    def get_xml(self, user: str, query: str, obj_id: int, restrict: Restrictions) -> str:
        """The ``return`` element of ICAT's get answer, as text (the body of getResponse)."""
        return self._get_text(user, query, obj_id, restrict, XML)

    def get_json(self, user: str, query: str, obj_id: int, restrict: Restrictions) -> str:
        """ICAT's REST get answer (``{"Dataset":{…}}``), as text."""
        return self._get_text(user, query, obj_id, restrict, JSON)

    def _get_text(
        self, user: str, query: str, obj_id: int, restrict: Restrictions, codec: Codec
    ) -> str:
        build = functools.partial(self._bodies, codec)
        with self.plans.timed(_get_key(query)):
            entity, row, ones, manys = self._get(user, query, obj_id, restrict, build, narrow=True)
            encoder = codec.row_encoder(self.profile, entity.name, self.zone)
            return encoder.returns([row], ones, manys)

    def _bodies(
        self,
        codec: Codec,
        profile: Profile,
        entity: Entity,
        rows: Sequence[Row],
        ones: row_xml.Ones,
        manys: row_xml.Manys,
    ) -> list[str]:
        return codec.row_encoder(profile, entity.name, self.zone).bodies(rows, ones, manys)

    def _get(
        self,
        user: str,
        query: str,
        obj_id: int,
        restrict: Restrictions,
        build: Build[T],
        narrow: bool = False,
    ) -> tuple[Entity, Row, dict[str, dict[int, T]], dict[str, dict[int, list[T]]]]:
        """The row of object ``obj_id`` and, built by ``build``, what it INCLUDEs (``narrow``:
        see :meth:`_related`)."""
        compiled = compile_get(self.profile, query)
        self.plans.check(_get_key(query))  # a get INCLUDing much: one row, many children
        entity = self.profile.entity(compiled.entity)
        row = self.store.conn.execute(_by_id(entity), (obj_id,)).fetchone()
        if row is None:
            raise IcatNoSuchObject(f"{entity.name}[id:{obj_id}] not found.")
        if restrict is not None and entity.name in restrict:
            test, params = correlated("o", *restrict[entity.name])
            hit = self.store.conn.execute(
                f'SELECT 1 FROM (SELECT ? AS "id") AS o WHERE {test}', (obj_id, *params)
            ).fetchone()
            if hit is None:
                raise IcatInsufficientPrivileges(
                    f"READ access to this {entity.name} is not allowed."
                )
        budget = [self.max_entities - 1]
        ones, manys = self._related(
            entity, [row], compiled.includes, compiled.include_all_ones, restrict, budget, build,
            narrow,
        )
        return entity, row, ones, manys

    def _compile(self, user: str, query: str, restrict: Restrictions) -> CompiledSearch:
        key = None if restrict is None else tuple(sorted(restrict.items()))
        return compile_search(self.profile, query, user=user, restrict=key, zone=self.zone)

    def _run(self, sql: str, params: tuple[Any, ...]) -> apsw.Cursor:
        """A compiled search's statement run, in the shape its plan chose (:mod:`plans`);
        :class:`RunElsewhere` before it runs when it is no work for the event loop."""
        return self.store.conn.execute(self.plans.statement(sql, params), params)

    def _entities(
        self,
        compiled: CompiledSearch,
        cursor: apsw.Cursor,
        restrict: Restrictions,
        build: Build[T],
        narrow: bool = False,
    ) -> tuple[Entity, list[Row], dict[str, dict[int, T]], dict[str, dict[int, list[T]]]]:
        """The result rows of an entity search and, built by ``build``, what they INCLUDE
        (``narrow``: see :meth:`_related`)."""
        assert compiled.entity is not None
        entity = self.profile.entity(compiled.entity)
        rows = db.at_most(cursor, self.max_entities + 1)
        self._check_size(len(rows))
        budget = [self.max_entities - len(rows)]
        ones, manys = self._related(
            entity, rows, compiled.includes, compiled.include_all_ones, restrict, budget, build,
            narrow,
        )
        return entity, rows, ones, manys

    def _values(
        self, compiled: CompiledSearch, cursor: apsw.Cursor, zone: dt.tzinfo = dt.UTC
    ) -> SearchResult:
        """Selected values; dates in ``zone`` (the same instants: a Python caller gets UTC)."""
        types = compiled.value_types
        converters = [_value_converter(t, zone) for t in types]
        items: list[Any] = []
        empty = 0
        for row in db.at_most(cursor, self.max_entities + 1):
            if compiled.aggregate and all(v is None for v in row):
                empty += 1
                continue  # MIN/MAX/AVG/SUM over no rows: ICAT's SOAP returns nothing at all
            values = tuple(c(v) for c, v in zip(converters, row, strict=True))
            items.append(values if compiled.multi else values[0])
        self._check_size(len(items))
        return SearchResult(items, types, compiled.multi, empty)

    def _check_size(self, n: int) -> None:
        if n > self.max_entities:
            raise IcatValidation(f"attempt to return more than {self.max_entities} entities")

    def _related(
        self,
        entity: Entity,
        rows: Sequence[Row],
        nodes: Iterable[IncludeNode],
        all_ones: bool,
        restrict: Restrictions,
        budget: list[int],
        build: Build[T],
        narrow: bool = False,
    ) -> tuple[dict[str, dict[int, T]], dict[str, dict[int, list[T]]]]:
        """The objects ``rows`` INCLUDE, built by ``build``: per many-to-one field id → object,
        per one-to-many field parent id → objects (ordered by id). Relations not INCLUDEd are
        absent, and so are objects the user may not read (ICAT drops them silently).

        ``narrow``: ``build`` writes answer text, which gives an object's many-to-one ids only
        for what it INCLUDEs; so the objects at the leaves of the INCLUDE tree are fetched
        without them (:func:`tables.attribute_width`). A Dataset's 400 Datafiles have two such
        columns of fifteen, and each value SQLite hands over costs as much as writing it.
        """
        ones: dict[str, dict[int, T]] = {}
        manys: dict[str, dict[int, list[T]]] = {}
        if not nodes and not all_ones:
            return ones, manys  # nothing INCLUDEd: most reads
        wanted: dict[str, tuple[IncludeNode, ...]] = {}
        if all_ones:
            wanted = {f.name: () for f in entity.ones}
        for node in nodes:
            wanted[node.field] = node.children
        if not rows:
            return ones, manys
        for name, children in wanted.items():
            f = entity.field(name)
            target = self.profile.entity(f.type)
            width = tables.attribute_width(target) if narrow and not children else None
            if f.rel is RelType.ONE:
                i = tables.column_index(entity, name)
                ids = sorted({row[i] for row in rows if row[i] is not None})
                found = self._fetch(target, _ID, ids, restrict, width)
            else:
                assert f.mapped_by is not None
                back = target.field(f.mapped_by)
                parents = sorted({row[0] for row in rows})
                # the parent's column only when it sorts the children among several parents
                also = back if width is not None and len(parents) > 1 else None
                found = self._fetch(target, back, parents, restrict, width, also)
            budget[0] -= len(found)
            self._check_size(self.max_entities - budget[0])
            sub_ones, sub_manys = self._related(
                target, found, children, False, restrict, budget, build, narrow
            )
            objects = build(self.profile, target, found, sub_ones, sub_manys)
            if f.rel is RelType.ONE:
                ones[name] = {row[0]: obj for row, obj in zip(found, objects, strict=True)}
            elif len(parents) == 1:  # one parent (a Dataset and its Datafiles): all are its
                manys[name] = {parents[0]: objects} if objects else {}
            else:
                j = tables.column_index(target, back.name) if width is None else width
                groups: dict[int, list[T]] = {}
                for row, obj in zip(found, objects, strict=True):
                    groups.setdefault(row[j], []).append(obj)
                manys[name] = groups
        return ones, manys

    def _kept_texts(self, codec: Codec, entity: Entity) -> Texts | None:
        """The texts of ``entity``'s rows as elements of a search answer in ``codec``'s form,
        kept for the store's present version; None for the writer's own reads inside a
        transaction, which see its uncommitted rows (:mod:`row_texts`)."""
        if self.store.conn.in_transaction:
            return None
        key = (codec.name, entity.name)
        texts = self._kept.get(key)
        if texts is None:
            texts = self._kept.setdefault(key, KeptTexts())
        return texts.of(self.store.version)  # before the statement runs: see row_texts

    @staticmethod
    def _written(
        kept: Texts | None, rows: Sequence[Row], write: Callable[[Row], str]
    ) -> tuple[int, list[str]]:
        """Each row's text, kept or written now (and kept); how many were kept."""
        if kept is None:
            return 0, list(map(write, rows))
        ids = list(map(_first, rows))
        known, hits = kept.known(ids)
        if hits == 0:
            texts = list(map(write, rows))
        else:
            texts = [text if text is not None else write(row)
                     for row, text in zip(rows, known, strict=True)]  # fmt: skip
        if hits < len(ids):
            kept.keep(ids, texts)
        return hits, texts

    def _fetch(
        self,
        target: Entity,
        key: Field,
        keys: Sequence[int],
        restrict: Restrictions,
        width: int | None = None,
        also: Field | None = None,
    ) -> list[Row]:
        """Rows of ``target`` whose column of ``key`` is one of ``keys``, ordered by id: every
        column, or the first ``width`` and then the column of ``also``."""
        extra, extra_params = "", ()
        if restrict is not None and target.name in restrict:
            # asked of the children found, not as the list of all the user may read
            test, extra_params = correlated("o", *restrict[target.name])
            extra = f" AND {test}"
        select = _select(target, width, also)
        key_column = tables.column("o", key)
        found: list[Row] = []
        for chunk in _chunks(keys):
            sql = f"{select} WHERE {key_column} IN ({','.join('?' * len(chunk))}){extra}"
            found.extend(self.store.conn.execute(sql, (*chunk, *extra_params)))
        # ordered here, not by SQLite: its sorter copies every row (all columns) in and out
        # again (~0.1 of the ~0.7 ms a Dataset's 400 Datafiles took); they mostly come in id
        # order already (in the order of an index whose rows were written in id order), which
        # a Python sort merely checks
        found.sort(key=_first)
        return found



def _beans(
    profile: Profile,
    entity: Entity,
    rows: Sequence[Row],
    ones: Mapping[str, Mapping[int, Bean]],
    manys: Mapping[str, Mapping[int, list[Bean]]],
) -> list[Bean]:
    """Rows as Beans holding their INCLUDEd objects (a many-to-one object is shared)."""
    decode = tables.row_decoder(entity)
    beans = []
    for row in rows:
        bean = decode(row)
        values = bean.values
        for f in entity.ones:
            ref = values.get(f.name)
            if ref is None:
                continue
            full = ones.get(f.name, {}).get(ref.id)
            if full is None:
                del values[f.name]  # not INCLUDEd, or not readable: dropped, as ICAT does
            else:
                values[f.name] = full
        for name, groups in manys.items():
            children = groups.get(values["id"])
            if children:
                values[name] = children
        beans.append(bean)
    return beans


_first = operator.itemgetter(0)
#: the id field, which :meth:`Reader._fetch` finds rows by
_ID = next(f for f in BASE_FIELDS if f.name == "id")

#: id of an entity, width, also's name → (the entity, kept so its id stays its own; the SELECT)
_SELECTS: dict[tuple[int, int | None, str | None], tuple[Entity, str]] = {}


def _select(target: Entity, width: int | None, also: Field | None) -> str:
    """``SELECT <columns> FROM <table> o`` for :meth:`Reader._fetch`; made once per shape
    (keyed on the entity's id: hashing an Entity, a dataclass of all its fields, costs
    microseconds, which every INCLUDE would pay)."""
    key = (id(target), width, None if also is None else also.name)
    made = _SELECTS.get(key)
    if made is None:
        fields = tables.stored_fields(target)
        chosen = [*fields[:width], *(() if also is None else (also,))]
        columns = ", ".join(tables.column("o", f) for f in chosen)
        made = _SELECTS[key] = (target, f"SELECT {columns} FROM {tables.table(target)} o")
    return made[1]


@functools.cache
def _by_id(entity: Entity) -> str:
    """The statement reading one object of ``entity`` by id (a ``get``)."""
    return f"SELECT {tables.select_list(entity, 'o')} FROM {tables.table(entity)} o WHERE o.id = ?"


def _get_key(query: str) -> str:
    """What a slow ``get`` is remembered by (:meth:`Plans.timed`): its query, not the id."""
    return "get " + query


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


def _value_converter(java_type: str, zone: dt.tzinfo) -> Callable[[Any], Any]:
    f = Field("value", RelType.ATTRIBUTE, java_type)
    if java_type == "Date":
        return lambda v: None if v is None else tables.parse_stored_datetime(v).astimezone(zone)
    if java_type in ("boolean", "Boolean", "Double"):
        return lambda v: tables.from_sql(f, v)
    return lambda v: v
