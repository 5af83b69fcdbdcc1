"""A phase's client-bound verdict is its workload's: the workers' start-up is sampled apart.

Tryout: in phases of a fraction of a second, the clients' CPU was mostly the worker processes'
start (a process spawned, imports, a WSDL parsed, a login, an untimed preparation), and the
phases were flagged client-bound although their workload did not saturate them. The start-up
now goes to the ``start`` series until the workers pass the barrier (Sampler.ready).

The tests drive the sampler with a fake client process and a fake clock (no speed involved);
test_sampler_phase_end.py checks a run's samples hold the start-up apart.
"""

from __future__ import annotations

import os
import time
import types
from pathlib import Path
from typing import Any

import psutil
import pytest

from igestbench.measure import sampler as sampler_module
from igestbench.measure.sampler import START_PHASE, Sampler

FAKE_PID = 2**22 + 12345  # beyond Linux's pid_max: no /proc/<pid>/schedstat to read


class _Worker:
    """A client process whose CPU (% of one core since the previous reading) the test sets."""

    pid = FAKE_PID

    def __init__(self) -> None:
        self.percent = 0.0

    def cpu_percent(self, interval: Any = None) -> float:
        return self.percent


@pytest.fixture()
def worker(monkeypatch: pytest.MonkeyPatch) -> _Worker:
    fake, real = _Worker(), psutil.Process

    def process(pid: int | None = None) -> Any:
        return fake if pid == FAKE_PID else real(pid)

    monkeypatch.setattr(sampler_module.psutil, "Process", process)
    return fake


@pytest.fixture()
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(sampler_module, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    return now


def _phase(sampler: Sampler, name: str) -> Any:
    (series,) = [s for s in sampler.series() if s.phase == name]
    return series


def test_workers_that_burn_a_core_while_starting_do_not_make_their_phase_client_bound(
        worker: _Worker, clock: list[float]) -> None:
    sampler = Sampler(interval_s=3600.0).start()  # it samples at phase switches only
    try:
        with sampler.phase("single-query/zeep/1", start=START_PHASE) as series:
            sampler.add_process(FAKE_PID)
            worker.percent = 100.0  # imports, a WSDL parsed, a login: a core, 0.9 s long
            clock[0] += 0.9
            sampler.ready()  # at the barrier
            worker.percent = 40.0  # the workload: 40 % of a core, 0.1 s long
            clock[0] += 0.1
            sampler.sample()  # the workers are done
        assert series.dt_s == pytest.approx([0.1])
        assert not series.client_bound
        assert series.client_summary()["busiest_percent"] == pytest.approx(40.0)
        start = _phase(sampler, START_PHASE)
        assert start.dt_s == pytest.approx([0.9])
        # a core while starting is drawn (the chart's start bar), but it is no verdict
        assert start.client_summary()["busiest_percent"] == pytest.approx(100.0)
        assert not start.client_bound and not start.to_dict()["client_bound"]
    finally:
        sampler.stop()


def test_the_workload_saturating_its_client_is_still_client_bound(
        worker: _Worker, clock: list[float]) -> None:
    sampler = Sampler(interval_s=3600.0).start()
    try:
        with sampler.phase("burst/zeep/1", start=START_PHASE) as series:
            sampler.add_process(FAKE_PID)
            worker.percent = 30.0
            clock[0] += 0.5
            sampler.ready()
            worker.percent = 99.0
            clock[0] += 0.2
            sampler.sample()
        assert series.client_bound and not _phase(sampler, START_PHASE).client_bound
        # outside a phase with a start, ready() changes nothing
        with sampler.phase("sweep/lean") as sweep:
            clock[0] += 0.3
            sampler.ready()
            clock[0] += 0.3
        assert sweep.dt_s == pytest.approx([0.6])
    finally:
        sampler.stop()


def test_a_short_phase_reads_its_clients_cpu_in_nanoseconds_not_in_ticks(
        worker: _Worker, clock: list[float], monkeypatch: pytest.MonkeyPatch) -> None:
    """Tryout, after the start-up was apart: multi-query/rest/1, a phase of 16 ms, read 129 % of
    one core — psutil counts a process's CPU in 10 ms ticks. Linux counts each thread's time
    on a core in nanoseconds (schedstat), which the sampler reads where it can."""
    on_cpu = {"1": 0, "2": 0}  # the worker's threads' ns on a core

    monkeypatch.setattr(sampler_module, "_threads_on_cpu_ns",
                        lambda pid: dict(on_cpu) if pid == FAKE_PID else {})
    sampler = Sampler(interval_s=3600.0).start()
    try:
        with sampler.phase("multi-query/rest/1", start=START_PHASE) as series:
            sampler.add_process(FAKE_PID)
            clock[0] += 0.5
            on_cpu["1"] += 400_000_000
            sampler.ready()
            clock[0] += 0.016  # the workload: 16 ms, of which the client ran 9 ms …
            on_cpu["1"] += 8_000_000
            on_cpu["2"] += 1_000_000
            on_cpu["3"] = 500_000  # … and a thread started meanwhile 0.5 ms
            worker.percent = 125.0  # what two 10 ms ticks in 16 ms read
            sampler.sample()
        assert series.client_cpu_percent == pytest.approx([59.375])
        assert not series.client_bound
        assert _phase(sampler, START_PHASE).client_cpu_percent == pytest.approx([80.0])
    finally:
        sampler.stop()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="Linux's /proc only")
def test_threads_on_cpu_ns_counts_this_process_s_work() -> None:
    before = sampler_module._threads_on_cpu_ns(os.getpid())
    start = time.process_time()
    while time.process_time() - start < 0.05:  # 50 ms of CPU, however long that takes
        pass
    after = sampler_module._threads_on_cpu_ns(os.getpid())
    assert before and after
    used = sum(ns - before.get(tid, 0) for tid, ns in after.items())
    assert used >= 40_000_000  # a running thread's schedstat may lag by a scheduler tick
