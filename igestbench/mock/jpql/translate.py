"""A parsed search (:class:`SelectQuery`) as one SQLite statement.

The SELECT list is the whole stored row of the result entity (kind ``entity``) or one column
per item (kind ``values``). Without ORDER BY, rows come in id order as ICAT's do in practice;
an explicit ORDER BY gets the same order appended as a tie-break, so LIMIT paging is stable.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from igestbench.icat.faults import IcatBadParameter
from igestbench.icat.schema import Profile, RelType
from igestbench.mock import tables
from igestbench.mock.jpql import includes
from igestbench.mock.jpql import syntax as s
from igestbench.mock.jpql.expressions import Translator
from igestbench.mock.jpql.model import CompiledSearch, SearchTemplate
from igestbench.mock.jpql.scope import Node, Scope

_NUMERIC = ("Long", "Integer", "Double")


@dataclass(frozen=True, slots=True)
class _Item:
    """One translated SELECT item."""

    sql: str
    jtype: str
    #: The node whose objects are the result (entity results only).
    node: Node | None = None
    aggregate: bool = False


@dataclass(frozen=True, slots=True)
class _Built:
    """A translated query, before its parts are assembled into SQL text."""

    scope: Scope
    root: Node
    items: tuple[_Item, ...]
    where: tuple[str, ...]
    where_params: tuple[Any, ...]


def _build(
    profile: Profile, q: s.SelectQuery, user: str, prefix: str, zone: dt.tzinfo
) -> _Built:
    """Translate FROM, JOIN, SELECT and WHERE of ``q``."""
    entity = profile.entities.get(q.entity.text)
    if entity is None:
        raise IcatBadParameter(
            f"No information to determine type of {q.entity.text} in the FROM clause"
        )
    scope = Scope(profile, prefix)
    root = scope.declare(q.alias, entity)
    for join in q.joins:
        scope.join(join.path, join.alias, join.left)
    items = tuple(_select(scope, item, root) for item in q.items)
    if len(items) > 1 and any(i.node is not None for i in items):
        raise IcatBadParameter("Only attributes and aggregates may be combined in a SELECT list")
    if len({i.aggregate for i in items}) > 1:
        raise IcatBadParameter("Aggregates and plain attributes cannot be mixed (no GROUP BY)")
    where: list[str] = []
    params: tuple[Any, ...] = ()
    if q.where is not None:
        sql, params = Translator(scope, user, zone).condition(q.where)
        where.append(sql)
    result = items[0].node
    if result is not None and result is not root:
        where.append(f"{result.id_sql} IS NOT NULL")  # a LEFT JOINed result may be missing
    return _Built(scope, root, items, tuple(where), params)


def compile_select(
    profile: Profile,
    q: s.SelectQuery,
    user: str,
    included: includes.Included | None = None,
    zone: dt.tzinfo = dt.UTC,
) -> SearchTemplate:
    """The search ``q`` as SQL, ready to be restricted to what a user may read.

    ``included`` is the INCLUDE already resolved (the concise syntax names entities, not paths);
    None: resolve ``q.include`` as JPQL paths.
    """
    built = _build(profile, q, user, "t", zone)
    scope, items = built.scope, built.items
    node = items[0].node
    if included is None:
        if q.include is not None and (node is None or len(q.items[0].path.parts) > 1):
            raise IcatBadParameter(
                "INCLUDE is only valid when the SELECT clause names one identification variable"
            )
        included = includes.NOTHING
        if node is not None:
            included = includes.from_paths(profile, node.entity, q.items[0].path.text, q.include)
    aggregate = items[0].aggregate
    distinct = "DISTINCT " if q.distinct else ""
    if node is not None:
        select = tables.select_list(node.entity, node.alias)
        tie_break = [node.id_sql]
    else:
        select = ", ".join(i.sql for i in items)
        tie_break = [] if aggregate else [i.sql for i in items] if q.distinct else [
            n.id_sql for n in scope.declared
        ]
    translator = Translator(scope, user, zone)
    order: list[str] = []
    tail_params: tuple[Any, ...] = ()
    for item in q.order:
        v = translator.scalar(item.expr)
        order.append(v.sql + (" DESC" if item.descending else ""))
        tail_params += v.params
    order += [t for t in tie_break if t not in order]
    tail = f" ORDER BY {', '.join(order)}" if order else ""
    if q.limit is not None:
        tail += " LIMIT ? OFFSET ?"
        tail_params += (q.limit[1], q.limit[0])
    # Joins are complete only now: WHERE and ORDER BY may have walked new relationships.
    head = f"SELECT {distinct}{select} {scope.from_sql(built.root)}"
    where = f" WHERE {' AND '.join(built.where)}" if built.where else ""
    restricted = node or built.root
    search = CompiledSearch(
        kind="entity" if node is not None else "values",
        entity=node.entity.name if node is not None else None,
        sql=head + where + tail,
        params=built.where_params + tail_params,
        value_types=() if node is not None else tuple(i.jtype for i in items),
        multi=len(items) > 1,
        aggregate=aggregate,
        includes=included[0],
        include_all_ones=included[1],
        alias=node.alias if node is not None else "",
    )
    return SearchTemplate(
        search, head, built.where, built.where_params, tail, tail_params,
        restricted.entity.name, restricted.alias,
    )


def compile_ids(
    profile: Profile, q: s.SelectQuery, user: str, zone: dt.tzinfo = dt.UTC
) -> tuple[str, str, tuple[Any, ...]]:
    """The entity and ``SELECT <id> …`` of the objects a rule's query selects."""
    for present, clause in ((q.order, "ORDER BY"), (q.include, "INCLUDE"), (q.limit, "LIMIT")):
        if present:
            raise IcatBadParameter(f"A rule's query may not have {clause}")
    item = q.items[0]
    if len(q.items) > 1 or item.function is not None or len(item.path.parts) > 1:
        raise IcatBadParameter(
            "Rule must have an entity reference in the SELECT clause rather than "
            f"{item.path.shown}"
        )
    built = _build(profile, q, user, "r", zone)
    node = built.items[0].node
    assert node is not None  # a lone variable always denotes objects
    where = f" WHERE {' AND '.join(built.where)}" if built.where else ""
    sql = f"SELECT {node.id_sql} {built.scope.from_sql(built.root)}{where}"
    return node.entity.name, sql, built.where_params


