"""What the end-to-end tests of ``sv7 swarm`` share: master and workers as ``sv7`` processes on
loopback (Locust is never imported into pytest: it would monkey-patch this process)."""

from __future__ import annotations

import importlib.util
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from igestbench.client import ClientConfig, connect
from igestbench.icat.query import Condition, Query
from igestbench.mock.catalogue import LocalCatalogue
from tests.test_run import credentials_env

needs_locust = pytest.mark.skipif(
    importlib.util.find_spec("locust") is None,
    reason="Locust is not installed (pip install '.[distributed]')",
)
#: A secret for the tests (never one of a real swarm).
SECRET = "test-secret-of-the-swarm-0123456789"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def sv7(*args: str, log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    """``sv7 ARGS`` with the ingest account, its output in ``log``."""
    environ = {k: v for k, v in credentials_env().items() if k != "SV7_SWARM_SECRET"}
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "igestbench", *args], stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env={**environ, **(env or {})}, cwd=log.parent,
        )  # fmt: skip


class Swarm:
    """A master and its workers against ``url``; the master's options after the defaults."""

    def __init__(self, url: str, tmp: Path, *master_args: str, workers: int = 2,
                 secret: str | None = None, start_workers: bool = True) -> None:  # fmt: skip
        self.url, self.tmp, self.out = url, tmp, tmp / "out"
        self.port = free_port()
        self.env = {"SV7_SWARM_SECRET": secret} if secret else {}
        self.master = sv7(
            "swarm", "master", "--target", url, "--expect-workers", str(workers),
            "--bind", f"127.0.0.1:{self.port}", "--warmup", "0.3", "--out", str(self.out),
            "--wait-workers", "60", *master_args, log=tmp / "master.log", env=self.env,
        )  # fmt: skip
        self.workers: list[subprocess.Popen[bytes]] = []
        if start_workers:
            for _ in range(workers):
                self.add_worker()

    def add_worker(self, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
        """One more worker (``env`` on top of the swarm's: another secret, say)."""
        log = self.tmp / f"worker{len(self.workers)}.log"
        worker = sv7("swarm", "worker", "--master", f"127.0.0.1:{self.port}", "--target",
                     self.url, log=log, env={**self.env, **(env or {})})  # fmt: skip
        self.workers.append(worker)
        return worker

    def log(self) -> str:
        return (self.tmp / "master.log").read_text()

    def logs(self) -> str:
        """Every process's output, the master's first."""
        return "\n".join(p.read_text() for p in sorted(self.tmp.glob("*.log")))

    def wait_for(self, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log():
            assert self.master.poll() is None, self.log()
            assert time.monotonic() < deadline, self.log()
            time.sleep(0.05)

    def wait_for_worker(self, index: int, text: str, timeout: float = 60) -> None:
        log = self.tmp / f"worker{index}.log"
        deadline = time.monotonic() + timeout
        while text not in log.read_text():
            assert self.workers[index].poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)

    def stop(self, signum: signal.Signals) -> tuple[int, float]:
        """Send ``signum`` to the master: (its exit code, seconds it took to exit)."""
        began = time.monotonic()
        self.master.send_signal(signum)
        code = self.master.wait(60)
        return code, time.monotonic() - began

    def finish(self, timeout: float = 120, expect: int = 0) -> dict[str, Any]:
        try:
            code = self.master.wait(timeout)
            for worker in self.workers:
                worker.wait(30)  # the master's quit ends them
        finally:
            self.kill()
        assert code == expect, self.logs()
        return self.result()

    def result(self) -> dict[str, Any]:
        (path,) = self.out.glob("*.json")
        result: dict[str, Any] = json.loads(path.read_text())
        return result

    def __enter__(self) -> Swarm:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.kill()

    def kill(self) -> None:
        for proc in (self.master, *self.workers):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def left_below(url: str, tag: str) -> int:
    """Facilities named by ``tag`` and Datafiles made by workers still on the catalogue."""
    client = connect(ClientConfig(url), "zeep")
    client.login("simple", {"username": "root", "password": "root"})
    try:
        (n,) = client.search(Query("Facility").where({"name": Condition("LIKE", tag + "%")})
                             .count())  # fmt: skip
        (files,) = client.search("SELECT COUNT(d) FROM Datafile d WHERE d.name LIKE 'swarm-%'")
        return int(n) + int(files)
    finally:
        client.close()


def no_traceback(text: str, what: Sequence[str] = ("Traceback", "CRITICAL")) -> bool:
    return not any(w in text for w in what)


def served(cat: LocalCatalogue) -> str:
    return cat.service_url
