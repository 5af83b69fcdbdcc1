"""sv7 swarm: users that follow demand, against users capped at 4, printed side by side.

Against ``sv7 serve`` in its own process, which answers each call after ``--latency-ms`` (an
asynchronous wait, no CPU): a worker with U users (one connection each) holds at most
U / latency calls/s, whatever its CPU. At 320 calls/s against 20 ms, 6.4 calls are in flight:
one worker capped at 4 users (``--users 4``, the fixed users of before) falls behind its
schedule (send lateness grows, slots are missed, the corrected latency includes the wait) and
its step says the cap bounded it; one worker whose users follow demand (the default cap) keeps
the schedule, as do two. Printed per configuration: the users used, whether the cap bounded the
step, the rate achieved (sent and answered), the scheduler's send lateness p50/p99, the
corrected and uncorrected latency p50/p99, the missed slots and each worker process's CPU.

The master and its workers run as ``sv7 swarm`` processes (Locust is never imported here). The
figures depend on the machine (on a 2-core machine the catalogue, the master and the workers
share it); nothing is asserted but that every step ran.
"""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks.served import served_catalogue
from tests.test_run import credentials_env

pytestmark = [
    pytest.mark.benchmark(group="swarm"),
    pytest.mark.skipif(importlib.util.find_spec("locust") is None, reason="needs Locust"),
]

LATENCY_MS = 20
CAPPED = 4  # users: at most CAPPED / LATENCY = 200 calls/s
RATE = 320  # over a capped worker's ceiling: 6.4 calls in flight
DURATION_S = 4.0
#: (label, worker processes, --users or None for the default cap)
CONFIGURATIONS = (("1 worker, --users 4", 1, CAPPED), ("1 worker", 1, None), ("2 workers", 2, None))


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _swarm(url: str, processes: int, users: int | None, out: Path) -> dict[str, Any]:
    port = f"127.0.0.1:{_port()}"
    sv7 = [sys.executable, "-m", "igestbench", "swarm"]
    env = credentials_env()
    cap = ["--users", str(users)] if users is not None else []
    master = subprocess.Popen(
        [*sv7, "master", "--target", url, "--rates", str(RATE), "--duration", str(DURATION_S),
         "--warmup", "1", "--slo-ms", "1000", *cap, "--bind", port,
         "--expect-workers", str(processes), "--out", str(out)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    workers = subprocess.Popen(
        [*sv7, "worker", "--master", port, "--target", url, "--processes", str(processes)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        _, err = master.communicate(timeout=180)
        workers.wait(60)
    finally:
        for proc in (master, workers):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert master.returncode == 0, err
    (path,) = out.glob("*.json")
    (sweep,) = json.loads(path.read_text())["sweeps"]
    result: dict[str, Any] = sweep
    return result


def test_users_that_follow_demand_against_a_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with served_catalogue("--latency-ms", str(LATENCY_MS)) as (_, url):
        sweeps = {label: _swarm(url, n, users, tmp_path / f"c{i}")
                  for i, (label, n, users) in enumerate(CONFIGURATIONS)}  # fmt: skip
    rows = []
    for label, sweep in sweeps.items():
        (step,) = sweep["steps"]
        lat, late = step["latency_ms"], step["lateness_ms"]
        cpu = [s["cpu_percent"] for w in sweep["swarm"]["per_worker"] for s in w["steps"]]
        rows.append((label, step, lat, late, cpu))
    with capsys.disabled():
        print(f"\nsv7 swarm, {RATE} requests/s demanded in total for {DURATION_S:g} s; catalogue "
              f"answers after {LATENCY_MS} ms ({RATE * LATENCY_MS / 1000:g} calls in flight; "
              f"{CAPPED} users hold <= {CAPPED * 1000 // LATENCY_MS}/s)")  # fmt: skip
        print(f"  {'':28}" + "".join(f"{label:>24}" for label, *_ in rows))

        def line(label: str, cells: list[str]) -> None:
            print(f"  {label:28}" + "".join(f"{c:>24}" for c in cells))

        line("users used (cap per worker)", [
            f"{s['users']['used']} ({s['users']['cap_per_worker']})" for _, s, *_ in rows
        ])  # fmt: skip
        line("bounded by --users", [f"yes, {s['users']['capped_s']:.1f} s" if s["user_capped"]
                                    else "no" for _, s, *_ in rows])  # fmt: skip
        line("sent / answered per s", [f"{s['request_rate']:.0f} / {s['response_rate']:.0f}"
                                       for _, s, *_ in rows])  # fmt: skip
        line("send lateness p50 / p99 ms", [f"{x['p50']:.2f} / {x['p99']:.2f}"
                                            for *_, x, _ in rows])  # fmt: skip
        line("corrected p50 / p99 ms", [f"{lat['corrected']['p50']:.1f} / "
                                        f"{lat['corrected']['p99']:.1f}"
                                        for _, _, lat, _, _ in rows])  # fmt: skip
        line("uncorrected p50 / p99 ms", [f"{lat['uncorrected']['p50']:.1f} / "
                                          f"{lat['uncorrected']['p99']:.1f}"
                                          for _, _, lat, _, _ in rows])  # fmt: skip
        line("missed slots", [str(s["missed_slots"]) for _, s, *_ in rows])
        line("worker CPU % of a core", [" + ".join(f"{c:.0f}" for c in cpu)
                                        for *_, cpu in rows])  # fmt: skip
    for _, step, *_ in rows:
        assert step["sent"] > 0
