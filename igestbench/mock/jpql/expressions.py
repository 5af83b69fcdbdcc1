"""Conditions and values of a query (WHERE, ORDER BY) as SQLite SQL with bound parameters.

Every constant of the query becomes a ``?`` parameter; the SQL text holds only our aliases, the
schema's identifiers and our own fixed fragments. Constants are converted to the stored form of
what they are compared with: a string or ``{ts …}`` compared with a Date field becomes the
fixed-width UTC text the dates are stored as, TRUE/FALSE become 1/0, an enumeration literal
(``org.icatproject.ParameterValueType.NUMERIC``, or ``NUMERIC`` in the concise syntax) its name.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any, Literal

from igestbench.icat.beans import parse_datetime
from igestbench.icat.faults import IcatBadParameter
from igestbench.icat.schema import ENUMERATIONS, Field, RelType
from igestbench.mock import tables
from igestbench.mock.jpql import syntax as s
from igestbench.mock.jpql.scope import ID_FIELD, Ref, Scope

_DATE = Field("value", RelType.ATTRIBUTE, "Date")
#: IN lists longer than this are bound as one JSON array (see Translator.condition).
_LONG_LIST = 64
_PLAIN_KINDS = frozenset({"string", "integer", "decimal"})
#: Terms per parenthesised group of a long AND/OR chain (see _balanced).
_GROUP = 64
_ENUM_PREFIX = "org.icatproject."
#: CURRENT_TIMESTAMP / CURRENT_DATE in the stored date format (strftime's %f has milliseconds).
_NOW_SQL = "(strftime('%Y-%m-%dT%H:%M:%f', 'now') || '000Z')"
_TODAY_SQL = "(date('now') || 'T00:00:00.000000Z')"
#: function → (argument counts, SQLite function, result type; None: the first argument's type).
_FUNCTIONS: dict[str, tuple[tuple[int, ...], str, str | None]] = {
    "LOWER": ((1,), "LOWER", "String"),
    "UPPER": ((1,), "UPPER", "String"),
    "TRIM": ((1,), "TRIM", "String"),
    "LENGTH": ((1,), "LENGTH", "Integer"),
    "ABS": ((1,), "ABS", None),
    "SUBSTRING": ((2, 3), "SUBSTR", "String"),
    # JPQL's LOCATE(needle, haystack) is SQLite's INSTR(haystack, needle).
    "LOCATE": ((2,), "INSTR", "Integer"),
}


@dataclass(frozen=True, slots=True)
class Value:
    """A translated value: SQL, its parameters in text order, and what it is.

    ``kind`` is ``value`` (``jtype`` the Java type, None when unknown), ``entity`` (the SQL is
    the object's id; ``jtype`` its entity name) or ``collection`` (a one-to-many relation, usable
    only in IS EMPTY, SIZE and MEMBER OF).
    """

    sql: str
    params: tuple[Any, ...]
    jtype: str | None
    kind: Literal["value", "entity", "collection"] = "value"
    ref: Ref | None = None


def position(e: s.Expr) -> str:
    """Where an expression starts, for error messages."""
    if isinstance(e, s.Path):
        return e.where()
    pos = getattr(e, "pos", None)
    if isinstance(pos, int) and pos >= 0:
        return f"at position {pos}"
    for name in ("left", "value", "operand", "right"):
        inner = getattr(e, name, None)
        if inner is not None:
            return position(inner)
    return "in the query"


class Translator:
    """Translates the expressions of one query within its :class:`Scope`."""

    def __init__(self, scope: Scope, user: str, zone: dt.tzinfo = dt.UTC) -> None:
        self.scope = scope
        self.user = user
        #: The server's time zone: ``{ts …}`` and date strings without a zone are read in it.
        self.zone = zone

    # --- conditions
    def condition(self, e: s.Expr) -> tuple[str, tuple[Any, ...]]:
        if isinstance(e, s.BoolOp):
            # Long AND/OR chains are walked iteratively: generated queries may have thousands.
            operands: list[s.Expr] = []
            pending: list[s.Expr] = [e]
            while pending:
                x = pending.pop()
                if isinstance(x, s.BoolOp) and x.op == e.op:
                    pending += (x.right, x.left)
                else:
                    operands.append(x)
            parts = [self.condition(x) for x in operands]
            return _balanced(e.op, [p[0] for p in parts]), tuple(v for p in parts for v in p[1])
        if isinstance(e, s.Not):
            inner, params = self.condition(e.operand)
            return f"NOT ({inner})", params
        if isinstance(e, s.Compare):
            left_v, right_v = self._pair(e.left, e.right)
            return f"{left_v.sql} {e.op} {right_v.sql}", left_v.params + right_v.params
        if isinstance(e, s.Like):
            v = self.scalar(e.value)
            pattern = self.scalar(e.pattern)
            sql, params = f"{v.sql}{_not(e.negated)} LIKE {pattern.sql}", v.params + pattern.params
            if e.escape is not None:
                esc = self.scalar(e.escape)
                sql, params = f"{sql} ESCAPE {esc.sql}", params + esc.params
            return sql, params
        if isinstance(e, s.InList):
            v = self.scalar(e.value)
            if len(e.items) > _LONG_LIST:
                constants = self._constants(e.items, v)
                if constants is not None:
                    # One parameter however long the list: SQLite bounds the number of
                    # parameters (32,766) and the depth of an expression, not a JSON text.
                    values = json.dumps(constants, allow_nan=False)
                    listed = "SELECT value FROM json_each(?)"
                    return f"{v.sql}{_not(e.negated)} IN ({listed})", (*v.params, values)
            items = [self.operand(i, v) for i in e.items]
            listed = ", ".join(i.sql for i in items)
            return f"{v.sql}{_not(e.negated)} IN ({listed})", v.params + _cat(items)
        if isinstance(e, s.Between):
            v = self.scalar(e.value)
            low, high = self.operand(e.low, v), self.operand(e.high, v)
            sql = f"{v.sql}{_not(e.negated)} BETWEEN {low.sql} AND {high.sql}"
            return sql, v.params + low.params + high.params
        if isinstance(e, s.IsNull):
            v = self.scalar(e.value)
            return f"{v.sql} IS{_not(e.negated)} NULL", v.params
        if isinstance(e, s.IsEmpty):
            sql, _ = self.scope.collection_sql(self._collection(e.value), "1")
            return f"{'' if e.negated else 'NOT '}EXISTS ({sql})", ()
        if isinstance(e, s.MemberOf):
            member = self.scalar(e.value)
            sql, alias = self.scope.collection_sql(self._collection(e.collection), "1")
            sql += f" AND {tables.column(alias, ID_FIELD)} = {member.sql}"
            return f"{'NOT ' if e.negated else ''}EXISTS ({sql})", member.params
        raise IcatBadParameter(f"Expected a condition {position(e)}")

    def _constants(self, items: tuple[s.Expr, ...], hint: Value) -> list[Any] | None:
        """The SQL values of a list of constants, or None if any item is something else."""
        if hint.jtype != "Date" and all(
            type(i) is s.Literal and i.kind in _PLAIN_KINDS for i in items
        ):
            # strings, integers and decimals are bound as they are (see _literal)
            return [i.value for i in items]  # type: ignore[union-attr]
        values = [self.operand(i, hint) for i in items]
        if all(v.sql == "?" for v in values):
            return [v.params[0] for v in values]
        return None

    def _pair(self, left: s.Expr, right: s.Expr) -> tuple[Value, Value]:
        """Both sides of a comparison, a constant converted to the type of the other side."""
        if self._is_constant(left) and not self._is_constant(right):
            right_v = self.scalar(right)
            return self.constant(left, right_v), right_v
        left_v = self.operand(left, None)
        return left_v, self.operand(right, left_v)

    def _collection(self, e: s.Expr) -> Ref:
        v = self.value(e)
        if v.kind != "collection" or v.ref is None:
            raise IcatBadParameter(f"Expected a one-to-many relationship {position(e)}")
        return v.ref

    # --- values
    def operand(self, e: s.Expr, hint: Value | None) -> Value:
        """A value, or a constant converted to match ``hint`` (the other side)."""
        if self._is_constant(e):
            return self.constant(e, hint)
        return self.scalar(e)

    def scalar(self, e: s.Expr) -> Value:
        """A value that can be compared: not a one-to-many relationship."""
        v = self.value(e)
        if v.kind == "collection":
            raise IcatBadParameter(
                f"A one-to-many relationship cannot be used here ({position(e)}): use IS EMPTY, "
                "SIZE or MEMBER OF, or JOIN it"
            )
        return v

    def value(self, e: s.Expr) -> Value:
        if self._is_constant(e):
            return self.constant(e, None)
        if isinstance(e, s.Path):
            return self.path(e)
        if isinstance(e, s.Now):
            return Value(_TODAY_SQL if e.date_only else _NOW_SQL, (), "Date")
        if isinstance(e, s.Call):
            return self._call(e)
        if isinstance(e, s.Arith):
            right = self.scalar(e.right)
            if e.left is None:
                return Value(f"(-{right.sql})", right.params, right.jtype)
            left = self.scalar(e.left)
            jtype = "Double" if "Double" in (left.jtype, right.jtype) or e.op == "/" else "Long"
            return Value(f"({left.sql} {e.op} {right.sql})", left.params + right.params, jtype)
        raise IcatBadParameter(f"Expected a value, not a condition {position(e)}")

    def path(self, p: s.Path) -> Value:
        ref = self.scope.resolve(p)
        f = ref.field
        if f is None:
            return Value(ref.node.id_sql, (), ref.node.entity.name, "entity", ref)
        if f.rel is RelType.MANY:
            return Value("", (), f.type, "collection", ref)
        column = tables.column(ref.node.alias, f)
        return Value(column, (), f.type, "entity" if f.rel is RelType.ONE else "value", ref)

    def _call(self, e: s.Call) -> Value:
        if e.name == "SIZE":
            if len(e.args) != 1:
                raise IcatBadParameter(f"SIZE takes one argument (at position {e.pos})")
            sql, _ = self.scope.collection_sql(self._collection(e.args[0]), "COUNT(*)")
            return Value(f"({sql})", (), "Integer")
        args = [self.scalar(a) for a in e.args]
        if e.name == "CONCAT":
            if len(args) < 2:
                raise IcatBadParameter(f"CONCAT takes two or more arguments (at position {e.pos})")
            return Value(f"({' || '.join(a.sql for a in args)})", _cat(args), "String")
        if e.name == "MOD":
            if len(args) != 2:
                raise IcatBadParameter(f"MOD takes two arguments (at position {e.pos})")
            return Value(f"({args[0].sql} % {args[1].sql})", _cat(args), "Integer")
        counts, function, jtype = _FUNCTIONS[e.name]
        if len(args) not in counts:
            n = " or ".join(str(c) for c in counts)
            raise IcatBadParameter(f"{e.name} takes {n} argument(s) (at position {e.pos})")
        if e.name == "LOCATE":
            args.reverse()
        sql = f"{function}({', '.join(a.sql for a in args)})"
        return Value(sql, _cat(args), jtype or args[0].jtype)

    # --- constants
    def _is_constant(self, e: s.Expr) -> bool:
        if isinstance(e, s.Path):
            return not self.scope.has_variable(e) and e.text.startswith(_ENUM_PREFIX)
        return isinstance(e, s.Literal | s.Param | s.EnumName)

    def constant(self, e: s.Expr, hint: Value | None) -> Value:
        target = hint.jtype if hint is not None else None
        if isinstance(e, s.Literal):
            return self._literal(e, target)
        if isinstance(e, s.Param):
            if e.name != "user":
                raise IcatBadParameter(
                    f"Unknown parameter ':{e.name}' at position {e.pos}: only :user is bound"
                )
            return Value("?", (self.user,), "String")
        if isinstance(e, s.EnumName):
            return self._enum(target or "", e.name, e.pos, e.name)
        assert isinstance(e, s.Path)
        *_, enum_type, name = e.parts
        return self._enum(enum_type, name, e.pos, e.text)

    def _literal(self, e: s.Literal, target: str | None) -> Value:
        if e.kind == "timestamp":
            # fold 0: a wall time a DST change repeats is its first, as java.sql.Timestamp reads it
            return Value("?", (tables.to_sql(_DATE, e.value.replace(tzinfo=self.zone)),), "Date")
        if e.kind == "boolean":
            return Value("?", (1 if e.value else 0,), "boolean")
        if e.kind == "string" and target == "Date":
            try:
                stored = tables.to_sql(_DATE, parse_datetime(e.value, self.zone))
                return Value("?", (stored,), "Date")
            except ValueError:
                raise IcatBadParameter(
                    f"'{e.value}' at position {e.pos} is compared with a date but is not one"
                ) from None
        jtype = {"string": "String", "integer": "Long", "decimal": "Double"}[e.kind]
        return Value("?", (e.value,), jtype)

    def _enum(self, enum_type: str, name: str, pos: int, written: str) -> Value:
        if name not in ENUMERATIONS.get(enum_type, ()):
            raise IcatBadParameter(f"'{written}' at position {pos} is not a known value")
        return Value("?", (name,), enum_type)


def _balanced(op: str, terms: list[str]) -> str:
    """``(a OR b OR …)`` nested in groups, so that SQLite's expression tree stays shallow.

    SQLite parses ``a OR b OR c …`` into a tree as deep as the chain is long and refuses one
    deeper than 1,000 ("Expression tree is too large"); groups of _GROUP keep the depth
    logarithmic, so a generated query with any number of terms runs.
    """
    while len(terms) > _GROUP:
        terms = [f"({f' {op} '.join(terms[i : i + _GROUP])})" for i in range(0, len(terms), _GROUP)]
    return f"({f' {op} '.join(terms)})"


def _not(negated: bool) -> str:
    return " NOT" if negated else ""


def _cat(values: list[Value]) -> tuple[Any, ...]:
    return tuple(p for v in values for p in v.params)
