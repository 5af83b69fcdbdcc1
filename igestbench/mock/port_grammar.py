"""ICAT's export format 1.0, the reading side: its lexer and the grammar of a table header.

The same lexer reads headers and data lines (icat.server's ``importParser.Tokenizer``); a header
is parsed into a :class:`TableSpec` that says, per column, what to do with the value::

    table      = NAME "(" [ column { "," column } ] ")"
    column     = "?" ":" INTEGER                       the local id of a type without a key
               | NAME ":" INTEGER                      an attribute (or a create/mod field)
               | NAME "(" "?" ":" INTEGER ")"          a relation by the local id of the file
               | NAME keyList                          a relation by attributes of its object
    keyList    = "(" keyPart { "," keyPart } ")"
    keyPart    = NAME ":" INTEGER | NAME keyList

Errors carry icat.server's messages; :mod:`igestbench.mock.port_import` adds the line number.
"""

from __future__ import annotations

import enum
import re
import unicodedata
from dataclasses import dataclass

from igestbench.icat.faults import IcatBadParameter
from igestbench.icat.schema import Entity, Field, Profile, RelType
from igestbench.mock.port_format import NOT_ENTITY_FIELDS, SYSTEM_FIELDS, java_double


class TokenType(enum.Enum):
    STRING = "STRING"
    NAME = "NAME"
    OPENPAREN = "("
    CLOSEPAREN = ")"
    INTEGER = "INTEGER"
    COMMA = "COMMA"
    COLON = "COLON"
    TIMESTAMP = "TIMESTAMP"
    REAL = "REAL"
    NULL = "NULL"
    BOOLEAN = "BOOLEAN"
    QMARK = "QMARK"


@dataclass(frozen=True, slots=True)
class Token:
    type: TokenType
    value: str


class PortSyntaxError(Exception):
    """What icat.server's LexerException and ParserException say (BAD_PARAMETER on the wire)."""


# --- the lexer ------------------------------------------------------------------------------

_TIMESTAMP = (
    re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z?"),
    re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?[+-]\d{2}:\d{2}"),
)
_UNESCAPE = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "b": "\b", '"': '"', "'": "'", "\\": "\\"}
_SINGLE = {
    "(": TokenType.OPENPAREN,
    ")": TokenType.CLOSEPAREN,
    ",": TokenType.COMMA,
    ":": TokenType.COLON,
    "?": TokenType.QMARK,
}
#: Java's end-of-input marker in the lexer (a NUL in the text is taken for it, as there).
_END = "\0"


def _is_letter(ch: str) -> bool:
    return ch.isalpha()  # Java's Character.isLetter: categories Lu Ll Lt Lm Lo


def _is_digit(ch: str) -> bool:
    return unicodedata.category(ch) == "Nd"  # Java's Character.isDigit


#: The tokens of a well-formed line, for the fast path of :func:`tokens` (ASCII names only;
#: everything else, and every error, goes the character-by-character way).
_FAST = re.compile(
    r"""[ ]*(?:
      (?P<STRING>"(?:[^"\\\0]|\\[^\0])*")
    | (?P<NAME>[A-Za-z$_][A-Za-z0-9_]*)
    | (?P<TIMESTAMP>-?\d+-[\dTZ.:+-]*)
    | (?P<REAL>-?\d+[eE.][\deE.+-]*)
    | (?P<INTEGER>-?\d+)
    | (?P<SINGLE>[(),:?])
    )[ ]*""",
    re.VERBOSE,
)
_ESCAPE = re.compile(r"\\(.)")


def tokens(text: str) -> list[Token]:
    """The tokens of one line; PortSyntaxError with the server's message where it has one."""
    fast = _fast_tokens(text)
    return _slow_tokens(text) if fast is None else fast


def _fast_tokens(text: str) -> list[Token] | None:
    """The tokens of a line made only of what an export writes; None for anything else."""
    found: list[Token] = []
    pos, end = 0, len(text.rstrip(" "))
    match = _FAST.match
    while pos < end:
        m = match(text, pos)
        if m is None:
            return None
        kind = m.lastgroup
        value = m.group(kind)  # type: ignore[arg-type]
        if kind == "STRING":
            inner = value[1:-1]
            if "\\" in inner:
                if any(e not in _UNESCAPE for e in _ESCAPE.findall(inner)):
                    return None
                inner = _ESCAPE.sub(lambda e: _UNESCAPE[e.group(1)], inner)
            found.append(Token(TokenType.STRING, inner))
        elif kind == "NAME":
            found.append(_name(value))
        elif kind == "SINGLE":
            found.append(Token(_SINGLE[value], value))
        elif kind == "REAL":
            try:
                found.append(Token(TokenType.REAL, java_double(float(value))))
            except ValueError:
                return None
        elif kind == "TIMESTAMP":
            if not any(p.fullmatch(value) for p in _TIMESTAMP):
                return None
            found.append(Token(TokenType.TIMESTAMP, value))
        else:
            found.append(Token(TokenType.INTEGER, value))
        pos = m.end()
    return found


