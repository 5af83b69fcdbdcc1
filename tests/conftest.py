"""Fixtures shared by the project's tests: local catalogues on loopback ports."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue


@pytest.fixture(scope="module")
def catalogue() -> Iterator[LocalCatalogue]:
    """A 6.2 local catalogue shared by a test module (tests must not rely on each other's data)."""
    with LocalCatalogue(ServeConfig()) as cat:
        yield cat


@pytest.fixture()
def fresh_catalogue() -> Iterator[LocalCatalogue]:
    """A new, empty 6.2 local catalogue for one test."""
    with LocalCatalogue(ServeConfig()) as cat:
        yield cat


@pytest.fixture(scope="module")
def catalogue_43() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(profile="4.3")) as cat:
        yield cat


class _NotIcat(http.server.BaseHTTPRequestHandler):
    """A web server that is not ICAT: 404 below /missing, an HTML page everywhere else."""

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status = 404 if self.path.startswith("/missing") else 200
        page = b"<html><body><h1>Welcome to nginx!</h1></body></html>"
        self.send_response(status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass  # a test's output is no access log


@pytest.fixture(scope="module")
def web_server() -> Iterator[str]:
    """The base URL of a plain web server on loopback (what a wrong address often reaches)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotIcat)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()
