"""Bodies that stream between the event loop and a worker thread, never held whole in memory.

Two bridges, one per direction, each with flow control so that neither side can make the other
hold more than a few MiB:

* :class:`ThreadSink` — a request body on its way to disk. The event loop feeds
  (:meth:`~ThreadSink.feed`) each chunk as it arrives; a thread of its own hands the chunks to
  a :class:`Consumer` (which writes them to a file, parses a multipart form …). When more
  than ``high_water`` bytes wait, ``feed`` says so and the HTTP layer stops reading the
  socket until the thread has caught up (``on_drain``): a client faster than the disk is
  slowed by TCP, not buffered. Once the rest of a body of known length needs no parsing, the
  HTTP layer may hand the connection's socket itself to the sink (:meth:`~ThreadSink.take_socket`,
  plain TCP only): the same thread then reads the body from the socket into one buffer and
  writes it — no hand-over between threads per chunk, nor a second thread's wake-ups.
* :class:`ThreadStream` — an answer produced in a thread (a file read in blocks, a zip being
  written) that the event loop sends as it comes. The producer blocks once ``max_chunks``
  chunks wait; the loop takes them as the socket accepts them (the HTTP layer honours
  ``pause_writing``). Closing the stream (the client went away) stops the producer at its next
  chunk. A producer that can send itself to a socket (one stored file: ``sendfile``) may be
  given the connection's socket instead (:meth:`~ThreadStream.send_through`, plain TCP only).

The event loop never touches a file here: file I/O and checksums run in the threads, so a slow
disk or a 2 GiB transfer never stalls the other connections.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, Protocol

log = logging.getLogger(__name__)

#: A request body may wait in memory up to this much before the socket stops being read.
SINK_HIGH_WATER = 8 * 1024 * 1024
#: Reading resumes once the writer thread has brought the backlog below this.
SINK_LOW_WATER = 2 * 1024 * 1024
#: The buffer a sink reads its socket into (:meth:`ThreadSink.take_socket`): one write, one CRC.
SOCKET_BUFFER = 1024 * 1024

#: ``on_done(nbytes, error)`` of :meth:`ThreadSink.take_socket`, called on the event loop.
SocketDone = Callable[[int, "BaseException | None"], None]


class Consumer(Protocol):
    """The thread side of a streamed request body."""

    def write(self, chunk: bytes | bytearray) -> None: ...

    def close(self) -> Any:
        """The body is complete: finish and return what the handler needs (size, checksum …)."""

    def abort(self) -> None:
        """The body will never be complete (connection lost, request refused): undo."""


class StreamClosed(Exception):
    """The consumer of a :class:`ThreadStream` is gone; the producer should stop."""


class ThreadSink:
    """A request body fed by the event loop and consumed in a thread (see module docstring)."""

    def __init__(
        self,
        consumer: Consumer,
        executor: Executor,
        loop: asyncio.AbstractEventLoop,
        high_water: int = SINK_HIGH_WATER,
        low_water: int = SINK_LOW_WATER,
    ) -> None:
        self.consumer = consumer
        self.loop = loop
        self.high_water = high_water
        self.low_water = low_water
        #: Called on the event loop once a paused body may be read again (set by the HTTP layer).
        self.on_drain: Callable[[], None] | None = None
        #: Called in the thread with each chunk once the consumer is done with it (the HTTP
        #: layer's direct reader uses its buffers again).
        self.recycle: Callable[[bytes | bytearray], None] | None = None
        #: The consumer's ``close()`` result, or its exception; set once the thread is done.
        self.done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self.received = 0
        self._cond = threading.Condition()
        self._chunks: collections.deque[bytes | bytearray] = collections.deque()
        self._waiting = 0
        self._paused = False
        self._ended = False
        self._aborted = False
        #: (socket, bytes to read from it, callback) once the HTTP layer handed the socket over
        self._socket: tuple[socket.socket, int, SocketDone] | None = None
        executor.submit(self._run)

    # --- event loop side -----------------------------------------------------------------

    def feed(self, chunk: bytes | bytearray) -> bool:
        """Queue ``chunk``; True when the reader should pause until ``on_drain``."""
        self.received += len(chunk)
        with self._cond:
            self._chunks.append(chunk)
            self._waiting += len(chunk)
            self._cond.notify()
            if self._waiting >= self.high_water:
                self._paused = True
            return self._paused

    def finish(self) -> None:
        """The whole body has arrived."""
        with self._cond:
            self._ended = True
            self._cond.notify()

    def take_socket(self, sock: socket.socket, left: int, on_done: SocketDone) -> None:
        """Read the body's last ``left`` bytes from ``sock`` (a blocking duplicate of the
        connection's socket, with a timeout; the transport stops reading meanwhile) in the
        sink's thread, after the chunks fed before; ``on_done(nbytes, error)`` follows on the
        event loop — ``error`` set (the client went, the timeout passed), the body is aborted.
        The sink owns ``sock`` from now on."""
        with self._cond:
            self.on_drain = None  # the transport stays paused until on_done
            self._socket = (sock, left, on_done)
            self._cond.notify()

    def abort(self) -> None:
        """The body will not be complete: the consumer undoes what it did."""
        with self._cond:
            self._aborted = True
            self._chunks.clear()
            self._waiting = 0
            if self._socket is not None:  # wake a thread waiting in recv
                with contextlib.suppress(OSError):
                    self._socket[0].shutdown(socket.SHUT_RDWR)
            self._cond.notify()

    # --- worker thread side --------------------------------------------------------------

    def _run(self) -> None:
        failure: BaseException | None = None
        try:
            while True:
                with self._cond:
                    while not (self._chunks or self._ended or self._aborted or self._socket):
                        self._cond.wait()
                    if self._aborted:
                        break
                    chunks = list(self._chunks)
                    self._chunks.clear()
                    ended = self._ended
                    from_socket = self._socket is not None and not chunks
                if from_socket:
                    failure = self._read_socket(failure)
                    continue
                if failure is None:
                    try:
                        for chunk in chunks:
                            self.consumer.write(chunk)
                            if self.recycle is not None:
                                self.recycle(chunk)
                    except Exception as exc:  # a full disk …: keep reading, answer at the end
                        failure = exc
                self._drained(sum(map(len, chunks)))
                if ended and not chunks:
                    break
        except BaseException as exc:  # pragma: no cover - defensive: never leave done unset
            failure = exc
        if self._aborted or failure is not None:
            try:
                self.consumer.abort()
            except Exception:  # pragma: no cover - best effort
                log.exception("undoing a streamed request body failed")
        if self._aborted:
            self.done.set_exception(ConnectionAbortedError("the request body was not complete"))
        elif failure is not None:
            self.done.set_exception(failure)
        else:
            try:
                self.done.set_result(self.consumer.close())
            except Exception as exc:
                self.done.set_exception(exc)

    def _read_socket(self, failure: BaseException | None) -> BaseException | None:
        """The body's rest from the socket to the consumer (see :meth:`take_socket`); the
        consumer's failure, if any (its bytes are still read, as from the event loop)."""
        assert self._socket is not None
        sock, left, on_done = self._socket
        size = max(1, min(SOCKET_BUFFER, left))
        buffer = bytearray(size)
        view = memoryview(buffer)
        read = 0
        error: BaseException | None = None
        try:
            while left:
                filled = 0
                want = min(size, left)
                while filled < want:
                    n = sock.recv_into(view[filled:want])
                    if not n:
                        raise ConnectionResetError("the client closed the connection mid-body")
                    filled += n
                left -= filled
                read += filled
                self.received += filled
                if failure is None:
                    try:
                        self.consumer.write(buffer if filled == size else bytes(view[:filled]))
                    except Exception as exc:  # a full disk …: keep reading, answer at the end
                        failure = exc
        except OSError as exc:  # the client went, the timeout passed, abort() shut it down
            error = exc
        finally:
            view.release()
            with self._cond:
                self._socket = None
                sock.close()
                if error is not None:
                    self._aborted = True
        self.loop.call_soon_threadsafe(on_done, read, error)
        return failure

    def _drained(self, n: int) -> None:
        with self._cond:
            self._waiting -= n
            resume = self._paused and self._waiting < self.low_water
            if resume:
                self._paused = False
        if resume and self.on_drain is not None:
            self.loop.call_soon_threadsafe(self.on_drain)


