"""Passwords and session ids out of everything the suite logs or prints: one place, every logger.

``sv7 --debug`` turns on the debug logs of the SOAP and HTTP libraries underneath (zeep and
suds log every envelope, urllib3 every request line), and ICAT echoes session ids in its fault
messages. Secrets are taken out in two ways, both here:

* **by pattern** — the values of credential entries in login envelopes (all keys but the user
  name), ``<sessionId>``/``<password>`` elements, the ``return`` of a ``loginResponse`` (that
  is the session id, logged before any client has read it), ``sessionId=``/``password=`` in URLs
  and forms (``password = "…"`` too), the password of a URL's ``//user:password@``,
  ``"password": …`` in JSON and Python reprs, and in JSON sent URL-encoded (a REST login's
  form), ``Authorization`` and ``Cookie`` headers, and ICAT's "session id: …" in messages —
  whatever the secret, known or not;
* **by value** — every secret the process has learnt: the clients :func:`remember` each
  password they log in with and each session id a login returned, so a secret that turns up
  anywhere else (a URL, a repr, an exception) goes too.

How a known value is searched depends on what it could be mistaken for. A session id, or a
password that is long and not a plain word (:func:`distinctive`), is nothing else: it goes
wherever it occurs, inside longer text too. A short or word-like password (``root``, the
built-in catalogue's ``ingest``) is also a user name, a folder, a host name: it goes where a
value stands on its own — between quotes, after ``=`` or ``:``, between spaces, brackets or
commas, alone — and stays where it is part of a path, a host or file name, an identifier or a
``mechanism/user`` name (``/tmp/pytest-of-root/…``, ``root.example.org``, ``simple/root``) or
is a key (``root = …``), where masking it would make the message wrong and hide nothing a
reader could not see elsewhere. Where the rule errs, it errs towards masking: ``Unable to find
user root`` loses the user name when the password is also ``root``.

:func:`install` makes this the one redaction point of the ``logging`` module: a LogRecord factory
that scrubs every record when it is made, whichever logger, library or handler (pytest's log
capture included) it goes to, with its traceback. The CLI installs it with the root handler,
and worker processes (spawned, so they inherit nothing) install it as they start.
:func:`scrub` is the same redaction for text the suite builds itself (fault messages).
"""

from __future__ import annotations

import logging
import re
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any

#: What replaces a session id.
SESSION = "<session>"
#: What replaces a password, a header value or any other credential.
SECRET = "<secret>"
LOG_FORMAT = "sv7: %(levelname)s: %(message)s"
#: Credential keys of a login that are not secret (ICAT's authenticators ask for these).
_PUBLIC_KEYS = ("username", "user", "mechanism")
#: A password at least this long, of two kinds of character or more (lower, upper case,
#: digits, others), or twice as long whatever it is, is searched inside longer text too.
_DISTINCTIVE_LENGTH = 8
# Around a word-like secret: what makes it part of a longer name (a path, a host or file name,
# an identifier, a URL's user, a mechanism/user name, %-encoding) — it is then not the secret
# standing on its own. A dot joins only inside a name ("root.pem"), not at a sentence's end.
_BEFORE_NAME = r"(?<![\w\-./\\@%+~#?&$])"
_AFTER_NAME = r"(?![\w\-/\\@%+~#?&$]|\.\w|\s*[=:])"
#: Keys whose value is a password, in forms, URLs and JSON.
_PASSWORD_KEY = r"(?:pass(?:word|wd)?|pwd|pw)"

_NS = r"(?:[\w.-]+:)?"  # an XML namespace prefix, if any
#: A password in a URL's user info (scheme://user:password@host): sv7 refuses such a target
#: (icat/endpoint.py), and this keeps one out of anything written should it come another way.
#: Asked before the known values are replaced: a user name that is itself a known value (root,
#: whose password is often root) would become a marker the pattern no longer matches.
_URL_PASSWORD = re.compile(r"(//[^\s/?#@:\"'<>]*:)[^\s/?#\"'<>]+(?=@)")

_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    # <entry><key>password</key><value>…</value></entry> of login's credentials map
    (
        re.compile(
            rf"(<{_NS}key>\s*(?!(?:{'|'.join(_PUBLIC_KEYS)})\s*<)[^<]*</{_NS}key>\s*<{_NS}value>)"
            r"[^<]+",
            re.IGNORECASE,
        ),
        SECRET,
    ),
    (re.compile(rf"(<{_NS}(?:password|passwd)>)[^<]+", re.IGNORECASE), SECRET),
    (re.compile(rf"(<{_NS}sessionId>)[^<]+", re.IGNORECASE), SESSION),
    (re.compile(rf"(<{_NS}loginResponse\b[^>]*>\s*<{_NS}return>)[^<]+"), SESSION),
    # suds' debug repr of what it is about to render: (Content){ tag = "sessionId" value = "…" }
    (re.compile(r'(\btag = "sessionId"\s+value = ")[^"]+'), SESSION),
    # URLs, forms, JSON and reprs: sessionId=…, "sessionId": "…", 'password': '…'
    (re.compile(r"(\bsession_?id=)[^&\s\"'<>]+", re.IGNORECASE), SESSION),
    (re.compile(rf"(\b{_PASSWORD_KEY}\s*=\s*[\"']?)[^&\s\"'<>]+", re.IGNORECASE), SECRET),
    (re.compile(r"([\"']session_?id[\"']\s*:\s*[\"'])[^\"']*", re.IGNORECASE), SESSION),
    (re.compile(rf"([\"']{_PASSWORD_KEY}[\"']\s*:\s*[\"'])[^\"']*", re.IGNORECASE), SECRET),
    # the same JSON sent URL-encoded: a REST login's form json=…%22password%22%3A%22…%22
    (
        re.compile(
            rf"(%22{_PASSWORD_KEY}%22(?:\+|%20)*(?::|%3A)(?:\+|%20)*%22)(?:(?!%22)[^&\s\"'<>])+",
            re.IGNORECASE,
        ),
        SECRET,
    ),
    # headers as logged (``Authorization: Basic …``) and as dict reprs ('Cookie': '…')
    (
        re.compile(
            r"(\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?)(?:\w+ +)?[^\s\"',}]+", re.I
        ),
        SECRET,
    ),
    (re.compile(r"(\b(?:set-)?cookie[\"']?\s*[:=]\s*[\"']?)[^\"'\r\n,}]+", re.I), SECRET),
    # ICAT's messages: "Unable to find user by sessionid: …", "Session id:… has expired"
    (re.compile(r"(session\s*id\s*:\s*)[^\s<\"']+", re.IGNORECASE), SESSION),
)


