"""ICAT's two read requests, ``search`` and ``get``, read without an XML parser when plain.

Every client sends them in one fixed shape — an Envelope, maybe an empty Header, a Body, the
operation's wrapper holding ``sessionId``, ``query`` and (``get``) ``primaryKey`` in the XSD's
order — and parsing that with lxml and walking the tree was a fifth of what the local catalogue
spent on a ``get``. A request matching that shape *exactly* is read here by one regular
expression over the bytes; anything else (other children or order, a comment, CDATA, a
character reference, a carriage return, a control character, an encoding other than UTF-8, a
DOCTYPE, attributes other than namespace declarations, a prefix not bound to SOAP's or ICAT's
namespace) is left to lxml as before (:mod:`igestbench.mock.soap`), so a request is never read
differently: where this reads it, lxml would read the same values from it (the tests compare
both on every shape they know). What is matched is well-formed by construction: each closing
tag repeats its opening one, texts hold no markup and only the five named entities, and every
namespace prefix used is declared where lxml would look for it.
"""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from igestbench.icat.soapxml import ICAT_NS, SOAP_ENV_NS

_S = rb"[ \t\r\n]"  # XML's white space (not \f or \v, which XML forbids)
_NAME = rb"[A-Za-z_][A-Za-z0-9_.-]*"
#: a namespace's URI: absolute, a scheme and characters no URI parser refuses (libxml2
#: refuses a declaration of anything that does not parse as a URI: those go to lxml)
_URI = rb'"[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9._~/-]*"'
_DECLARATIONS = rb"((?:" + _S + rb"+xmlns:" + _NAME + _S + rb"*=" + _S + rb"*" + _URI + rb")*)"
#: characters of a text: no markup, no carriage return (XML turns it into a line feed), no
#: control character (lxml refuses them), entities only the five XML names. Runs of plain
#: characters are taken whole and never given back (possessive: a text ends only at "<", which
#: neither branch takes, so there is nothing to give back for): one step per run, not per
#: character, which halved the time of the whole match
_TEXT = rb"((?:[^<&\x00-\x08\x0b\x0c\x0e-\x1f\r]++|&(?:lt|gt|amp|quot|apos);)*+)"
_REQUEST = re.compile(
    rb"(?:<\?xml" + _S + rb"+version=([\"'])1\.0\1"
    rb"(?:" + _S + rb"+encoding=([\"'])(?i:utf-8)\2)?" + _S + rb"*\?>)?" + _S + rb"*"
    rb"<(" + _NAME + rb"):Envelope" + _DECLARATIONS + _S + rb"*>" + _S + rb"*"
    rb"(?:<(" + _NAME + rb"):Header" + _S + rb"*/>" + _S + rb"*"
    rb"|<(" + _NAME + rb"):Header" + _S + rb"*></\6:Header" + _S + rb"*>" + _S + rb"*)?"
    rb"<(" + _NAME + rb"):Body" + _S + rb"*>" + _S + rb"*"
    rb"<(" + _NAME + rb"):(get|search)" + _DECLARATIONS + _S + rb"*>" + _S + rb"*"
    rb"<sessionId>" + _TEXT + rb"</sessionId>" + _S + rb"*"
    rb"<query>" + _TEXT + rb"</query>" + _S + rb"*"
    rb"(?:<primaryKey>" + _TEXT + rb"</primaryKey>" + _S + rb"*)?"
    rb"</\8:\9" + _S + rb"*>" + _S + rb"*"
    rb"</\7:Body" + _S + rb"*>" + _S + rb"*"
    rb"</\3:Envelope" + _S + rb"*>" + _S + rb"*"
)
_DECLARATION = re.compile(rb"xmlns:(" + _NAME + rb")" + _S + rb'*=' + _S + rb'*"([^"]*)"')
_ENTITY = re.compile(r"&(lt|gt|amp|quot|apos);")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"', "apos": "'"}
#: characters XML 1.0 forbids that UTF-8 can still carry
_NOT_XML = re.compile("[\ufffe\uffff]")
_SOAP, _ICAT = SOAP_ENV_NS.encode(), ICAT_NS.encode()


class Read(NamedTuple):
    """A plain ``search`` or ``get`` request: its operation and the texts of its children (a
    tuple: made once per request, where a frozen dataclass costs a call per field)."""

    op: str
    session_id: str
    query: str
    #: ``get`` only (None: no ``primaryKey`` element)
    primary_key: str | None


@functools.lru_cache(maxsize=64)
def _namespaces(declarations: bytes) -> dict[bytes, bytes] | None:
    """prefix → namespace of an element's declarations; None where lxml would refuse them (a
    prefix declared twice, an empty namespace, the reserved ``xml``/``xmlns``). Kept for the
    few texts clients send (each sends the same declarations every time); not to be changed."""
    found: dict[bytes, bytes] = {}
    for prefix, uri in _DECLARATION.findall(declarations):
        if prefix in found or not uri or prefix.lower().startswith(b"xml"):
            return None
        found[prefix] = uri
    return found


def _text(raw: bytes) -> str | None:
    text = raw.decode("utf-8")  # UnicodeDecodeError: the caller leaves the body to lxml
    if "]]>" in text or _NOT_XML.search(text):
        return None  # lxml refuses both
    if "&" in text:
        text = _ENTITY.sub(lambda m: _ENTITIES[m.group(1)], text)
    return text


def read_request(body: bytes) -> Read | None:
    """The request in ``body`` if it is a plain ``search`` or ``get``, else None (parse it)."""
    found = _REQUEST.fullmatch(body)
    if found is None:
        return None
    (_, _, envelope, outer, _, _, body_prefix, op_prefix, op, inner,
     sid, query, key) = found.groups()  # fmt: skip
    declared = _namespaces(outer)
    own = _namespaces(inner)
    if declared is None or own is None:
        return None
    header = found.group(5) or found.group(6)
    if declared.get(envelope) != _SOAP or declared.get(body_prefix) != _SOAP:
        return None
    if header is not None and declared.get(header) != _SOAP:
        return None
    if own.get(op_prefix, declared.get(op_prefix)) != _ICAT or (key is not None and op != b"get"):
        return None
    try:
        texts = (_text(sid), _text(query), None if key is None else _text(key))
    except UnicodeDecodeError:
        return None
    if texts[0] is None or texts[1] is None or (key is not None and texts[2] is None):
        return None
    return Read(op.decode("ascii"), texts[0], texts[1], texts[2])
