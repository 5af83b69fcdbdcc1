"""The concise ("old") search syntax, rewritten into the JPQL form, as ICAT itself does.

``Dataset [name LIKE 'x%'] <-> Investigation [name = 'inv']`` becomes
``SELECT Dataset$ FROM Dataset Dataset$ JOIN Dataset$.investigation Investigation$
WHERE Dataset$.name LIKE 'x%' AND Investigation$.name = 'inv'``: each entity gets the variable
``<Entity>$`` and the paths of its bracketed condition are prefixed with it. ``<->`` joins the
named entities through the unique shortest chain of relationships from those already joined
(for neighbours, that is ICAT's rule of the single direct relationship); a missing or ambiguous
chain is BAD_PARAMETER. Bare enumeration values (``valueType = NUMERIC``) stay enumeration names.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from typing import Any

from igestbench.icat.faults import IcatBadParameter
from igestbench.icat.schema import ENUMERATIONS, Entity, Field, Profile
from igestbench.mock.jpql import includes
from igestbench.mock.jpql import syntax as s

_ENUM_VALUES = frozenset(v for values in ENUMERATIONS.values() for v in values)


def _variable(entity: str) -> str:
    return entity + "$"


def rewrite(profile: Profile, q: s.ConciseQuery) -> tuple[s.SelectQuery, includes.Included]:
    """The JPQL form of a concise query, and its INCLUDE (entity names resolved)."""
    root_name, *attribute = q.head.parts
    root = _entity(profile, s.Path(root_name, q.head.pos))
    joined = {root.name}
    joins: list[s.Join] = []
    conditions: list[s.Expr] = []
    for n, (path, condition) in enumerate(q.conditions):
        entity = root if n == 0 else _entity(profile, path)
        if n > 0:
            if any(p.text == entity.name for p, _ in q.conditions[:n]):
                raise IcatBadParameter(f"{entity.name} is named twice ({path.where()})")
            if entity.name not in joined:
                joins.extend(_route(profile, joined, entity, path))
        if condition is not None:
            conditions.append(_relative(condition, entity))
    where: s.Expr | None = None
    for c in conditions:
        where = c if where is None else s.BoolOp("AND", where, c)
    head = s.Path(".".join((_variable(root.name), *attribute)), q.head.pos, q.head.text)
    included = includes.NOTHING
    if q.include is not None:
        if attribute or q.function:
            raise IcatBadParameter(
                f"INCLUDE needs whole {root.name} objects as the result ({q.head.where()})"
            )
        included = includes.from_entity_names(profile, root, q.include)
    select = s.SelectQuery(
        distinct=q.distinct,
        items=(s.SelectItem(head, q.function),),
        entity=s.Path(root.name, q.head.pos),
        alias=s.Path(_variable(root.name), q.head.pos),
        joins=tuple(joins),
        where=where,
        order=tuple(dataclasses.replace(o, expr=_relative(o.expr, root)) for o in q.order),
        limit=q.limit,
    )
    return select, included


def _entity(profile: Profile, name: s.Path) -> Entity:
    found = profile.entities.get(name.text)
    if found is None:
        raise IcatBadParameter(f"{name.text} is not an ICAT entity")
    return found


def _route(profile: Profile, joined: set[str], target: Entity, where: s.Path) -> list[s.Join]:
    """JOINs reaching ``target`` by the unique shortest relationship chain from ``joined``.

    A breadth-first search from all joined entities at once, counting the shortest chains to
    each entity; more than one chain to the target means the query is ambiguous.
    """
    distance = dict.fromkeys(joined, 0)
    chains = dict.fromkeys(joined, 1)
    previous: dict[str, tuple[str, Field]] = {}
    queue = deque(joined)
    while queue:
        here = queue.popleft()
        if target.name in distance and distance[here] >= distance[target.name]:
            break
        for f in profile.entity(here).fields:
            if not f.is_relation:
                continue
            there = f.type
            if there not in distance:
                distance[there] = distance[here] + 1
                chains[there] = chains[here]
                previous[there] = (here, f)
                queue.append(there)
            elif distance[there] == distance[here] + 1:
                chains[there] += chains[here]
    if target.name not in distance:
        raise IcatBadParameter(f"Unable to reach {target.name} ({where.where()})")
    if chains[target.name] > 1:
        raise IcatBadParameter(
            f"{target.name} ({where.where()}) can be reached from "
            f"{', '.join(sorted(joined))} in {chains[target.name]} ways: the query is ambiguous"
        )
    steps: list[tuple[str, Field]] = []
    name = target.name
    while name not in joined:
        here, f = previous[name]
        steps.append((here, f))
        name = here
    joins = []
    for here, f in reversed(steps):
        joined.add(f.type)
        joins.append(
            s.Join(s.Path(f"{_variable(here)}.{f.name}", where.pos), s.Path(_variable(f.type), -1))
        )
    return joins


def _relative(e: s.Expr, entity: Entity) -> s.Expr:
    """``e`` with its paths made relative to ``entity``'s variable."""

    def fix(p: s.Path) -> s.Expr:
        first = p.parts[0]
        if entity.has_field(first):
            return s.Path(f"{_variable(entity.name)}.{p.text}", p.pos, p.text)
        if len(p.parts) == 1 and first in _ENUM_VALUES:
            return s.EnumName(first, p.pos)
        if p.text.startswith("org.icatproject."):
            return p
        raise IcatBadParameter(f"{entity.name} has no field '{first}' ({p.where()})")

    relative: s.Expr = _map_paths(e, fix)
    return relative


def _map_paths(e: Any, fix: Callable[[s.Path], s.Expr]) -> Any:
    """``e`` rebuilt with every Path in it replaced by ``fix(path)``."""
    if isinstance(e, s.Path):
        return fix(e)
    if isinstance(e, tuple):
        return tuple(_map_paths(x, fix) for x in e)
    if dataclasses.is_dataclass(e) and not isinstance(e, type):
        changes = {f.name: _map_paths(getattr(e, f.name), fix) for f in dataclasses.fields(e)}
        return dataclasses.replace(e, **changes)
    return e
