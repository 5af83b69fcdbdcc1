"""A small HTTP/1.1 server on asyncio + httptools for the local catalogue.

Why not a generic ASGI server: the catalogue must be able to misbehave on purpose at the
connection level (drop a connection without an answer, stall before answering) so that the
suite's failure diagnosis can be tested for real, and it must answer thousands of small SOAP calls
per second on one core. httptools does the parsing; this module only frames requests, keeps
connections alive, bounds header and body sizes and idle time, and writes responses.

Limits, so that no client can make the server hold memory or stop answering others: a header
section larger than ``max_header`` gets 431 (counted as it arrives, before httptools could
buffer more), a body larger than ``max_body`` 413, and large bodies being received or handled at
the same time may together hold at most ``max_bodies_in_flight`` bytes (beyond their first MiB
each); a request that would exceed that gets 503 with ``Retry-After`` instead of memory.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import cast

import httptools

log = logging.getLogger(__name__)

_REASONS = {
    200: "OK",
    204: "No Content",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    412: "Precondition Failed",
    413: "Payload Too Large",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}


#: Each body may hold this much without counting against ``max_bodies_in_flight``.
UNCOUNTED_BODY = 1024 * 1024


@dataclass(frozen=True)
class HttpLimits:
    max_body: int = 64 * 1024 * 1024
    max_header: int = 64 * 1024
    max_bodies_in_flight: int = 128 * 1024 * 1024
    idle_timeout: float = 60.0


class BodyBudget:
    """The bytes of large bodies held at once, over all connections (one event loop: no lock)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, n: int) -> bool:
        if self.held + n > self.limit:
            return False
        self.held += n
        return True

    def give_back(self, n: int) -> None:
        self.held -= n


@dataclass
class Request:
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: bytes
    scheme: str
    client: tuple[str, int] | None
    #: Bytes of this request's body counted in the BodyBudget, given back once it is answered.
    held: int = 0


