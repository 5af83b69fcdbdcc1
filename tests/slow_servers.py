"""Servers on loopback that answer too slowly to ever finish, for the tests of ``--timeout``.

Each accepts connections and then, per ``mode``:

* ``trickle``: reads the request, answers ``200`` with a Content-Length of 100,000 and then
  sends the body one byte every :data:`TRICKLE_INTERVAL_S` — every wait for data is short, so a
  per-read timeout never trips, and the answer would take hours;
* ``trickle-headers``: the same, but already the status line and headers come a byte at a time;
* ``stall``: reads the request and never answers;
* ``silent``: accepts and never reads nor answers.

``documents`` (request target → body) are answered at once, as a real server would (a WSDL, a
version), on the same keep-alive connection: the slowness then meets a client's calls after its
connect (a login), not only the connect.

Every connection ends when the server stops (at the end of the ``with`` block).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

MODES = ("trickle", "trickle-headers", "stall", "silent")
TRICKLE_INTERVAL_S = 0.25
_HEADERS = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/xml; charset=utf-8\r\nContent-Length: 100000\r\n\r\n"
)


class SlowServer:
    """``with SlowServer("trickle") as server: server.url``; ``tls``: a CA-signed certificate
    (``server.ca_file`` is its CA)."""

    def __init__(
        self, mode: str, tls_dir: Path | None = None, documents: Mapping[str, bytes] | None = None
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"mode: one of {MODES}")
        self.mode = mode
        self.documents = dict(documents or {})
        self._stop = threading.Event()
        #: set once a client connected
        self.accepted = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._threads: list[threading.Thread] = []
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._tls: ssl.SSLContext | None = None
        self.ca_file: Path | None = None
        if tls_dir is not None:
            from igestbench.mock.tls import make_tls

            files = make_tls("ca", tls_dir)
            self._tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            self._tls.load_cert_chain(files.cert, files.key)
            self.ca_file = files.ca
        port = self._listener.getsockname()[1]
        scheme = "https" if self._tls is not None else "http"
        #: the service URL a client is given
        self.url = f"{scheme}://127.0.0.1:{port}/ICATService/ICAT"

    def __enter__(self) -> SlowServer:
        accept = threading.Thread(target=self._accept, name="slow-server", daemon=True)
        accept.start()
        self._threads.append(accept)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._listener.close()
        with self._lock:
            for conn in self._open:
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
                conn.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def _accept(self) -> None:
        self._listener.settimeout(0.2)
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self._open.append(conn)
            self.accepted.set()
            handler = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            handler.start()
            self._threads.append(handler)

    def _serve(self, conn: socket.socket) -> None:
        with contextlib.suppress(OSError, ssl.SSLError):
            if self._tls is not None:
                conn.settimeout(5)
                conn = self._tls.wrap_socket(conn, server_side=True)
                with self._lock:
                    self._open.append(conn)
            conn.settimeout(0.2)
            if self.mode == "silent":
                self._stop.wait()
                return
            while (document := self._read_request(conn)) is not None:
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(document)}\r\n\r\n"
                conn.sendall(head.encode() + document)
            if self.mode == "stall":
                self._stop.wait()
                return
            start = 0 if self.mode == "trickle-headers" else len(_HEADERS)
            if start:
                conn.sendall(_HEADERS)
            for i in range(start, len(_HEADERS) + 100_000):
                if self._stop.wait(TRICKLE_INTERVAL_S):
                    return
                conn.sendall(_HEADERS[i : i + 1] if i < len(_HEADERS) else b"x")

    def _read_request(self, conn: socket.socket) -> bytes | None:
        """Read a request's headers (a body is left unread); the document it asks for, if any."""
        seen = b""
        while b"\r\n\r\n" not in seen and not self._stop.is_set():
            try:
                chunk = conn.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                return None
            seen += chunk
        method, _, rest = seen.partition(b" ")
        target = rest.split(b" ", 1)[0].decode("latin-1")
        return self.documents.get(target) if method == b"GET" else None


class DroppingPort:
    """A loopback port where a connection never comes, as behind a firewall that drops the
    packets: a listener with a backlog of one that never accepts, its queue filled first, so
    that Linux drops every further SYN (``tcp_abort_on_overflow`` 0, the default) and a connect
    waits until its timeout. ``with DroppingPort() as port: port.url``."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=0)
        port = self._listener.getsockname()[1]
        self._fillers: list[socket.socket] = []
        for _ in range(4):  # more than the queue takes: the rest wait in SYN_SENT
            filler = socket.socket()
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
            self._fillers.append(filler)
        #: the service URL a client is given
        self.url = f"http://127.0.0.1:{port}/ICATService/ICAT"

    def __enter__(self) -> DroppingPort:
        return self

    def __exit__(self, *exc_info: object) -> None:
        for filler in self._fillers:
            filler.close()
        self._listener.close()
