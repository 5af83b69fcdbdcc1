"""Open-loop load at a demanded rate: the httperf / wrk2 / Vegeta method.

For a demanded rate R, call *i* of a step has the intended send time ``t0 + i/R``, whatever the
catalogue does. A small pool of worker threads, each owning one client (one connection), takes
the slots in order from a shared counter, sleeps until the slot's time and issues the call. When
every worker is busy (the catalogue stalls), slots wait: the call is sent late and its latency is
measured from its *intended* time (``corrected``, what a population of independent users would
see), beside the latency from the actual send (``uncorrected``, what a closed-loop tool reports).
A call sent more than ``tolerance_ms`` after its slot, and a slot never sent before the step
ended, is a *missed slot*: counted, never silently dropped.

**Threads, not processes.** The lean client spends ~70-110 µs of CPU per small call and holds
the GIL only for that; the rest is waiting on sockets. ``tests/benchmarks/test_bench_load.py``
measures the send-time lateness of this scheduler against a catalogue in another process (at
500 and 2,000 demanded calls/s on the 2-core development machine) and reports it; threads keep
the lateness within the scheduling noise of ``Event.wait`` itself (~0.1 ms), far below the
latencies measured. Higher rates than one process sustains are reached by running one
:class:`OpenLoop` per process at R/P each and merging the :class:`StepResult` histograms.

**Connections.** ``calls_per_connection=None`` keeps each worker's client for the whole run
(persistent); ``N`` renews it after N calls, ``1`` is httperf's connection per call. Renewal
``"new-client"`` closes the client and asks the factory for a new one (for any flavour; the
factory's cost — connect, TLS, and whatever it does such as a login — is part of the call);
``"reopen"`` closes only the client's connection and keeps its session, which the lean client
reopens on its next call (the cost of TCP + TLS alone).
"""

from __future__ import annotations

import errno
import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Literal

from igestbench.client.base import Catalogue
from igestbench.client.transport import NETWORK_ERRORS, TransportCause, TransportFailure, classify
from igestbench.icat.faults import IcatError
from igestbench.measure.sampler import CLIENT_THREAD_PREFIX
from igestbench.measure.stats import LatencyStats, OpStats, rate_per_s
from igestbench.measure.sweep import StepResult
from igestbench.workloads.base import WrongResult

__all__ = [
    "NO_ANSWER",
    "Call",
    "ClientFactory",
    "OpenLoop",
    "Operation",
    "Reconnect",
    "StepSchedule",
    "classify_failure",
    "summarize_step",
    "weighted_cycle",
]

#: Makes the client a worker owns (typically ``lambda: logged_in(connect(cfg, "lean"))``).
ClientFactory = Callable[[], Catalogue]
#: One call: given the worker's client, do the operation and check its answer (raise
#: :class:`~igestbench.workloads.base.WrongResult` when it is wrong).
Operation = Callable[[Catalogue], object]
Reconnect = Literal["new-client", "reopen"]

#: Error causes where nothing answered (the others are answers: faults, wrong results, statuses).
NO_ANSWER = frozenset(
    {"connect-timeout", "timeout", "refused", "reset", "tls", "dns", "client-resources"}
)
#: How long an ended load thread waits for run() to read its CPU (it is read at once; the bound
#: only keeps a thread from outliving a run that failed in between).
_RELEASE_WAIT_S = 5.0
_RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.EADDRNOTAVAIL, errno.ENOBUFS})
_CAUSE_NAMES = {TransportCause.CONNECTION: "reset"}