def _select(scope: Scope, item: s.SelectItem, root: Node) -> _Item:
    if item.function is None:
        ref = scope.resolve(item.path, implicit_last=True)
        f = ref.field
        if f is None:
            return _Item(ref.node.id_sql, ref.node.entity.name, ref.node)
        if f.rel is RelType.MANY:
            raise IcatBadParameter(f"Cannot select one-to-many relationship {item.path.where()}")
        return _Item(tables.column(ref.node.alias, f), f.type)
    ref = scope.resolve(item.path)
    f = ref.field
    fn = item.function
    if f is None:
        arg, jtype = ref.node.id_sql, ref.node.entity.name
    elif f.rel is RelType.MANY:
        raise IcatBadParameter(f"Cannot aggregate one-to-many relationship {item.path.where()}")
    else:
        arg, jtype = tables.column(ref.node.alias, f), f.type
    if fn == "COUNT":
        result = "Long"
    elif f is None or f.rel is RelType.ONE:
        raise IcatBadParameter(f"{fn} needs an attribute, not the objects {item.path.where()}")
    elif fn in ("MIN", "MAX"):
        result = jtype
    elif jtype not in _NUMERIC:
        raise IcatBadParameter(f"{fn} needs a numeric attribute, not {item.path.where()}")
    else:
        result = "Double" if fn == "AVG" or jtype == "Double" else "Long"
    distinct = "DISTINCT " if item.distinct else ""
    if fn == "COUNT" and f is None and not distinct and ref.node is root:
        # the root object's id is never null: COUNT(*) is the same number, and SQLite counts
        # it along its narrowest index (COUNT(id) may take a wide one: 5x the time at 10^6)
        return _Item("COUNT(*)", result, aggregate=True)
    return _Item(f"{fn}({distinct}{arg})", result, aggregate=True)