def _slow_tokens(text: str) -> list[Token]:
    """ICAT's lexer, character by character (its state machine)."""
    found: list[Token] = []
    state = "NONE"
    start = 0
    chars: list[str] = []
    i = 0
    n = len(text)
    while i <= n:
        ch = text[i] if i < n else _END
        if state == "NONE":
            if ch in (" ", _END):
                pass
            elif _is_letter(ch) or ch in "$_":
                state, start = "NAME", i
            elif _is_digit(ch):
                state, start = "INTEGER", i
            elif ch == '"':
                state, chars = "INQUOTES", []
            elif ch in _SINGLE:
                found.append(Token(_SINGLE[ch], ch))
            elif ch == "-":
                state, start = "MINUS", i
            else:
                _error(ch, state, i, text)
        elif state == "MINUS":
            if not _is_digit(ch):
                _error(ch, state, i, text)
            state = "INTEGER"
        elif state == "INQUOTES":
            if ch == '"':
                found.append(Token(TokenType.STRING, "".join(chars)))
                state = "NONE"
            elif ch == "\\":
                state = "ESCAPED"
            elif ch == _END:
                _error(ch, state, i, text)
            else:
                chars.append(ch)
        elif state == "ESCAPED":
            if ch not in _UNESCAPE:
                _error(ch, state, i, text)
            chars.append(_UNESCAPE[ch])
            state = "INQUOTES"
        elif state == "NAME":
            if not (_is_letter(ch) or _is_digit(ch) or ch == "_"):
                found.append(_name(text[start:i]))
                state = "NONE"
                continue  # the character that ended the name is read again
        elif state == "INTEGER":
            if ch in "eE.":
                state = "REAL"
            elif ch == "-":
                state = "TIMESTAMP"
            elif not _is_digit(ch):
                found.append(Token(TokenType.INTEGER, text[start:i]))
                state = "NONE"
                continue
        elif state == "REAL":
            if not (_is_digit(ch) or ch in "eE.+-"):
                found.append(Token(TokenType.REAL, _real(text[start:i], ch, i, text)))
                state = "NONE"
                continue
        elif state == "TIMESTAMP" and not (_is_digit(ch) or ch in "TZ.:+-"):
            stamp = text[start:i]
            if not any(p.fullmatch(stamp) for p in _TIMESTAMP):
                raise PortSyntaxError(f"Timestamp {stamp} is not of required form")
            found.append(Token(TokenType.TIMESTAMP, stamp))
            state = "NONE"
            continue
        i += 1
    return found


def _name(word: str) -> Token:
    upper = word.upper()
    if upper == "NULL":
        return Token(TokenType.NULL, upper)
    if upper in ("TRUE", "FALSE"):
        return Token(TokenType.BOOLEAN, upper)
    return Token(TokenType.NAME, word)


def _real(text: str, ch: str, i: int, line: str) -> str:
    try:
        # Double.parseDouble, then Double.toString: what the server's token holds
        return java_double(float(text))
    except ValueError:
        _error(ch, "REAL", i, line)
        raise AssertionError from None  # not reached: _error raises


def _error(ch: str, state: str, i: int, text: str) -> None:
    if ch == _END:
        raise PortSyntaxError(f"Unexpected end of string in state {state} for string: {text}")
    near = text[max(0, i - 4) : min(i + 5, len(text))]
    raise PortSyntaxError(
        f"Unexpected character '{ch}' near \"{near}\" in state {state} for string: {text}"
    )


# --- reading tokens -------------------------------------------------------------------------


class Input:
    """A line's tokens, consumed one at a time (ICAT's ``importParser.Input``)."""

    def __init__(self, items: list[Token]) -> None:
        self.items = items
        self.pos = 0

    def peek(self, offset: int = 0) -> Token | None:
        n = self.pos + offset
        return self.items[n] if 0 <= n < len(self.items) else None

    def next(self) -> Token | None:
        """The next token of any type, or None at the end."""
        if self.pos < len(self.items):
            self.pos += 1
            return self.items[self.pos - 1]
        return None

    def take(self, *types: TokenType) -> Token:
        """The next token, which must be of one of ``types``."""
        token = self.peek()
        if token is None:
            raise PortSyntaxError("Attempt to read beyond end")
        if token.type not in types:
            raise PortSyntaxError(self._expected(types))
        self.pos += 1
        return token

    def check_ended(self) -> None:
        if self.pos != len(self.items):
            raise PortSyntaxError(self._expected(()))

    def _expected(self, types: tuple[TokenType, ...]) -> str:
        here = self.peek()
        assert here is not None
        if types:
            text = f"Expected token from types [{', '.join(t.value for t in types)}] at token "
        else:
            text = "No more input expected at token "
        before = [t.value + " " for t in (self.peek(-2), self.peek(-1)) if t is not None]
        after = [t.value + " " for t in (self.peek(1), self.peek(2)) if t is not None]
        return f"{text}{here.value} in {''.join(before)}< {here.value} > {''.join(after)}"