def _linked(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        todo += [current.__cause__, current.__context__]


def classify_failure(exc: BaseException) -> str:
    """The cause a failed call is counted under (``refused``, ``SESSION``, ``wrong-result`` …)."""
    # Checked first: running out of descriptors or ports is the client's failure, whatever the
    # transport layer wrapped it in.
    if any(isinstance(e, OSError) and e.errno in _RESOURCE_ERRNOS for e in _linked(exc)):
        return "client-resources"
    if isinstance(exc, IcatError):
        return exc.fault_type.value
    if isinstance(exc, WrongResult):
        return "wrong-result"
    if isinstance(exc, TransportFailure):
        return _CAUSE_NAMES.get(exc.cause, exc.cause.value)
    if isinstance(exc, NETWORK_ERRORS):  # raised by a factory or op outside a client's mapping
        return classify_failure(classify(exc, ""))
    return type(exc).__name__


def weighted_cycle(weights: Mapping[str, int]) -> list[str]:
    """One period of ``weights`` (``{"search": 21, "get": 8, "create": 1}``), interleaved.

    Smooth weighted round robin (as nginx balances upstreams): each name appears exactly its
    weight's times per period, spread out rather than in runs, so a short step still sees the mix.
    """
    if not weights or any(w < 0 for w in weights.values()) or sum(weights.values()) == 0:
        raise ValueError(f"a mix needs positive weights, not {dict(weights)}")
    total = sum(weights.values())
    current = dict.fromkeys(weights, 0)
    order: list[str] = []
    for _ in range(total):
        for name, weight in weights.items():
            current[name] += weight
        chosen = max(current, key=lambda n: current[n])
        current[chosen] -= total
        order.append(chosen)
    return order


#: One call as a worker records it: op name, intended, sent and done (perf_counter_ns), cause.
Call = tuple[str, int, int, int, str | None]


class StepSchedule:
    """The shared state of one running step (also driven by ``sv7 swarm``'s Locust users)."""

    def __init__(self, rate: float, total_s: float, ops: list[tuple[str, Operation]]) -> None:
        self.period_ns = 1e9 / rate
        self.total_ns = int(total_s * 1e9)
        self.ops = ops
        self.slots = itertools.count()  # next() on a C iterator is atomic under the GIL
        self.calls: list[list[Call]] = []
        self.in_flight: list[tuple[str, int, int] | None] = []
        self.abandoned: set[int] = set()
        #: Set when the step ends (schedule over and drained, or stopped): no call starts after.
        self.halt = threading.Event()
        self.t0 = 0

    def slot_count(self, limit_ns: int) -> int:
        """How many slots have an offset below ``limit_ns`` (as the workers compute offsets)."""
        n = max(0, math.ceil(limit_ns / self.period_ns) - 1)
        while round(n * self.period_ns) < limit_ns:
            n += 1
        return n


class OpenLoop:
    """Issues calls on a schedule from a pool of worker threads, each owning a client.

    Clients are made lazily by ``factory`` (a failure to make one is that call's error) and kept
    across steps; :meth:`close` (or the ``with`` block's end) closes them.
    """

    def __init__(
        self,
        factory: ClientFactory,
        ops: Mapping[str, Operation],
        mix: Mapping[str, int] | None = None,
        *,
        workers: int = 8,
        calls_per_connection: int | None = None,
        reconnect: Reconnect = "new-client",
        tolerance_ms: float = 10.0,
        drain_s: float = 5.0,
        clock: Callable[[], int] = time.perf_counter_ns,
    ) -> None:
        if workers < 1 or (calls_per_connection is not None and calls_per_connection < 1):
            raise ValueError("workers and calls_per_connection must be at least 1")
        order = weighted_cycle(mix if mix is not None else dict.fromkeys(ops, 1))
        missing = set(order) - set(ops)
        if missing:
            raise ValueError(f"the mix names operations that were not given: {sorted(missing)}")
        self._ops = [(name, ops[name]) for name in order]
        self._factory = factory
        self.workers = workers
        self.calls_per_connection = calls_per_connection
        self._reconnect = reconnect
        self._tolerance_ns = int(tolerance_ms * 1e6)
        self._drain_s = drain_s
        self._clock = clock
        self._clients: list[Catalogue | None] = [None] * workers
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._current: StepSchedule | None = None

    @property
    def connection_mode(self) -> str:
        return "per-call" if self.calls_per_connection == 1 else "persistent"

    def stop(self) -> None:
        """End the running step (and refuse further ones) from another thread, e.g. on Ctrl-C."""
        self._stop.set()
        step = self._current
        if step is not None:
            step.halt.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def close(self) -> None:
        with self._lock:
            clients, self._clients = self._clients, [None] * self.workers
        for client in clients:
            if client is not None:
                _close_quietly(client)

    def __enter__(self) -> OpenLoop:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- before the first step ----------------------------------------------------------

    def warm_up(self, rate: float, seconds: float) -> dict[str, float | int]:
        """Before the first step, nothing of it counted: every worker's client made at once
        (connection, TLS, login), then the schedule at ``rate`` for ``seconds`` — and at least
        until each worker had a call on its connection, and the server its first queries.

        Without it the first step ran cold: its workers connected and logged in inside their
        first timed calls (the step's own warm-up, a fraction of a second at the first rate,
        covers a few of the workers only), and it read worse than the steps after it. What it
        did goes into the result file (``sweeps[].warmup``).
        """
        made = self._make_clients()
        seconds = max(seconds, (self.workers + len(self._ops)) / rate)
        # OpenLoop's own step: a subclass's handling of outages is for measured steps
        result = OpenLoop.run(self, rate, seconds)
        return {"rate": rate, "seconds": seconds, "clients": made, "calls": result.sent}

    def _make_clients(self) -> int:
        """Make the client of every worker that has none, one after another; how many there
        are. A failure is left for that worker's first call, which counts it.

        One after another, not all at once: a login is a call the server makes onward (ICAT
        asks its authenticator, on a default Payara over HTTP from the same five request
        threads), and eight at once held a real ICAT 6.2.0's every thread waiting for the
        others — no answer for 30 s, to anyone (2026-11-26). Workers of a step log in at the
        schedule's pace, so only this warm-up could send them together."""

        def make_all() -> None:
            for k in range(self.workers):
                if self._stop.is_set():
                    return
                with self._lock:
                    if self._clients[k] is not None:
                        continue
                try:
                    client = self._factory()
                except Exception:
                    continue
                with self._lock:
                    if self._clients[k] is None:
                        self._clients[k] = client
                        continue
                _close_quietly(client)

        # a thread of the suite's load, as the workers' (the sampler counts its CPU as theirs)
        maker = threading.Thread(target=make_all, name=f"{CLIENT_THREAD_PREFIX}warm-up",
                                 daemon=True)  # fmt: skip
        maker.start()
        maker.join()
        with self._lock:
            return sum(client is not None for client in self._clients)

    # --- one step --------------------------------------------------------------------------

    def run(self, rate: float, duration_s: float, warmup_s: float = 0.0,
            on_end: Callable[[], None] | None = None) -> StepResult:
        """Calls at ``rate``/s for ``warmup_s`` + ``duration_s``; statistics over the latter.
        ``on_end`` is called when the load threads have made their calls, before they exit: the
        sampler reads their CPU then (an ended thread's cannot be read, so a step shorter than
        one sampling interval would have no reading of its client)."""
        if rate <= 0 or duration_s <= 0 or warmup_s < 0:
            raise ValueError("a step needs a positive rate and duration")
        step = StepSchedule(rate, warmup_s + duration_s, self._ops)
        self._current = step
        if self._stop.is_set():
            step.halt.set()
        step.calls = [[] for _ in range(self.workers)]
        step.in_flight = [None] * self.workers
        ended = [threading.Event() for _ in range(self.workers)]
        release = threading.Event()
        threads = [
            threading.Thread(target=self._work, args=(k, step, ended[k], release),
                             name=f"{CLIENT_THREAD_PREFIX}{k}", daemon=True)
            for k in range(self.workers)
        ]
        # Start every thread before the schedule begins so slot 0 does not wait for thread start.
        step.t0 = self._clock() + 5_000_000
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + warmup_s + duration_s + 0.005 + self._drain_s
        for done in ended:
            done.wait(max(0.0, deadline - time.monotonic()))
        if on_end is not None:
            on_end()
        release.set()
        for thread, done in zip(threads, ended, strict=True):  # those done exit now
            thread.join(None if done.is_set() else 0.0)
        # Workers still blocked in a call past the drain time are abandoned (daemon threads end
        # with their client's read timeout); what they hold in flight counts as timed out.
        step.halt.set()
        with self._lock:
            step.abandoned.update(k for k, t in enumerate(threads) if t.is_alive())
            calls = [list(c) for c in step.calls]
            hung = [step.in_flight[k] for k in step.abandoned]
        self._current = None
        return self._result(step, rate, duration_s, warmup_s, calls, hung)

    def _work(self, k: int, step: StepSchedule, ended: threading.Event,
              release: threading.Event) -> None:
        try:
            self._calls(k, step)
        finally:
            ended.set()
            release.wait(_RELEASE_WAIT_S)  # run() reads the threads' CPU before they exit

    def _calls(self, k: int, step: StepSchedule) -> None:
        clock, factory, ops, period = self._clock, self._factory, step.ops, step.period_ns
        cycle, halt, t0, total = len(ops), step.halt, step.t0, step.total_ns
        record = step.calls[k].append
        with self._lock:
            client, self._clients[k] = self._clients[k], None
        on_connection = 0
        for i in step.slots:
            offset = round(i * period)
            if offset >= total:
                break
            wait_ns = t0 + offset - clock()
            if (wait_ns > 0 and halt.wait(wait_ns / 1e9)) or halt.is_set():
                break
            if clock() - t0 >= total:  # sending ends with the schedule; the drain is for answers
                break
            name, op = ops[i % cycle]
            sent = clock()
            step.in_flight[k] = (name, t0 + offset, sent)
            cause = None
            try:
                if client is None:
                    client = factory()
                op(client)
            except Exception as exc:  # every failure is a counted outcome, never a dead worker
                cause = classify_failure(exc)
            record((name, t0 + offset, sent, clock(), cause))
            step.in_flight[k] = None
            on_connection += 1
            if client is not None and on_connection == self.calls_per_connection:
                on_connection = 0
                _close_quietly(client)
                if self._reconnect == "new-client":
                    client = None
        with self._lock:
            if k not in step.abandoned:
                self._clients[k] = client
                return
        if client is not None:  # abandoned by run(): a late answer may still be on its way
            _close_quietly(client)

    def _result(
        self,
        step: StepSchedule,
        rate: float,
        duration_s: float,
        warmup_s: float,
        calls: list[list[Call]],
        hung: list[tuple[str, int, int] | None],
    ) -> StepResult:
        return summarize_step(step, rate, duration_s, warmup_s, calls, hung, self._tolerance_ns)


def summarize_step(
    step: StepSchedule,
    rate: float,
    duration_s: float,
    warmup_s: float,
    calls: list[list[Call]],
    hung: list[tuple[str, int, int] | None],
    tolerance_ns: int,
) -> StepResult:
    """The :class:`StepResult` of the calls of one step (warm-up calls left out); ``hung``: the
    calls still in flight when the step was given up, counted as timed out."""
    warm_ns = round(warmup_s * 1e9)
    start = step.t0 + warm_ns
    scheduled = step.slot_count(step.total_ns) - step.slot_count(warm_ns)
    corrected, uncorrected, lateness = LatencyStats(), LatencyStats(), LatencyStats()
    errors: dict[str, int] = {}
    per_op: dict[str, tuple[list[int], dict[str, int]]] = {}
    sent = late = responses = 0
    last_sent = last_done = start
    measured = [c for worker in calls for c in worker if c[1] >= start]
    hung_calls = [(h[0], h[1], h[2], 0, "timeout") for h in hung if h is not None]
    measured += [c for c in hung_calls if c[1] >= start]
    for name, intended, sent_ns, done, cause in measured:
        sent += 1
        behind = sent_ns - intended
        lateness.record(behind)
        late += behind > tolerance_ns
        last_sent = max(last_sent, sent_ns)
        durations, op_errors = per_op.setdefault(name, ([], {}))
        if cause is None:
            corrected.record(done - intended)
            uncorrected.record(done - sent_ns)
            durations.append(done - intended)
        else:
            errors[cause] = errors.get(cause, 0) + 1
            op_errors[cause] = op_errors.get(cause, 0) + 1
        if cause not in NO_ANSWER:
            responses += 1
            last_done = max(last_done, done)
    ops = {
        name: OpStats(name, len(d) + sum(e.values()), len(d), e, LatencyStats.of(d))
        for name, (d, e) in per_op.items()
    }
    return StepResult(
        demanded_rate=rate,
        duration_s=duration_s,
        sent=sent,
        request_rate=rate_per_s(sent, max(duration_s, (last_sent - start) / 1e9)),
        response_rate=rate_per_s(responses, max(duration_s, (last_done - start) / 1e9)),
        late=late,
        unsent=max(0, scheduled - sent),
        corrected=corrected,
        uncorrected=uncorrected,
        lateness=lateness,
        errors=errors,
        ops=ops,
    )


def _close_quietly(client: Catalogue) -> None:
    # Closing drops a connection; a failure to do so cleanly changes nothing we measure.
    try:
        client.close()
    except Exception:
        return