@dataclass
class Response:
    status: int
    body: bytes
    #: None: no Content-Type header (ICAT's REST front sends none with a 204 or 501)
    content_type: str | None = "text/xml; charset=utf-8"
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
        limits: HttpLimits,
        budget: BodyBudget,
        connections: set[HttpProtocol],
        date_header: bool = True,
    ) -> None:
        self.handler = handler
        self.date_header = date_header
        self.connections = connections
        self.scheme = scheme
        self.max_body = limits.max_body
        self.max_header = limits.max_header
        self.idle_timeout = limits.idle_timeout
        self.budget = budget
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
        self._refused = 0  # the HTTP status a parser callback asked for (413, 431, 503)
        self._in_body = False  # between the end of the headers and the end of the message
        self._head_bytes = 0  # bytes received since the headers of the next message began
        self._held = 0  # bytes of the current body counted in the BodyBudget
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
        self._give_back()
        for request in self.queue:
            self.budget.give_back(request.held)
        self.queue.clear()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self._arm_idle()
        if not self._in_body:
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(400, b"protocol upgrades are not supported")
            return
        except (httptools.HttpParserError, _Refused):
            # httptools wraps exceptions raised in callbacks, hence the recorded status
            self._fail(*_REFUSALS.get(self._refused, (400, b"malformed HTTP request")))
            return
        # checked after feeding: the chunk may hold the end of the headers and a body
        if not self._in_body and self._head_bytes > self.max_header:
            self._fail(*_REFUSALS[431])

    # --- httptools callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = {}
        self._body = []
        self._size = 0
        self._held = 0

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        key = name.decode("latin-1").lower()
        self._headers[key] = value.decode("latin-1")
        if key == "content-length" and value.isdigit():
            if int(value) > self.max_body:
                self._refuse(413)
            self._hold(int(value))  # refuse at once what cannot be held, before it is sent

    def on_headers_complete(self) -> None:
        self._in_body = True
        self._head_bytes = 0

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > self.max_body:
            self._refuse(413)
        self._hold(self._size)
        self._body.append(body)

    def _hold(self, size: int) -> None:
        """Count a body of ``size`` bytes against the budget of bodies held at once."""
        need = max(0, size - UNCOUNTED_BODY) - self._held
        if need > 0:
            if not self.budget.take(need):
                self._refuse(503)
            self._held += need

    def _give_back(self) -> None:
        self.budget.give_back(self._held)
        self._held = 0

    def _refuse(self, status: int) -> None:
        self._refused = status
        raise _Refused

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
            held=self._held,
        )
        self._held = 0  # the request holds it now, until it is answered
        self._in_body = False
        self._body = []
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
        self.budget.give_back(request.held)
        request.held = 0
        transport = self.transport
        if transport is None or self.closing:
            return
        if response.drop:
            self.closing = True
            transport.abort()
            return
        close = request.headers.get("connection", "").lower() == "close"
        head = [f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Unknown')}"]
        if response.content_type is not None:
            head.append(f"Content-Type: {response.content_type}")
        # a HEAD answer has the headers of the GET answer, its Content-Length too, no body;
        # a 204 has no Content-Length at all (RFC 9110 8.6, and so ICAT's REST front answers)
        if response.status != 204:
            head.append(f"Content-Length: {len(response.body)}")
        head.append("Server: sv7-local-catalogue")
        # RFC 9110 6.6.1: a server with a clock sends one (cleanup reads the run's start here);
        # Payara, as a real ICAT 6.2.0 runs it, does not
        if self.date_header:
            head.append(f"Date: {email.utils.formatdate(usegmt=True)}")
        head += [f"{k}: {v}" for k, v in response.headers.items()]
        if close:
            head.append("Connection: close")
        body = b"" if request.method == "HEAD" else response.body
        # two buffers, not one: joining them would copy a large answer once more
        transport.writelines((("\r\n".join(head) + "\r\n\r\n").encode("latin-1"), body))
        if close:
            self.closing = True
            transport.close()

    def _fail(self, status: int, message: bytes) -> None:
        request = Request("", "", "", {"connection": "close"}, b"", self.scheme, self._peer)
        self._give_back()
        self._body = []
        for queued in self.queue:
            self.budget.give_back(queued.held)
        self.queue.clear()
        headers = {"Retry-After": "1"} if status == 503 else {}
        self._send(request, Response(status, message, "text/plain; charset=utf-8", headers=headers))
        self.closing = True  # nothing more is read from this connection

    def _arm_idle(self) -> None:
        if self._idle is not None:
            self._idle.cancel()
        loop = asyncio.get_running_loop()
        self._idle = loop.call_later(self.idle_timeout, self._on_idle)

    def _on_idle(self) -> None:
        if self.transport is not None and not self.busy:
            self.closing = True
            self.transport.close()


class _Refused(Exception):
    """Raised inside a parser callback to stop reading a request that is refused."""


_REFUSALS = {
    413: (413, b"request body too large"),
    431: (431, b"request header section too large"),
    503: (503, b"too many large requests at once; retry later"),
}


class ConnectionFactory:
    """Makes a protocol per connection and remembers the open ones, to close them at shutdown."""

    def __init__(
        self, handler: Handler, scheme: str, limits: HttpLimits, date_header: bool = True
    ) -> None:
        self.handler = handler
        self.date_header = date_header
        self.scheme = scheme
        self.limits = limits
        self.budget = BodyBudget(limits.max_bodies_in_flight)
        self.connections: set[HttpProtocol] = set()

    def __call__(self) -> HttpProtocol:
        return HttpProtocol(
            self.handler, self.scheme, self.limits, self.budget, self.connections,
            self.date_header,
        )

    def close_all(self) -> None:
        # abort, not close: at shutdown a TLS close handshake with an idle client could hang
        for connection in list(self.connections):
            connection.closing = True
            if connection.transport is not None:
                connection.transport.abort()
