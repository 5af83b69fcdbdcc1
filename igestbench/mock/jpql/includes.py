"""INCLUDE clauses as trees of :class:`IncludeNode`: which related objects to return.

Two forms, as in ICAT:

* paths from a variable (JPQL and the new get form): ``INCLUDE ds.datafiles df, df.parameters``,
  shorthand ``ds.datafiles.parameters``, optional ``AS``; each step must be a relationship;
* entity names (concise search and the old get form): ``INCLUDE Datafile, DatasetParameter``,
  resolved the way ICAT's DagHandler does: from the root, follow every relationship that leads to
  a named entity (one-to-many ones only at the top and below another one-to-many), each entity
  reachable exactly once.

``INCLUDE 1`` is not a tree but a flag: every many-to-one relationship of the result, one level.
Paths that repeat a step share one node, so each field appears once per level.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from igestbench.icat.faults import IcatBadParameter
from igestbench.icat.schema import Entity, Profile, RelType
from igestbench.mock.jpql.model import IncludeNode
from igestbench.mock.jpql.syntax import Include

Included = tuple[tuple[IncludeNode, ...], bool]

NOTHING: Included = ((), False)


@dataclass
class _Tree:
    """An IncludeNode under construction."""

    entity: Entity
    children: dict[str, _Tree] = field(default_factory=dict)

    def freeze(self) -> tuple[IncludeNode, ...]:
        return tuple(
            IncludeNode(name, child.entity.name, child.freeze())
            for name, child in self.children.items()
        )


def from_paths(
    profile: Profile, entity: Entity, variable: str, include: Include | None
) -> Included:
    """The INCLUDE of a query whose result objects are called ``variable``."""
    if include is None:
        return NOTHING
    if include.one:
        return (), True
    root = _Tree(entity)
    variables = {variable.upper(): root}
    for item in include.items:
        parts = item.path.parts
        if len(parts) < 2:
            raise IcatBadParameter(f"INCLUDE path {item.path.where()} must contain a '.'")
        node = variables.get(parts[0].upper())
        if node is None:
            raise IcatBadParameter(
                f"Variable '{parts[0]}' mentioned in INCLUDE clause ({item.path.where()}) "
                "is not defined"
            )
        for name in parts[1:]:
            owner = node.entity
            if not owner.has_field(name) or owner.field(name).rel is RelType.ATTRIBUTE:
                raise IcatBadParameter(
                    f"Problem with INCLUDE clause: {name} is not a relationship of "
                    f"{owner.name} ({item.path.where()})"
                )
            target = profile.entity(owner.field(name).type)
            node = node.children.setdefault(name, _Tree(target))
        if item.alias is not None:
            key = item.alias.text.upper()
            if "." in key or key in variables:
                raise IcatBadParameter(
                    f"Variable {item.alias.where()} in INCLUDE clause must be a new plain name"
                )
            variables[key] = node
    return root.freeze(), False


def from_entity_names(profile: Profile, entity: Entity, include: Include | None) -> Included:
    """The INCLUDE of the concise syntax and the old get form: a list of entity names."""
    if include is None:
        return NOTHING
    if include.one:
        return (), True
    wanted: set[str] = set()
    for item in include.items:
        name = item.path.text
        if item.alias is not None or name not in profile.entities:
            raise IcatBadParameter(f"{name} is not an ICAT entity")  # as ICAT says it
        wanted.add(name)
    reached = {entity.name}
    root = _Tree(entity)
    _follow(profile, root, None, wanted, reached, follow_many=True)
    missing = sorted(wanted - reached)
    if missing:
        raise IcatBadParameter(f"Unable to reach {', '.join(missing)} in list of INCLUDES.")
    return root.freeze(), False


def _follow(
    profile: Profile,
    node: _Tree,
    predecessor: str | None,
    wanted: set[str],
    reached: set[str],
    follow_many: bool,
) -> None:
    here = node.entity
    for f in here.fields:
        if f.rel is RelType.ATTRIBUTE or (f.rel is RelType.MANY and not follow_many):
            continue
        if f.type not in wanted or f.type == predecessor:
            continue
        if f.type in reached:
            raise IcatBadParameter(
                f"Can't have loop in graph of entities. '{f.type}' was encountered twice "
                f"following {here.name} -> {f.type} in list of INCLUDES."
            )
        reached.add(f.type)
        child = node.children[f.name] = _Tree(profile.entity(f.type))
        _follow(profile, child, here.name, wanted, reached, f.rel is RelType.MANY)
