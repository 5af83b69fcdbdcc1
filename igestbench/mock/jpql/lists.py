"""Long ``IN (…)`` lists of constants, read without the general parser.

Generated queries carry IN lists of thousands of ids or names. lark's LALR parser handles each
item as a whole expression (several reductions and a callback each), which for 150,000 items
costs many seconds; ICAT reads such a list in a fraction of that. So before lark sees the text,
:func:`extract` finds each IN list of at least ``MIN_ITEMS`` plain constants (strings, unsigned
integers and decimals, as the grammar's STRING/INT/DECIMAL tokens), reads its items with one
regular expression, and blanks all but the first item with spaces: positions in the text, and
thus every error message, stay exact. The parser's ``in_list`` rule then swaps the first item for
the whole list (:func:`expand`). Lists with anything else in them go through the parser as before.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar

from igestbench.icat.faults import IcatBadParameter
from igestbench.mock.jpql import syntax as s

#: Shorter lists are left to the parser (it is fast enough for them).
MIN_ITEMS = 64
_MAX_LONG = 2**63 - 1
_STRING = r"'(?:[^']|'')*'"
_DECIMAL = r"(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+"
_LITERAL = rf"(?:{_STRING}|{_DECIMAL}|\d+)"
#: Strings are matched first so that an "IN (" inside a string literal is never taken for one.
_SCAN = re.compile(rf"{_STRING}|(?<![\w$.])IN\s*\(", re.IGNORECASE)
_LIST = re.compile(rf"\s*({_LITERAL})(?:\s*,\s*{_LITERAL}){{{MIN_ITEMS - 1},}}\s*\)")
_ITEM = re.compile(rf"({_STRING})|({_DECIMAL})|(\d+)")

#: Position of a list's first item → all its items, for the parse running in this context.
_FOUND: ContextVar[dict[int, tuple[s.Literal, ...]] | None] = ContextVar("_FOUND", default=None)


def extract(text: str) -> tuple[str, dict[int, tuple[s.Literal, ...]]]:
    """``text`` with the long lists blanked but for their first item, and the lists' items."""
    if len(text) < 4 * MIN_ITEMS:
        return text, {}
    found: dict[int, tuple[s.Literal, ...]] = {}
    pieces: list[str] = []
    done = 0
    at = 0
    while (hit := _SCAN.search(text, at)) is not None:
        at = hit.end()
        if hit.group().startswith("'"):
            continue
        listed = _LIST.match(text, at)
        if listed is None:
            continue
        first_end = listed.end(1)
        close = listed.end() - 1  # the ")"
        items = tuple(map(_literal, _ITEM.finditer(text, listed.start(1), close)))
        found[items[0].pos] = items
        pieces += [text[done:first_end], " " * (close - first_end)]
        done = at = close
    if not found:
        return text, {}
    pieces.append(text[done:])
    return "".join(pieces), found


def _literal(m: re.Match[str]) -> s.Literal:
    string, decimal, integer = m.groups()
    if integer is not None:
        value = int(integer)
        if value > _MAX_LONG:
            raise IcatBadParameter(f"Integer {integer} at position {m.start()} is too large")
        return s.Literal("integer", value, m.start())
    if string is not None:
        return s.Literal("string", string[1:-1].replace("''", "'"), m.start())
    assert decimal is not None
    return s.Literal("decimal", float(decimal), m.start())


def expand(items: tuple[s.Expr, ...]) -> tuple[s.Expr, ...]:
    """The items of an IN list, with a blanked long list restored."""
    found = _FOUND.get()
    if found and len(items) == 1 and isinstance(items[0], s.Literal):
        return found.get(items[0].pos, items)
    return items


@contextlib.contextmanager
def active(found: dict[int, tuple[s.Literal, ...]]) -> Iterator[None]:
    """Make ``found`` the lists of the parse run inside the block (in this thread only)."""
    token = _FOUND.set(found)
    try:
        yield
    finally:
        _FOUND.reset(token)
