"""Parsing query text into :mod:`~igestbench.mock.jpql.syntax` trees with lark (LALR).

One grammar (``grammar.lark``, package data) with three start symbols: ``jpql`` and ``concise``
for search, ``get`` for get. The tree is built while parsing (lark's inline transformer), so a
parse is a single pass. Every lark error becomes :class:`IcatBadParameter` naming the offending
token and its position; nothing from lark escapes.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedEOF, UnexpectedToken

from igestbench.icat.faults import IcatBadParameter, IcatInternal
from igestbench.mock.jpql import lists
from igestbench.mock.jpql import syntax as s

_SELECT = re.compile(r"\s*select(?![\w$.])", re.IGNORECASE)
_TIMESTAMP = re.compile(r"\{\s*ts\s+(\S+)\s+(\S+)\s*\}", re.IGNORECASE)
_MAX_INT = 2**31 - 1
_MAX_LONG = 2**63 - 1
#: Readable names of the terminals that are patterns rather than fixed strings.
_TERMINAL_NAMES = {
    "PATH": "a name", "PARAM": "a :parameter", "STRING": "a string", "INT": "an integer",
    "DECIMAL": "a number", "TIMESTAMP": "{ts …}", "COMPOP": "a comparison", "$END": "end of query",
}


def is_jpql(text: str) -> bool:
    """Whether a search string uses the JPQL syntax (ICAT: its first token is SELECT)."""
    return _SELECT.match(text) is not None


@dataclass(frozen=True, slots=True)
class _Clause:
    """An optional clause on its way up to the rule that owns it."""

    name: str
    value: Any


def _pos(token: Token) -> int:
    return token.start_pos or 0


def _path(token: Token) -> s.Path:
    return s.Path(str(token), _pos(token))


def _bound(token: Token) -> int:
    """A LIMIT or range number; ICAT reads them as Java ints."""
    value = int(token)
    if value > _MAX_INT:
        raise IcatBadParameter(f"{token} at position {_pos(token)} is too large for a LIMIT")
    return value


def _flat(children: list[Any]) -> list[Any]:
    """Children with the tuples of optional clauses spliced in."""
    out: list[Any] = []
    for child in children:
        if isinstance(child, tuple):
            out.extend(_flat(list(child)))
        else:
            out.append(child)
    return out


def _clauses(children: list[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for child in _flat(children):
        if isinstance(child, _Clause):
            if child.name in found:
                raise IcatBadParameter(f"{child.name.upper()} appears twice in the query")
            found[child.name] = child.value
    return found


class _Builder(Transformer[Token, Any]):
    """Turns each grammar rule into its syntax value as the parser reduces it."""

    # --- queries
    def jpql(self, c: list[Any]) -> s.SelectQuery:
        tokens = [x for x in c if isinstance(x, Token)]
        found = _clauses(c)
        return s.SelectQuery(
            distinct="distinct" in found,
            items=tuple(x for x in c if isinstance(x, s.SelectItem)),
            entity=_path(tokens[0]),
            alias=_path(tokens[1]),
            joins=tuple(x for x in c if isinstance(x, s.Join)),
            where=found.get("where"),
            order=found.get("order", ()),
            include=found.get("include"),
            limit=found.get("limit"),
        )

    def concise_select(self, c: list[Any]) -> s.ConciseQuery:
        head = _path(next(x for x in c if isinstance(x, Token)))
        return self._concise(c, None, head)

    def concise_aggregate(self, c: list[Any]) -> s.ConciseQuery:
        return self._concise(c, str(c[0]), _path(c[1]))

    def _concise(self, c: list[Any], function: str | None, head: s.Path) -> s.ConciseQuery:
        items = _flat(c)
        found = _clauses(items)
        head_condition = next((x.expr for x in items if isinstance(x, _Bracket)), None)
        links = tuple((x.entity, x.expr) for x in items if isinstance(x, _Link))
        return s.ConciseQuery(
            limit=found.get("range"), distinct="distinct" in found, function=function,
            head=head, conditions=((head, head_condition), *links),
            order=found.get("order", ()), include=found.get("include"),
        )

    def get_old(self, c: list[Any]) -> s.GetQuery:
        return s.GetQuery(_path(c[0]), None, _clauses(c).get("include"))

    def get_new(self, c: list[Any]) -> s.GetQuery:
        return s.GetQuery(_path(c[0]), _path(c[1]), _clauses(c).get("include"))

    # --- clauses
    def distinct(self, c: list[Any]) -> _Clause:
        return _Clause("distinct", True)

    def path_item(self, c: list[Token]) -> s.SelectItem:
        return s.SelectItem(_path(c[0]))

    def agg_item(self, c: list[Any]) -> s.SelectItem:
        return s.SelectItem(_path(c[-1]), str(c[0]), distinct=len(c) == 3)

    def aggregate(self, c: list[Token]) -> str:
        return str(c[0]).upper()

    def inner_join(self, c: list[Token]) -> s.Join:
        return s.Join(_path(c[0]), _path(c[1]))

    def left_join(self, c: list[Token]) -> s.Join:
        return s.Join(_path(c[0]), _path(c[1]), left=True)

    def where(self, c: list[Any]) -> _Clause:
        return _Clause("where", c[0])

    def order(self, c: list[s.OrderItem]) -> _Clause:
        return _Clause("order", tuple(c))

    def order_item(self, c: list[Any]) -> s.OrderItem:
        return s.OrderItem(c[0], len(c) > 1 and c[1] == "DESC")

    def direction(self, c: list[Token]) -> str:
        return str(c[0]).upper()

    def tail(self, c: list[_Clause]) -> tuple[_Clause, ...]:
        return tuple(c)

    def options(self, c: list[_Clause]) -> tuple[_Clause, ...]:
        return tuple(c)

    def include(self, c: list[Any]) -> _Clause:
        for number in (x for x in c if isinstance(x, Token)):
            if str(number) != "1":
                raise IcatBadParameter(
                    f"Only integer value allowed in the INCLUDE list is 1 (found '{number}' "
                    f"at position {_pos(number)})"
                )
            if len(c) > 1:
                raise IcatBadParameter(
                    f"INCLUDE 1 cannot be combined with other items (position {_pos(number)})"
                )
            return _Clause("include", s.Include(True, ()))
        return _Clause("include", s.Include(False, tuple(c)))

    def include_item(self, c: list[Token]) -> s.IncludeItem:
        return s.IncludeItem(_path(c[0]), _path(c[1]) if len(c) > 1 else None)

    def include_number(self, c: list[Token]) -> Token:
        return c[0]

    def limit(self, c: list[Token]) -> _Clause:
        return _Clause("limit", (_bound(c[0]), _bound(c[1])))

    def range(self, c: list[Token]) -> _Clause:
        return _Clause("range", (_bound(c[0]), _bound(c[1]) if len(c) > 1 else -1))

    def open_range(self, c: list[Token]) -> _Clause:
        return _Clause("range", (0, _bound(c[0]) if c else -1))

    def chain(self, c: list[Any]) -> tuple[Any, ...]:
        return tuple(c)

    def link(self, c: list[Any]) -> _Link:
        return _Link(_path(c[0]), c[1].expr if len(c) > 1 else None)

    def bracket(self, c: list[Any]) -> _Bracket:
        return _Bracket(c[0])

    # --- conditions
    def or_(self, c: list[Any]) -> s.BoolOp:
        return s.BoolOp("OR", c[0], c[1])

    def and_(self, c: list[Any]) -> s.BoolOp:
        return s.BoolOp("AND", c[0], c[1])

    def not_(self, c: list[Any]) -> s.Not:
        return s.Not(c[0])

    def negation(self, c: list[Any]) -> bool:
        return bool(c)

    def compare(self, c: list[Any]) -> s.Compare:
        op = str(c[1])
        return s.Compare("<>" if op == "!=" else op, c[0], c[2])

    def like(self, c: list[Any]) -> s.Like:
        return s.Like(c[1], c[0], c[2], c[3] if len(c) > 3 else None)

    def escape(self, c: list[s.Expr]) -> s.Expr:
        return c[0]

    def in_list(self, c: list[Any]) -> s.InList:
        return s.InList(c[1], c[0], lists.expand(tuple(c[2:])))

    def between(self, c: list[Any]) -> s.Between:
        return s.Between(c[1], c[0], c[2], c[3])

    def is_null(self, c: list[Any]) -> s.IsNull:
        return s.IsNull(c[1], c[0])

    def is_empty(self, c: list[Any]) -> s.IsEmpty:
        return s.IsEmpty(c[1], c[0])

    def member_of(self, c: list[Any]) -> s.MemberOf:
        return s.MemberOf(c[1], c[0], c[2])

    # --- values
    def add(self, c: list[Any]) -> s.Arith:
        return s.Arith("+", c[0], c[1])

    def sub(self, c: list[Any]) -> s.Arith:
        return s.Arith("-", c[0], c[1])

    def mul(self, c: list[Any]) -> s.Arith:
        return s.Arith("*", c[0], c[1])

    def div(self, c: list[Any]) -> s.Arith:
        return s.Arith("/", c[0], c[1])

    def neg(self, c: list[Any]) -> s.Expr:
        x = c[0]
        if isinstance(x, s.Literal) and x.kind in ("integer", "decimal"):
            return s.Literal(x.kind, -x.value, x.pos)  # a negative number stays one literal
        return s.Arith("-", None, x)

    def path(self, c: list[Token]) -> s.Path:
        return _path(c[0])

    def param(self, c: list[Token]) -> s.Param:
        return s.Param(str(c[0])[1:], _pos(c[0]))

    def string(self, c: list[Token]) -> s.Literal:
        return s.Literal("string", str(c[0])[1:-1].replace("''", "'"), _pos(c[0]))

    def integer(self, c: list[Token]) -> s.Literal:
        value = int(c[0])
        if value > _MAX_LONG:
            raise IcatBadParameter(f"Integer {c[0]} at position {_pos(c[0])} is too large")
        return s.Literal("integer", value, _pos(c[0]))

    def decimal(self, c: list[Token]) -> s.Literal:
        return s.Literal("decimal", float(c[0]), _pos(c[0]))

    def timestamp(self, c: list[Token]) -> s.Literal:
        m = _TIMESTAMP.fullmatch(str(c[0]))
        try:
            assert m is not None  # the token's own pattern guarantees the shape
            # no zone: the server's, which the translator knows (ICAT: its JVM's default zone)
            value = dt.datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}")
        except ValueError:
            raise IcatBadParameter(
                f"Timestamp {c[0]} at position {_pos(c[0])} is not a valid date and time"
            ) from None
        return s.Literal("timestamp", value, _pos(c[0]))

    def true(self, c: list[Any]) -> s.Literal:
        return s.Literal("boolean", True, -1)

    def false(self, c: list[Any]) -> s.Literal:
        return s.Literal("boolean", False, -1)

    def current_timestamp(self, c: list[Any]) -> s.Now:
        return s.Now(False, -1)

    def current_date(self, c: list[Any]) -> s.Now:
        return s.Now(True, -1)

    def call(self, c: list[Any]) -> s.Call:
        name: Token = c[0]
        return s.Call(str(name).upper(), tuple(c[1:]), _pos(name))

    def function(self, c: list[Token]) -> Token:
        return c[0]


@dataclass(frozen=True, slots=True)
class _Bracket:
    expr: s.Expr


@dataclass(frozen=True, slots=True)
class _Link:
    entity: s.Path
    expr: s.Expr | None


def prepare() -> None:
    """Build the parser now (about 0.4 s of CPU): a catalogue does it before it answers, so that
    its first query does not pay for it — on the event loop, where a read that costs more than
    the loop's budget is sent to a worker thread from then on (mock/plans.py)."""
    _lark()