class ThreadStream:
    """An answer body produced in a thread and sent by the event loop (see module docstring).

    ``produce(emit)`` runs in ``executor`` and calls ``emit(chunk)`` for each piece of the body;
    ``emit`` blocks while ``max_chunks`` chunks wait and raises :class:`StreamClosed` once the
    stream was closed. An exception in ``produce`` reaches :meth:`next_chunk`. ``finalize``
    runs once at the end whatever happens: when both the producer has ended and the stream was
    closed (the HTTP layer closes it once the answer is sent, or the client is gone) — at
    :meth:`close` alone when the producer never started (a HEAD request).
    """

    def __init__(
        self,
        produce: Callable[[Callable[[bytes], None]], None],
        executor: Executor,
        loop: asyncio.AbstractEventLoop,
        max_chunks: int = 4,
        finalize: Callable[[], None] | None = None,
    ) -> None:
        self.loop = loop
        self._finalize = finalize
        self.max_chunks = max_chunks
        self._cond = threading.Condition()
        self._chunks: collections.deque[bytes] = collections.deque()
        self._done = False
        self._closed = False
        self._error: BaseException | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._produce = produce
        self._executor = executor
        self._started = False
        self._socket: socket.socket | None = None  # lent by send_through while it sends

    def _start(self) -> None:
        with self._cond:
            self._started = True
        self._executor.submit(self._run)

    def _run(self) -> None:
        error: BaseException | None = None
        try:
            self._produce(self._emit)
        except StreamClosed:
            pass
        except BaseException as exc:
            error = exc
        with self._cond:  # done and closed are read and set under one lock: one side finalizes
            self._done = True
            self._error = error
            closed = self._closed
            waiter, self._waiter = self._waiter, None
        if closed:  # the answer is gone already: nothing more to wait for
            self._run_finalize()
        if waiter is not None:
            self.loop.call_soon_threadsafe(_wake, waiter)

    def _emit(self, chunk: bytes) -> None:
        if not chunk:
            return
        with self._cond:
            while len(self._chunks) >= self.max_chunks and not self._closed:
                self._cond.wait()
            if self._closed:
                raise StreamClosed
            self._chunks.append(chunk)
            waiter, self._waiter = self._waiter, None
        if waiter is not None:
            self.loop.call_soon_threadsafe(_wake, waiter)

    async def send_through(self, sock: socket.socket, chunked: bool) -> bool:
        """Have the producer send the whole body to ``sock`` itself, in the thread (its
        ``send(sock, chunked)``: a file by ``sendfile``), and wait for it; False, with ``sock``
        closed and nothing sent, when it cannot (a zip: use :meth:`next_chunk`). ``sock`` is a
        duplicate of the connection's socket with a timeout, closed here once sent; an error
        in sending is raised here. Call before :meth:`next_chunk`, from the event loop."""
        send = getattr(self._produce, "send", None)
        if send is None or self._started:
            sock.close()
            return False

        def produce(emit: Callable[[bytes], None]) -> None:
            try:
                if not self._closed:
                    send(sock, chunked)
            finally:
                with self._cond:
                    self._socket = None
                    sock.close()

        with self._cond:
            self._socket = sock
        self._produce = produce
        # the producer emits no chunk (it sends): next_chunk waits for its end or its error
        while await self.next_chunk() is not None:  # pragma: no cover - nothing is emitted
            pass
        return True

    async def next_chunk(self) -> bytes | None:
        """The next piece of the body; None at its end. Call from the event loop."""
        if not self._started:
            self._start()
        while True:
            with self._cond:
                if self._chunks:
                    chunk = self._chunks.popleft()
                    self._cond.notify()
                    return chunk
                if self._error is not None:
                    raise self._error
                if self._done:
                    return None
                waiter = self.loop.create_future()
                self._waiter = waiter
            await waiter

    def close(self) -> None:
        """Stop the producer (at its next chunk) and drop what waits."""
        with self._cond:
            self._closed = True
            self._chunks.clear()
            self._cond.notify_all()
            ended = not self._started or self._done
            if self._socket is not None:  # wake a thread sending to it
                with contextlib.suppress(OSError):
                    self._socket.shutdown(socket.SHUT_RDWR)
        if ended:
            self._run_finalize()

    def _run_finalize(self) -> None:
        with self._cond:
            finalize, self._finalize = self._finalize, None
        if finalize is not None:
            try:
                finalize()
            except Exception:  # pragma: no cover - best effort
                log.exception("finishing a streamed answer failed")


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
