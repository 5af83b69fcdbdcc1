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

Bodies that may be large by nature (files uploaded to the ICAT Data Service) are not held at all:
the handler's ``body_sink(method, path, headers)`` may claim a request once its headers are read,
and its body then streams to that :class:`BodySink` (to disk, in a thread) with flow control —
reading stops while the sink is behind — outside the limits above, which stay for everything
else; once its length is known, the rest of it is read straight into the sink's buffers, past
httptools (:mod:`igestbench.mock.http_direct`) — or, on plain TCP and where the sink can
(``take_socket``), by the sink's own thread from the socket itself, the transport paused
meanwhile (:meth:`~igestbench.mock.http_stream.ThreadSink.take_socket`). An answer may
likewise be a :class:`BodyStream` (a file, a zip being written) sent as it is produced,
honouring the transport's ``pause_writing`` (see :mod:`igestbench.mock.http_stream`).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable
from typing import cast

import httptools

from igestbench.mock.http_direct import DirectBody
from igestbench.mock.http_head import response_head
from igestbench.mock.http_messages import (
    BodyBudget,
    BodySink,
    BodyStream,
    Handler,
    HttpLimits,
    Request,
    Response,
    SinkFactory,
)

log = logging.getLogger(__name__)

#: Chunks of a streamed answer are sent once the transport holds less than this.
STREAM_WRITE_BUFFER = 1024 * 1024


#: Each body may hold this much without counting against ``max_bodies_in_flight``.
UNCOUNTED_BODY = 1024 * 1024


