"""The messages of the local catalogue's HTTP server (:mod:`igestbench.mock.http`) and what a
handler is given and gives back: a request, its answer (whole or streamed), where a large
request body may stream to, and the limits that keep clients from making the server hold
memory. Handlers (the SOAP, REST and IDS fronts) import these without the server itself."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol


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


class BodySink(Protocol):
    """Where a streamed request body goes (see :class:`~igestbench.mock.http_stream.ThreadSink`)."""

    on_drain: Callable[[], None] | None
    #: Called with each chunk once consumed (the direct reader's buffers are used again).
    recycle: Callable[[bytes | bytearray], None] | None

    def feed(self, chunk: bytes | bytearray) -> bool:
        """Take a chunk; True: stop reading until ``on_drain`` is called."""

    def finish(self) -> None: ...

    def abort(self) -> None: ...


class BodyStream(Protocol):
    """An answer body sent as it is produced (see mock/http_stream.py's ThreadStream)."""

    async def next_chunk(self) -> bytes | None: ...

    def close(self) -> None: ...


#: ``body_sink(method, path, headers)`` of a handler: a sink for the body, or None (held whole).
SinkFactory = Callable[[str, str, dict[str, str]], "BodySink | None"]


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
    #: Where the body went instead of ``body`` when the handler streamed it (see BodySink).
    sink: BodySink | None = None


@dataclass
class Response:
    status: int
    body: bytes
    #: None: no Content-Type header (ICAT's REST front sends none with a 204 or 501)
    content_type: str | None = "text/xml; charset=utf-8"
    #: Close the connection without sending anything (fault injection).
    drop: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    #: The body, produced as it is sent (``body`` is then unused).
    stream: BodyStream | None = None
    #: Content-Length of a streamed body; None: sent with chunked transfer coding.
    length: int | None = None


Handler = Callable[[Request], "Response | Awaitable[Response]"]