@functools.cache
def _lark() -> Lark:
    grammar = resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", start=["jpql", "concise", "get"], transformer=_Builder())


#: The most AND, OR and NOT a query may hold. A real ICAT 6.2.0 fails on long chains: its parser
#: recurses, and a StackOverflowError is answered as INTERNAL without message, in under a second
#: — measured 2026-11-26 from about 1,500 ORs on a fresh JVM to 3,400 once its JIT had warmed,
#: 1,400-1,500 NOTs, 1,600 ANDs, and 14,460 items in an IN list. A chain of 20,000 ORs cost the
#: local catalogue 17 s of SQLite planning and 120 MiB it kept (issue 18). Long IN lists are the
#: way to ask for many values, and stay allowed (see lists.py).
MAX_CONNECTIVES = 1500
#: A string literal (skipped: its words are data), or one of the connectives.
_CONNECTIVE = re.compile(r"'(?:[^']|'')*'|(?<![\w$.])(?:AND|OR|NOT)(?![\w$])", re.IGNORECASE)


def check_size(text: str) -> None:
    """Refuse a query with more than :data:`MAX_CONNECTIVES` connectives, before parsing it.

    INTERNAL, the fault a real ICAT gives such a query, with a message saying why (ICAT's has
    none). One scan of the text: a refused query costs milliseconds and keeps no memory.
    """
    if len(text) < 4 * MAX_CONNECTIVES:  # each takes at least "OR" and a space
        return
    count = 0
    for match in _CONNECTIVE.finditer(text):
        if match.group()[0] != "'":
            count += 1
    if count > MAX_CONNECTIVES:
        raise IcatInternal(
            f"the query has {count} AND/OR/NOT, more than the {MAX_CONNECTIVES} sv7 serve "
            "accepts (a real ICAT 6.2.0 fails with INTERNAL from about 1,500): ask for many "
            "values with IN (…)"
        )


