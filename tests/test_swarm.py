"""sv7 swarm: the lossless merge of the workers' steps, the isolation of gevent, and the whole
distributed sweep on loopback (a local catalogue, a master and two worker processes).

The end-to-end tests start Locust in subprocesses only: importing it here would monkey-patch
this pytest process. They skip where Locust is not installed; CI installs it (tox: the
``distributed`` extra)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.client import ClientConfig, connect
from igestbench.config import ServeConfig
from igestbench.errors import UsageError
from igestbench.icat.query import Condition, Query
from igestbench.measure.stats import LatencyStats
from igestbench.measure.sweep import StepResult
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.swarm.command import host_port, rate_list
from igestbench.swarm.messages import StepReport, merge_parallel, step_from_wire, step_to_wire
from tests.test_run import credentials_env

ROOT = Path(__file__).resolve().parents[1]
needs_locust = pytest.mark.skipif(
    importlib.util.find_spec("locust") is None,
    reason="Locust is not installed (pip install '.[distributed]')",
)


def _step(latencies_ms: list[float], rate: float = 10.0, errors: int = 0) -> StepResult:
    corrected = LatencyStats.of(round(ms * 1e6) for ms in latencies_ms)
    uncorrected = LatencyStats.of(round(ms * 0.9e6) for ms in latencies_ms)
    return StepResult(
        demanded_rate=rate, duration_s=2.0, sent=len(latencies_ms) + errors, request_rate=rate,
        response_rate=rate, late=1, unsent=0, corrected=corrected, uncorrected=uncorrected,
        lateness=LatencyStats.of([50_000] * len(latencies_ms)),
        errors={"timeout": errors} if errors else {}, ops={},
    )  # fmt: skip


def test_a_step_crosses_the_wire_unchanged() -> None:
    step = _step([1.5, 2.25, 40.0, 3.0], errors=2)
    wire = json.loads(json.dumps(StepReport(3, step, 12.5, 4, 128, 0.25).to_wire()))  # as msgpack
    again = StepReport.from_wire(wire)
    assert again.index == 3 and again.users == 4 and again.cpu_percent == 12.5
    assert (again.cap, again.capped_s) == (128, 0.25)
    assert step_to_wire(again.step) == step_to_wire(step)
    assert again.step.corrected.summary() == step.corrected.summary()
    assert again.step.corrected.exact and again.step.corrected.sum_ns == step.corrected.sum_ns


def test_the_merged_step_is_the_pooled_calls_of_the_workers() -> None:
    a = [1.0 + i * 0.01 for i in range(300)]
    b = [5.0 + i * 0.5 for i in range(200)]
    merged = merge_parallel([step_from_wire(step_to_wire(_step(x))) for x in (a, b)], 20.0)
    pooled = LatencyStats.of(round(ms * 1e6) for ms in a + b)
    assert merged.corrected.count == 500 == len(a) + len(b)
    # exact, not an average of the workers' means, and the same percentiles as one process
    assert merged.corrected.mean_ms == pooled.mean_ms
    assert merged.corrected.summary() == pooled.summary()
    assert merged.sent == 500 and merged.late == 2 and merged.request_rate == 20.0
    assert merged.demanded_rate == 20.0


def test_a_histogram_beyond_the_raw_limit_still_merges_losslessly() -> None:
    many = [0.5 + (i % 997) * 0.01 for i in range(12_000)]  # past RAW_LIMIT: histogram only
    parts = [step_from_wire(step_to_wire(_step(many[i::2]))) for i in range(2)]
    merged = merge_parallel(parts, 20.0)
    pooled = LatencyStats.of(round(ms * 1e6) for ms in many)
    assert merged.corrected.count == 12_000
    assert merged.corrected.mean_ms == pooled.mean_ms
    assert merged.corrected.percentiles_ms() == pooled.percentiles_ms()


def test_an_inconsistent_series_is_refused() -> None:
    wire = LatencyStats.of([1_000_000, 2_000_000]).to_wire()
    wire["count"] = 3
    with pytest.raises(ValueError, match="3 calls"):
        LatencyStats.from_wire(wire)


def test_addresses_and_rates_of_the_command_line() -> None:
    assert host_port("10.0.0.5") == ("10.0.0.5", 5557)
    assert host_port("node-1:6000") == ("node-1", 6000)
    assert host_port("[::1]:5558") == ("::1", 5558)
    for bad in ("node:0", "node:x", ":5557", "[::1]x"):
        with pytest.raises(UsageError):
            host_port(bad)
    assert rate_list("50, 100") == (50.0, 100.0)


def test_sv7_run_and_serve_never_import_gevent() -> None:
    """Locust monkey-patches the standard library on import: only sv7 swarm may load it."""
    code = (
        "import sys\n"
        "from igestbench.cli import create_parser, patch_for_swarm\n"
        "patch_for_swarm(['run', '--target', 'x']); patch_for_swarm(['--debug', 'serve'])\n"
        "create_parser().parse_args(['swarm', 'master', '--rates', '5'])\n"
        "import igestbench.run.runner, igestbench.mock.catalogue, igestbench.swarm.messages\n"
        "import igestbench.swarm.command\n"
        "bad = [m for m in ('gevent', 'locust', 'zmq') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# --- the distributed sweep, end to end ---------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _sv7(*args: str, log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "igestbench", *args], stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=credentials_env(), cwd=log.parent,
        )  # fmt: skip


@pytest.fixture()
def swarm_catalogue() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig()) as cat:
        yield cat


class Swarm:
    def __init__(self, cat: LocalCatalogue, tmp: Path, *master_args: str) -> None:
        self.out = tmp / "out"
        self.tmp = tmp
        port = _free_port()
        self.master = _sv7(
            "swarm", "master", "--target", cat.service_url, "--expect-workers", "2",
            "--bind", f"127.0.0.1:{port}", "--users", "3", "--warmup", "0.3",
            "--out", str(self.out), "--wait-workers", "60", *master_args,
            log=tmp / "master.log",
        )  # fmt: skip
        self.workers = [
            _sv7("swarm", "worker", "--master", f"127.0.0.1:{port}", "--target",
                 cat.service_url, log=tmp / f"worker{i}.log")
            for i in range(2)
        ]  # fmt: skip

    def log(self) -> str:
        return (self.tmp / "master.log").read_text()

    def wait_for(self, text: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.log():
            assert self.master.poll() is None, self.log()
            assert time.monotonic() < deadline, self.log()
            time.sleep(0.1)

    def finish(self, timeout: float = 120) -> dict[str, Any]:
        try:
            code = self.master.wait(timeout)
            for worker in self.workers:
                worker.wait(30)  # the master's quit ends them
        finally:
            for proc in (self.master, *self.workers):
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        assert code == 0, self.log()
        (path,) = self.out.glob("*.json")
        result: dict[str, Any] = json.loads(path.read_text())
        return result


def _left_below(cat: LocalCatalogue, tag: str) -> int:
    client = connect(ClientConfig(cat.service_url), "zeep")
    client.login("simple", {"username": "root", "password": "root"})
    try:
        (n,) = client.search(Query("Facility").where({"name": Condition("LIKE", tag + "%")})
                             .count())  # fmt: skip
        (files,) = client.search("SELECT COUNT(d) FROM Datafile d WHERE d.name LIKE 'swarm-%'")
        return int(n) + int(files)
    finally:
        client.close()


@needs_locust
@pytest.mark.slow
def test_two_workers_run_a_two_step_sweep_into_one_result_file(
    swarm_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    swarm = Swarm(swarm_catalogue, tmp_path, "--rates", "10,20", "--duration", "1.5",
                  "--mix", "search=3,create=1")  # fmt: skip
    result = swarm.finish()
    assert result["run"]["status"] == "complete"
    (sweep,) = result["sweeps"]
    info = sweep["swarm"]
    assert (info["workers"], info["hosts"], info["lost"]) == (2, 1, [])
    assert [s["demanded_rate"] for s in sweep["steps"]] == [10.0, 20.0]
    for index, step in enumerate(sweep["steps"]):
        assert step["workers"] == 2
        merged = LatencyStats.decode(step["histograms"]["corrected"])
        parts = [
            LatencyStats.decode(s["histogram"])
            for w in info["per_worker"] for s in w["steps"] if s["index"] == index
        ]  # fmt: skip
        assert len(parts) == 2 and all(p.count > 0 for p in parts)
        assert merged.count == sum(p.count for p in parts)
        assert merged.count == step["sent"] - sum(step["errors"].values())
        assert step["sent"] >= 0.8 * step["demanded_rate"] * step["duration_s"]
        assert set(step["ops"]) == {"search", "create"}
    # what the workers created was journaled by the master and cleaned up with the rest
    assert info["created"] > 0
    assert result["cleanup"]["left"] == 0 and result["cleanup"]["deleted"] > info["created"]
    assert _left_below(swarm_catalogue, result["run"]["tag"]) == 0
    # the file is one like any other: sv7 merge and sv7 report read it
    files = [str(p) for p in (tmp_path / "out").glob("*.json")]
    env = credentials_env()
    merge = subprocess.run(
        [sys.executable, "-m", "igestbench", "merge", *files, "-o", str(tmp_path / "c.json")],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert merge.returncode == 0, merge.stderr
    report = subprocess.run(
        [sys.executable, "-m", "igestbench", "report", str(tmp_path / "c.json"),
         "-o", str(tmp_path / "r.html")],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert report.returncode == 0, report.stderr
    page = (tmp_path / "r.html").read_text()
    assert "Load sweeps against" in page


@needs_locust
@pytest.mark.slow
def test_a_worker_killed_mid_run_is_recorded_as_lost_and_the_run_cleans_up(
    swarm_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    swarm = Swarm(swarm_catalogue, tmp_path, "--rates", "10,20,30", "--duration", "2",
                  "--mix", "search=1,create=1")  # fmt: skip
    swarm.wait_for("step 2 of 3 at 20 calls/s")
    time.sleep(0.5)
    swarm.workers[1].send_signal(signal.SIGKILL)
    result = swarm.finish()
    assert result["run"]["status"] == "complete"
    (sweep,) = result["sweeps"]
    (lost,) = sweep["swarm"]["lost"]
    assert lost["when"] == "step" and lost["rate"] == 20.0
    assert [s["workers"] for s in sweep["steps"]] == [2, 1, 1]
    assert [s["lost_workers"] for s in sweep["steps"]] == [0, 1, 0]
    # the last step's whole rate went to the worker that was left
    assert sweep["steps"][2]["sent"] >= 0.8 * 30 * 2
    assert any("was lost during the step at 20 calls/s" in n for n in result["notes"])
    assert result["cleanup"]["left"] == 0
    assert _left_below(swarm_catalogue, result["run"]["tag"]) == 0


@needs_locust
@pytest.mark.slow
def test_a_worker_refuses_a_master_whose_target_is_not_its_own(
    swarm_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """A worker logs in only where its own configuration says: never where a master sends it."""
    port = _free_port()
    other = swarm_catalogue.service_url.replace("127.0.0.1", "localhost")
    master = _sv7("swarm", "master", "--target", swarm_catalogue.service_url, "--rates", "5",
                  "--bind", f"127.0.0.1:{port}", "--out", str(tmp_path / "out"),
                  log=tmp_path / "master.log")  # fmt: skip
    worker = _sv7("swarm", "worker", "--master", f"127.0.0.1:{port}", "--target", other,
                  log=tmp_path / "worker.log")  # fmt: skip
    try:
        code = master.wait(120)
        worker.wait(30)
    finally:
        for proc in (master, worker):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    log = (tmp_path / "master.log").read_text()
    assert code == 1, log
    (path,) = (tmp_path / "out").glob("*.json")
    result = json.loads(path.read_text())
    assert result["run"]["status"] == "failed" and result["sweeps"] == []
    (note,) = [n for n in result["notes"] if "no worker could set up" in n]
    assert "is not this worker's" in note and "refused" in note
    assert result["cleanup"]["left"] == 0
    assert _left_below(swarm_catalogue, result["run"]["tag"]) == 0


@needs_locust
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["worker", "--master", "node:x"], "'node:x': the port"),
        (["master", "--workload", "burst", "--mix", "search=1"], "--mix is the mix of"),
        (["master", "--rates", "10"], "name the catalogue with --target"),
        (["master", "--rates", "0,10"], "--rates: expected a number greater than 0"),
    ],
)
def test_bad_swarm_options_are_one_line_and_exit_2(args: list[str], message: str) -> None:
    env = {k: v for k, v in credentials_env().items() if k != "SV7_TARGET"}
    done = subprocess.run([sys.executable, "-m", "igestbench", "swarm", *args], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_without_locust_sv7_swarm_says_what_to_install() -> None:
    """The base install (no [distributed] extra): the parser works, the command names the fix."""
    code = (
        "import sys\n"
        "sys.modules['gevent'] = sys.modules['locust'] = None  # as if not installed\n"
        "from igestbench.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {**credentials_env(), "SV7_TARGET": "http://127.0.0.1:9/ICATService/ICAT"}
    run = [sys.executable, "-c", code, "swarm"]
    helped = subprocess.run([*run, "master", "--help"], env=env, capture_output=True, text=True)
    assert helped.returncode == 0 and "--expect-workers" in helped.stdout, helped.stderr
    done = subprocess.run([*run, "worker"], env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'igestbench[distributed]'" in done.stderr, done.stderr