class Redactor:
    """The secrets this process knows, and the scrubbing of text by pattern and by value."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[str, str] = {}
        # built when text is scrubbed after a change, not at every login (the sweep's
        # new-client mode logs in hundreds of times a second and must not pay for it)
        self._by_value: re.Pattern[str] | None = None
        self._stale = False

    def remember(self, secret: str | None, marker: str = SECRET) -> None:
        """Scrub ``secret`` from now on wherever it occurs."""
        if not secret or not secret.strip() or secret in self._known:
            return
        with self._lock:
            self._known[secret] = marker
            self._stale = True

    def scrub(self, text: str, extra: Iterable[str | None] = ()) -> str:
        """``text`` without any secret: a URL's password, ``extra`` values (session ids, taken
        out wherever they occur), known values (each as :meth:`_compile` says), then the
        patterns."""
        text = _URL_PASSWORD.sub(r"\g<1>" + SECRET, text)
        for secret in extra:
            if secret:
                text = text.replace(secret, SESSION)
        if self._stale:
            self._compile()
        if self._by_value is not None:
            text = self._by_value.sub(lambda m: self._known.get(m.group(), SECRET), text)
        for pattern, marker in _PATTERNS:
            text = pattern.sub(r"\g<1>" + marker, text)
        return text

    def _compile(self) -> None:
        with self._lock:
            # longest first, so that a secret containing another is replaced whole
            ordered = sorted(self._known.items(), key=lambda item: len(item[0]), reverse=True)
            self._stale = False
        alternatives = [
            re.escape(s)
            if marker == SESSION or distinctive(s)
            else f"{_BEFORE_NAME}{re.escape(s)}{_AFTER_NAME}"
            for s, marker in ordered
        ]
        self._by_value = re.compile("|".join(alternatives)) if alternatives else None


def distinctive(secret: str) -> bool:
    """Whether ``secret`` can be searched inside any text without eating innocent words: long,
    and not one kind of character only (``Icat-2024``, not ``password`` or ``12345678``)."""
    kinds = sum(
        any(test(c) for c in secret)
        for test in (str.islower, str.isupper, str.isdigit, lambda c: not c.isalnum())
    )
    length = len(secret)
    return length >= 2 * _DISTINCTIVE_LENGTH or (length >= _DISTINCTIVE_LENGTH and kinds >= 2)


#: The process's one registry (each worker process has its own, filled by its own logins).
REDACTOR = Redactor()


def remember(secret: str | None, marker: str = SECRET) -> None:
    REDACTOR.remember(secret, marker)


def remember_session(session_id: str | None) -> None:
    REDACTOR.remember(session_id, SESSION)


def remember_login(credentials: Mapping[str, str]) -> None:
    """The secret values of a login's credentials map (every key but the user name)."""
    for key, value in credentials.items():
        if key.lower() not in _PUBLIC_KEYS:
            REDACTOR.remember(value)


def scrub(text: str, extra: Iterable[str | None] = ()) -> str:
    return REDACTOR.scrub(text, extra)


# --- logging ---------------------------------------------------------------------------------

_installed = threading.Lock()
_base_factory: Callable[..., logging.LogRecord] | None = None


def _scrubbed_record(*args: Any, **kwargs: Any) -> logging.LogRecord:
    assert _base_factory is not None
    record = _base_factory(*args, **kwargs)
    try:
        record.msg = scrub(record.getMessage())
    except Exception:  # a malformed log call: let logging report it as it always does
        return record
    record.args = None
    if record.exc_info and not record.exc_text:
        # formatted now, so that every handler shows the scrubbed traceback
        record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
    if record.stack_info:
        record.stack_info = scrub(record.stack_info)
    return record


def install_record_redaction() -> None:
    """Scrub every log record of this process when it is made (idempotent)."""
    global _base_factory
    with _installed:
        if _base_factory is None:
            _base_factory = logging.getLogRecordFactory()
            logging.setLogRecordFactory(_scrubbed_record)


def _scrubbed_excepthook(
    kind: type[BaseException], exc: BaseException, tb: TracebackType | None
) -> None:
    """A traceback nobody caught (a bug), printed as Python would, but scrubbed."""
    sys.stderr.write(scrub("".join(traceback.format_exception(kind, exc, tb))))


def install(level: int) -> None:
    """The logging of an sv7 process: ``sv7: LEVEL: message`` on stderr, secrets scrubbed, and
    the same for a traceback that reaches the top."""
    install_record_redaction()
    sys.excepthook = _scrubbed_excepthook
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(LOG_FORMAT))
        root.addHandler(handler)
    root.setLevel(level)
