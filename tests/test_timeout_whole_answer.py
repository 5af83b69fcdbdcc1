"""``--timeout`` bounds a whole call: connecting, sending and the entire answer (issue 18.7).

Against servers on loopback that answer too slowly ever to finish (tests/slow_servers.py): one
that trickles its answer a byte at a time — which no per-read timeout ever trips — one that
trickles already its headers, one that stalls before the headers and one that accepts and never
answers. Every client flavour gives up within about its timeout, with cause ``timeout``; so do
``sv7 check`` and ``sv7 run``, and a SIGTERM ends a run waiting on such a server within seconds.

Each call runs in a thread that the test waits for a bounded time, so that without the bound the
test fails (after a few seconds) instead of hanging for hours.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.client import FLAVOURS, ClientConfig, TransportCause, TransportFailure, connect
from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from tests.slow_servers import SlowServer
from tests.test_run import credentials_env

TIMEOUT_S = 1.5
#: What "within about the timeout" allows on a shared, loaded machine: the call must end, and
#: not after many more per-read timeouts (each TIMEOUT_S) or the trickle's 7 hours.
SLACK_S = 5.0


def outcome_of(call: Callable[[], object], wait_s: float) -> tuple[BaseException | None, float]:
    """(what ``call`` raised, seconds it took); fails the test when it is still running after
    ``wait_s`` (the server ends it when the test's ``with`` block closes)."""
    result: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:
            result.append(exc)
        else:
            result.append(None)

    start = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(wait_s)
    took = time.monotonic() - start
    assert result, f"still waiting after {took:.1f} s (timeout {TIMEOUT_S} s)"
    return result[0], took


def assert_timed_out(exc: BaseException | None, took: float) -> None:
    assert isinstance(exc, TransportFailure), repr(exc)
    assert exc.cause is TransportCause.TIMEOUT, exc
    assert took < TIMEOUT_S + SLACK_S, f"{took:.1f} s"


def config(server: SlowServer, tmp_path: Path) -> ClientConfig:
    return ClientConfig(server.url, connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S,
                        ca_file=server.ca_file, cache_dir=tmp_path)  # fmt: skip


@pytest.mark.parametrize("mode", ["trickle", "trickle-headers", "stall", "silent"])
@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_every_flavour_gives_up_on_a_slow_server(flavour: str, mode: str, tmp_path: Path) -> None:
    with SlowServer(mode) as server:
        exc, took = outcome_of(lambda: connect(config(server, tmp_path), flavour), 30)
    assert_timed_out(exc, took)
    assert "no complete answer within 1.5 s" in str(exc) or mode in ("stall", "silent")


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_a_trickle_over_tls_is_bounded_too(flavour: str, tmp_path: Path) -> None:
    with SlowServer("trickle", tls_dir=tmp_path / "tls") as server:
        exc, took = outcome_of(lambda: connect(config(server, tmp_path), flavour), 30)
    assert_timed_out(exc, took)


@pytest.fixture(scope="module")
def icat_documents() -> Iterator[Callable[[str], dict[str, bytes]]]:
    """What a real catalogue serves at once to a client that connects (its WSDL and schema,
    its REST version), rewritten for another base URL."""
    with LocalCatalogue(ServeConfig()) as cat:
        base = cat.service_url.removesuffix("/ICATService/ICAT")
        paths = ["/ICATService/ICAT?wsdl", "/ICATService/ICAT?xsd=1", "/icat/version"]
        bodies = {path: urllib.request.urlopen(base + path, timeout=10).read() for path in paths}

    def rewritten(new_base: str) -> dict[str, bytes]:
        return {p: b.replace(base.encode(), new_base.encode()) for p, b in bodies.items()}

    yield rewritten


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_a_call_after_connecting_is_bounded(
    flavour: str, tmp_path: Path, icat_documents: Callable[[str], dict[str, bytes]]
) -> None:
    """The WSDL (and the REST version) come at once; getApiVersion or the login trickles: the
    call path of each flavour (zeep's service call, suds' send, requests' POST) keeps the
    budget, not only the download of the WSDL."""
    server = SlowServer("trickle")
    server.documents.update(icat_documents(server.url.removesuffix("/ICATService/ICAT")))
    with server:
        def call() -> None:
            catalogue = connect(config(server, tmp_path), flavour)
            try:
                catalogue.login("simple", {"username": "ingest", "password": "ingest"})
            finally:
                catalogue.close()

        exc, took = outcome_of(call, 30)
    assert_timed_out(exc, took)
    if flavour != "python-icat":  # whose client asks the version while it is made: one budget
        assert isinstance(exc, TransportFailure) and not exc.url.endswith("?wsdl"), exc


def test_sv7_check_answers_critical_with_the_cause(tmp_path: Path) -> None:
    with SlowServer("trickle") as server:
        start = time.monotonic()
        result = subprocess.run(
            [sys.executable, "-m", "igestbench", "check", "--target", server.url,
             "--timeout", "3"],
            capture_output=True, text=True, timeout=120, env=credentials_env(),
        )  # fmt: skip
        took = time.monotonic() - start
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.startswith("ICAT CRITICAL - timeout: "), result.stdout
    assert "no complete answer within 3 s" in result.stdout
    # the version query and one check wait, the other checks are not attempted (plugin.py)
    assert took < 4 * 3 + 30, f"{took:.0f} s"


def run_against(server: SlowServer, out: Path, timeout: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "igestbench", "run", "--target", server.url, "--timeout", timeout,
         "--out", str(out)],
        env=credentials_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def result_of(out: Path) -> dict[str, Any]:
    (path,) = out.glob("*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_sv7_run_against_a_trickle_ends_unreachable(tmp_path: Path) -> None:
    with SlowServer("trickle") as server:
        proc = run_against(server, tmp_path, "3")
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 4, err
    assert "timeout: " in err and "no complete answer within 3 s" in err
    data = result_of(tmp_path)
    assert data["run"]["status"] == "failed"
    assert data["probe"]["http"]["error"] == "timeout"


def test_sigterm_ends_a_run_waiting_on_a_trickle(tmp_path: Path) -> None:
    with SlowServer("trickle") as server:
        proc = run_against(server, tmp_path, "60")
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("sv7: probe"):
                break
        time.sleep(1.0)  # inside the probe's WSDL download, which would take 60 s
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    assert proc.returncode == 143, err
    assert took < 10, f"{took:.1f} s"
    assert "Traceback" not in err
    assert result_of(tmp_path)["run"]["status"] == "interrupted"
