"""What the query compiler hands to the store: SQL with bound parameters plus what to INCLUDE.

These values are cached and shared between threads, so they are frozen and hold only tuples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

#: entity name → (SQL selecting the ids the user may read, its parameters), as pairs so that the
#: whole restriction is hashable and can be part of a cache key.
RestrictPairs = tuple[tuple[str, tuple[str, tuple[Any, ...]]], ...]


@dataclass(frozen=True, slots=True)
class IncludeNode:
    """One relation to INCLUDE: ``field`` of the parent object, whose objects are ``entity``s."""

    field: str
    entity: str
    children: tuple[IncludeNode, ...] = ()


@dataclass(frozen=True, slots=True)
class CompiledSearch:
    """A search as one SQL statement.

    For ``kind == "entity"`` the SELECT list is exactly ``tables.select_list(entity, alias)``, so
    each row turns into a Bean with ``tables.row_decoder`` or into XML with ``row_xml``; for
    ``"values"`` there is one column per selected item, typed for the wire by ``value_types``
    (Java type names: ``String``, ``Long``, ``Double``, ``Date``, ``boolean``, ``Integer`` or an
    enumeration's name).
    """

    kind: Literal["entity", "values"]
    entity: str | None
    sql: str
    params: tuple[Any, ...]
    value_types: tuple[str, ...]
    #: Several items were selected: each row is one fieldSet.
    multi: bool
    #: The items are aggregates: COUNT over no rows gives 0, MIN/MAX/AVG/SUM give no result.
    aggregate: bool
    includes: tuple[IncludeNode, ...]
    #: ``INCLUDE 1``: every many-to-one relation of the result objects, one level deep.
    include_all_ones: bool
    #: For ``"entity"``: the alias of the result objects' table in ``sql`` (its SELECT list is
    #: the first ``tables.select_list(entity, alias)`` in it, which a reader may replace).
    alias: str = ""

    def with_params(self, params: tuple[Any, ...]) -> CompiledSearch:
        """This search with other parameters (a search of the same shape: jpql/shapes.py):
        what ``dataclasses.replace(self, params=params)`` gives, without its generic walk over
        the fields (more than half the time of binding a shape's parameters)."""
        return CompiledSearch(self.kind, self.entity, self.sql, params, self.value_types,
                              self.multi, self.aggregate, self.includes, self.include_all_ones,
                              self.alias)  # fmt: skip


@dataclass(frozen=True, slots=True)
class CompiledGet:
    """A ``get`` query string: the entity to read and the relations to INCLUDE with it."""

    entity: str
    includes: tuple[IncludeNode, ...]
    include_all_ones: bool


#: How the authorizer joins the SQL of several rules on one entity (igestbench.mock.authz):
#: the joined ids are only ever asked ``IN``, which ignores duplicates, so no UNION's sort.
RULE_SEPARATOR = " UNION ALL "


def correlated(alias: str, sql: str, params: tuple[Any, ...]) -> tuple[str, tuple[Any, ...]]:
    """``sql`` (rules joined by :data:`RULE_SEPARATOR`, each selecting ids, every value bound)
    as one correlated EXISTS per rule on ``alias``, with its params in the same order.

    A UNION cannot be flattened into the outer query, so SQLite would build it whole; each
    single-SELECT rule can, and is then walked from the outer row through its indexes.
    """
    tests: list[str] = []
    ordered: list[Any] = []
    at = 0
    for part in sql.split(RULE_SEPARATOR):
        used = part.count("?")  # every literal of a rule is a bound parameter
        ordered.extend(params[at : at + used])
        at += used
        match = f'"rule_"."id" = {alias}."id"'
        tests.append(f'EXISTS (SELECT 1 FROM ({part}) AS "rule_" WHERE {match})')
    if at != len(params):  # a rule that is not what this expects: the plain semi-join
        return f'{alias}."id" IN ({sql})', params
    return f"({' OR '.join(tests)})", tuple(ordered)


@dataclass(frozen=True, slots=True)
class SearchTemplate:
    """A compiled search before READ restrictions are applied (the part worth caching).

    The final WHERE is ``where`` plus, when the store restricts ``restrict_entity``,
    ``AND <restrict_alias>.id IN (<restriction>)``; ``tail`` (ORDER BY, LIMIT) follows.
    """

    search: CompiledSearch
    head: str
    where: tuple[str, ...]
    where_params: tuple[Any, ...]
    tail: str
    tail_params: tuple[Any, ...]
    restrict_entity: str
    restrict_alias: str

    def restricted(self, sql: str, params: tuple[Any, ...]) -> CompiledSearch:
        """The search limited to the ``restrict_entity`` objects whose ids ``sql`` selects.

        A search with conditions of its own asks each rule about the rows those conditions
        leave (a correlated EXISTS per rule: a member's lookup of one Datafile costs a few
        index steps, not the list of every Datafile the member may read); one without (COUNT
        of all, every Datafile) builds that list once and joins it — the two ways ICAT's
        database runs the ``IN`` that rules add to its queries (a semi-join).
        """
        alias = self.restrict_alias
        if self.where:
            test, params = correlated(alias, sql, params)
        else:
            test = f'{alias}."id" IN ({sql})'
        where = (*self.where, test)
        text = f"{self.head} WHERE {' AND '.join(where)}{self.tail}"
        s = self.search
        return CompiledSearch(
            s.kind, s.entity, text, (*self.where_params, *params, *self.tail_params),
            s.value_types, s.multi, s.aggregate, s.includes, s.include_all_ones, s.alias,
        )