class HttpProtocol(asyncio.Protocol):
    """One client connection: parse requests, answer them in order, keep alive."""

    def __init__(
        self,
        handler: Handler,
        scheme: str,
        limits: HttpLimits,
        budget: BodyBudget,
        connections: set[HttpProtocol],
        sink_for: SinkFactory | None = None,
        date_header: bool = True,
    ) -> None:
        self.handler = handler
        self.sink_for = sink_for
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
        self._path = "/"  # the URL's path and query, decoded once its headers are read
        self._query = ""
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._size = 0
        #: The idle timer (see _on_idle) and the loop's time of the connection's last activity.
        self._idle: asyncio.TimerHandle | None = None
        self._active_at = 0.0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._peer: tuple[str, int] | None = None
        self._refused = 0  # the HTTP status a parser callback asked for (413, 431, 503)
        self._in_body = False  # between the end of the headers and the end of the message
        self._head_bytes = 0  # bytes received since the headers of the next message began
        self._held = 0  # bytes of the current body counted in the BodyBudget
        self._task: asyncio.Future[None] | None = None  # keeps the pending answer alive
        self._length: int | None = None  # the Content-Length of the message being read
        self._sink: BodySink | None = None  # where the body being read streams to
        #: What the parser said of a request whose body is read past it (method, keep-alive).
        self._direct_request: tuple[str, bool] | None = None
        self._writable: asyncio.Event | None = None  # cleared while the transport is full
        self._socket_body = False  # a sink's thread reads the socket: the transport stays paused
        self._lent_stream: BodyStream | None = None  # a stream's thread sends to the socket

    # --- asyncio.Protocol ----------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport but behave like one
        self.transport = cast(asyncio.Transport, transport)
        self._writable = asyncio.Event()
        self._writable.set()
        self.connections.add(self)
        peer = transport.get_extra_info("peername")
        self._peer = (peer[0], peer[1]) if peer else None
        self._loop = asyncio.get_running_loop()
        self._touch()
        self._idle = self._loop.call_later(self.idle_timeout, self._on_idle)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closing = True
        self.connections.discard(self)
        if self._idle is not None:
            self._idle.cancel()
        self._give_back()
        self._drop_sink()
        if self._lent_stream is not None:
            self._lent_stream.close()  # its thread is woken: the socket is shut down
        for request in self.queue:
            self.budget.give_back(request.held)
            if request.sink is not None:
                request.sink.abort()
        self.queue.clear()
        if self._writable is not None:
            self._writable.set()  # a stream waiting to write sees the connection is gone

    def pause_writing(self) -> None:
        if self._writable is not None:
            self._writable.clear()

    def resume_writing(self) -> None:
        if self._writable is not None:
            self._writable.set()

    def data_received(self, data: bytes) -> None:
        if self.closing:
            return
        self._touch()
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
            return
        if (
            self._sink is not None
            and self._length
            and "transfer-encoding" not in self._headers
            and self.transport is not None
        ):
            # the rest of this body needs no parsing: read it straight into the sink's buffers
            self._direct_request = (self._method(), self.parser.should_keep_alive())
            if not self._hand_socket(self._length - self._size):
                DirectBody(self, self.transport, self._sink, self._length - self._size)

    def _lent_socket(self) -> socket.socket | None:
        """A duplicate of the connection's socket for a thread to read or send a body through
        (its own to close), with the idle limit as its timeout; None over TLS (the socket
        carries ciphertext) or without a socket."""
        assert self.transport is not None
        raw = self.transport.get_extra_info("socket")
        if raw is None or self.transport.get_extra_info("sslcontext") is not None:
            return None
        try:
            sock = socket.fromfd(raw.fileno(), raw.family, raw.type)
        except OSError:  # pragma: no cover - out of file descriptors
            return None
        sock.settimeout(self.idle_timeout)  # the idle limit, while the loop does not see the bytes
        return sock

    def _hand_socket(self, left: int) -> bool:
        """The sink's thread reads the body's last ``left`` bytes from the socket; False where
        it cannot (TLS, no socket, a sink without ``take_socket``)."""
        take = getattr(self._sink, "take_socket", None)
        sock = None if take is None else self._lent_socket()
        if take is None or sock is None:
            return False
        assert self.transport is not None
        self.transport.pause_reading()
        self._socket_body = True  # the idle timer leaves the connection to the socket's timeout
        take(sock, left, self._socket_body_done)
        return True

    def _socket_body_done(self, size: int, error: BaseException | None) -> None:
        """The sink's thread has read the body (or failed to: the connection is dropped)."""
        self._socket_body = False
        if self.closing or self.transport is None:
            return
        if error is not None:
            self.transport.abort()  # connection_lost follows: the sink is aborted, nothing kept
            return
        self._size += size
        self._touch()
        self.transport.resume_reading()
        self.direct_body_done()

    def direct_body_read(self, size: int) -> None:
        self._size += size
        self._touch()

    def direct_body_done(self) -> None:
        """The body read past the parser is complete: the parser, still waiting for it, is
        replaced, and the request queued."""
        assert self._direct_request is not None
        request, self._direct_request = self._direct_request, None
        self.parser = httptools.HttpRequestParser(self)
        self._complete(*request)

    def _method(self) -> str:
        return self.parser.get_method().decode("ascii", "replace")

    # --- httptools callbacks -------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = {}
        self._body = []
        self._size = 0
        self._held = 0
        self._length = None

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        key = _HEADER_NAMES.get(name)
        if key is None:
            key = name.decode("latin-1").lower()
            if len(_HEADER_NAMES) < _HEADER_NAMES_KEPT:
                _HEADER_NAMES[name] = key
        self._headers[key] = value.decode("latin-1")
        if key == "content-length" and value.isdigit():
            self._length = int(value)

    def on_headers_complete(self) -> None:
        self._in_body = True
        self._head_bytes = 0
        url = httptools.parse_url(self._url)  # once per request: _complete takes these
        self._path = (url.path or b"/").decode("utf-8", "replace")
        self._query = (url.query or b"").decode("utf-8", "replace")
        self._continue()
        if self.sink_for is not None:
            self._sink = self.sink_for(self._method(), self._path, self._headers)
            if self._sink is not None:
                self._sink.on_drain = self._resume_reading
                return  # a streamed body: not held, so none of the limits below
        if self._length is not None:
            if self._length > self.max_body:
                self._refuse(413)
            self._hold(self._length)  # refuse at once what cannot be held, before it is sent

    def _continue(self) -> None:
        """Answer ``Expect: 100-continue`` at once (curl and Java clients wait for it up to a
        second before they send a body), unless an earlier answer is still on its way."""
        if (
            self._headers.get("expect", "").lower() == "100-continue"
            and not self.busy
            and not self.queue
            and self.transport is not None
        ):
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        if self._sink is not None:
            self._size += len(body)
            if self._sink.feed(body) and self.transport is not None:
                self.transport.pause_reading()  # until the sink's thread has caught up
            return
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

    def _drop_sink(self) -> None:
        """A body being streamed will not be complete: its sink undoes what it did."""
        if self._sink is not None:
            self._sink.abort()
            self._sink = None

    def _resume_reading(self) -> None:
        if self.transport is not None and not self.closing and not self._socket_body:
            self.transport.resume_reading()

    def _refuse(self, status: int) -> None:
        self._refused = status
        raise _Refused

    def on_message_complete(self) -> None:
        self._complete(self._method(), self.parser.should_keep_alive())

    def _complete(self, method: str, keep_alive: bool) -> None:
        """A whole request has been read: queue it to be answered."""
        request = Request(
            method=method,
            path=self._path,
            query=self._query,
            headers=self._headers,
            body=b"".join(self._body),
            scheme=self.scheme,
            client=self._peer,
            held=self._held,
            sink=self._sink,
        )
        if self._sink is not None:
            self._sink.finish()
            self._sink = None
        self._held = 0  # the request holds it now, until it is answered
        self._in_body = False
        self._body = []
        if not keep_alive:
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
                if self._send(request, result):
                    return  # a streamed body is being sent; the queue waits for it
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
        self._touch()  # a long answer is activity too: the idle time counts from its end
        if not self._send(request, response):
            self._serve_queue()

    def _send(self, request: Request, response: Response) -> bool:
        """Send the answer; True when its streamed body goes on being sent (the queue waits)."""
        self.budget.give_back(request.held)
        request.held = 0
        transport = self.transport
        stream = response.stream
        if transport is None or self.closing:
            if stream is not None:
                stream.close()
            return False
        if response.drop:
            self.closing = True
            transport.abort()
            return False
        close = request.headers.get("connection", "").lower() == "close"
        head_bytes, chunked = response_head(response, close, self.date_header)
        if stream is not None and request.method != "HEAD":
            transport.write(head_bytes)
            self.busy = True
            self._task = asyncio.ensure_future(self._pump(stream, chunked, close))
            return True
        if stream is not None:
            stream.close()
        body = b"" if request.method == "HEAD" else response.body
        # two buffers, not one: joining them would copy a large answer once more
        transport.writelines((head_bytes, body))
        if close:
            self.closing = True
            transport.close()
        return False

    async def _pump(self, stream: BodyStream, chunked: bool, close: bool) -> None:
        """Send a streamed body as it is produced, as fast as the client takes it."""
        transport = self.transport
        assert transport is not None and self._writable is not None
        transport.set_write_buffer_limits(high=STREAM_WRITE_BUFFER)
        complete = False
        try:
            if await self._send_through_socket(stream, chunked):
                complete = not self.closing
            while not self.closing and not complete:
                chunk = await stream.next_chunk()
                if chunk is None:
                    complete = True
                    break
                if self.closing:
                    break
                if chunked:
                    transport.writelines((b"%x\r\n" % len(chunk), chunk, b"\r\n"))
                else:
                    transport.write(chunk)
                if not self._writable.is_set():
                    # a client that takes nothing for idle_timeout is cut off
                    await asyncio.wait_for(self._writable.wait(), self.idle_timeout)
        except Exception as exc:
            # the head is sent: the only way left to say "broken" is to cut the connection
            if not isinstance(exc, (TimeoutError, ConnectionError)):  # a client gone is no news
                log.warning("a streamed answer failed while it was sent: %s", exc)
        finally:
            stream.close()
        self.busy = False
        if not complete or close:
            self.closing = True
            if complete and chunked:
                transport.write(b"0\r\n\r\n")
            if complete:
                transport.close()
            else:
                transport.abort()
            return
        if chunked:
            transport.write(b"0\r\n\r\n")
        self._touch()
        self._serve_queue()

    async def _send_through_socket(self, stream: BodyStream, chunked: bool) -> bool:
        """The whole body sent by the stream's thread straight to the socket, where it can
        (one stored file, by ``sendfile``: no copy through this process; plain TCP), once the
        head has left the transport; False where it cannot (nothing sent). Raises as the
        stream's thread did."""
        transport = self.transport
        send = getattr(stream, "send_through", None)
        if send is None or transport is None:
            return False
        deadline = time.monotonic() + self.idle_timeout
        while transport.get_write_buffer_size() and not self.closing:  # the head, rarely held
            if time.monotonic() > deadline:
                raise TimeoutError
            await asyncio.sleep(0.005)
        sock = None if self.closing else self._lent_socket()
        if sock is None:
            return False
        self._lent_stream = stream
        try:
            return bool(await send(sock, chunked))
        finally:
            self._lent_stream = None

    def _fail(self, status: int, message: bytes) -> None:
        request = Request("", "", "", {"connection": "close"}, b"", self.scheme, self._peer)
        self._give_back()
        self._drop_sink()
        self._body = []
        for queued in self.queue:
            self.budget.give_back(queued.held)
            if queued.sink is not None:
                queued.sink.abort()
        self.queue.clear()
        headers = {"Retry-After": "1"} if status == 503 else {}
        self._send(request, Response(status, message, "text/plain; charset=utf-8", headers=headers))
        self.closing = True  # nothing more is read from this connection

    def _touch(self) -> None:
        """The connection did something (bytes came, an answer went): its idle time restarts."""
        assert self._loop is not None
        self._active_at = self._loop.time()

    def _on_idle(self) -> None:
        """Close a connection that did nothing for ``idle_timeout``; else look again when it
        would have. One timer per connection, moved only when it runs out: moving it at every
        request (cancelled, made anew) cost more than the request's own routing. A connection
        that is answering (busy) or whose body a thread reads from its socket (which has a
        timeout of its own) is looked at again a whole idle time later."""
        self._idle = None
        if self.transport is None or self.closing or self._loop is None:
            return
        idle = self._loop.time() - self._active_at
        if self.busy or self._socket_body:
            wait = self.idle_timeout
        elif idle >= self.idle_timeout:
            self.closing = True
            self.transport.close()
            return
        else:
            wait = self.idle_timeout - idle
        self._idle = self._loop.call_later(wait, self._on_idle)


#: A header's name as sent → its lower-case text, for the few names clients send (decoded once
#: each, not at every request); at most _HEADER_NAMES_KEPT, so odd names cannot fill memory.
_HEADER_NAMES: dict[bytes, str] = {}
_HEADER_NAMES_KEPT = 256

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
        self.sink_for: SinkFactory | None = getattr(handler, "body_sink", None)

    def __call__(self) -> HttpProtocol:
        return HttpProtocol(
            self.handler, self.scheme, self.limits, self.budget, self.connections,
            self.sink_for, self.date_header,
        )

    def close_all(self) -> None:
        # abort, not close: at shutdown a TLS close handshake with an idle client could hang
        for connection in list(self.connections):
            connection.closing = True
            if connection.transport is not None:
                connection.transport.abort()
