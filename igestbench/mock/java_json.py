"""JSON read the way icat.server reads its options: as a stream of events (Jakarta JSON, Parsson).

icat.server's Porter walks ``Json.createParser(…)`` event by event and acts on each key and
value as it comes, so a document is handled up to its first error: ``{"foo": 1} junk`` fails on
``foo`` before the junk is seen, a value outside any object fails on its missing key, and
``{"a": 1}}`` on ``a``. :func:`events` yields the same events in the same order and raises
:class:`JavaJsonError` where Parsson does, with its message (``Unexpected char 98 at (line no=1,
column no=2, offset=1)``, ``Invalid token=CURLYCLOSE at (…). Expected tokens are: […]``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

#: What a value may start with, as Parsson lists it.
_VALUE_TOKENS = ("CURLYOPEN", "SQUAREOPEN", "STRING", "NUMBER", "TRUE", "FALSE", "NULL")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_PUNCTUATION = {
    "{": "CURLYOPEN",
    "}": "CURLYCLOSE",
    "[": "SQUAREOPEN",
    "]": "SQUARECLOSE",
    ":": "COLON",
    ",": "COMMA",
}
_LITERALS = {"t": ("true", "TRUE"), "f": ("false", "FALSE"), "n": ("null", "NULL")}


class JavaJsonError(Exception):
    """What Parsson throws; ``java_class`` names the exception as the server's message does."""

    def __init__(self, java_class: str, message: str) -> None:
        super().__init__(f"class {java_class} {message}")
        self.java_class = java_class


#: An event: ("key", name), ("string", text), ("number", text as written), ("literal", name).
Event = tuple[str, str]


def events(text: str) -> Iterator[Event]:
    """The events of ``text`` up to its first error, which is raised where the stream meets it."""
    if len(text.encode("utf-8")) < 2:
        raise JavaJsonError(
            "jakarta.json.JsonException", "Cannot auto-detect encoding, not enough chars"
        )
    reader = _Reader(text)
    yield from reader.value(reader.token())
    kind, _ = reader.token()
    if kind != "EOF":
        reader.invalid(kind, ("EOF",))


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        #: Offset of the last character of the token read last (Parsson reports it).
        self.last = 0

    def where(self, offset: int) -> str:
        line = self.text.count("\n", 0, offset) + 1
        start = self.text.rfind("\n", 0, offset) + 1
        return f"(line no={line}, column no={offset - start + 1}, offset={offset})"

    def unexpected(self, offset: int) -> JavaJsonError:
        code = ord(self.text[offset]) if offset < len(self.text) else -1
        return JavaJsonError(
            "jakarta.json.stream.JsonParsingException",
            f"Unexpected char {code} at {self.where(offset)}",
        )

    def invalid(self, kind: str, expected: tuple[str, ...]) -> None:
        raise JavaJsonError(
            "jakarta.json.stream.JsonParsingException",
            f"Invalid token={kind} at {self.where(self.last)}. "
            f"Expected tokens are: [{', '.join(expected)}]",
        )

    def token(self) -> tuple[str, str]:
        """The next token: (kind, text of a string or number)."""
        text = self.text
        while self.pos < len(text) and text[self.pos] in " \t\r\n":
            self.pos += 1
        if self.pos >= len(text):
            self.last = max(len(text) - 1, 0)
            return "EOF", ""
        ch = text[self.pos]
        start = self.pos
        if ch in _PUNCTUATION:
            self.pos += 1
            self.last = start
            return _PUNCTUATION[ch], ch
        if ch == '"':
            return "STRING", self._string()
        if ch == "-" or ch.isdigit():
            m = _NUMBER.match(text, start)
            if m is None:
                raise self.unexpected(start + 1)
            self.pos = m.end()
            self.last = self.pos - 1
            return "NUMBER", m.group()
        if ch in _LITERALS:
            word, kind = _LITERALS[ch]
            for i, expected in enumerate(word):
                if start + i >= len(text) or text[start + i] != expected:
                    raise self.unexpected(start + i)
            self.pos = start + len(word)
            self.last = self.pos - 1
            return kind, word
        raise self.unexpected(start)

    def _string(self) -> str:
        text = self.text
        i = self.pos + 1
        out: list[str] = []
        while True:
            if i >= len(text) or text[i] < " ":
                raise self.unexpected(i)
            ch = text[i]
            if ch == '"':
                break
            if ch == "\\":
                i += 1
                escape = text[i] if i < len(text) else ""
                if escape == "u":
                    digits = text[i + 1 : i + 5]
                    if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                        raise self.unexpected(i + 1)
                    out.append(chr(int(digits, 16)))
                    i += 5
                    continue
                if escape not in _ESCAPES:
                    raise self.unexpected(i)
                out.append(_ESCAPES[escape])
            else:
                out.append(ch)
            i += 1
        self.pos = i + 1
        self.last = i
        return "".join(out)

    def value(self, token: tuple[str, str]) -> Iterator[Event]:
        kind, text = token
        if kind == "CURLYOPEN":
            yield from self._object()
        elif kind == "SQUAREOPEN":
            yield from self._array()
        elif kind == "STRING":
            yield "string", text
        elif kind == "NUMBER":
            yield "number", text
        elif kind in ("TRUE", "FALSE", "NULL"):
            yield "literal", kind
        else:
            self.invalid(kind, _VALUE_TOKENS)

    def _object(self) -> Iterator[Event]:
        kind, text = self.token()
        if kind == "CURLYCLOSE":
            return
        while True:
            if kind != "STRING":
                self.invalid(kind, ("STRING",))
            yield "key", text
            kind, _ = self.token()
            if kind != "COLON":
                self.invalid(kind, ("COLON",))
            yield from self.value(self.token())
            kind, _ = self.token()
            if kind == "CURLYCLOSE":
                return
            if kind != "COMMA":
                self.invalid(kind, ("COMMA", "CURLYCLOSE"))
            kind, text = self.token()

    def _array(self) -> Iterator[Event]:
        token = self.token()
        if token[0] == "SQUARECLOSE":
            return
        while True:
            yield from self.value(token)
            kind, _ = self.token()
            if kind == "SQUARECLOSE":
                return
            if kind != "COMMA":
                self.invalid(kind, ("COMMA", "SQUARECLOSE"))
            token = self.token()
