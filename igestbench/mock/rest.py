"""The REST face of the local catalogue (``/icat/...``), sibling of the SOAP face over the same
:class:`~igestbench.mock.service.IcatService`: same store, rules and sessions, so a session
opened over SOAP works here and back.

What icat.server 6.2.0's ``ICATRest`` serves: ``version``, ``properties``, ``session``
(login, info, refresh, logout), ``entityManager`` (search/get, write, delete) and
``user/{name}`` (is logged in). Its answers as Jersey gives them:

* an IcatException becomes ``{"code": TYPE, "message": …[, "offset": n]}`` with the status its
  type carries (IcatExceptionMapper): BAD_PARAMETER 400, SESSION and INSUFFICIENT_PRIVILEGES
  403, NO_SUCH_OBJECT_FOUND 404, OBJECT_ALREADY_EXISTS and VALIDATION 412, INTERNAL 500,
  NOT_IMPLEMENTED 501; ``offset`` only when it is not negative;
* a path ICAT does not serve is NOT_IMPLEMENTED (NotFoundExceptionMapper), without a
  Content-Type; any other exception — a method the path does not allow, a query parameter
  Jersey cannot convert (an ``id`` that is no Java long), a form parameter of a body that is no
  form — is INTERNAL with the Java class in the message (ThrowableExceptionMapper);
* a void method answers 204 without body or Content-Type; HEAD answers GET's headers
  (Content-Length included) without its body; OPTIONS answers the resource's WADL with its
  own Allow list (:mod:`igestbench.mock.rest_routes`, the model of the routes); every answer
  carries the CORS headers of CORSResponseFilter.

ICAT 4.3 had no REST API: a catalogue of that profile answers 404 here, as its Glassfish did.
"""

from __future__ import annotations

import binascii
import json
import logging
import math
import re
from typing import Any
from urllib.parse import parse_qs, unquote, unquote_to_bytes

from igestbench.icat import rest_json
from igestbench.icat.faults import (
    IcatBadParameter,
    IcatError,
    IcatExceptionType,
    IcatInternal,
    IcatNotImplemented,
    IcatSession,
)
from igestbench.mock import java_json, rest_routes
from igestbench.mock.create_fast_json import create_many_json
from igestbench.mock.gc_pause import collector_held
from igestbench.mock.http_messages import Request, Response
from igestbench.mock.port import PortEndpoint
from igestbench.mock.rest_write import write
from igestbench.mock.service import IcatService
from igestbench.mock.time_budget import RunElsewhere
from igestbench.mock.values import java_long

log = logging.getLogger(__name__)

REST_PREFIX = "/icat/"
JSON = "application/json"
#: What icat.server's CORSResponseFilter adds to every answer.
CORS_HEADERS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, DELETE, PUT",
}
#: HTTP status of each IcatException type (its ``getStatus()``).
STATUS_OF: dict[IcatExceptionType, int] = {
    IcatExceptionType.BAD_PARAMETER: 400,
    IcatExceptionType.INTERNAL: 500,
    IcatExceptionType.INSUFFICIENT_PRIVILEGES: 403,
    IcatExceptionType.NO_SUCH_OBJECT_FOUND: 404,
    IcatExceptionType.OBJECT_ALREADY_EXISTS: 412,
    IcatExceptionType.SESSION: 403,
    IcatExceptionType.VALIDATION: 412,
    IcatExceptionType.NOT_IMPLEMENTED: 501,
}
_NOT_SERVED = "Operation not implemented by this ICAT server."
_METHOD_NOT_ALLOWED = "class jakarta.ws.rs.NotAllowedException HTTP 405 Method Not Allowed"
#: What Jersey answers a form parameter of a request whose body is not a form.
_NOT_A_FORM = (
    "class java.lang.IllegalStateException The @FormParam is utilized when the content type "
    "of the request entity is not application/x-www-form-urlencoded"
)
#: What Jersey answers a query parameter it cannot convert to the method's Java type.
_NOT_A_LONG = (
    "class org.glassfish.jersey.server.ParamException$QueryParamException HTTP 404 Not Found"
)
#: What a real ICAT 6.2.0 answers JSON nested too deeply: Parsson's limit in a login, the EJB
#: container's complaint in a write (fixtures/icat-6.2/exchanges/rest-*-deep*.json).
_TOO_DEEP = "class java.lang.RuntimeException Input is too deeply nested 1,000"
_NO_KEY = (
    'class java.lang.NullPointerException Cannot invoke "String.equals(Object)" because "key" '
    "is null"
)
_TOO_DEEP_WRITE = (
    "class jakarta.ejb.EJBException Stateless SessionBean method returned without completing "
    "transaction"
)
#: A JSON string (what may hold braces that open no object).
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


