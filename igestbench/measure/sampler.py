"""Resource sampling with psutil in a background thread, as time series per phase.

Every ``interval_s`` (default 1 s) one sample records: system CPU % (the mean of the per-core
figures, so /proc/stat is read once), per-core CPU %, the CPU % of this process and of any added
child processes (psutil's scale: 100 = one core busy), the machine's network Mbit/s in and out from
the deltas of ``psutil.net_io_counters()`` (all interfaces, loopback included: a local run talks
over it) and, apart, loopback's (its bytes once: the machine counts each as sent and as received;
results/machine_net.py is the figure drawn from them — the machine's traffic, not the clients': the
OS counts bytes per interface, not per process), and memory %. Samples belong to the phase current
when their interval ends; switching phase (``with sampler.phase("full-cycle/zeep/4"):``) closes the
running interval with a sample, so no interval straddles two phases. A phase of worker processes
begins with their start-up (a process spawned, imports, a WSDL parsed, a login, an untimed
preparation: CPU-heavy, and in a phase of a fraction of a second most of its samples' time), which
goes to series :data:`START_PHASE` until the workers are ready at the barrier
(:meth:`Sampler.ready`): the phase's own series is its workload's alone. The runner also samples
when a phase's workers have sent their last records, before they are reaped, and a sweep step when
its load threads have made their calls, before they exit (:meth:`Sampler.sample`): an ended process
or thread has no CPU to read, so a phase shorter than one interval would otherwise have no reading
of its clients at all (its bar missing from the page's chart; TRYOUT4 #7).

**Client-bound** is decided from the suite's own clients, never from the machine: a busy box
or a catalogue on the same host slows the client down, but it does not make the client the
bottleneck. The clients are the worker processes added with :meth:`Sampler.add_process` (the
workloads) and this process's threads named ``sv7-load-…`` (:data:`CLIENT_THREAD_PREFIX`: the
sweep's open loop; the built-in catalogue's threads in the same process are not clients). Each
sample records their CPU (``client_cpu_percent``, 100 = one core; on Linux from each thread's
nanoseconds on a core in ``/proc/<pid>/task/<tid>/schedstat``, since psutil's count in 10 ms
ticks reads a phase of 20 ms as anything from 0 to 150 %) against what they could use
(``client_capacity_percent``: one core per client process, and one for the load threads, which
share one interpreter — at most the cores this process may run on), beside the CPU of
everything else (``others_cpu_percent``) and the machine's load average. A phase is flagged
``client_bound`` when, averaged over the samples in which clients ran (weighted by the time each
covers), either

* the busiest client used more than 90 % of one core: a Python client cannot use more than
  about one core for its interpreter (the GIL), so this is saturation even on an idle
  many-core machine; or
* the clients together used more than 90 % of the cores they could use.

A busy machine is recorded beside, not taken for a saturated client: on Linux each sample also
records how much of the interval the most-waiting client spent ready to run but waiting for a
core (``client_wait_percent``, from ``/proc/…/schedstat``). When that exceeds 25 % the phase is
``machine_busy``: its figures include the client's wait for a core (other jobs, a catalogue on
the same host), which the page can say beside the figure. A client waiting for answers is not
runnable, so a slow server trips neither. A phase shorter than one sampling period does not
state the rest of the machine's CPU (:attr:`PhaseSeries.too_short`).

The thread sleeps on an Event between samples (no busy loop) and stops on :meth:`stop` or when
the ``with`` block ends. Each sample reads four small /proc files, a fraction of a millisecond:
``tests/benchmarks/test_bench_load.py`` measures the overhead against the 1 %-of-a-core target.
"""

from __future__ import annotations

import contextlib
import copy
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import psutil

from igestbench.results.client_use import (
    CLIENT_BOUND_PERCENT,
    START_PHASE,
    client_use_percent,
)

__all__ = [
    "CLIENT_BOUND_PERCENT",
    "CLIENT_THREAD_PREFIX",
    "MACHINE_BUSY_WAIT_PERCENT",
    "START_PHASE",
    "PhaseSeries",
    "Sampler",
]

