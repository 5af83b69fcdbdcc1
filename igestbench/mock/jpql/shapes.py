"""Searches that differ only in their constants share one compilation.

Clients ask the same search again and again with other values — a Datafile by (dataset, name),
a Dataset by id with its Datafiles — and every constant of a query is a bound parameter of its
SQL (:mod:`.expressions`), so those searches compile to the same statement with other
parameters. Parsing and translating one costs a few hundred microseconds, more than running it;
a cache keyed on the whole text never hits when every call names another object.

So a search's text is cut into its *shape* (the text with each string and integer constant
replaced by a marker) and its constants. The first time a shape is seen, the text is compiled as
always, and so is the shape with unlikely stand-in values put in place of the constants; the
shape is taken only if both compile to the same SQL and everything else but the parameters, and
each parameter is either one of the constants exactly as written (a stand-in in the one, the
constant in the other) or the same fixed value in both (``:user``, a rule's). Any constant that
the compiler converts (a string compared with a date), folds (a negative number) or refuses in
the stand-in's place (``INCLUDE 1``) makes the shape one that is always compiled whole. From
then on a search of that shape is its parameters put into the stand-ins' places: no parse.

What stays out: ``{ts …}`` literals, decimals and words are part of the shape (not cut out);
integers beyond a Java int (the compiler refuses some of them, as LIMIT bounds), texts with
more than :data:`MAX_CONSTANTS` constants (long IN lists are read another way, see lists.py)
and texts holding the marker character go the whole way, every time.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass, replace
from typing import Any

from igestbench.mock.jpql.model import CompiledSearch

#: A string literal (as the grammar's STRING), a ``{ts …}`` literal (kept), or an unsigned
#: integer standing alone (not part of a name, a decimal or an exponent).
_CONSTANT = re.compile(r"'(?:[^']|'')*'|\{[^}]*\}|(?<![\w$.])\d+(?![\w$.])")
#: Marks a constant's place in a shape; a text holding it has no shape.
_MARK = "\x00"
_STRING_MARK, _INTEGER_MARK = _MARK + "s", _MARK + "i"
#: More constants than this: the text is compiled whole (a long IN list has its own fast path).
MAX_CONSTANTS = 32
#: Integers up to this (a Java int: LIMIT's bound) are cut out; a larger one keeps the text whole.
MAX_INTEGER = 2**31 - 1
#: Shapes kept (then the cache starts afresh).
KEPT = 4096


@dataclass(frozen=True, slots=True)
class Shape:
    """A search text as its shape and the constants cut out of it, in text order."""

    text: str
    constants: tuple[str | int, ...]


def shape_of(text: str) -> Shape | None:
    """The shape of ``text``, or None when it has no constants to cut out or is kept whole."""
    if _MARK in text:
        return None
    pieces: list[str] = []
    constants: list[str | int] = []
    done = 0
    for found in _CONSTANT.finditer(text):
        token = found.group()
        first = token[0]
        if first == "{":
            continue
        if first == "'":
            constants.append(token[1:-1].replace("''", "'"))
            pieces += [text[done : found.start()], _STRING_MARK]
        elif text[max(0, found.start() - 64) : found.start()].rstrip()[-7:].upper() == "INCLUDE":
            continue  # INCLUDE 1: a keyword's argument, no constant (any other is refused)
        else:
            value = int(token)
            if value > MAX_INTEGER:
                return None
            constants.append(value)
            pieces += [text[done : found.start()], _INTEGER_MARK]
        done = found.end()
        if len(constants) > MAX_CONSTANTS:
            return None
    if not constants:
        return None
    pieces.append(text[done:])
    return Shape("".join(pieces), tuple(constants))


def _stand_ins(shape: Shape) -> tuple[str, tuple[str | int, ...]]:
    """The shape's text with a stand-in value in each constant's place, and the stand-ins: no
    query names them (strings of a private-use character, integers near a Java int's top)."""
    values: list[str | int] = []
    pieces = shape.text.split(_MARK)
    out = [pieces[0]]
    for i, piece in enumerate(pieces[1:]):
        kind, rest = piece[0], piece[1:]
        if kind == "s":
            value: str | int = f"\ue000sv7-{i}\ue000"
            out.append(f"'{value}'")
        else:
            value = MAX_INTEGER - 1000 + i
            out.append(str(value))
        values.append(value)
        out.append(rest)
    return "".join(out), tuple(values)


@dataclass(frozen=True, slots=True)
class _Binding:
    """How a search of one shape is made from its constants."""

    #: the compiled stand-in text
    compiled: CompiledSearch
    #: per parameter: the index of the constant it is, or None (a fixed value, kept)
    slots: tuple[int | None, ...]
    #: the parameters are the constants, in their order (no fixed value): most searches
    in_order: bool = False

    def bind(self, constants: tuple[str | int, ...]) -> CompiledSearch:
        if self.in_order:
            return self.compiled.with_params(constants)
        params = tuple(
            p if i is None else constants[i]
            for p, i in zip(self.compiled.params, self.slots, strict=True)
        )
        return self.compiled.with_params(params)


def _binding(
    real: CompiledSearch, shape: Shape, stand_in: CompiledSearch, values: tuple[Any, ...]
) -> _Binding | None:
    """The binding of ``shape`` if compiling its stand-ins (``stand_in``) and the real text
    (``real``) differ only where a constant, taken as written, is a parameter."""
    if replace(stand_in, params=real.params) != real:
        return None  # other SQL, other types, other INCLUDEs: the values change the query
    slots: list[int | None] = []
    for want, got in zip(real.params, stand_in.params, strict=True):
        index = next((i for i, v in enumerate(values) if type(v) is type(got) and v == got), None)
        if index is None:
            if type(want) is not type(got) or want != got:
                return None  # a value the compiler made of a constant (converted, folded)
        else:
            constant = shape.constants[index]
            if type(constant) is not type(want) or constant != want:
                return None
        slots.append(index)
    if set(slots) - {None} != set(range(len(values))):
        return None  # a constant that is no parameter: it may have shaped the SQL
    return _Binding(stand_in, tuple(slots), slots == list(range(len(slots))))


class ShapeCache:
    """Compiled searches by shape (and whatever else the compilation depends on: ``key``)."""

    def __init__(self, kept: int = KEPT) -> None:
        self.kept = kept
        self._bindings: dict[Hashable, _Binding | None] = {}
        self._lock = threading.Lock()

    def compile(
        self, text: str, key: Hashable, compile_text: Callable[[str], CompiledSearch]
    ) -> CompiledSearch:
        """``compile_text(text)``, through the shape of ``text`` where it has one.

        ``key``: everything besides the text that the compilation depends on (profile, user,
        restrictions, zone). Faults are those of ``compile_text(text)``: a text is only ever
        answered through its shape after one text of that shape compiled.
        """
        shape = shape_of(text)
        if shape is None:
            return compile_text(text)
        slot = (shape.text, key)
        binding = self._bindings.get(slot, False)
        if binding is None:
            return compile_text(text)  # a shape whose values change its compilation
        if binding is not False:
            assert isinstance(binding, _Binding)
            return binding.bind(shape.constants)
        real = compile_text(text)  # its faults are the query's own
        stand_in_text, values = _stand_ins(shape)
        try:
            stand_in = compile_text(stand_in_text)
        except Exception:  # the stand-ins are refused where the constants were not
            found = None
        else:
            found = _binding(real, shape, stand_in, values)
        with self._lock:
            if len(self._bindings) >= self.kept:
                self._bindings.clear()
            self._bindings[slot] = found
        return real

    def clear(self) -> None:
        with self._lock:
            self._bindings.clear()
