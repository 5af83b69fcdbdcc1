"""A small HTTP/1.1 server on asyncio + httptools for the local catalogue.

Why not a generic ASGI server: the catalogue must be able to misbehave on purpose at the
connection level (drop a connection without an answer, stall before answering) so that the
suite's failure diagnosis can be tested for real, and it must answer thousands of small SOAP calls
per second on one core. httptools does the parsing; this module only frames requests, keeps
connections alive, bounds body sizes and idle time, and writes responses.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

import httptools

log = logging.getLogger(__name__)

_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    scheme: str
    client: tuple[str, int] | None


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "text/xml; charset=utf-8"
    #: Close the connection without sending anything (fault injection).
    drop: bool = False
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], "Response | Awaitable[Response]"]


class HttpProtocol(asyncio.Protocol):
    """One client connection: parse requests, answer them in order, keep alive."""

    def __init__(
        self,
        handler: Handler,
        scheme: str,
        max_body: int,
        idle_timeout: float,
        connections: set[HttpProtocol],
    ) -> None:
        self.handler = handler
        self.connections = connections
        self.scheme = scheme
        self.max_body = max_body
        self.idle_timeout = idle_timeout
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.queue: list[Request] = []
        self.busy = False
        self.closing = False
        self._url = b""
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._size = 0
        self._idle: asyncio.TimerHandle | None = None
        self._peer: tuple[str, int] | None = None
        self._too_large = False
        self._task: asyncio.Future[None] | None = None  # keeps the pending answer alive

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport but behave like one
        self.transport = cast(asyncio.Transport, transport)
        self.connections.add(self)
        peer = transport.get_extra_info("peername")
        self._peer = (peer[0], peer[1]) if peer else None
        self._arm_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.connections.discard(self)
        if self._idle is not None:
            self._idle.cancel()

    def data_received(self, data: bytes) -> None:
        self._arm_idle()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(400, b"protocol upgrades are not supported")
        except (httptools.HttpParserError, _TooLarge):
            # httptools wraps exceptions raised in callbacks, hence the flag
            if self._too_large:
                self._fail(413, b"request body too large")
            else:
                self._fail(400, b"malformed HTTP request")

    # --- httptools callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = {}
        self._body = []
        self._size = 0

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        self._headers[key] = value.decode("latin-1")
        if key == "content-length" and value.isdigit() and int(value) > self.max_body:
            self._too_large = True
            raise _TooLarge

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > self.max_body:
            self._too_large = True
            raise _TooLarge
        self._body.append(body)

    def on_message_complete(self) -> None:
        url = httptools.parse_url(self._url)
        method = self.parser.get_method().decode("ascii", "replace")
        request = Request(
            method=method,
            path=(url.path or b"/").decode("utf-8", "replace"),
            query=(url.query or b"").decode("utf-8", "replace"),
            headers=self._headers,
            body=b"".join(self._body),
            scheme=self.scheme,
            client=self._peer,
        )
        if not self.parser.should_keep_alive():
            request.headers["connection"] = "close"
        self.queue.append(request)
        if not self.busy:
            self._serve_queue()

    # --- answering -----------------------------------------------------------------------

    def _serve_queue(self) -> None:
        """Answer queued requests in order; synchronous answers need no task (the fast path)."""
        while self.queue and not self.closing:
            request = self.queue.pop(0)
            result = self._call(request)
            if isinstance(result, Response):
                self._send(request, result)
                continue
            self.busy = True
            self._task = asyncio.ensure_future(self._finish(request, result))
            return

    def _call(self, request: Request) -> Response | Awaitable[Response]:
        try:
            return self.handler(request)
        except Exception:
            log.exception("request handler failed")
            return Response(500, b"internal error", "text/plain; charset=utf-8")

    async def _finish(self, request: Request, pending: Awaitable[Response]) -> None:
        try:
            response = await pending
        except Exception:
            log.exception("request handler failed")
            response = Response(500, b"internal error", "text/plain; charset=utf-8")
        self.busy = False
        self._send(request, response)
        self._serve_queue()

    def _send(self, request: Request, response: Response) -> None:
        transport = self.transport
        if transport is None or self.closing:
            return
        if response.drop:
            self.closing = True
            transport.abort()
            return
        close = request.headers.get("connection", "").lower() == "close"
        head = [
            f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Unknown')}",
            f"Content-Type: {response.content_type}",
            f"Content-Length: {len(response.body)}",
            "Server: sv7-local-catalogue",
        ]
        head += [f"{k}: {v}" for k, v in response.headers.items()]
        if close:
            head.append("Connection: close")
        transport.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + response.body)
        if close:
            self.closing = True
            transport.close()

    def _fail(self, status: int, message: bytes) -> None:
        request = Request("", "", "", {"connection": "close"}, b"", self.scheme, self._peer)
        self.queue.clear()
        self._send(request, Response(status, message, "text/plain; charset=utf-8"))

    def _arm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        loop = asyncio.get_running_loop()
        self._idle = loop.call_later(self.idle_timeout, self._on_idle)

    def _on_idle(self) -> None:
        if self.transport is not None and not self.busy:
            self.closing = True
            self.transport.close()


class _TooLarge(Exception):
    """Raised inside a parser callback to stop reading an oversized body."""


class ConnectionFactory:
    """Makes a protocol per connection and remembers the open ones, to close them at shutdown."""

    def __init__(self, handler: Handler, scheme: str, max_body: int, idle_timeout: float) -> None:
        self.handler = handler
        self.scheme = scheme
        self.max_body = max_body
        self.idle_timeout = idle_timeout
        self.connections: set[HttpProtocol] = set()

    def __call__(self) -> HttpProtocol:
        return HttpProtocol(
            self.handler, self.scheme, self.max_body, self.idle_timeout, self.connections
        )

    def close_all(self) -> None:
        # abort, not close: at shutdown a TLS close handshake with an idle client could hang
        for connection in list(self.connections):
            connection.closing = True
            if connection.transport is not None:
                connection.transport.abort()
