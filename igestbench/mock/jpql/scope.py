"""Identification variables, joins and paths of one query, mapped onto the SQLite tables.

Each entity instance in the query (the FROM entity, each JOIN, each many-to-one relation a path
walks through) is a :class:`Node` with an SQL alias of our own making (``t0``, ``t1`` …), so no
user-chosen identifier ever reaches the SQL text. As in ICAT, variables are case-insensitive,
paths may walk many-to-one relations implicitly (an inner join, as JPQL's path navigation is) and
reach one-to-many relations only through a JOIN.
"""

from __future__ import annotations

from dataclasses import dataclass

from igestbench.icat.faults import IcatBadParameter
from igestbench.icat.schema import BASE_FIELDS, Entity, Field, Profile, RelType
from igestbench.mock import tables
from igestbench.mock.jpql.syntax import Path

ID_FIELD = next(f for f in BASE_FIELDS if f.name == "id")


@dataclass(frozen=True, slots=True)
class Node:
    """One entity instance of the query under its SQL alias."""

    alias: str
    entity: Entity

    @property
    def id_sql(self) -> str:
        return tables.column(self.alias, ID_FIELD)


@dataclass(frozen=True, slots=True)
class Ref:
    """What a path denotes: ``node`` itself (``field`` None) or one of its fields."""

    node: Node
    field: Field | None
    path: Path


class Scope:
    """The variables and joins of one query, growing as its clauses are translated."""

    def __init__(self, profile: Profile, prefix: str) -> None:
        self.profile = profile
        self.prefix = prefix
        self.variables: dict[str, Node] = {}
        #: Nodes declared in FROM and JOIN, in order (their ids order rows deterministically).
        self.declared: list[Node] = []
        self.joins: list[str] = []
        self._implicit: dict[tuple[str, str], Node] = {}
        self._count = 0

    def new_alias(self) -> str:
        alias = f"{self.prefix}{self._count}"
        self._count += 1
        return alias

    def entity(self, name: Path, message: str | None = None) -> Entity:
        found = self.profile.entities.get(name.text)
        if found is None:
            raise IcatBadParameter(message or f"{name.text} is not an ICAT entity")
        return found

    def declare(self, variable: Path, entity: Entity) -> Node:
        if "." in variable.text:
            raise IcatBadParameter(f"Variable {variable.where()} must not contain a '.'")
        key = variable.text.upper()
        if key in self.variables:
            raise IcatBadParameter(
                f"JPQL identification variable {variable.where()} has already been defined"
            )
        node = Node(self.new_alias(), entity)
        self.variables[key] = node
        self.declared.append(node)
        return node

    def join(self, path: Path, variable: Path, left: bool) -> Node:
        """Declare ``variable`` as the objects reached by relation path ``path`` (a JOIN)."""
        ref = self.resolve(path, implicit_last=False)
        f = ref.field
        if f is None or f.rel is RelType.ATTRIBUTE:
            raise IcatBadParameter(f"JOIN path {path.where()} must end in a relationship")
        node = self.declare(variable, self.profile.entity(f.type))
        self.joins.append(self._join_sql(ref.node, f, node, "LEFT JOIN" if left else "JOIN"))
        return node

    def follow(self, node: Node, f: Field) -> Node:
        """The node reached through many-to-one ``f`` of ``node`` (one inner join, reused)."""
        key = (node.alias, f.name)
        found = self._implicit.get(key)
        if found is None:
            found = Node(self.new_alias(), self.profile.entity(f.type))
            self.joins.append(self._join_sql(node, f, found, "JOIN"))
            self._implicit[key] = found
        return found

    def _join_sql(self, parent: Node, f: Field, child: Node, how: str) -> str:
        head = f"{how} {tables.table(child.entity)} {child.alias} ON "
        if f.rel is RelType.ONE:
            return head + f"{child.id_sql} = {tables.column(parent.alias, f)}"
        back = child.entity.field(f.mapped_by or "")
        return head + f"{tables.column(child.alias, back)} = {parent.id_sql}"

    def has_variable(self, path: Path) -> bool:
        return path.parts[0].upper() in self.variables

    def resolve(self, path: Path, implicit_last: bool = False) -> Ref:
        """The node and field ``path`` denotes.

        Every relation before the last step must be many-to-one and is joined implicitly; the
        last step may be anything. With ``implicit_last`` a final many-to-one relation is
        joined too and the result is that node (for selecting the related object itself).
        """
        parts = path.parts
        node = self.variables.get(parts[0].upper())
        if node is None:
            raise IcatBadParameter(
                f"Identification variable '{parts[0]}' in {path.where()} is not defined"
            )
        f: Field | None = None
        for i, name in enumerate(parts[1:], start=1):
            if f is not None:
                node = self._step(node, f, path)
            if not node.entity.has_field(name):
                raise IcatBadParameter(f"{node.entity.name} has no field '{name}' ({path.where()})")
            f = node.entity.field(name)
            if i < len(parts) - 1 and f.rel is RelType.ATTRIBUTE:
                raise IcatBadParameter(
                    f"{name} is an attribute of {node.entity.name}, not a relationship "
                    f"({path.where()})"
                )
        if implicit_last and f is not None and f.rel is RelType.ONE:
            return Ref(self.follow(node, f), None, path)
        return Ref(node, f, path)

    def _step(self, node: Node, f: Field, path: Path) -> Node:
        if f.rel is RelType.MANY:
            raise IcatBadParameter(
                f"{f.name} is a one-to-many relationship of {node.entity.name}: a path may not "
                f"go through it, use a JOIN ({path.where()})"
            )
        return self.follow(node, f)

    def from_sql(self, root: Node) -> str:
        """``FROM <root table> <alias> <joins…>``."""
        return " ".join((f"FROM {tables.table(root.entity)} {root.alias}", *self.joins))

    def collection_sql(self, ref: Ref, what: str) -> tuple[str, str]:
        """``SELECT <what>`` over the objects of one-to-many ``ref`` that belong to its node.

        Returns the SQL (ready for more ``AND`` terms) and the alias of the related objects.
        """
        assert ref.field is not None and ref.field.rel is RelType.MANY
        target = self.profile.entity(ref.field.type)
        alias = self.new_alias()
        back = target.field(ref.field.mapped_by or "")
        sql = (
            f"SELECT {what} FROM {tables.table(target)} {alias} "
            f"WHERE {tables.column(alias, back)} = {ref.node.id_sql}"
        )
        return sql, alias
