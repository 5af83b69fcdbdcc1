"""The rest of a streamed request body, read from the socket straight into buffers for its sink.

Once the headers of a request whose body streams to a :class:`~igestbench.mock.http.BodySink`
have been read and its length is known (``Content-Length``, no transfer coding), nothing in the
rest of the body needs parsing. :class:`DirectBody` takes the connection over for that many
bytes (``transport.set_protocol``) as an :class:`asyncio.BufferedProtocol`: the event loop
receives into buffers of its own, and each buffer, once full, goes to the sink whole. As a plain
protocol the same bytes were copied twice more on their way to the file — by the event loop into
a new ``bytes`` object for ``data_received``, and by httptools into another for ``on_body`` —
which was most of the server's CPU time per uploaded byte.

Buffers are never larger than what is left of the body, so nothing of a request pipelined after
it is read here; at the end the connection goes back to the HTTP protocol, which reads on. The
sink hands each buffer back once written (``recycle``), so a body of any size uses a few buffers
(at most the sink's high-water mark in flight, then reading pauses as with the parser).

On plain TCP a sink that can (``ThreadSink.take_socket``) reads such a body from the socket in
its own thread instead, past the event loop altogether (see :mod:`igestbench.mock.http`); this
reader stays for TLS connections, whose socket carries ciphertext.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from typing import Protocol

#: The most a buffer holds: one write to the file, one CRC call, one hand-over to the thread.
BUFFER_SIZE = 1024 * 1024


class DirectSink(Protocol):
    """What :class:`DirectBody` needs of a body sink."""

    #: Called by the sink's thread with each chunk once written (a buffer to use again).
    recycle: Callable[[bytes | bytearray], None] | None

    def feed(self, chunk: bytes | bytearray) -> bool:
        """Queue ``chunk``; True when reading should pause (the sink resumes it)."""


class BodyOwner(Protocol):
    """The HTTP protocol the connection goes back to; it hears of everything but the bytes."""

    def connection_lost(self, exc: Exception | None) -> None: ...

    def pause_writing(self) -> None: ...

    def resume_writing(self) -> None: ...

    def direct_body_read(self, size: int) -> None:
        """``size`` more bytes of the body went to the sink (idle timer, counts)."""

    def direct_body_done(self) -> None:
        """The whole body went to the sink: the request is complete, read the next one."""


class DirectBody(asyncio.BufferedProtocol):
    """``left`` bytes of a request body, from ``transport`` to ``sink`` (see module docstring)."""

    def __init__(
        self,
        owner: BodyOwner,
        transport: asyncio.Transport,
        sink: DirectSink,
        left: int,
        buffer_size: int = BUFFER_SIZE,
    ) -> None:
        self._owner = owner
        self._transport = transport
        self._sink = sink
        self._left = left  # bytes of the body not yet received
        self._size = max(1, min(buffer_size, left))
        self._free: collections.deque[bytearray] = collections.deque()
        self._buffer: bytearray | None = None
        self._filled = 0
        sink.recycle = self._recycle
        transport.set_protocol(self)

    def _recycle(self, chunk: bytes | bytearray) -> None:
        # the sink's thread: deque.append is atomic; only whole buffers are used again
        if isinstance(chunk, bytearray) and len(chunk) == self._size:
            self._free.append(chunk)

    # --- asyncio.BufferedProtocol --------------------------------------------------------

    def get_buffer(self, sizehint: int) -> memoryview:
        if self._buffer is None:
            self._buffer = self._free.popleft() if self._free else bytearray(self._size)
            self._filled = 0
        end = min(len(self._buffer), self._filled + self._left)
        return memoryview(self._buffer)[self._filled : end]

    def buffer_updated(self, nbytes: int) -> None:
        assert self._buffer is not None
        self._filled += nbytes
        self._left -= nbytes
        self._owner.direct_body_read(nbytes)
        if self._filled < len(self._buffer) and self._left:
            return
        buffer, self._buffer = self._buffer, None
        chunk = buffer if self._filled == len(buffer) else bytes(memoryview(buffer)[: self._filled])
        if self._sink.feed(chunk):
            self._transport.pause_reading()  # until the sink's thread has caught up
        if not self._left:
            self._sink.recycle = None
            self._transport.set_protocol(self._owner)  # type: ignore[arg-type]
            self._owner.direct_body_done()

    def connection_lost(self, exc: Exception | None) -> None:
        self._sink.recycle = None
        self._owner.connection_lost(exc)

    def pause_writing(self) -> None:
        self._owner.pause_writing()

    def resume_writing(self) -> None:
        self._owner.resume_writing()