#: Above this share of the time waiting for a core, a client's machine counts as busy.
MACHINE_BUSY_WAIT_PERCENT = 25.0
#: Threads of this process whose names start so are clients (the open loop's load threads).
CLIENT_THREAD_PREFIX = "sv7-load-"


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the OS says; else all)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on macOS and Windows
        return psutil.cpu_count() or 1


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
    #: The suite's clients per sample (worker processes, load threads), 100 = one core …
    client_cpu_percent: list[float] = field(default_factory=list)
    #: … what they could use (100 per client process or the load threads, at most the cores) …
    client_capacity_percent: list[float] = field(default_factory=list)
    #: … the busiest of them (the load threads count as one: they share an interpreter) …
    busiest_process_percent: list[float] = field(default_factory=list)
    #: … and everything else on the machine (the built-in catalogue included), 100 = one core.
    others_cpu_percent: list[float] = field(default_factory=list)
    #: The machine's 1-minute load average per sample.
    load_avg: list[float] = field(default_factory=list)
    #: The most-waiting client's share of the interval spent waiting for a core (Linux), %.
    client_wait_percent: list[float] = field(default_factory=list)
    #: The machine's network, every interface: a loopback byte is in both (sent and received).
    net_in_mbit_s: list[float] = field(default_factory=list)
    net_out_mbit_s: list[float] = field(default_factory=list)
    #: The loopback interfaces' bytes, once each (results/machine_net.py).
    net_loopback_mbit_s: list[float] = field(default_factory=list)
    memory_percent: list[float] = field(default_factory=list)

    def _client_means(self) -> tuple[float, float, float, float, float] | None:
        """Time-weighted means (client, capacity, busiest, others, wait) over the samples in
        which clients ran; None when none did."""
        weights = [dt if cap > 0 else 0.0
                   for dt, cap in zip(self.dt_s, self.client_capacity_percent, strict=True)]
        total = sum(weights)
        if total <= 0:
            return None

        def mean(values: list[float]) -> float:
            return sum(v * w for v, w in zip(values, weights, strict=True)) / total

        return (mean(self.client_cpu_percent), mean(self.client_capacity_percent),
                mean(self.busiest_process_percent), mean(self.others_cpu_percent),
                mean(self.client_wait_percent))

    @property
    def client_bound(self) -> bool:
        return self._why_bound() is not None

    def _why_bound(self) -> str | None:
        means = self._client_means()
        if means is None or self.phase == START_PHASE:
            # the workers' start-up measures nothing: a start-up at a full core is no verdict
            return None
        client, capacity, busiest, _, _ = means
        if client_use_percent(client, capacity, busiest) <= CLIENT_BOUND_PERCENT:
            return None
        if busiest > CLIENT_BOUND_PERCENT:
            return f"the busiest client used {busiest:.0f} % of one core"
        if client > CLIENT_BOUND_PERCENT / 100 * capacity:
            return (f"the clients used {client:.0f} % of CPU of the {capacity:.0f} % they "
                    "could use")
        return None

    @property
    def too_short(self) -> bool:
        """Shorter than one sampling period: the machine's CPU over it is the kernel's count of
        a few 10 ms ticks (or of none), not a figure to state. The clients' wait for a core is
        counted in nanoseconds, and still is one."""
        return sum(self.dt_s) < self.interval_s

    @property
    def machine_busy(self) -> bool:
        return self._why_busy() is not None

    def _why_busy(self) -> str | None:
        means = self._client_means()
        if means is None or means[4] <= MACHINE_BUSY_WAIT_PERCENT:
            return None
        load = max(self.load_avg, default=0.0)
        rest = ("the phase was too short to sample the rest of the machine" if self.too_short
                else f"the rest of the machine used {means[3]:.0f} % of CPU")
        return (f"a client waited for a core {means[4]:.0f} % of the time (load average "
                f"{load:.1f}, {rest})")

    def client_summary(self) -> dict[str, Any]:
        """The phase's clients in one object (a ``benchmarks`` entry's ``client_cpu``): their
        CPU, capacity and busiest one (time-weighted means while they ran, % of one core), the
        rest of the machine, the highest load average, and the verdict with its reason."""
        means = self._client_means()
        client, capacity, busiest, others, wait = means if means is not None else (None,) * 5
        if self.too_short:
            others = None  # as the note says: not sampled
        return {"cpu_percent": client, "capacity_percent": capacity,
                "busiest_percent": busiest, "wait_percent": wait, "others_percent": others,
                "load_avg": max(self.load_avg, default=None), "cores": usable_cores(),
                "bound": self.client_bound, "why": self._why_bound(),
                "machine_busy": self.machine_busy, "busy_why": self._why_busy()}

    def to_dict(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "interval_s": self.interval_s,
            "t_s": list(self.t_s),
            "dt_s": list(self.dt_s),
            "cpu_percent": list(self.cpu_percent),
            "per_core_percent": [list(c) for c in self.per_core_percent],
            "process_cpu_percent": list(self.process_cpu_percent),
            "client_cpu_percent": list(self.client_cpu_percent),
            "client_capacity_percent": list(self.client_capacity_percent),
            "busiest_process_percent": list(self.busiest_process_percent),
            "others_cpu_percent": list(self.others_cpu_percent),
            "load_avg": list(self.load_avg),
            "client_wait_percent": list(self.client_wait_percent),
            "net_in_mbit_s": list(self.net_in_mbit_s),
            "net_out_mbit_s": list(self.net_out_mbit_s),
            "net_loopback_mbit_s": list(self.net_loopback_mbit_s),
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
        self._own = psutil.Process()
        #: client processes (workers); those that exited are dropped
        self._clients: list[psutil.Process] = []
        #: ns on a core of each thread of each client process at the previous sample (Linux)
        self._client_ns: dict[int, dict[str, int]] = {}
        #: CPU seconds of each thread of this process at the previous sample, by native id
        self._thread_cpu: dict[int, float] = {}
        self._cores = usable_cores()
        #: ns each client task had waited for a core at the previous sample, by schedstat file
        self._waits: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._phase = phase
        #: the phase whose clients are starting (samples go to their start series until ready)
        self._starting: str | None = None
        self._series: dict[str, PhaseSeries] = {}
        self._t0 = time.monotonic()
        self._last_t = self._t0
        self._loopback = _loopback_interfaces()
        self._last_net = _net_bytes(self._loopback)
        self._last_cores = psutil.cpu_times(percpu=True)
        for pid in children:
            self.add_process(pid)

    def add_process(self, pid: int) -> None:
        """Sample a client process too (a worker); one that has exited is skipped."""
        process = psutil.Process(pid)
        process.cpu_percent(None)  # the first call only sets the baseline
        with self._lock:
            self._clients.append(process)
            self._client_ns[pid] = _threads_on_cpu_ns(pid)

    def start(self) -> Sampler:
        if self._thread is not None:
            raise RuntimeError("a sampler is started once")
        # Baselines: psutil's percentages cover the time since the previous call.
        for process in (self._own, *self._clients):
            process.cpu_percent(None)
        self._client_ns = {p.pid: _threads_on_cpu_ns(p.pid) for p in self._clients}
        self._last_t = time.monotonic()
        self._last_net = _net_bytes(self._loopback)
        self._last_cores = psutil.cpu_times(percpu=True)
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
    def phase(self, name: str, start: str | None = None) -> Iterator[PhaseSeries]:
        """Samples inside the block go to series ``name``; the previous phase resumes after.

        With ``start``, they go to series ``start`` until :meth:`ready` (the clients' start-up:
        a process spawned, its imports, a WSDL parsed, a login, an untimed preparation), and
        to ``name`` from then on, so that ``name``'s client CPU — and its client-bound verdict
        — is only its workload's. The series yielded is ``name``'s.
        """
        with self._lock:
            self._take()
            previous, self._phase = self._phase, start or name
            self._starting = name if start else None
            if start:
                self._series_of(start)  # the start-up's series before the phase's, in order
            series = self._series_of(name)
        try:
            yield series
        finally:
            with self._lock:
                self._take()
                self._phase, self._starting = previous, None

    def ready(self) -> None:
        """The clients of the current phase are ready (:meth:`phase`'s ``start``): a sample
        closes their start-up, and samples go to the phase's own series from now on."""
        with self._lock:
            if self._starting is not None:
                self._take()
                self._phase, self._starting = self._starting, None

    def sample(self) -> None:
        """Take a sample now, into the current phase: called when a phase's workers are done
        but not yet reaped (a finished worker's CPU can be read until then, never after)."""
        if self._thread is not None and not self._stop.is_set():
            self._sample()

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
        cores = psutil.cpu_times(percpu=True)
        per_core = [_busy_percent(a, b) for a, b in zip(self._last_cores, cores, strict=False)]
        self._last_cores = cores
        try:
            own = self._own.cpu_percent(None)
        except psutil.Error:
            own = 0.0
        clients, alive = [], []
        for process in self._clients:
            try:
                ticks = process.cpu_percent(None)
            except psutil.Error:  # a worker that has exited contributes nothing, and no capacity
                self._client_ns.pop(process.pid, None)
                continue
            clients.append(self._precise_percent(process.pid, elapsed, ticks))
            alive.append(process)
        self._clients = alive
        load, tids = self._load_threads_percent(elapsed)
        if load is not None:
            clients.append(load)  # the load threads share one interpreter: one client's worth
        tasks = [f"/proc/{p.pid}/schedstat" for p in alive]
        tasks += [f"/proc/{self._own.pid}/task/{tid}/schedstat" for tid in tids]
        waited = self._wait_percent(tasks, elapsed)
        net = _net_bytes(self._loopback)
        # a counter that went back (an interface gone, a wrap) gives 0, not a negative rate
        bits_in, bits_out, bits_loopback = (max(0, now_ - then) * 8
                                            for now_, then in zip(net, self._last_net,
                                                                  strict=True))
        self._last_t, self._last_net = now, net

        series = self._series_of(self._phase)
        series.t_s.append(round(now - self._t0, 3))
        series.dt_s.append(elapsed)
        series.cpu_percent.append(sum(per_core) / len(per_core) if per_core else 0.0)
        series.per_core_percent.append(list(per_core))
        series.process_cpu_percent.append(own + sum(clients[: len(alive)]))
        client = sum(clients)
        series.client_cpu_percent.append(client)
        series.client_capacity_percent.append(100.0 * min(len(clients), self._cores))
        series.busiest_process_percent.append(max(clients, default=0.0))
        series.others_cpu_percent.append(max(0.0, sum(per_core) - client))
        series.load_avg.append(_load_average())
        series.client_wait_percent.append(waited)
        series.net_in_mbit_s.append(bits_in / elapsed / 1e6)
        series.net_out_mbit_s.append(bits_out / elapsed / 1e6)
        series.net_loopback_mbit_s.append(bits_loopback / elapsed / 1e6)
        series.memory_percent.append(psutil.virtual_memory().percent)

    def _precise_percent(self, pid: int, elapsed: float, ticks: float) -> float:
        """A client process's CPU % since the previous sample from its threads' nanoseconds on a
        core (Linux's schedstat), else ``ticks`` (psutil's: counted in 10 ms ticks, which in a
        phase of 20 ms reads anything from 0 to 150 % of a core)."""
        before, now = self._client_ns.get(pid), _threads_on_cpu_ns(pid)
        self._client_ns[pid] = now
        if before is None or not now:
            return ticks
        # a thread first seen started within the interval; one gone is not counted
        used = sum(max(0, ns - before.get(tid, 0)) for tid, ns in now.items())
        return used / (elapsed * 1e9) * 100

    def _threads_cpu(self) -> dict[int, float]:
        try:
            return {t.id: t.user_time + t.system_time for t in self._own.threads()}
        except psutil.Error:
            return {}

    def _load_threads_percent(self, elapsed: float) -> tuple[float | None, list[int]]:
        """CPU % (of one core) of this process's load threads since the previous sample (None
        when none runs), and their native ids, which psutil and /proc name threads by."""
        ids = [t.native_id for t in threading.enumerate()
               if t.name.startswith(CLIENT_THREAD_PREFIX) and t.native_id is not None]
        if not ids:  # none now: those of the next sample start after this one (from 0)
            self._thread_cpu = {}
            return None, []
        before, now = self._thread_cpu, self._threads_cpu()
        self._thread_cpu = now
        used = sum(now[i] - before.get(i, 0.0) for i in ids if i in now)
        return max(0.0, used) / elapsed * 100, ids

    def _wait_percent(self, tasks: list[str], elapsed: float) -> float:
        """The highest share of the interval any of ``tasks`` (schedstat files: ns on a core,
        ns waiting in the run queue) spent waiting for a core; 0 where there are no such
        files."""
        seen: dict[str, int] = {}
        most = 0.0
        for path in tasks:
            try:
                with open(path, encoding="ascii") as stat:
                    waiting = int(stat.read().split()[1])
            except (OSError, ValueError, IndexError):
                continue
            seen[path] = waiting
            # a task first seen started within the interval (a new worker, a step's thread)
            share = (waiting - self._waits.get(path, 0)) / (elapsed * 1e9) * 100
            most = max(most, min(100.0, share))
        self._waits = seen
        return most


def _threads_on_cpu_ns(pid: int) -> dict[str, int]:
    """Nanoseconds on a core of each thread of process ``pid`` (the first field of
    ``/proc/<pid>/task/<tid>/schedstat``), by thread id; empty where there is no such file (not
    Linux, the process gone)."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return {}
    found: dict[str, int] = {}
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", encoding="ascii") as stat:
                found[tid] = int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
    return found


def _loopback_interfaces() -> frozenset[str]:
    """The names of the machine's loopback interfaces: flagged so where psutil says (Linux,
    macOS), else by name (``lo``, ``lo0``; Windows' "Loopback Pseudo-Interface 1")."""
    try:
        stats = psutil.net_if_stats()
    except (OSError, psutil.Error):
        stats = {}
    flagged = {name for name, st in stats.items()
               if "loopback" in str(getattr(st, "flags", "")).split(",")}
    try:
        names = list(psutil.net_io_counters(pernic=True))
    except (OSError, psutil.Error):
        names = []
    named = {n for n in names if re.fullmatch(r"lo\d*", n) or "loopback" in n.lower()}
    return frozenset(flagged | named)


def _net_bytes(loopback: frozenset[str]) -> tuple[int, int, int]:
    """Bytes received and sent by every interface, and loopback's once (what it sent: each
    byte it carries is also received by it)."""
    try:
        nics = psutil.net_io_counters(pernic=True)
    except (OSError, psutil.Error):  # no counters (a container without /proc/net/dev)
        return 0, 0, 0
    return (sum(c.bytes_recv for c in nics.values()), sum(c.bytes_sent for c in nics.values()),
            sum(c.bytes_sent for name, c in nics.items() if name in loopback))


def _busy_percent(before: Any, after: Any) -> float:
    """How busy one core was between two of its ``psutil.cpu_times`` (100 = all the time).

    Not ``psutil.cpu_percent``: it keeps its baseline per calling thread, and samples are taken
    by the sampler's thread and by whichever thread switches phases — a first call in a thread
    read 0 % (the rest of the machine "used 0 % of CPU"), a later one covered another interval
    than the sample's. Idle and iowait are idle; guest time is counted in user time already.
    """
    def total(t: Any) -> float:
        return float(sum(t)) - getattr(t, "guest", 0.0) - getattr(t, "guest_nice", 0.0)

    def idle(t: Any) -> float:
        return float(t.idle) + getattr(t, "iowait", 0.0)

    spent = total(after) - total(before)
    if spent <= 0:
        return 0.0
    return min(100.0, max(0.0, (spent - (idle(after) - idle(before))) / spent * 100))


def _load_average() -> float:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):  # not on Windows
        return 0.0
