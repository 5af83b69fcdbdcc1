"""The bridges that stream bodies between the event loop and threads: flow control both ways,
nothing held beyond a few chunks, a stop that stops the other side, and the HTTP layer's
``100 Continue``."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httptools

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.http_stream import StreamClosed, ThreadSink, ThreadStream


class SlowConsumer:
    def __init__(self) -> None:
        self.gate = threading.Event()
        self.got = 0
        self.aborted = False

    def write(self, chunk: bytes) -> None:
        self.gate.wait(5)
        self.got += len(chunk)

    def close(self) -> int:
        return self.got

    def abort(self) -> None:
        self.aborted = True


def test_a_sink_asks_to_pause_when_behind_and_resumes_when_drained() -> None:
    async def scenario() -> tuple[list[bool], int, bool]:
        loop = asyncio.get_running_loop()
        consumer = SlowConsumer()
        with ThreadPoolExecutor(1) as pool:
            sink = ThreadSink(consumer, pool, loop, high_water=100, low_water=50)
            drained = asyncio.Event()
            sink.on_drain = drained.set
            pauses = [sink.feed(b"x" * 40) for _ in range(4)]  # 160 bytes wait: over 100
            consumer.gate.set()
            await asyncio.wait_for(drained.wait(), 5)  # the thread caught up
            sink.finish()
            total = await asyncio.wrap_future(sink.done)
        return pauses, total, consumer.aborted

    pauses, total, aborted = asyncio.run(scenario())
    assert pauses[:2] == [False, False] and pauses[-1] is True
    assert total == 160 and not aborted


def test_an_aborted_sink_undoes_and_its_result_says_so() -> None:
    async def scenario() -> tuple[bool, str]:
        consumer = SlowConsumer()
        consumer.gate.set()
        with ThreadPoolExecutor(1) as pool:
            sink = ThreadSink(consumer, pool, asyncio.get_running_loop())
            sink.feed(b"partial")
            sink.abort()
            try:
                await asyncio.wrap_future(sink.done)
            except ConnectionAbortedError as exc:
                return consumer.aborted, str(exc)
        return consumer.aborted, "no error"

    aborted, said = asyncio.run(scenario())
    assert aborted and "not complete" in said


def test_a_stream_holds_few_chunks_and_stops_its_producer_when_closed() -> None:
    produced: list[int] = []
    finalized: list[bool] = []
    stopped = threading.Event()

    def produce(emit: Any) -> None:
        try:
            for n in range(1000):
                emit(b"%d" % n)
                produced.append(n)
        except StreamClosed:
            stopped.set()
            raise

    async def scenario() -> list[bytes | None]:
        with ThreadPoolExecutor(1) as pool:
            stream = ThreadStream(produce, pool, asyncio.get_running_loop(), max_chunks=3,
                                  finalize=lambda: finalized.append(True))  # fmt: skip
            first = [await stream.next_chunk() for _ in range(2)]
            await asyncio.sleep(0.2)
            assert len(produced) <= 2 + 3 + 1  # the producer waits: at most max_chunks ahead
            stream.close()
            await asyncio.to_thread(stopped.wait, 5)
        return first

    assert asyncio.run(scenario()) == [b"0", b"1"]
    assert stopped.is_set() and finalized == [True]


def test_a_stream_never_started_is_finalized_at_close() -> None:
    finalized: list[bool] = []

    async def scenario() -> None:
        with ThreadPoolExecutor(1) as pool:
            stream = ThreadStream(lambda emit: emit(b"x"), pool, asyncio.get_running_loop(),
                                  finalize=lambda: finalized.append(True))  # fmt: skip
            stream.close()

    asyncio.run(scenario())
    assert finalized == [True]  # a HEAD answer releases its lock too


def test_expect_100_continue_is_answered_before_the_body() -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        host, port = cat.url.split("//")[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(b"PUT /ids/put HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
                         b"Expect: 100-continue\r\n\r\n")  # fmt: skip
            start = time.monotonic()
            interim = sock.recv(100)
            assert interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
            assert time.monotonic() - start < 1.0
            sock.sendall(b"abc")
            answer = sock.recv(4096)
        assert answer.startswith(b"HTTP/1.1 400 ")  # no session: ids.server's BadRequest


class CountingParser:
    """httptools' parser, counting the bytes it is fed."""

    fed = 0
    real: Any = None

    def __init__(self, protocol: Any) -> None:
        self._parser = CountingParser.real(protocol)

    def feed_data(self, data: bytes) -> None:
        CountingParser.fed += len(data)
        self._parser.feed_data(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)


def _answers(sock: socket.socket, count: int) -> list[bytes]:
    """The first ``count`` answers' heads and bodies (Content-Length framed)."""
    data, answers = b"", []
    while len(answers) < count:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            if len(rest) >= length:
                answers.append(head + sep + rest[:length])
                data = rest[length:]
                continue
        more = sock.recv(65536)
        assert more, f"connection closed after {len(answers)} answers"
        data += more
    return answers


def test_a_streamed_body_of_known_length_bypasses_the_parser(monkeypatch: Any) -> None:
    """The body of a put goes to its sink past httptools (no second copy of each chunk), and
    the request pipelined after it is still parsed and answered, by a new parser."""
    CountingParser.real, CountingParser.fed = httptools.HttpRequestParser, 0
    monkeypatch.setattr(httptools, "HttpRequestParser", CountingParser)
    size = 3 * 1024 * 1024
    with LocalCatalogue(ServeConfig()) as cat:
        host, port = cat.url.split("//")[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(f"PUT /ids/put HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n\r\n"
                         .encode())  # fmt: skip
            piece = b"x" * 65536
            for _ in range(size // len(piece) - 1):
                sock.sendall(piece)
            # the body's end and the next request in one segment
            sock.sendall(piece + b"GET /ids/ping HTTP/1.1\r\nHost: x\r\n\r\n")
            put, ping = _answers(sock, 2)
    assert put.startswith(b"HTTP/1.1 400 ")  # no session: ids.server's BadRequest, once read
    assert ping.startswith(b"HTTP/1.1 200 ") and ping.endswith(b"IdsOK")
    assert CountingParser.fed < size // 2, CountingParser.fed