def _not_json(constant: str) -> None:
    raise ValueError(f"{constant} is not JSON")


#: A login's reader: NaN and Infinity are Python's, not JSON's, and Parsson refuses them (made
#: once: json.loads with an option would make a decoder at every login).
_LOGIN_JSON = json.JSONDecoder(parse_constant=_not_json)


def _login_refusal(text: str) -> str:
    """What a real ICAT answers (INTERNAL) a login ``json`` that is no JSON object.

    ICAT reads it as a stream of events (Parsson) and asks the key of each string and array
    start: one at the top level has none, a NullPointerException, whatever follows — but a
    string only once the tokenizer has read it whole, and only after the ≥ 2 bytes Parsson
    needs to detect the encoding. Otherwise the stream's first error, as Parsson words it
    (fixtures/icat-6.2/exchanges/rest-login-malformed-*.json).
    """
    top = text.lstrip(" \t\r\n")[:1]
    if top == "[" and len(text.encode("utf-8")) >= 2:
        return _NO_KEY
    try:
        for kind, _ in java_json.events(text):
            if kind == "string" and top == '"':
                return _NO_KEY
    except java_json.JavaJsonError as exc:
        return str(exc)
    except RecursionError:
        return _TOO_DEEP
    # Python's reader refused what Parsson reads: no such text is known (and none is echoed:
    # a login holds a password)
    return f"class {java_json.PARSING} not JSON"


def _dumps(value: Any) -> bytes:
    # Java's JsonGenerator: no spaces, UTF-8 as it is
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


#: A % that does not start an escape (% and two hex digits): urllib's loop keeps it as it is.
_LONE_PERCENT = re.compile(rb"%(?![0-9A-Fa-f]{2})")
_PERCENT_AS_EQUALS = bytes.maketrans(b"%", b"=")


def unquote_bytes(body: bytes) -> bytes:
    """A form body with its %-escapes and pluses decoded (what a form field's JSON is): the
    bytes of ``urllib.parse.unquote_to_bytes``.

    A client's form escapes JSON's every brace, quote, colon and comma: 10,000 Datafiles are a
    2 MB body with 600,000 escapes, which urllib decodes in a Python loop (0.13 s, twice per
    write: here and in the form's parsing) — as long as the write's own storing. Quoted-
    printable's ``=XX`` is the same escape, and binascii decodes it in C: with every ``=``
    escaped first (``=3D``) and every ``%`` made a ``=``, the answer is the same wherever each
    ``%`` starts an escape (else urllib's loop decides what a lone ``%`` means).
    """
    text = body.replace(b"+", b" ")
    if b"%" not in text:
        return text
    if _LONE_PERCENT.search(text) is not None:
        return unquote_to_bytes(text)
    return binascii.a2b_qp(text.replace(b"=", b"=3D").translate(_PERCENT_AS_EQUALS))


def error_response(error: IcatError) -> Response:
    body: dict[str, Any] = {"code": error.fault_type.value, "message": error.message}
    if error.offset >= 0:
        body["offset"] = error.offset
    return Response(STATUS_OF[error.fault_type], _dumps(body), JSON, headers=dict(CORS_HEADERS))


class _MethodNotAllowed(Exception):
    pass


class _Params:
    """Query or form parameters; the first value of each, None when absent."""

    def __init__(self, text: str = "") -> None:
        self._values = parse_qs(text, keep_blank_values=True) if text else {}

    @classmethod
    def of_form(cls, body: bytes) -> _Params:
        """The fields of a form body, as ``parse_qs`` finds them in its text; an ASCII body
        (what clients send: they escape the rest) decoded by :func:`unquote_bytes`."""
        if not body.isascii():
            return cls(body.decode("utf-8", "replace"))
        params = cls()
        for field in body.split(b"&"):
            if field:
                name, _, value = field.partition(b"=")
                params._values.setdefault(_form_text(name), []).append(_form_text(value))
        return params

    def get(self, name: str) -> str | None:
        values = self._values.get(name)
        return values[0] if values else None


