"""The HTTP face of the local IDS: ids.server's routes under ``/ids/``, its parameters and
answers, as Jersey gives them.

* a path ids.server does not serve: 501 ``{"code":"NOT_IMPLEMENTED","message":"Operation not
  implemented by this IDS server."}`` (its NotFoundExceptionMapper);
* a method the path does not have, or a body of the wrong media type: 500 InternalException
  naming Jersey's exception (its RuntimeExceptionMapper);
* an IDS exception: its status and ``{"code": <class>, "message": …}``; a void call 204; HEAD
  the GET answer's headers; every answer the CORS headers of ids.server's CORSResponseFilter.

The IDS's errors carry ``Content-Type: application/json`` (ids.server's mappers set none and
Jersey picks one from the request; a client reads the body as JSON in any case).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

from igestbench.mock.http_messages import Request, Response
from igestbench.mock.ids.errors import (
    NOT_SERVED_BODY,
    BadRequestException,
    IdsError,
    InternalException,
    NotImplementedException,
)
from igestbench.mock.ids.service import (
    WRAP_PADDED,
    WRAP_PREFIX,
    WRAP_SUFFIX,
    Download,
    IdsService,
)
from igestbench.mock.ids.upload import Upload

log = logging.getLogger(__name__)

IDS_PREFIX = "/ids/"
JSON = "application/json"
TEXT = "text/plain"
OCTETS = "application/octet-stream"
FORM = "application/x-www-form-urlencoded"
CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, POST, DELETE, PUT",
    "Access-Control-Allow-Headers": "Content-Type",
}
_RANGE = re.compile(r"bytes=([0-9]+)-")
_SELECTION = ("investigationIds", "datasetIds", "datafileIds")


class Params:
    """Query or form parameters: the first value of each, None when absent (as Jersey)."""

    def __init__(self, text: str) -> None:
        self.values = {k: v[0] for k, v in parse_qs(text, keep_blank_values=True).items()}

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def flag(self, name: str) -> bool:
        """A Java boolean parameter: true only for "true", in any case."""
        return (self.values.get(name) or "").lower() == "true"

    def selection(self) -> dict[str, str | None]:
        return {k: self.values.get(k) for k in _SELECTION}


@dataclass
class Call:
    """One request as the routes see it."""

    request: Request
    params: Params
    upload: Upload | None = None
    #: Why a streamed body could not be stored (a full disk …).
    failure: BaseException | None = None


Route = Callable[["IdsFront", Call], Response]


def _text(value: str, kind: str = TEXT) -> Response:
    return Response(200, value.encode("utf-8"), kind, headers=dict(CORS))


def _void() -> Response:
    return Response(204, b"", None, headers=dict(CORS))


def error_response(error: IdsError) -> Response:
    return Response(error.status, error.body(), JSON, headers=dict(CORS))


class IdsFront:
    """Answers requests under /ids/ for one :class:`IdsService`.

    ``stream(download, lock)`` turns a getData answer into the streamed body (it needs the
    event loop and the IDS's I/O threads, which the server owns).
    """

    def __init__(
        self, service: IdsService, stream: Callable[[Download, Any], Response]
    ) -> None:
        self.service = service
        self.stream = stream

    def answer(self, call: Call) -> Response:
        request = call.request
        name = request.path[len(IDS_PREFIX) :].strip("/")
        methods = ROUTES.get(name)
        if methods is None:
            return Response(501, NOT_SERVED_BODY, JSON, headers=dict(CORS))
        method = "GET" if request.method == "HEAD" else request.method
        if request.method == "OPTIONS":
            allowed = {*methods, "OPTIONS"} | ({"HEAD"} if "GET" in methods else set())
            allow = ", ".join(sorted(allowed))
            return Response(200, b"", None, headers={"Allow": allow, **CORS})
        route = methods.get(method)
        try:
            if route is None:
                raise InternalException(
                    "class jakarta.ws.rs.NotAllowedException HTTP 405 Method Not Allowed"
                )
            return route(self, call)
        except IdsError as exc:
            if exc.status == 500:
                log.warning("IDS %s %s: %s %.200s", request.method, name, exc.code, exc.message)
            return error_response(exc)
        except Exception as exc:  # what ids.server did not foresee: its RuntimeExceptionMapper
            log.exception("internal error while answering an IDS request")
            return error_response(InternalException(f"class java.lang.RuntimeException {exc}"))

    # --- about the service ---------------------------------------------------------------

    def _ping(self, call: Call) -> Response:
        return _text("IdsOK")

    def _version(self, call: Call) -> Response:
        return _text(self.service.version(), JSON)

    def _icat_url(self, call: Call) -> Response:
        return _text(self.service.icat_url())

    def _read_only(self, call: Call) -> Response:
        return _text("false")

    def _two_level(self, call: Call) -> Response:
        return _text("true" if self.service.two_level else "false")

    def _service_status(self, call: Call) -> Response:
        return _text(self.service.service_status(call.params.get("sessionId")), JSON)

    # --- selections ----------------------------------------------------------------------

    def _size(self, call: Call) -> Response:
        p = call.params
        return _text(self.service.size(p.get("preparedId"), p.get("sessionId"), p.selection()))

    def _status(self, call: Call) -> Response:
        p = call.params
        return _text(self.service.status(p.get("preparedId"), p.get("sessionId"), p.selection()))

    def _datafile_ids(self, call: Call) -> Response:
        p = call.params
        answer = self.service.datafile_ids(p.get("preparedId"), p.get("sessionId"), p.selection())
        return _text(answer, JSON)

    def _prepare(self, call: Call) -> Response:
        p = _form(call)
        prepared = self.service.prepare_data(
            p.get("sessionId"), p.selection(), p.flag("compress"), p.flag("zip")
        )
        return _text(prepared)

    def _is_prepared(self, call: Call) -> Response:
        return _text(self.service.is_prepared(call.params.get("preparedId")))

    def _archive(self, call: Call) -> Response:
        p = _form(call)
        self.service.archive_or_restore(p.get("sessionId"), p.selection())
        return _void()

    def _write(self, call: Call) -> Response:
        p = _form(call)
        self.service.write(p.get("sessionId"), p.selection())
        return _void()

    def _reset(self, call: Call) -> Response:
        p = _form(call)
        self.service.reset(p.get("preparedId"), p.get("sessionId"), p.selection())
        return _void()

    def _link(self, call: Call) -> Response:
        raise NotImplementedException("Sorry getLink is not available on this IDS installation")

    # --- data ----------------------------------------------------------------------------

    def _get_data(self, call: Call) -> Response:
        p = call.params
        offset = 0
        header = call.request.headers.get("range")
        if header is not None:
            match = _RANGE.fullmatch(header)
            if match is None:
                raise BadRequestException("The range must match bytes=(\\d+)-")
            offset = int(match.group(1))
        download, lock = self.service.get_data(
            p.get("preparedId"), p.get("sessionId"), p.selection(),
            p.flag("compress"), p.flag("zip"), p.get("outname"), offset,
        )  # fmt: skip
        return self.stream(download, lock)

    def _delete(self, call: Call) -> Response:
        self.service.delete(call.params.get("sessionId"), call.params.selection())
        return _void()

    def _put(self, call: Call) -> Response:
        kind = call.request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind not in ("", OCTETS):
            raise _unsupported()
        return self._store(call, call.params.values, wrap=False, padding=False)

    def _put_as_post(self, call: Call) -> Response:
        upload = call.upload
        if upload is not None and upload.refused is not None:
            raise BadRequestException(upload.refused)
        if upload is not None and upload.path is None:
            return _void()  # no file part: ids.server's putAsPost returns nothing
        fields: dict[str, str | None] = dict(upload.fields if upload else {})
        if fields.get("name") is None and upload is not None:
            fields["name"] = upload.filename
        wrap = (fields.get("wrap") or "").upper() == "TRUE"
        padding = (fields.get("padding") or "").upper() == "TRUE"
        return self._store(call, fields, wrap, padding)

    def _store(
        self, call: Call, params: Mapping[str, str | None], wrap: bool, padding: bool
    ) -> Response:
        if call.failure is not None:
            raise InternalException(f"class java.io.IOException {call.failure}")
        if call.upload is None or call.upload.path is None:
            raise InternalException("the request body was not received")
        try:
            status, body = self.service.put(call.upload, params, wrap=wrap)
        except IdsError as exc:
            if not wrap:
                raise
            # putAsPost with wrap answers its errors inside the same HTML wrapping
            prefix = WRAP_PADDED if padding else WRAP_PREFIX
            text = prefix + exc.body().decode("utf-8").replace("'", "\\'") + WRAP_SUFFIX
            return Response(exc.status, text.encode("utf-8"), JSON, headers=dict(CORS))
        return Response(status, body.encode("utf-8"), JSON, headers=dict(CORS))



def _unsupported() -> InternalException:
    return InternalException(
        "class jakarta.ws.rs.NotSupportedException HTTP 415 Unsupported Media Type"
    )


def _form(call: Call) -> Params:
    """The form of a POST (an absent body is an empty form)."""
    request = call.request
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if request.body and kind != FORM:
        raise _unsupported()
    return Params(request.body.decode("utf-8", "replace"))


#: path under /ids/ → HTTP method → route: what ids.server 2.1.1's IdsService serves.
ROUTES: dict[str, dict[str, Route]] = {
    "ping": {"GET": IdsFront._ping},
    "version": {"GET": IdsFront._version},
    "getIcatUrl": {"GET": IdsFront._icat_url},
    "isReadOnly": {"GET": IdsFront._read_only},
    "isTwoLevel": {"GET": IdsFront._two_level},
    "getServiceStatus": {"GET": IdsFront._service_status},
    "getSize": {"GET": IdsFront._size},
    "getStatus": {"GET": IdsFront._status},
    "getDatafileIds": {"GET": IdsFront._datafile_ids},
    "prepareData": {"POST": IdsFront._prepare},
    "isPrepared": {"GET": IdsFront._is_prepared},
    "getData": {"GET": IdsFront._get_data},
    "put": {"PUT": IdsFront._put, "POST": IdsFront._put_as_post},
    "delete": {"DELETE": IdsFront._delete},
    "archive": {"POST": IdsFront._archive},
    "restore": {"POST": IdsFront._archive},
    "write": {"POST": IdsFront._write},
    "reset": {"POST": IdsFront._reset},
    "getLink": {"POST": IdsFront._link},
}
