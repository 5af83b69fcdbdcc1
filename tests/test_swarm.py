"""sv7 swarm: the lossless merge of the workers' steps, the isolation of gevent, and the whole
distributed sweep on loopback (a local catalogue, a master and two worker processes).

The end-to-end tests start Locust in subprocesses only: importing it here would monkey-patch
this pytest process. They skip where Locust is not installed; CI installs it (tox: the
``distributed`` extra)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from igestbench.config import ServeConfig
from igestbench.errors import UsageError
from igestbench.measure.stats import LatencyStats
from igestbench.measure.sweep import StepResult
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.swarm.command import host_port, rate_list
from igestbench.swarm.messages import StepReport, merge_parallel, step_from_wire, step_to_wire
from tests.swarm_support import Swarm, free_port, left_below, needs_locust, no_traceback, sv7
from tests.test_run import credentials_env

ROOT = Path(__file__).resolve().parents[1]


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
        "import igestbench.swarm.command, igestbench.swarm.wire, igestbench.swarm.sizing\n"
        "import igestbench.swarm.summary, igestbench.swarm.record\n"
        "bad = [m for m in ('gevent', 'locust', 'zmq') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


# --- the distributed sweep, end to end ---------------------------------------------------


@pytest.fixture()
def swarm_catalogue() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig()) as cat:
        yield cat


@needs_locust
@pytest.mark.slow
def test_two_workers_run_a_two_step_sweep_into_one_result_file(
    swarm_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    swarm = Swarm(swarm_catalogue.service_url, tmp_path, "--rates", "10,20", "--duration", "1.5",
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
        # the users the workers used, sized from demand: a few, far below the cap
        assert 2 <= step["users"]["used"] <= 2 * 16 and step["users"]["cap_per_worker"] == 128
        assert step["user_capped"] is False
    # what the workers created was journaled by the master and cleaned up with the rest
    assert info["created"] > 0
    assert result["cleanup"]["left"] == 0 and result["cleanup"]["deleted"] > info["created"]
    assert left_below(swarm_catalogue.service_url, result["run"]["tag"]) == 0
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
def test_a_swarm_file_records_the_swarm_and_the_terminal_says_how_the_sweep_went(
    swarm_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """Issue 19: the file records the swarm's own options (not the quick tour's), the users per
    worker and the target's interfaces; the master prints each step and the sweep's outcome,
    with units, never None."""
    swarm = Swarm(swarm_catalogue.service_url, tmp_path, "--rates", "5,10", "--duration", "1",
                  "--slo-ms", "400", "--users", "6", workers=1)  # fmt: skip
    result = swarm.finish()
    run = result["run"]
    assert run["mode"] == "swarm" and run["parts"] == ["sweep"] and run["interfaces"] == ["soap"]
    assert "profile" not in run and "concurrency" not in run
    options = run["options"]
    assert {k: options[k] for k in ("rates", "duration", "warmup", "slo_ms", "workload",
                                    "expect_workers", "users", "interface", "authenticated")} == {
        "rates": [5.0, 10.0], "duration": 1.0, "warmup": 0.3, "slo_ms": 400.0,
        "workload": "single-query", "expect_workers": 1, "users": 6, "interface": "soap",
        "authenticated": False,
    }  # fmt: skip
    for absent in ("profile", "flavours", "parts", "concurrency", "cycles", "files"):
        assert absent not in options
    interfaces = result["target"]["interfaces"]
    assert interfaces["measured"] == ["soap"] and interfaces["served"] == ["soap", "rest"]
    assert "sv7 swarm measures SOAP" in interfaces["why"]
    (sweep,) = result["sweeps"]
    assert sweep["interface"] == "soap" and sweep["sustained_rate"] == 10.0
    info = sweep["swarm"]
    assert info["version"] == 2 and info["users_cap_per_worker"] == 6
    (worker,) = info["per_worker"]
    assert 1 <= worker["users"] <= 6 and [s["cap"] for s in worker["steps"]] == [6, 6]
    # the terminal says what the file's summary says (the registry's words), with units
    log = swarm.log()
    assert "step 1: 5.00 requests/s demanded, " in log and "step 2: 10.0 requests/s demanded" in log
    assert "1 worker, " in log and "met the objective" in log
    (row,) = result["summary"]
    assert row["text"] == "≥ 10.0 requests/s" and row["marks"] == ["capped"]
    assert row["note"].startswith("capped: reached --rates/--max-rate (10.0 requests/s) with the "
                                  "objective met")  # fmt: skip
    assert f"sweep SOAP · lean: sustained {row['text']} (corrected mean and p99 < 400 ms" in log
    assert row["note"] in log
    assert "None" not in log


@needs_locust
@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_a_worker_killed_mid_run_is_recorded_as_lost_and_the_run_cleans_up(
    swarm_catalogue: LocalCatalogue, tmp_path: Path, signum: signal.Signals
) -> None:
    swarm = Swarm(swarm_catalogue.service_url, tmp_path, "--rates", "10,20,30", "--duration", "2",
                  "--mix", "search=1,create=1")  # fmt: skip
    swarm.wait_for("step 2 of 3 at 20.0 requests/s")
    time.sleep(0.5)
    swarm.workers[1].send_signal(signum)
    result = swarm.finish()
    assert result["run"]["status"] == "complete"
    (sweep,) = result["sweeps"]
    (lost,) = sweep["swarm"]["lost"]
    assert lost["when"] == "step" and lost["rate"] == 20.0
    assert [s["workers"] for s in sweep["steps"]] == [2, 1, 1]
    assert [s["lost_workers"] for s in sweep["steps"]] == [0, 1, 0]
    # the last step's whole rate went to the worker that was left
    assert sweep["steps"][2]["sent"] >= 0.8 * 30 * 2
    assert any("was lost during the step at 20.0 requests/s" in n for n in result["notes"])
    assert result["cleanup"]["left"] == 0
    assert left_below(swarm_catalogue.service_url, result["run"]["tag"]) == 0
    if signum == signal.SIGTERM:  # a stopped worker says goodbye: 143, and no traceback
        assert swarm.workers[1].returncode == 143
        assert lost["reason"] == "quit"
        assert no_traceback(swarm.logs()), swarm.logs()


@needs_locust
@pytest.mark.slow
def test_a_worker_refuses_a_master_whose_target_is_not_its_own(
    swarm_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """A worker logs in only where its own configuration says: never where a master sends it."""
    port = free_port()
    other = swarm_catalogue.service_url.replace("127.0.0.1", "localhost")
    master = sv7("swarm", "master", "--target", swarm_catalogue.service_url, "--rates", "5",
                 "--bind", f"127.0.0.1:{port}", "--out", str(tmp_path / "out"),
                 log=tmp_path / "master.log")  # fmt: skip
    worker = sv7("swarm", "worker", "--master", f"127.0.0.1:{port}", "--target", other,
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
    assert left_below(swarm_catalogue.service_url, result["run"]["tag"]) == 0
    # and the worker says why it did nothing
    assert worker.returncode == 1
    assert "could not set up" in (tmp_path / "worker.log").read_text()


@needs_locust
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["worker", "--master", "node:x"], "'node:x': the port"),
        (["master", "--workload", "burst", "--mix", "search=1"], "--mix is the mix of"),
        (["master", "--rates", "10"], "name the catalogue with --target"),
        (["master", "--rates", "0,10"], "--rates: expected a rate in requests per second"),
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
    # the help says what is true of the swarm: --target is required, no profiles, the secret
    text = " ".join(helped.stdout.split())
    assert "built-in" not in text and "quick" not in text and "full 200" not in text
    assert "(required, here or as SV7_TARGET" in text and "(requests/s; default 200)" in text
    assert "SV7_SWARM_SECRET" in text
    done = subprocess.run([*run, "worker"], env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert "pip install 'igestbench[distributed]'" in done.stderr, done.stderr
