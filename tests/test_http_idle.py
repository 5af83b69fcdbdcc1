"""The local catalogue's idle limit (``sv7 serve --idle-timeout``): a keep-alive connection that
does nothing for that long is closed; one that keeps asking is not, however long it lives.

The limit is one timer per connection, moved only when it runs out (mock/http.py:
``HttpProtocol._on_idle``), not at every request: these tests hold it to what it promises.
Times are generous (a busy machine): each test asserts what happened, never how fast.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from igestbench.config import FaultKnobs, ServeConfig
from igestbench.mock.catalogue import LocalCatalogue

IDLE_S = 0.6
#: a GET of the service's page: answered on the event loop, no session needed
REQUEST = b"GET /ICATService/ICAT HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.fixture(scope="module")
def idle_catalogue() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(idle_timeout_s=IDLE_S)) as cat:
        yield cat


def _connect(cat: LocalCatalogue) -> socket.socket:
    return socket.create_connection(("127.0.0.1", cat.port), timeout=10)


def _answer(sock: socket.socket) -> bytes:
    """One whole answer (its head says its length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the connection was closed before the answer"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))  # fmt: skip
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection was closed in the middle of the answer"
        body += chunk
    return head


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``sock`` (no answer pending) within ``seconds``."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False


def test_a_silent_connection_is_closed_after_the_idle_time(idle_catalogue: LocalCatalogue) -> None:
    with _connect(idle_catalogue) as sock:
        sock.sendall(REQUEST)
        assert _answer(sock).startswith(b"HTTP/1.1 200 ")
        began = time.monotonic()
        assert _closed_within(sock, IDLE_S * 10)
        assert time.monotonic() - began >= IDLE_S * 0.8  # not before its time


def test_a_connection_that_keeps_asking_outlives_the_idle_time(
    idle_catalogue: LocalCatalogue,
) -> None:
    """Requests a third of the idle time apart, for three idle times: each one restarts the
    idle time (a timer that ran from the connection's start would close it), and the silence
    after them ends it."""
    with _connect(idle_catalogue) as sock:
        began = time.monotonic()
        while time.monotonic() - began < IDLE_S * 3:
            sock.sendall(REQUEST)
            assert _answer(sock).startswith(b"HTTP/1.1 200 ")
            time.sleep(IDLE_S / 3)
        assert _closed_within(sock, IDLE_S * 10)


def test_a_connection_silent_after_an_answer_longer_than_the_idle_time_is_closed() -> None:
    """An answer that took longer than the idle time (the idle timer ran out while it was being
    made) is followed by an idle time of its own, and then the connection is closed. Before,
    a timer that ran out during an answer was not started again: such a connection stayed
    open for good."""
    knobs = FaultKnobs(latency_ms=IDLE_S * 1000 * 2)
    config = ServeConfig(idle_timeout_s=IDLE_S, knobs=knobs)
    with LocalCatalogue(config) as cat, _connect(cat) as sock:
        sock.sendall(b"GET /icat/version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _answer(sock).startswith(b"HTTP/1.1 200 ")
        # the client may still ask something right after the long answer
        sock.sendall(b"GET /icat/version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert _answer(sock).startswith(b"HTTP/1.1 200 ")
        assert _closed_within(sock, IDLE_S * 10)
