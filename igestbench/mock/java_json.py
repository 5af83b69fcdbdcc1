"""JSON read the way icat.server reads its options: as a stream of events (Jakarta JSON, Parsson).

icat.server's Porter walks ``Json.createParser(…)`` event by event and acts on each key and
value as it comes, so a document is handled up to its first error: ``{"foo": 1} junk`` fails on
``foo`` before the junk is seen, a value outside any object fails on its missing key, and
``{"a": 1}}`` on ``a``. :func:`events` yields the same events in the same order and raises
:class:`JavaJsonError` where Parsson does, with its message (``Unexpected char 98 at (line no=1,
column no=2, offset=1)``, ``Invalid token=CURLYCLOSE at (…). Expected tokens are: […]``), its
lists of expected tokens as its parser contexts give them (compared with a real ICAT 6.2.0's
answers to malformed logins, fixtures/icat-6.2/exchanges/rest-login-malformed-*.json).

At the end of the text Parsson's locations stop being positions: every read past the end
refills its buffer and adds the text's length again (less what the token in hand has stored)
to the offset it reports, so ``{"plugin":"simple"`` ends at "column no=54, offset=53". The
reader counts those reads as Parsson makes them (:meth:`_Reader.read_past_end`) for a text
within Parsson's first buffer (4,096 characters); past that, it reports the last character.
"""

from __future__ import annotations

from collections.abc import Iterator

#: What a value may start with, as Parsson lists it.
_VALUE_TOKENS = ("CURLYOPEN", "SQUAREOPEN", "STRING", "NUMBER", "TRUE", "FALSE", "NULL")
_HEX = frozenset("0123456789abcdefABCDEF")
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
#: Parsson's buffer, in characters: a text within it is read in one fill.
_BUFFER = 4096
PARSING = "jakarta.json.stream.JsonParsingException"


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
    yield from reader.value(reader.token(peeked=False))
    kind, _ = reader.token(peeked=False)
    if kind != "EOF":
        raise JavaJsonError(PARSING, f"Expected EOF token, but got {kind}")


class _Reader:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        #: Offset of the last character of the token read last (Parsson reports it).
        self.last = 0
        #: What Parsson's refills at the end have added to its offsets (see the module).
        self.past_end = 0

    def read_past_end(self, stored: int = 0) -> None:
        """One read past the end, ``stored`` characters of the token in hand kept."""
        if len(self.text) <= _BUFFER:
            self.past_end += len(self.text) - stored

    def where(self, offset: int) -> str:
        offset = min(offset, max(len(self.text) - 1, 0))
        start = self.text.rfind("\n", 0, offset) + 1
        line = self.text.count("\n", 0, offset) + 1
        offset += self.past_end
        return f"(line no={line}, column no={offset - start + 1}, offset={offset})"

    def unexpected(self, offset: int, stored: int = 0, expecting: str = "") -> JavaJsonError:
        """The tokenizer's error at ``offset`` (past the end: -1, after one more read)."""
        if offset < len(self.text):
            code = ord(self.text[offset])
        else:
            code = -1
            self.read_past_end(stored)
        tail = f", expecting '{expecting}'" if expecting else ""
        return JavaJsonError(PARSING, f"Unexpected char {code} at {self.where(offset)}{tail}")

    def invalid(self, kind: str, expected: tuple[str, ...]) -> None:
        raise JavaJsonError(
            PARSING,
            f"Invalid token={kind} at {self.where(self.last)}. "
            f"Expected tokens are: [{', '.join(expected)}]",
        )

    def token(self, peeked: bool = True) -> tuple[str, str]:
        """The next token: (kind, text of a string or number). ``peeked``: the token starts an
        event inside an object or array, where Parsson's ``hasNext`` looks ahead first (one
        more read past the end at the end)."""
        text = self.text
        while self.pos < len(text) and text[self.pos] in " \t\r\n":
            self.pos += 1
        if self.pos >= len(text):
            self.last = max(len(text) - 1, 0)
            self.read_past_end()
            if peeked:
                self.read_past_end()
            return "EOF", ""
        ch = text[self.pos]
        start = self.pos
        if ch in _PUNCTUATION:
            self.pos += 1
            self.last = start
            return _PUNCTUATION[ch], ch
        if ch == '"':
            return "STRING", self._string()
        if ch == "-" or "0" <= ch <= "9":
            return "NUMBER", self._number()
        if ch in _LITERALS:
            word, kind = _LITERALS[ch]
            for i in range(1, len(word)):
                if start + i >= len(text) or text[start + i] != word[i]:
                    raise self.unexpected(start + i, expecting=word[i])
            self.pos = start + len(word)
            self.last = self.pos - 1
            return kind, word
        raise self.unexpected(start)

    def _number(self) -> str:
        """A number read as Parsson's tokenizer reads one: the first character that cannot
        continue it is the error (``1.}``, ``1e}``, ``-x``), the end of the text a read past it."""
        text, start = self.text, self.pos
        i = start

        def digits(at: int) -> int:
            while at < len(text) and "0" <= text[at] <= "9":
                at += 1
            return at

        if text[i] == "-":
            i += 1
            if not (i < len(text) and "0" <= text[i] <= "9"):
                raise self.unexpected(i, stored=i - start)
        i = i + 1 if text[i] == "0" else digits(i)
        if i < len(text) and text[i] == ".":
            end = digits(i + 1)
            if end == i + 1:
                raise self.unexpected(end, stored=end - start)
            i = end
        if i < len(text) and text[i] in "eE":
            i += 1
            if i < len(text) and text[i] in "+-":
                i += 1
            end = digits(i)
            if end == i:
                raise self.unexpected(end, stored=end - start)
            i = end
        if i >= len(text):
            self.read_past_end(stored=i - start)  # it looked for one more digit
        self.pos = i
        self.last = i - 1
        return text[start:i]

    def _string(self) -> str:
        text = self.text
        i = self.pos + 1
        out: list[str] = []
        while True:
            if i >= len(text) or text[i] < " ":
                raise self.unexpected(i, stored=len(out))
            ch = text[i]
            if ch == '"':
                break
            if ch == "\\":
                i += 1
                escape = text[i] if i < len(text) else ""
                if escape == "u":
                    for at in range(i + 1, i + 5):
                        if at >= len(text) or text[at] not in _HEX:
                            raise self.unexpected(at, stored=len(out))
                    out.append(chr(int(text[i + 1 : i + 5], 16)))
                    i += 5
                    continue
                if escape not in _ESCAPES:
                    raise self.unexpected(i, stored=len(out))
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

    # The expected tokens below are Parsson's (JsonParserImpl's ObjectContext and ArrayContext),
    # also where they are odd: the end of an array after a value "expects" COMMA, CURLYCLOSE.

    def _object(self) -> Iterator[Event]:
        kind, text = self.token()
        if kind == "CURLYCLOSE":
            return
        if kind == "EOF":
            self.invalid(kind, ("STRING", "CURLYCLOSE"))
        while True:
            if kind != "STRING":
                self.invalid(kind, ("STRING",))
            yield "key", text
            kind, _ = self.token()
            if kind != "COLON":
                self.invalid(kind, ("COLON",))
            yield from self.value(self.token(peeked=False))
            kind, _ = self.token()
            if kind == "CURLYCLOSE":
                return
            if kind != "COMMA":
                self.invalid(kind, ("COMMA", "CURLYCLOSE") if kind == "EOF" else ("COMMA",))
            kind, text = self.token(peeked=False)

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
                self.invalid(kind, ("COMMA", "CURLYCLOSE") if kind == "EOF" else ("COMMA",))
            token = self.token(peeked=False)
