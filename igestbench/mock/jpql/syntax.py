"""The syntax tree of a parsed query: plain frozen values, independent of lark.

Every leaf keeps ``pos``, its character offset in the query text, so that errors found while
translating can name the offending token and where it stands. The concise syntax is rewritten
into the same :class:`SelectQuery` the JPQL syntax parses to, so one translator serves both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Path:
    """A dotted name: an identification variable, ``var.field.field``, or an entity name."""

    text: str
    pos: int
    #: How the user wrote it, when the compiler rewrote it (concise: ``name`` → ``Dataset$.name``).
    written: str = ""

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.text.split("."))

    @property
    def shown(self) -> str:
        return self.written or self.text

    def where(self) -> str:
        return f"'{self.shown}' at position {self.pos}"


@dataclass(frozen=True, slots=True)
class Literal:
    """A constant: ``kind`` is string, integer, decimal, boolean or timestamp."""

    kind: str
    value: Any
    pos: int


@dataclass(frozen=True, slots=True)
class Param:
    """A named parameter such as ``:user``."""

    name: str
    pos: int


@dataclass(frozen=True, slots=True)
class EnumName:
    """A bare enumeration value of the concise syntax (``valueType = NUMERIC``)."""

    name: str
    pos: int


@dataclass(frozen=True, slots=True)
class Now:
    """CURRENT_TIMESTAMP or CURRENT_DATE, evaluated by the database when the query runs."""

    date_only: bool
    pos: int


@dataclass(frozen=True, slots=True)
class Call:
    """A function call such as ``LOWER(o.name)``; ``name`` is upper case."""

    name: str
    args: tuple[Expr, ...]
    pos: int


@dataclass(frozen=True, slots=True)
class Arith:
    """``left op right`` with op one of + - * /; a unary minus has ``left`` None."""

    op: str
    left: Expr | None
    right: Expr


@dataclass(frozen=True, slots=True)
class Compare:
    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Like:
    negated: bool
    value: Expr
    pattern: Expr
    escape: Expr | None


@dataclass(frozen=True, slots=True)
class InList:
    negated: bool
    value: Expr
    items: tuple[Expr, ...]


@dataclass(frozen=True, slots=True)
class Between:
    negated: bool
    value: Expr
    low: Expr
    high: Expr


@dataclass(frozen=True, slots=True)
class IsNull:
    negated: bool
    value: Expr


@dataclass(frozen=True, slots=True)
class IsEmpty:
    negated: bool
    value: Expr


@dataclass(frozen=True, slots=True)
class MemberOf:
    negated: bool
    value: Expr
    collection: Expr


@dataclass(frozen=True, slots=True)
class BoolOp:
    """AND / OR of two conditions."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True, slots=True)
class Not:
    operand: Expr


Expr = (
    Path | Literal | Param | EnumName | Now | Call | Arith | Compare | Like | InList | Between
    | IsNull | IsEmpty | MemberOf | BoolOp | Not
)


@dataclass(frozen=True, slots=True)
class SelectItem:
    """One SELECT item: a path (variable or attribute), optionally inside an aggregate."""

    path: Path
    function: str | None = None
    distinct: bool = False


@dataclass(frozen=True, slots=True)
class Join:
    path: Path
    alias: Path
    left: bool = False


@dataclass(frozen=True, slots=True)
class OrderItem:
    expr: Expr
    descending: bool = False


@dataclass(frozen=True, slots=True)
class IncludeItem:
    path: Path
    alias: Path | None = None


@dataclass(frozen=True, slots=True)
class Include:
    """``INCLUDE 1`` (``one``) or a list of paths / entity names."""

    one: bool
    items: tuple[IncludeItem, ...]


@dataclass(frozen=True, slots=True)
class SelectQuery:
    distinct: bool
    items: tuple[SelectItem, ...]
    entity: Path
    alias: Path
    joins: tuple[Join, ...] = ()
    where: Expr | None = None
    order: tuple[OrderItem, ...] = ()
    include: Include | None = None
    #: (skip, count); a count of -1 means no bound (the concise ``10,`` form).
    limit: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class ConciseQuery:
    """``[skip,count] [DISTINCT] E[.attr] [cond] <-> E2 [cond] …`` or ``FN(E.attr) …``."""

    limit: tuple[int, int] | None
    distinct: bool
    function: str | None
    head: Path
    #: The bracketed condition of each entity, the head's first (None: no brackets).
    conditions: tuple[tuple[Path, Expr | None], ...]
    order: tuple[OrderItem, ...]
    include: Include | None


@dataclass(frozen=True, slots=True)
class GetQuery:
    """A get() query string: ``Entity [INCLUDE …]`` or ``Entity [AS] var [INCLUDE var.rel …]``."""

    entity: Path
    alias: Path | None
    include: Include | None
