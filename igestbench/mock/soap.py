"""The SOAP face of the local catalogue: envelopes in, envelopes out.

Requests are parsed with a hardened lxml parser (no DTDs, no entity expansion, no network, size
bounded by the HTTP layer); each operation's wrapper element is decoded by its handler, the
service is called, and the result is rendered as JAX-WS RI renders it. IcatExceptions become
``S:Server`` faults with the IcatException detail; malformed requests become ``S:Client`` faults
without detail; both with HTTP 500, as ICAT answers.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any

from lxml import etree

from igestbench.icat import soapxml
from igestbench.icat.beans import Bean
from igestbench.icat.faults import (
    IcatError,
    IcatExceptionType,
    IcatInsufficientPrivileges,
    IcatInternal,
    fault_detail,
)
from igestbench.icat.operations import operations_for
from igestbench.icat.soapxml import ICAT_NS, SOAP_ENV_NS, XS_NS, XSI_NS, escape, local_name
from igestbench.mock.create_fast_xml import create_many_xml
from igestbench.mock.gc_pause import collector_held
from igestbench.mock.service import IcatService
from igestbench.mock.soap_reads import Read, read_request
from igestbench.mock.time_budget import RunElsewhere
from igestbench.mock.values import java_long

log = logging.getLogger(__name__)

_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False, remove_comments=True
)
#: The bytes fed to the counting parser at a time (the element budget is checked in between).
_FEED_BYTES = 64 * 1024
#: The smallest element, ``<a/>``, takes 4 bytes: a body up to 4 times the budget cannot exceed it.
_MIN_ELEMENT_BYTES = 4
#: Operations never answered on the event loop: a delete cascades to every child of the object.
_CASCADING = frozenset({"delete", "deleteMany"})
#: Requests up to this size are tried as a plain search or get first (soap_reads.py): a
#: larger body is some other request (or a query too long to gain from it).
_PLAIN_BYTES = 16 * 1024
_ENVELOPE_OPEN = (
    f"<?xml version='1.0' encoding='UTF-8'?><S:Envelope xmlns:S=\"{SOAP_ENV_NS}\"><S:Body>"
)
_ENVELOPE_CLOSE = "</S:Body></S:Envelope>"


class ClientFault(Exception):
    """The request itself is wrong (not SOAP, a bad value): ``S:Client``."""


class ServerFault(Exception):
    """A fault without IcatException detail, as JAX-WS raises for e.g. a bean without xsi:type
    or an unknown operation."""


_CHAR_REFERENCE = re.compile(r"xmlParseCharRef: invalid xmlChar value (\d+)")


def _invalid_char_message(error: str) -> str:
    """What a real ICAT 6.2.0 (Metro, Woodstox) says of a character XML 1.0 forbids: a
    character reference to one (``&#1;``) is refused while JAXB reads the bean, the character
    itself (a raw control byte) while Metro copies the message; both are ``S:Server`` faults
    without IcatException detail."""
    reference = _CHAR_REFERENCE.search(error)
    if reference is None:
        return "Failed to copy a message"
    return (
        "[com.ctc.wstx.exc.WstxLazyException] com.ctc.wstx.exc.WstxParsingException: Illegal "
        f"character entity: expansion character (code 0x{int(reference.group(1)):x})"
    )


def _java_long(text: str | None) -> int:
    """An xs:long argument as JAXB reads it: what is no Java long (a word, 10**30) is 0.

    A real ICAT 6.2.0 answers ``get`` with such a primaryKey "Facility[id:0] not found."
    (fixtures/icat-6.2/exchanges/soap-get-id-*.json).
    """
    value = java_long((text or "").strip())
    return 0 if value is None else value


def fault_envelope(code: str, message: str, error: IcatError | None = None) -> bytes:
    detail = ""
    if error is not None:
        ftype, fmessage, offset = fault_detail(error)
        detail = (
            f'<detail><ns2:IcatException xmlns:ns2="{ICAT_NS}"><message>{escape(fmessage)}'
            f"</message><offset>{offset}</offset><type>{ftype}</type></ns2:IcatException></detail>"
        )
    body = (
        f"{_ENVELOPE_OPEN}<S:Fault><faultcode>S:{code}</faultcode>"
        f"<faultstring>{escape(message)}</faultstring>{detail}</S:Fault>{_ENVELOPE_CLOSE}"
    )
    return body.encode("utf-8")


def _response(op: str, inner: str) -> bytes:
    return (
        f'{_ENVELOPE_OPEN}<ns2:{op}Response xmlns:ns2="{ICAT_NS}" xmlns:xsi="{XSI_NS}" '
        f'xmlns:xs="{XS_NS}">{inner}</ns2:{op}Response>{_ENVELOPE_CLOSE}'
    ).encode()


def _returns(values: Any, java_type: str = "String") -> str:
    """Plain ``return`` elements (declared types, no xsi:type): strings, longs, booleans."""
    if isinstance(values, bool):
        return f"<return>{'true' if values else 'false'}</return>"
    if isinstance(values, (list, tuple)):
        return "".join(_returns(v) for v in values)
    return f"<return>{escape(str(values))}</return>"


class SoapEndpoint:
    """Turns a request body into a response (status, body) for one catalogue."""

    def __init__(self, service: IcatService, max_elements: int = 250_000) -> None:
        self.service = service
        self.max_elements = max_elements
        self.profile = service.profile
        self.zone = service.zone
        names = {op.name for op in operations_for(self.profile)}
        self.handlers: dict[str, Callable[[etree._Element], str]] = {
            name: getattr(self, "_op_" + name) for name in names
        }

    def handle(self, body: bytes, inline_s: float | None = None) -> tuple[int, bytes]:
        """The answer to one request; ``inline_s``: on the event loop (see Store.time_budget)."""
        try:
            plain = read_request(body) if len(body) <= _PLAIN_BYTES else None
            if plain is not None:  # a search or get as every client sends it: no parse
                with self.service.time_budget(inline_s):
                    inner = self._read(plain)
                return 200, _response(plain.op, inner)
            wrapper = self._wrapper(body)
            op = local_name(wrapper)
            handler = self.handlers.get(op) if etree.QName(wrapper).namespace == ICAT_NS else None
            if handler is None:
                namespace = etree.QName(wrapper).namespace
                if namespace == ICAT_NS and self.profile.name != "4.3":
                    # what Metro 4 under a real ICAT 6.2 answers for an operation it lacks
                    raise ServerFault("java.lang.NullPointerException")
                # the Metro 2 of ICAT 4.3's Glassfish, and any server for a foreign namespace
                raise ClientFault(f"Cannot find dispatch method for {{{namespace}}}{op}")
            if inline_s is not None and op in _CASCADING:
                raise RunElsewhere  # a delete cascades: how far, nothing tells before it runs
            with self.service.time_budget(inline_s):
                inner = handler(wrapper)
            return 200, _response(op, inner)
        except IcatError as exc:
            if exc.fault_type is IcatExceptionType.INTERNAL:  # one line, never a traceback
                log.warning("SOAP request: INTERNAL %.200s", exc.message)
            return 500, fault_envelope("Server", exc.message, exc)
        except ClientFault as exc:
            return 500, fault_envelope("Client", str(exc))
        except ServerFault as exc:
            return 500, fault_envelope("Server", str(exc))
        except Exception:
            # icat.server reports what it did not foresee as INTERNAL, so a client still gets a type
            log.exception("internal error while answering a SOAP request")
            error = IcatInternal("internal error of the local catalogue")
            return 500, fault_envelope("Server", error.message, error)

    def _wrapper(self, body: bytes) -> etree._Element:
        if not body.strip():
            raise ClientFault("Couldn't create SOAP message: the request body is empty")
        try:
            # Every element starts with "<" not followed by "/": a count of bytes (C speed) bounds
            # the elements from above, so most bodies need no counting parse at all.
            if (
                len(body) <= _MIN_ELEMENT_BYTES * self.max_elements
                or body.count(b"<") - body.count(b"</") <= self.max_elements
            ):
                root = etree.fromstring(body, _PARSER)
            else:
                root = self._parse_counting(body)
        except etree.XMLSyntaxError as exc:
            if getattr(exc, "code", None) == etree.ErrorTypes.ERR_INVALID_CHAR:  # (not in stubs)
                raise ServerFault(_invalid_char_message(str(exc))) from None
            raise ClientFault(f"Couldn't create SOAP message due to exception: {exc}") from None
        if root.getroottree().docinfo.internalDTD is not None:
            raise ClientFault("Couldn't create SOAP message: a DOCTYPE is not allowed in SOAP")
        if root.tag != f"{{{SOAP_ENV_NS}}}Envelope":
            raise ClientFault(
                "Couldn't create SOAP message: the root element is not a SOAP 1.1 Envelope"
            )
        body_el = next((c for c in root if c.tag == f"{{{SOAP_ENV_NS}}}Body"), None)
        if body_el is None:
            raise ClientFault("Couldn't create SOAP message: the Envelope has no Body")
        wrapper = next((c for c in body_el if isinstance(c.tag, str)), None)
        if wrapper is None:
            raise ClientFault("Couldn't create SOAP message: the Body is empty")
        return wrapper

    def _parse_counting(self, body: bytes) -> etree._Element:
        """Parse a large body in steps, refusing it as soon as it holds too much.

        Checked while parsing, so a hostile body costs at most the budget, never a full tree:
        more than ``max_elements`` elements is a malformed message (a SOAP stack's XML reader
        limit gives a Client fault without ICAT detail too); more ``beans`` in a createMany
        than maxEntities is ICAT's VALIDATION, as for a search returning too many.
        """
        parser = etree.XMLPullParser(
            events=("start", "end"),
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
        )
        elements = depth = beans = 0
        create_many = False
        for start in range(0, len(body), _FEED_BYTES):
            parser.feed(body[start : start + _FEED_BYTES])
            for event, element in parser.read_events():
                if event == "end":
                    depth -= 1
                    continue
                depth += 1
                elements += 1
                if not isinstance(element, etree._Element):
                    continue  # only start-ns events carry no element; none are asked for
                if depth == 3:  # Envelope / Body / the operation's wrapper
                    create_many = element.tag == f"{{{ICAT_NS}}}createMany"
                elif depth == 4 and create_many and local_name(element) == "beans":
                    beans += 1
                    self.service.check_batch_size(beans)
            if elements > self.max_elements:
                raise ClientFault(
                    "Couldn't create SOAP message: the request has more than "
                    f"{self.max_elements} XML elements (sv7 serve --max-elements)"
                )
        root: etree._Element = parser.close()
        return root

    # --- argument decoding ---------------------------------------------------------------

    @staticmethod
    def _text(wrapper: etree._Element, name: str) -> str | None:
        for child in wrapper:
            if local_name(child) == name:
                return child.text or ""
        return None

    def _long(self, wrapper: etree._Element, name: str) -> int:
        return _java_long(self._text(wrapper, name))

    def _bean(self, element: etree._Element) -> Bean:
        try:
            return soapxml.decode_bean(self.profile, element, zone=self.zone)
        except soapxml.DecodeError as exc:
            if "xsi:type" in str(exc):
                raise ServerFault(
                    f"Unable to create an instance of entityBaseBean: {exc}"
                ) from None
            raise ClientFault(f"Unmarshalling Error: {exc}") from None

    def _one_bean(self, wrapper: etree._Element, name: str) -> Bean:
        for child in wrapper:
            if local_name(child) == name:
                return self._bean(child)
        raise ClientFault(f"Unmarshalling Error: {name} is missing")

    def _beans(self, wrapper: etree._Element, name: str) -> list[Bean]:
        return [self._bean(c) for c in wrapper if local_name(c) == name]

    def _sid(self, wrapper: etree._Element) -> str | None:
        return self._text(wrapper, "sessionId")

    # --- operations ----------------------------------------------------------------------

    def _op_login(self, w: etree._Element) -> str:
        credentials: dict[str, str] = {}
        for cred in w:
            if local_name(cred) != "credentials":
                continue
            for entry in cred:
                key = self._text(entry, "key")
                if key is not None:
                    credentials[key] = self._text(entry, "value") or ""
        return _returns(self.service.login(self._text(w, "plugin") or "", credentials))

    def _op_logout(self, w: etree._Element) -> str:
        self.service.logout(self._sid(w))
        return ""

    def _op_getUserName(self, w: etree._Element) -> str:
        return _returns(self.service.get_user_name(self._sid(w)))

    def _op_getRemainingMinutes(self, w: etree._Element) -> str:
        return f"<return>{self.service.get_remaining_minutes(self._sid(w))!r}</return>"

    def _op_refresh(self, w: etree._Element) -> str:
        self.service.refresh(self._sid(w))
        return ""

    def _op_getApiVersion(self, w: etree._Element) -> str:
        return _returns(self.service.get_api_version())

    _op_getVersion = _op_getApiVersion

    def _op_getEntityNames(self, w: etree._Element) -> str:
        return _returns(self.service.get_entity_names())

    def _op_getEntityInfo(self, w: etree._Element) -> str:
        info = self.service.get_entity_info(self._text(w, "beanName"))
        # JAXB leaves out what is null: no comment, no element (not an empty one)
        out = ["<return>"]
        if info.comment:
            out.append(f"<classComment>{escape(info.comment)}</classComment>")
        if info.constraint:
            out.append("<constraints>")
            out.extend(f"<fieldNames>{n}</fieldNames>" for n in info.constraint)
            out.append("</constraints>")
        for f in info.fields:
            comment = f"<comment>{escape(f.comment)}</comment>" if f.comment else ""
            out.append(
                f"<fields>{comment}<name>{f.name}</name>"
                f"<notNullable>{'true' if f.not_null else 'false'}</notNullable>"
                f"<relType>{f.rel.value}</relType>"
                + (f"<stringLength>{f.string_length}</stringLength>" if f.string_length else "")
                + f"<type>{f.type}</type></fields>"
            )
        out.append("</return>")
        return "".join(out)

    def _op_getAuthenticatorInfo(self, w: etree._Element) -> str:
        out = []
        for a in self.service.get_authenticator_info():
            keys = "".join(
                f"<keys><hide>{'true' if hide else 'false'}</hide><name>{name}</name></keys>"
                for name, hide in a.keys
            )
            friendly = f"<friendly>{escape(a.friendly)}</friendly>" if a.friendly else ""
            out.append(
                f"<return><admin>{'true' if a.admin else 'false'}</admin>{friendly}{keys}"
                f"<mnemonic>{escape(a.mnemonic)}</mnemonic></return>"
            )
        return "".join(out)

    def _op_getProperties(self, w: etree._Element) -> str:
        return _returns(self.service.get_properties(self._sid(w)))

    def _op_create(self, w: etree._Element) -> str:
        return _returns(self.service.create(self._sid(w), self._one_bean(w, "bean")))

    def _op_createMany(self, w: etree._Element) -> str:
        # refused before the beans are decoded, which costs far more than counting them
        beans = [c for c in w if local_name(c) == "beans"]
        self.service.check_batch_size(len(beans))
        # thousands of rows or Beans, no cycles: the collector held once (mock/gc_pause.py)
        with collector_held():
            ids = create_many_xml(self.service, self._sid(w), beans, self.zone)  # create_fast
            if ids is not None:
                return "".join(map("<return>{}</return>".format, ids))
            return _returns(self.service.create_many(self._sid(w), self._beans(w, "beans")))

    def _op_update(self, w: etree._Element) -> str:
        self.service.update(self._sid(w), self._one_bean(w, "bean"))
        return ""

    def _op_delete(self, w: etree._Element) -> str:
        self.service.delete(self._sid(w), self._one_bean(w, "bean"))
        return ""

    def _op_deleteMany(self, w: etree._Element) -> str:
        self.service.delete_many(self._sid(w), self._beans(w, "beans"))
        return ""

    def _op_get(self, w: etree._Element) -> str:
        # rows straight to XML, dates in the server's zone (row_xml), whatever the zone
        sid, query, key = self._sid(w), self._text(w, "query"), self._long(w, "primaryKey")
        return self.service.get_xml(sid, query, key)

    def _op_search(self, w: etree._Element) -> str:
        return self.service.search_xml(self._sid(w), self._text(w, "query"))

    def _read(self, plain: Read) -> str:
        """:meth:`_op_get` or :meth:`_op_search` of a request read by soap_reads.py."""
        if plain.op == "get":
            key = _java_long(plain.primary_key)
            return self.service.get_xml(plain.session_id, plain.query, key)
        return self.service.search_xml(plain.session_id, plain.query)

    def _op_isAccessAllowed(self, w: etree._Element) -> str:
        allowed = self.service.is_access_allowed(
            self._sid(w), self._one_bean(w, "bean"), (self._text(w, "accessType") or "").strip()
        )
        return _returns(allowed)

    def _op_dummy(self, w: etree._Element) -> str:
        return ""

    # --- ICAT 4.3 only: free-text search needs Lucene, which the local catalogue lacks -----

    def _lucene(self, w: etree._Element) -> str:
        user = self.service.sessions.user(self._sid(w))
        if not self.service.authz.is_root(user):
            raise IcatInsufficientPrivileges("Lucene administration needs a root user")
        raise IcatInternal("Lucene is not configured on this catalogue")

    def _op_searchText(self, w: etree._Element) -> str:
        self.service.sessions.user(self._sid(w))
        raise IcatInternal("Lucene is not configured on this catalogue")

    _op_luceneSearch = _lucene
    _op_luceneClear = _lucene
    _op_luceneCommit = _lucene
    _op_luceneGetPopulating = _lucene
    _op_lucenePopulate = _lucene
