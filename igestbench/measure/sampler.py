"""Resource sampling with psutil in a background thread, as time series per phase.

Every ``interval_s`` (default 1 s) one sample records: system CPU % (the mean of the per-core
figures, so /proc/stat is read once), per-core CPU %, the CPU % of this process and of any added
child processes (psutil's scale: 100 = one core busy), network Mbit/s in and out from the deltas
of ``psutil.net_io_counters()`` (all interfaces, loopback included: a local run talks over it),
and memory %. Samples belong to the phase current when their interval ends; switching phase
(``with sampler.phase("full-cycle/zeep/4"):``) closes the running interval with a sample, so no
interval straddles two phases.

**Client-bound.** A phase is flagged ``client_bound`` when, averaged over its samples (weighted
by the time each covers), either

* the busiest client process used more than 90 % of one core: a Python client cannot use more
  than about one core for its interpreter (the GIL), so this is saturation even on an idle
  many-core machine; or
* the whole machine's CPU was above 90 %: the client's threads then wait for a core, which
  inflates latencies just as well (this includes a local catalogue sharing the machine).

The thread sleeps on an Event between samples (no busy loop) and stops on :meth:`stop` or when
the ``with`` block ends. Each sample reads four small /proc files, a fraction of a millisecond:
``tests/benchmarks/test_bench_load.py`` measures the overhead against the 1 %-of-a-core target.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import psutil

__all__ = ["CLIENT_BOUND_PERCENT", "PhaseSeries", "Sampler"]

#: Above this (process % of one core, or system %) a phase counts as client-bound.
CLIENT_BOUND_PERCENT = 90.0


@dataclass(frozen=True)
class PhaseSeries:
    """The samples of one phase; a ``samples`` entry of the result file (:meth:`to_dict`).

    Frozen but growing: the sampler appends to the lists of the current phase's series.
    """

    phase: str
    interval_s: float
    t_s: list[float] = field(default_factory=list)
    #: The time each sample covers (shorter at phase switches); weights the client-bound mean.
    dt_s: list[float] = field(default_factory=list)
    cpu_percent: list[float] = field(default_factory=list)
    per_core_percent: list[list[float]] = field(default_factory=list)
    process_cpu_percent: list[float] = field(default_factory=list)
    #: The busiest single client process per sample (what the client-bound rule looks at).
    busiest_process_percent: list[float] = field(default_factory=list)
    net_in_mbit_s: list[float] = field(default_factory=list)
    net_out_mbit_s: list[float] = field(default_factory=list)
    memory_percent: list[float] = field(default_factory=list)

    @property
    def client_bound(self) -> bool:
        # Time-weighted: the short sample closing a phase must not count as much as a full one.
        total = sum(self.dt_s)

        def mean(values: list[float]) -> float:
            return sum(v * dt for v, dt in zip(values, self.dt_s, strict=True)) / total

        return total > 0 and (
            mean(self.busiest_process_percent) > CLIENT_BOUND_PERCENT
            or mean(self.cpu_percent) > CLIENT_BOUND_PERCENT
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "interval_s": self.interval_s,
            "t_s": list(self.t_s),
            "cpu_percent": list(self.cpu_percent),
            "per_core_percent": [list(c) for c in self.per_core_percent],
            "process_cpu_percent": list(self.process_cpu_percent),
            "net_in_mbit_s": list(self.net_in_mbit_s),
            "net_out_mbit_s": list(self.net_out_mbit_s),
            "memory_percent": list(self.memory_percent),
            "client_bound": self.client_bound,
        }


class Sampler:
    """Samples the machine and the client processes until stopped; usable as a context manager.

    ``phase`` names the series samples go to before any :meth:`phase` block.
    """

    def __init__(
        self, interval_s: float = 1.0, children: Iterable[int] = (), phase: str = "idle"
    ) -> None:
        if interval_s <= 0:
            raise ValueError("the sampling interval must be positive")
        self.interval_s = interval_s
        self._processes = [psutil.Process()]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._phase = phase
        self._series: dict[str, PhaseSeries] = {}
        self._t0 = time.monotonic()
        self._last_t = self._t0
        self._last_net = psutil.net_io_counters()
        for pid in children:
            self.add_process(pid)

    def add_process(self, pid: int) -> None:
        """Sample a client process too (a worker); one that has exited is skipped."""
        process = psutil.Process(pid)
        process.cpu_percent(None)  # the first call only sets the baseline
        with self._lock:
            self._processes.append(process)

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("a sampler is started once")
        # Baselines: psutil's percentages cover the time since the previous call.
        psutil.cpu_percent(None, percpu=True)
        for process in self._processes:
            process.cpu_percent(None)
        self._last_t = time.monotonic()
        self._last_net = psutil.net_io_counters()
        self._thread = threading.Thread(target=self._run, name="sv7-sampler", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Take a last sample and end the thread (idempotent)."""
        if self._thread is None or self._stop.is_set():
            return
        self._stop.set()
        self._thread.join()
        self._sample()

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[PhaseSeries]:
        """Samples inside the block go to series ``name``; the previous phase resumes after."""
        with self._lock:
            self._take()
            previous, self._phase = self._phase, name
            series = self._series_of(name)
        try:
            yield series
        finally:
            with self._lock:
                self._take()
                self._phase = previous

    def series(self) -> list[PhaseSeries]:
        """A copy of every phase's series so far, in order of first appearance."""
        with self._lock:
            return [copy.deepcopy(s) for s in self._series.values()]

    # --- internals -------------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        with self._lock:
            self._take()

    def _series_of(self, name: str) -> PhaseSeries:
        series = self._series.get(name)
        if series is None:
            series = self._series[name] = PhaseSeries(name, self.interval_s)
        return series

    def _take(self) -> None:
        """One sample covering the time since the previous one (caller holds the lock)."""
        now = time.monotonic()
        elapsed = now - self._last_t
        if elapsed < 1e-3:  # a phase switch right after a sample: nothing to measure yet
            return
        per_core = psutil.cpu_percent(None, percpu=True)
        process_percents = []
        for process in self._processes:
            try:
                process_percents.append(process.cpu_percent(None))
            except psutil.Error:  # a worker that has exited contributes nothing
                process_percents.append(0.0)
        net = psutil.net_io_counters()
        bits_in = (net.bytes_recv - self._last_net.bytes_recv) * 8
        bits_out = (net.bytes_sent - self._last_net.bytes_sent) * 8
        self._last_t, self._last_net = now, net

        series = self._series_of(self._phase)
        series.t_s.append(round(now - self._t0, 3))
        series.dt_s.append(elapsed)
        series.cpu_percent.append(sum(per_core) / len(per_core) if per_core else 0.0)
        series.per_core_percent.append(list(per_core))
        series.process_cpu_percent.append(sum(process_percents))
        series.busiest_process_percent.append(max(process_percents))
        series.net_in_mbit_s.append(bits_in / elapsed / 1e6)
        series.net_out_mbit_s.append(bits_out / elapsed / 1e6)
        series.memory_percent.append(psutil.virtual_memory().percent)
