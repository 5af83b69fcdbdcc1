"""The load engine measured: scheduler accuracy, one client process's ceiling, sampler overhead.

Against ``sv7 serve`` in its own process (so this process's CPU is the client's alone), printed:

* the scheduler's send-time lateness (p50/p99: how long after its intended slot a call left) at
  500 and 2,000 demanded calls/s with the lean client, with the client's CPU per call and the
  share of one core it used, which is what decides threads against processes (the GIL only
  distorts when the interpreter is busy);
* the highest rate ONE client process sustains (corrected mean and p99 under the objective,
  < 1 % errors) with the lean path and with the zeep flavour, and whether the client or the
  machine was the bound (the sampler's flag);
* what a connection per call costs against persistent connections (reopen: TCP only; new
  client: connect + getApiVersion + login);
* the sampler's CPU overhead at its 1 s interval (target < 1 % of one core).

Medians of repetitions are printed; timings are never asserted (they depend on the machine).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from igestbench.client import Catalogue, ClientConfig, connect
from igestbench.icat.beans import Bean
from igestbench.measure.sampler import Sampler
from igestbench.measure.schedule import OpenLoop, Reconnect
from igestbench.measure.sweep import SweepConfig, run_sweep
from igestbench.results.sweeps import sweep_verdict
from igestbench.workloads.base import WrongResult
from tests.benchmarks.served import served_catalogue

pytestmark = pytest.mark.benchmark(group="load engine")

ROOT = {"username": "root", "password": "root"}
REPEAT = 3
SLO_MS = 20.0
FACILITY_ID = 0  # set by the service_url fixture


@pytest.fixture(scope="module")
def service_url() -> Iterator[str]:
    """``sv7 serve`` in its own process, holding the one Facility the searches look up."""
    global FACILITY_ID
    with served_catalogue() as (_, url):
        client = factory(url, "lean")()
        FACILITY_ID = client.create(Bean("Facility", {"name": "LOAD-BENCH"}))
        client.close()
        yield url


def factory(url: str, flavour: str, cache_dir: Path | None = None) -> Callable[[], Catalogue]:
    def make() -> Catalogue:
        client = connect(ClientConfig(url, read_timeout=10, cache_dir=cache_dir), flavour)
        client.login("simple", ROOT)
        return client

    return make


def search(client: Catalogue) -> object:
    """A single-result query with its correctness check, as the load sweep issues them."""
    found = client.search(f"SELECT f FROM Facility f WHERE f.id = {FACILITY_ID}")
    if len(found) != 1 or found[0].id != FACILITY_ID:
        raise WrongResult(f"expected Facility {FACILITY_ID}, got {len(found)} objects")
    return found


def fmt(values: list[float]) -> str:
    return f"{statistics.median(values):8.3f}"


@pytest.mark.parametrize("rate", [500, 2000])
def test_scheduler_lateness(
    rate: int, service_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    p50, p99, achieved, corrected, uncorrected, cpu_per_call, core_share, missed = (
        [] for _ in range(8)
    )
    with OpenLoop(factory(service_url, "lean"), {"search": search}, workers=8) as load:
        for _ in range(REPEAT):
            cpu0, wall0 = time.process_time(), time.monotonic()
            step = load.run(rate, 2.0, warmup_s=0.5)
            cpu, wall = time.process_time() - cpu0, time.monotonic() - wall0
            p50.append(step.lateness.percentile_ms(50.0))
            p99.append(step.lateness.percentile_ms(99.0))
            achieved.append(step.request_rate)
            corrected.append(step.corrected.percentile_ms(99.0))
            uncorrected.append(step.uncorrected.percentile_ms(99.0))
            cpu_per_call.append(cpu / max(1, step.sent) * 1e6 * 2.0 / 2.5)
            core_share.append(100 * cpu / wall)
            missed.append(step.missed_slots)
            assert step.sent > 0
    with capsys.disabled():
        print(f"\nopen-loop scheduler, lean client, 8 worker threads, {rate}/s demanded")
        print(f"  send lateness p50 / p99 : {fmt(p50)} / {fmt(p99)} ms")
        print(f"  request rate achieved   : {statistics.median(achieved):8.1f} /s")
        print(f"  latency p99 corr/uncorr : {fmt(corrected)} / {fmt(uncorrected)} ms")
        print(f"  missed slots            : {statistics.median(missed):8.0f}")
        print(f"  client CPU              : {fmt(cpu_per_call)} µs per call")
        print(f"  client process          : {statistics.median(core_share):8.1f} % of one core")


@pytest.mark.parametrize("flavour", ["lean", "zeep"])
def test_highest_rate_one_client_process_sustains(
    flavour: str, service_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = SweepConfig(
        slo_ms=SLO_MS,
        max_rate=4000,
        rates=[125, 250, 500, 1000, 2000, 4000],
        step_s=2.0,
        warmup_s=0.5,
        max_total_s=25,
        flavour=flavour,
    )
    make = factory(service_url, flavour, tmp_path)
    with Sampler(interval_s=0.5) as sampler, OpenLoop(make, {"search": search}) as load:
        result = run_sweep(load, config, sampler, phase=f"sweep/{flavour}")
    bound = {s.phase: s.client_bound for s in sampler.series()}
    with capsys.disabled():
        print(f"\nrate sweep, {flavour} flavour, one client process, SLO {SLO_MS:g} ms")
        for step in result.steps:
            c = step.corrected
            flag = " client-bound" if bound[f"sweep/{flavour}/{step.demanded_rate:g}"] else ""
            print(
                f"  {step.demanded_rate:5.0f}/s: sent {step.request_rate:6.0f}/s  answered "
                f"{step.response_rate:6.0f}/s  mean {c.mean_ms:6.2f} p99 {c.percentile_ms(99):7.2f}"
                f" ms  missed {step.missed_slots:5d}  errors {step.error_count}{flag}"
            )
        entry = {**result.to_dict(), "stopped": result.stopped}
        print(f"  {sweep_verdict(entry, '--rates').line}")


@pytest.mark.parametrize(
    ("label", "per_connection", "reconnect"),
    [("persistent", None, "new-client"), ("reopen", 1, "reopen"), ("new client", 1, "new-client")],
)
def test_what_a_connection_per_call_costs(
    label: str,
    per_connection: int | None,
    reconnect: Reconnect,
    service_url: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    p50, mean = [], []
    with OpenLoop(
        factory(service_url, "lean"),
        {"search": search},
        workers=4,
        calls_per_connection=per_connection,
        reconnect=reconnect,
    ) as load:
        for _ in range(REPEAT):
            step = load.run(100, 1.0, warmup_s=0.2)
            p50.append(step.uncorrected.percentile_ms(50.0))
            mean.append(step.uncorrected.mean_ms)
    with capsys.disabled():
        print(f"\nlean search at 100/s, {label:10}: p50 {fmt(p50)} ms  mean {fmt(mean)} ms")


def test_sampler_overhead(capsys: pytest.CaptureFixture[str]) -> None:
    # CPU of this process while the main thread sleeps is the sampler thread's.
    fast: list[float] = []
    for _ in range(REPEAT):
        cpu0 = time.process_time()
        with Sampler(interval_s=0.01) as sampler:
            time.sleep(1.0)
        samples = sum(len(s.t_s) for s in sampler.series())
        fast.append((time.process_time() - cpu0) / samples * 1e6)
    cpu0, wall0 = time.process_time(), time.monotonic()
    with Sampler(interval_s=1.0):
        time.sleep(5.0)
    at_1s = 100 * (time.process_time() - cpu0) / (time.monotonic() - wall0)
    with capsys.disabled():
        print(f"\nsampler: {statistics.median(fast):.0f} µs CPU per sample")
        print(f"  at 1 s interval: {statistics.median(fast) / 1e4:.3f} % of one core (from the")
        print(f"  per-sample cost); measured over 5 s: {at_1s:.3f} % (target < 1 %)")