# --- table headers --------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyPart:
    """One attribute of a relation's key: ``column`` holds the value of ``path`` (field names
    from the related object: ``("facility", "name")``)."""

    path: tuple[str, ...]
    column: int
    #: The Java type of the attribute (only String and Integer may be looked up).
    type: str


@dataclass(frozen=True)
class Column:
    """What one element of a header asks for."""

    #: "id" (``?:n``), "value" (``name:n``), "local" (``name(?:n)``) or "key" (``name(…)``).
    kind: str
    #: The field it sets (None for "id").
    field: Field | None
    #: The data column (-1 for "key").
    column: int = -1
    #: For "key": the attributes the related object is looked up by, in header order.
    key: tuple[KeyPart, ...] = ()


@dataclass(frozen=True)
class TableSpec:
    entity: Entity
    columns: tuple[Column, ...]


def parse_header(profile: Profile, line: str) -> TableSpec:
    """A table header line as a TableSpec (IcatBadParameter for a name that is no entity)."""
    source = Input(tokens(line))
    name = source.take(TokenType.NAME).value
    entity = profile.entities.get(name)
    if entity is None:
        raise IcatBadParameter(f"{name} is not an ICAT entity")
    source.take(TokenType.OPENPAREN)
    columns: list[Column] = []
    while True:
        following = source.peek()
        if following is not None and following.type is TokenType.CLOSEPAREN:
            source.next()
            break
        columns.append(_column(profile, entity, source))
        following = source.peek()
        if following is not None and following.type is TokenType.COMMA:
            source.next()
    source.check_ended()
    return TableSpec(entity, tuple(columns))


def _fields_by_name(entity: Entity) -> dict[str, Field]:
    """What a header may name: every field EntityInfoHandler knows (``id`` and the create/mod
    fields included: a value for ``id`` is read and dropped, as the server drops it)."""
    hidden = NOT_ENTITY_FIELDS.get(entity.name, frozenset())
    return {f.name: f for f in entity.all_fields() if f.name not in hidden}


def _column(profile: Profile, entity: Entity, source: Input) -> Column:
    first = source.take(TokenType.NAME, TokenType.QMARK)
    if first.type is TokenType.QMARK:
        source.take(TokenType.COLON)
        return Column("id", None, int(source.take(TokenType.INTEGER).value))
    f = _fields_by_name(entity).get(first.value)
    after = source.peek(1)
    if after is not None and after.type is TokenType.QMARK:
        source.take(TokenType.OPENPAREN)
        source.next()
        source.take(TokenType.COLON)
        column = int(source.take(TokenType.INTEGER).value)
        if f is None:
            raise PortSyntaxError(f"{first.value} is not a field of {entity.name}")
        source.take(TokenType.CLOSEPAREN)
        return Column("local", f, column)
    if f is None:
        raise PortSyntaxError(f"{first.value} is not a field of {entity.name}")
    following = source.peek()
    if following is not None and following.type is TokenType.COLON:
        source.next()
        return Column("value", f, int(source.take(TokenType.INTEGER).value))
    _check_relation(entity, f)
    target = profile.entities[f.type]
    return Column("key", f, key=tuple(_key_list(profile, target, source, ())))


def _key_list(
    profile: Profile, entity: Entity, source: Input, path: tuple[str, ...]
) -> list[KeyPart]:
    source.take(TokenType.OPENPAREN)
    parts: list[KeyPart] = []
    while True:
        name = source.take(TokenType.NAME).value
        f = _fields_by_name(entity).get(name)
        if f is None:
            raise PortSyntaxError(f"{name} is not a field of {entity.name}")
        following = source.peek()
        if following is None:
            raise PortSyntaxError("Attempt to read beyond end")
        if following.type is TokenType.OPENPAREN:
            _check_relation(entity, f)
            parts += _key_list(profile, profile.entities[f.type], source, (*path, name))
        else:
            source.take(TokenType.COLON)
            column = int(source.take(TokenType.INTEGER).value)
            parts.append(KeyPart((*path, name), column, f.type))
        following = source.peek()
        if following is not None and following.type is TokenType.COMMA:
            source.next()
        elif following is not None and following.type is TokenType.CLOSEPAREN:
            source.next()
            return parts
        else:
            source.take(TokenType.COMMA, TokenType.CLOSEPAREN)


def _check_relation(entity: Entity, f: Field) -> None:
    # ICAT would look the key up among the fields of a String, a Date or a List: its entity
    # information has no such class, and the request fails (there with an INTERNAL error)
    if f.rel is not RelType.ONE:
        raise PortSyntaxError(f"{f.name} is not a many-to-one relation of {entity.name}")


def is_system(f: Field) -> bool:
    """Whether ``f`` is one of the create/mod fields (set from a file only with ALL)."""
    return f.name in SYSTEM_FIELDS
