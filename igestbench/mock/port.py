"""``/icat/port`` of the REST front: ICAT's export (GET) and import (POST) on the wire.

What icat.server 6.2.0's ICATRest and Porter do with a request before the work starts:

* both take a JSON object of options, read key by key as a stream (a string or number value
  under an unknown key is BAD_PARAMETER ``<key> is not an expected key in the json``;
  ``attributes`` and ``duplicate`` are read case-blind); no JSON is ``json must not be null``;
* export: ``json`` is a query parameter, ``{"sessionId", "query"?, "attributes"?}``; the answer is
  ``text/plain`` with ``Content-Disposition: attachment; filename="icat.export"``, or 204 when
  the query selects no object;
* import: ``multipart/form-data`` with a ``json`` field ``{"sessionId", "duplicate"?,
  "attributes"?}`` and a file (any part with a file name); a form field of any other name is
  BAD_PARAMETER; each file is imported with the options read *before* it; an import with
  ``attributes=ALL`` by a user who is not root is INSUFFICIENT_PRIVILEGES; the answer is 204.

The export and import themselves are :mod:`igestbench.mock.port_export` and
:mod:`igestbench.mock.port_import`.
"""

from __future__ import annotations

import multipart

from igestbench.icat.faults import (
    IcatBadParameter,
    IcatInsufficientPrivileges,
    IcatInternal,
)
from igestbench.mock import java_json
from igestbench.mock.http_messages import Response
from igestbench.mock.port_export import Exporter
from igestbench.mock.port_format import FILE_NAME
from igestbench.mock.port_import import DUPLICATE_ACTIONS, Importer
from igestbench.mock.service import IcatService

ATTRIBUTES = ("USER", "ALL")
#: A value outside any object: the server compares a null key (seen on a real 6.2.0).
_NULL_KEY = (
    "class java.lang.NullPointerException "
    'Cannot invoke "String.equals(Object)" because "key" is null'
)
#: The headers of an export besides CORS'.
EXPORT_HEADERS = {
    "Content-Disposition": f'attachment; filename="{FILE_NAME}"',
    "Accept-Ranges": "bytes",
}


class PortEndpoint:
    """Export and import for one catalogue, as the REST front calls them."""

    def __init__(self, service: IcatService) -> None:
        self.service = service
        self.exporter = Exporter(service)
        self.importer = Importer(service)

    def export(self, json_text: str | None) -> Response | None:
        """The answer to ``GET /icat/port?json=…``; None: nothing to export (204)."""
        options = _options(json_text, ("sessionId", "query", "attributes"))
        sid = options.get("sessionId")
        user = self.service.get_user_name(sid)
        all_attributes = options.get("attributes", "USER") == "ALL"
        query = options.get("query")
        if query is not None:
            assert sid is not None  # the session was found
            body = self.exporter.export_query(sid, user, query, all_attributes)
            if body is None:
                return None
        else:
            body = self.exporter.export_all(user, all_attributes)
        return Response(200, body, "text/plain", headers=dict(EXPORT_HEADERS))

    def import_(self, content_type: str | None, body: bytes) -> None:
        """``POST /icat/port``: every file of the form imported, in the order of the form."""
        kind, params = multipart.parse_options_header(content_type or "")
        if kind.lower() != "multipart/form-data":
            # Jersey refuses the request before ICAT sees it (@Consumes(MULTIPART_FORM_DATA))
            raise IcatInternal(
                "class jakarta.ws.rs.NotSupportedException HTTP 415 Unsupported Media Type"
            )
        json_text: str | None = None
        for name, filename, data in _parts(params.get("boundary", ""), body):
            if filename is None:
                if name != "json":
                    raise IcatBadParameter(f"Form field '{name}' is not recognised")
                json_text = data.decode("utf-8", "replace")
            else:
                self._import_file(json_text, data)

    def _import_file(self, json_text: str | None, data: bytes) -> None:
        options = _options(json_text, ("sessionId", "duplicate", "attributes"))
        sid = options.get("sessionId")
        user = self.service.get_user_name(sid)
        all_attributes = options.get("attributes", "USER") == "ALL"
        if all_attributes and not self.service.authz.is_root(user):
            raise IcatInsufficientPrivileges("Only root users may import with Attributes.ALL")
        assert sid is not None
        self.importer.run(sid, data, options.get("duplicate", "THROW"), all_attributes)


def _parts(boundary: str, body: bytes) -> list[tuple[str, str | None, bytes]]:
    """(field name, file name or None, content) of each part; the servlet reads them all
    before the first is looked at, so a broken form fails before anything is imported."""
    if not boundary:
        raise IcatBadParameter("Multipart content expected")
    parts: list[tuple[str, str | None, bytes]] = []
    try:
        with multipart.PushMultipartParser(boundary) as parser:
            current: list[bytes] = []
            meta: tuple[str, str | None] = ("", None)
            for chunk in (body, b""):
                for event in parser.parse(chunk):
                    if isinstance(event, multipart.MultipartSegment):
                        meta, current = (event.name, event.filename), []
                    elif event is None:
                        parts.append((meta[0], meta[1], b"".join(current)))
                    else:
                        current.append(bytes(event))
    except multipart.MultipartError:
        raise IcatBadParameter("Multipart content expected") from None
    return parts


def _options(text: str | None, keys: tuple[str, ...]) -> dict[str, str]:
    """The options of a port request, read as Porter reads its JSON stream: every string or
    number value is taken under the key last seen, at any depth; other values are skipped; the
    first bad key or value fails before the rest of the text is read."""
    if text is None:
        raise IcatBadParameter("json must not be null")
    options: dict[str, str] = {}
    key: str | None = None
    try:
        for kind, item in java_json.events(text):
            if kind == "key":
                key = item
            elif kind in ("string", "number"):
                if key is None:
                    raise IcatInternal(_NULL_KEY)
                options[key] = _option(key, item, keys)
    except java_json.JavaJsonError as exc:
        raise IcatInternal(str(exc)) from None
    return options


def _option(key: str, value: str, keys: tuple[str, ...]) -> str:
    if key not in keys:
        raise IcatBadParameter(f"{key} is not an expected key in the json")
    if key in ("attributes", "duplicate"):
        allowed = ATTRIBUTES if key == "attributes" else DUPLICATE_ACTIONS
        if value.upper() not in allowed:
            raise IcatBadParameter(f"{value} is not a valid value for '{key}'")
        return value.upper()
    return value