def _braces(body: bytes) -> int:
    """The braces of a form body once decoded, those in JSON strings too: a ``{`` or its
    escape (urllib decodes every ``%7B``, whatever stands before it). Counting objects
    exactly, outside strings, costs a pass over the decoded body: only beyond this bound."""
    return body.count(b"{") + body.count(b"%7B") + body.count(b"%7b")


def _form_text(piece: bytes) -> str:
    return unquote_bytes(piece).decode("utf-8", "replace")


class RestEndpoint:
    """Turns a request under ``/icat/`` into an answer for one catalogue."""

    def __init__(self, service: IcatService, max_elements: int = 250_000) -> None:
        self.service = service
        #: The most JSON objects a request may hold (``--max-elements``, as for SOAP elements).
        self.max_objects = max_elements
        self.profile = service.profile
        self.zone = service.zone
        self.serves = service.profile.name != "4.3"
        self.port = PortEndpoint(service)

    def handle(self, request: Request, inline_s: float | None = None) -> Response:
        """The answer to one request; ``inline_s``: on the event loop (see Store.time_budget).

        :class:`~igestbench.mock.store.RunElsewhere` passes through: the request is then
        answered again in a worker thread, as a SOAP one is.
        """
        if not self.serves:
            return Response(404, b"Not Found", "text/plain; charset=utf-8")
        parts = [unquote(p) for p in request.path[len(REST_PREFIX) :].strip("/").split("/")]
        routes = rest_routes.routes_of(parts)
        if not routes:  # Jersey's 404, which NotFoundExceptionMapper answers without a type
            response = error_response(IcatNotImplemented(_NOT_SERVED))
            response.content_type = None
            return response
        if request.method == "OPTIONS":
            return self._options(request, parts, routes)
        if parts == ["port"]:  # ICAT's export and import: files, not JSON (mock/port.py)
            return self._port(request, routes, inline_s)
        if inline_s is not None and request.method == "DELETE":
            raise RunElsewhere  # a delete cascades: how far, nothing tells before it runs
        try:
            route = self._route(request.method, routes)
            with self.service.time_budget(inline_s):
                status, answer = getattr(self, route.handler)(request, parts)
        except IcatError as exc:
            if exc.fault_type is IcatExceptionType.INTERNAL:  # one line, never a traceback
                log.warning(
                    "REST %s %s: INTERNAL %.200s", request.method, request.path, exc.message
                )
            return error_response(exc)
        except _MethodNotAllowed:
            return error_response(IcatInternal(_METHOD_NOT_ALLOWED))
        except Exception:
            # what icat.server did not foresee is INTERNAL (ThrowableExceptionMapper)
            log.exception("internal error while answering a REST request")
            return error_response(IcatInternal("internal error of the local catalogue"))
        if status == 204:  # a void method: no body, no type
            return Response(status, b"", None, headers=dict(CORS_HEADERS))
        # HEAD: the answer of GET, whose body the HTTP layer leaves out (Content-Length stays)
        body = answer if isinstance(answer, bytes) else _dumps(answer)
        return Response(status, body, JSON, headers=dict(CORS_HEADERS))

    # --- routing -------------------------------------------------------------------------

    @staticmethod
    def _route(method: str, routes: list[rest_routes.Route]) -> rest_routes.Route:
        """The route of ``method`` among a path's routes (HEAD is answered as GET)."""
        for route in routes:
            if route.method == method or (method == "HEAD" and route.method == "GET"):
                return route
        raise _MethodNotAllowed

    @staticmethod
    def _options(request: Request, parts: list[str], routes: list[rest_routes.Route]) -> Response:
        """Jersey's answer to OPTIONS: the resource's WADL and its own Allow list."""
        host = request.headers.get("host") or "localhost"
        base = f"{request.scheme}://{host}{REST_PREFIX}"
        headers = {
            "Allow": rest_routes.allow(routes),
            "Last-modified": rest_routes.last_modified(),
            **CORS_HEADERS,
        }
        body = rest_routes.wadl(base, "/".join(parts), routes)
        return Response(200, body, rest_routes.WADL, headers=headers)

    @staticmethod
    def _query(request: Request) -> _Params:
        return _Params(request.query)

    def _form(self, request: Request) -> _Params:
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind != rest_routes.FORM:
            raise IcatInternal(_NOT_A_FORM)  # Jersey's, before ICAT sees the request
        body = request.body
        # an object takes at least 2 bytes ("{}"): only a large body can exceed the budget,
        # and it is refused before any of it is parsed
        if len(body) > 2 * self.max_objects and _braces(body) > self.max_objects:
            objects = _JSON_STRING.sub(b"", unquote_bytes(body)).count(b"{")
            if objects > self.max_objects:
                raise IcatBadParameter(
                    f"the request has more than {self.max_objects} JSON objects "
                    "(sv7 serve --max-elements)"
                )
        return _Params.of_form(body)

    # --- metadata and sessions -----------------------------------------------------------

    def _version(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        return 200, {"version": self.service.get_api_version()}

    def _properties(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        authenticators = []
        for info in self.service.get_authenticator_info():
            keys: list[dict[str, Any]] = []
            for name, hide in info.keys:
                keys.append({"name": name, "hide": True} if hide else {"name": name})
            entry: dict[str, Any] = {"mnemonic": info.mnemonic, "keys": keys}
            if info.admin:
                entry["admin"] = True
            if info.friendly is not None:
                entry["friendly"] = info.friendly
            authenticators.append(entry)
        minutes = self.service.lifetime_minutes
        return 200, {
            "maxEntities": self.service.max_entities,
            "lifetimeMinutes": int(minutes) if minutes == int(minutes) else minutes,
            "authenticators": authenticators,
            # as a real ICAT 6.2.0 on Payara 6 names it (icat.utils' ContainerGetter)
            "containerType": "Glassfish",
        }

    def _login(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        text = self._form(request).get("json")
        if text is None:
            raise IcatBadParameter("json must not be null")
        if text.lstrip(" \t\r\n")[:1] in ('"', "["):
            raise IcatInternal(_login_refusal(text))
        try:
            spec = _LOGIN_JSON.decode(text)
        except ValueError:
            raise IcatInternal(_login_refusal(text)) from None
        except RecursionError:  # deeper than Python's stack: what Parsson says past 1,000
            raise IcatInternal(_TOO_DEEP) from None
        plugin = spec.get("plugin") if isinstance(spec, dict) else None
        credentials: dict[str, str] = {}
        listed = spec.get("credentials") if isinstance(spec, dict) else None
        for item in listed if isinstance(listed, list) else ():
            if isinstance(item, dict):
                credentials.update({k: v for k, v in item.items() if isinstance(v, str)})
        if not isinstance(plugin, str):
            raise IcatSession("Authenticator mnemonic null not recognised")
        return 200, {"sessionId": self.service.login(plugin, credentials)}

    def _session(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        sid = parts[1]
        user = self.service.get_user_name(sid)
        return 200, {
            "userName": user,
            "remainingMinutes": self.service.get_remaining_minutes(sid),
        }

    def _refresh(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        self.service.refresh(parts[1])
        return 204, None

    def _logout(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        self.service.logout(parts[1])
        return 204, None

    def _logged_in(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        user = "/".join(parts[1:])
        return 200, {"loggedIn": self.service.sessions.is_logged_in(user)}

    # --- entityManager -------------------------------------------------------------------

    def _search(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        params = self._query(request)
        query, id_text, sid = params.get("query"), params.get("id"), params.get("sessionId")
        obj_id: int | None = None
        if id_text is not None:
            # Jersey converts it to a Java long; anything else (10**30 too) is its
            # QueryParamException, which ThrowableExceptionMapper answers as INTERNAL
            obj_id = java_long(id_text)
            if obj_id is None:
                raise IcatInternal(_NOT_A_LONG)
        if query is None:
            raise IcatBadParameter("query is not set")
        # rows straight to JSON text (row_json), as the SOAP face writes rows to XML
        if obj_id is not None:
            return 200, self.service.get_json(sid, query, obj_id).encode("utf-8")
        return 200, self.service.search_json(sid, query).encode("utf-8")

    def _write(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        form = self._form(request)
        sid = form.get("sessionId")
        self.service.get_user_name(sid)  # ICAT asks who the user is before anything else
        text = form.get("entities")
        if text is None:
            raise IcatBadParameter("entities is not set")
        # thousands of objects decoded at once, without cycles: the collector would walk them
        # again and again, doubling json.loads' time (mock/gc_pause.py); held once, for the
        # fast path and the usual way too
        with collector_held():
            data = self._json(text, offset=0)  # inside ICAT's loop over the list already
            if isinstance(data, list):
                self.service.check_batch_size(len(data))
            ids = create_many_json(self.service, sid, data)  # all new, of one type: create_fast
            if ids is not None:
                return 200, ids
            beans = rest_json.beans_from_write(self.profile, data)
            return 200, write(self.service, sid, beans)

    def _delete(self, request: Request, parts: list[str]) -> tuple[int, Any]:
        params = self._query(request)
        text = params.get("entities")
        if text is None:
            raise IcatBadParameter("entities is not set")
        data = self._json(text)
        items = data if isinstance(data, list) else [data]
        beans = [self._reference(item, index) for index, item in enumerate(items)]
        self.service.delete_many(params.get("sessionId"), beans)
        return 204, None

    def _reference(self, item: Any, offset: int) -> Any:
        """One ``{"Dataset": {"id": n}}`` of a delete, checked as ICAT checks it."""
        text = rest_json.dumps_text(item)
        if not isinstance(item, dict) or len(item) != 1:
            raise IcatBadParameter(
                f"entity must have one keyword followed by its values in json {text}", offset
            )
        ((name, body),) = item.items()
        if name not in self.profile.entities:
            raise IcatBadParameter(f"{name} is not an ICAT entity")  # ICAT: no offset here
        if not isinstance(body, dict) or set(body) - {"id"}:
            raise IcatBadParameter(
                f"entity must have only the id value specified in json {text}", offset
            )
        if not isinstance(body.get("id"), int) or isinstance(body.get("id"), bool):
            raise IcatBadParameter(
                f"entity must have the id value specified in json {text}", offset
            )
        return rest_json.bean_from_answer(self.profile, {name: body})

    @staticmethod
    def _json(text: str, offset: int = -1) -> Any:
        try:
            return json.loads(text)
        except ValueError as exc:
            raise IcatBadParameter(f"{exc} in json {text}", offset) from None
        except RecursionError:  # what a real ICAT 6.2.0 answers a 100,000-deep write
            raise IcatInternal(_TOO_DEEP_WRITE) from None

    # --- port: ICAT's export (GET) and import (POST) -------------------------------------

    def _port(
        self, request: Request, routes: list[rest_routes.Route], inline_s: float | None
    ) -> Response:
        """``/icat/port``: an export file, or 204. Its faults are JSON typed ``text/plain``,
        Jersey's choice for ICAT's exception mapper here, but those Jersey raises itself (405,
        415) have no type (seen on a real 6.2.0)."""
        if inline_s is not None:
            raise RunElsewhere  # bulk work: in a worker thread, never on the event loop
        try:
            route = self._route(request.method, routes)
            # SQLite's errors as ICAT faults; each statement has its own budget (mock/port_*)
            with self.service.store.time_budget(math.inf):
                answer: Response | None = getattr(self, route.handler)(request)
        except _MethodNotAllowed:
            response = error_response(IcatInternal(_METHOD_NOT_ALLOWED))
            response.content_type = None
            return response
        except IcatError as exc:
            response = error_response(exc)
            jersey = exc.message.startswith("class jakarta.ws.rs.")
            response.content_type = None if jersey else "text/plain"
            return response
        except Exception:
            log.exception("internal error while answering a REST request")
            return error_response(IcatInternal("internal error of the local catalogue"))
        if answer is None:  # a void method, or nothing to export
            return Response(204, b"", None, headers=dict(CORS_HEADERS))
        answer.headers = {**CORS_HEADERS, **answer.headers}
        return answer  # HEAD: the HTTP layer leaves the body out

    def _export(self, request: Request) -> Response | None:
        return self.port.export(self._query(request).get("json"))

    def _import(self, request: Request) -> None:
        self.port.import_(request.headers.get("content-type"), request.body)