def parse(text: str, start: str) -> Any:
    """The syntax tree of ``text`` read from grammar rule ``start`` (jpql, concise or get)."""
    check_size(text)
    try:
        blanked, found = lists.extract(text)
        with lists.active(found):
            return _lark().parse(blanked, start=start)
    except IcatBadParameter:
        raise
    except UnexpectedCharacters as exc:
        at = exc.pos_in_stream or 0
        raise IcatBadParameter(
            f"Unexpected character {text[at:at + 1]!r} at position {at} in query: {text}"
        ) from None
    except UnexpectedEOF as exc:
        expected = {str(t) for t in exc.expected}
        raise IcatBadParameter(
            f"Unexpected end of query, expected {_expected(expected)}: {text}"
        ) from None
    except UnexpectedToken as exc:
        token: Token = exc.token
        if token.type == "$END":
            where = "Unexpected end of query"
        else:
            where = f"Unexpected token '{token}' at position {_pos(token)}"
        raise IcatBadParameter(f"{where}, expected {_expected(exc.expected)}: {text}") from None
    except LarkError:  # no other lark error is known, but none may reach the SOAP layer either
        raise IcatBadParameter(f"Cannot parse query: {text}") from None


def _expected(names: set[str] | frozenset[str]) -> str:
    words = []
    for name in sorted(names):
        if name in _TERMINAL_NAMES:
            words.append(_TERMINAL_NAMES[name])
            continue
        try:
            pattern = _lark().get_terminal(name).pattern
        except KeyError:
            words.append(name)
            continue
        words.append(f"'{pattern.value.upper()}'" if pattern.type == "str" else name)
    return "one of " + ", ".join(sorted(set(words))) if len(words) > 1 else "".join(words)
