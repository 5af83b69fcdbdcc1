"""Latency statistics, psutil sampling and the open-loop load generator (issue 4's engine)."""

from __future__ import annotations

import errno
import math
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable

import pytest

from igestbench.client import Catalogue, ClientConfig, TransportCause, TransportFailure, connect
from igestbench.config import FaultKnobs, ServeConfig
from igestbench.icat.faults import IcatSession
from igestbench.measure.sampler import CLIENT_THREAD_PREFIX, PhaseSeries, Sampler
from igestbench.measure.schedule import OpenLoop, classify_failure, weighted_cycle
from igestbench.measure.stats import (
    RAW_LIMIT,
    LatencyStats,
    OpStats,
    mean_ci95,
    merge_ops,
    summarize,
    t_quantile_975,
    throughput_per_s,
)
from igestbench.measure.sweep import (
    StepResult,
    SweepConfig,
    combine,
    run_sweep,
    step_failure,
    sustained_rate,
    sweep_rates,
)
from igestbench.measure.timing import TimingRecord
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.results.machine_net import phase_machine_net
from igestbench.workloads.base import WrongResult

MS = 1_000_000
ROOT = {"username": "root", "password": "root"}


# --- statistics ----------------------------------------------------------------------------


def test_percentiles_of_known_data_are_exact_while_raw() -> None:
    stats = LatencyStats.of(i * MS for i in range(1, 1001))  # 1 .. 1000 ms
    assert stats.summary() == {
        "mean": 500.5,
        "ci95": pytest.approx([482.58, 518.42], abs=0.01),
        "p50": 500.0,
        "p90": 900.0,
        "p99": 990.0,
        "p999": 999.0,
    }
    assert (stats.min_ms, stats.max_ms) == (1.0, 1000.0)


def test_percentiles_from_the_histogram_stay_within_its_precision() -> None:
    rng = random.Random(4)
    values = [int(rng.lognormvariate(0, 1) * MS) for _ in range(3 * RAW_LIMIT)]
    stats = LatencyStats.of(values)
    ordered = sorted(values)
    for p, got in zip((50.0, 90.0, 99.0, 99.9), stats.percentiles_ms(), strict=True):
        exact = ordered[int(p * len(values) / 100 + 0.5) - 1] / MS
        assert got == pytest.approx(exact, rel=2e-3)
    assert stats.mean_ms == pytest.approx(statistics.fmean(values) / MS, rel=1e-12)


def test_merge_adds_calls_instead_of_averaging_averages() -> None:
    fast, slow = LatencyStats.of([1 * MS] * 10), LatencyStats.of([100 * MS] * 90)
    fast.merge(slow)
    pooled = LatencyStats.of([1 * MS] * 10 + [100 * MS] * 90)
    assert fast.count == 100 and fast.mean_ms == 90.1  # the average of averages would be 50.5
    assert fast.summary() == pooled.summary()
    assert fast.stdev_ms == pytest.approx(statistics.stdev([1] * 10 + [100] * 90))


def test_merge_beyond_the_raw_limit_keeps_the_histogram() -> None:
    parts = [LatencyStats.of(range(MS, MS + RAW_LIMIT * 1000, 1000)) for _ in range(2)]
    total = LatencyStats.merged(parts)
    assert total.count == 2 * RAW_LIMIT
    assert total.percentile_ms(50.0) == pytest.approx(6.0, rel=1e-3)


def test_encode_decode_round_trip() -> None:
    stats = LatencyStats.of(random.Random(1).randrange(50_000, 5 * MS) for _ in range(5000))
    copy = LatencyStats.decode(stats.encode())
    assert copy.count == stats.count and not copy.exact
    assert copy.percentiles_ms() == pytest.approx(stats.percentiles_ms(), rel=1e-3)
    assert copy.mean_ms == pytest.approx(stats.mean_ms, rel=1e-3)
    assert copy.max_ms == pytest.approx(stats.max_ms, rel=1e-3)


def test_confidence_interval_on_known_data() -> None:
    stats = LatencyStats.of(i * MS for i in range(1, 11))  # 1..10 ms: s = 3.02765, t9 = 2.2622
    low, high = stats.ci95_ms
    assert (low, high) == pytest.approx((5.5 - 2.16585, 5.5 + 2.16585), abs=1e-4)
    assert mean_ci95([float(i) for i in range(1, 11)]) == pytest.approx((5.5, low, high))
    assert math.isnan(LatencyStats.of([MS]).ci95_ms[0])


def test_t_quantile_table_and_expansion_agree() -> None:
    assert t_quantile_975(1) == 12.7062
    assert t_quantile_975(31) == pytest.approx(2.0395, abs=1e-4)
    assert t_quantile_975(30) == pytest.approx(2.0423, abs=1e-4)
    assert t_quantile_975(1000) == pytest.approx(1.96234, abs=1e-4)
    with pytest.raises(ValueError):
        t_quantile_975(0)


def test_summarize_counts_errors_by_class_and_keeps_cold_calls_apart() -> None:
    records = [TimingRecord("search", i, (i + 1) * MS, True, None) for i in range(5)]
    records.append(TimingRecord("search", 10, 50 * MS, False, "IcatSession"))
    records.append(TimingRecord("get", 0, 2 * MS, True, None))
    ops = summarize(records, cold=1)
    search = ops["search"]
    assert (search.count, search.ok, search.errors) == (5, 4, {"IcatSession": 1})
    assert search.cold_ms == [1.0] and search.latency.mean_ms == 3.5  # errors not in latency
    entry = search.to_dict()
    assert set(entry) == {"count", "ok", "errors", "mean_ms", "p50_ms", "p90_ms", "p99_ms",
                          "max_ms", "histogram", "cold_ms", "failed_ms"}  # fmt: skip
    assert entry["failed_ms"] == 50.0  # the failed call's time: in a rate, not in the latency
    assert LatencyStats.decode(entry["histogram"]).count == 4
    both = merge_ops([ops, ops])
    assert (both["search"].count, both["search"].errors) == (10, {"IcatSession": 2})
    assert both["search"].failed_ns == 100 * MS
    assert throughput_per_s(records) == pytest.approx(6 / 0.050000010, rel=1e-6)


# --- sampling ------------------------------------------------------------------------------


def test_sampler_series_per_phase_and_stop() -> None:
    lasted: dict[str, float] = {}
    with Sampler(interval_s=0.05) as sampler:
        for phase, pause in (("a", 0.32), ("b", 0.12)):
            began = time.monotonic()
            with sampler.phase(phase):
                time.sleep(pause)
            lasted[phase] = time.monotonic() - began
    series = {s.phase: s for s in sampler.series()}
    assert {"a", "b"} <= set(series)
    # The samples of a phase cover it, from its first moment to its last: at least the pause,
    # at most the whole block (and the millisecond before it that a sample too close to the
    # phase's start leaves to the phase). The thread samples at most once an interval (a busy
    # machine may wake it later, never sooner), and the phase's end adds one.
    for phase, pause in (("a", 0.32), ("b", 0.12)):
        covered = sum(series[phase].dt_s)
        assert pause <= covered <= lasted[phase] + 1e-3, (phase, covered, lasted[phase])
        assert len(series[phase].t_s) <= lasted[phase] / 0.05 + 2
    assert len(series["a"].t_s) >= 2  # the thread samples meanwhile, not only the phase's end
    entry = series["a"].to_dict()
    lengths = {k: len(v) for k, v in entry.items() if isinstance(v, list)}
    assert len(series["a"].dt_s) == len(series["a"].t_s)
    assert len(set(lengths.values())) == 1, lengths
    assert all(
        len(cores) == len(entry["per_core_percent"][0]) for cores in entry["per_core_percent"]
    )
    assert entry["t_s"] == sorted(entry["t_s"])
    assert not any(t.name == "sv7-sampler" for t in threading.enumerate())
    count = sum(len(s.t_s) for s in sampler.series())
    time.sleep(0.12)
    sampler.stop()  # idempotent, and no sample after the end
    assert sum(len(s.t_s) for s in sampler.series()) == count


def _spin_in(sampler: Sampler, phase: str, thread_name: str, seconds: float = 0.6
             ) -> PhaseSeries:
    done = threading.Event()

    def spin() -> None:
        while not done.is_set():
            pass

    with sampler.phase(phase) as series:
        spinner = threading.Thread(target=spin, name=thread_name)
        spinner.start()
        time.sleep(seconds)
        done.set()
        spinner.join()
    return series


def test_the_load_threads_are_the_client_and_other_threads_are_not() -> None:
    with Sampler(interval_s=0.1) as sampler:
        with sampler.phase("idle"):
            time.sleep(0.3)
        busy = _spin_in(sampler, "busy", f"{CLIENT_THREAD_PREFIX}0")
        other = _spin_in(sampler, "catalogue", "sv7-local-catalogue")
    ran = [(c, cap) for c, cap in zip(busy.client_cpu_percent, busy.client_capacity_percent,
                                      strict=True) if cap]
    assert ran and all(cap == 100.0 for _, cap in ran)  # one interpreter: one core's worth
    assert sum(c for c, _ in ran) > 0
    assert other.client_capacity_percent == [0.0] * len(other.t_s)  # no client ran
    assert not other.client_bound and other.client_summary()["cpu_percent"] is None
    idle = next(s for s in sampler.series() if s.phase == "idle")
    # Weighted by the time each sample covers, as the client-bound rule weighs them: the
    # milliseconds-long sample that closes a phase holds one 10 ms clock tick of CPU or none,
    # so on its own it reads 0 % or several hundred %.
    weighted = sum(p * dt for p, dt in zip(idle.busiest_process_percent, idle.dt_s, strict=True))
    assert weighted / sum(idle.dt_s) < 50


# --- open-loop load ------------------------------------------------------------------------


def lean(url: str, login: bool = True) -> Callable[[], Catalogue]:
    def make() -> Catalogue:
        client = connect(ClientConfig(url, connect_timeout=2, read_timeout=5), "lean")
        if login:
            client.login("simple", ROOT)
        return client

    return make


def search_facilities(client: Catalogue) -> object:
    return client.search("SELECT f FROM Facility f")


def test_corrected_latency_reflects_a_stall_that_the_uncorrected_hides(
    catalogue: LocalCatalogue,
) -> None:
    # One worker is one connection, as in wrk2's demonstration: while a call stalls, the slots
    # behind it wait, and only latency measured from the schedule sees them wait. The 10th call
    # stalls for 2 s at 20 calls/s: 1 call in the step's 80 took that long, and the 40 slots
    # that came due meanwhile waited for it, half of them over 1 s. (A machine too busy to keep
    # up makes the slots wait longer still, measured from the schedule, and only so; a search
    # took 260 ms at the 90th percentile at load average 12.)
    calls: list[int] = []

    def search(client: Catalogue) -> object:
        calls.append(len(calls))
        if len(calls) == 10:
            time.sleep(2.0)
        return search_facilities(client)

    # the client is made, and a first search answered (the catalogue builds its query parser
    # then), before the step: on a busy machine that took the whole step
    client = connect(ClientConfig(catalogue.service_url, read_timeout=60), "lean")
    client.login("simple", ROOT)
    search_facilities(client)
    with OpenLoop(lambda: client, {"search": search}, workers=1) as load:
        step = load.run(20, 4.0)
    corrected, uncorrected = step.corrected, step.uncorrected
    assert step.errors == {} and step.sent + step.unsent == 80 and step.sent >= 10
    assert uncorrected.max_ms >= 2000  # the stalled call itself is measured...
    assert uncorrected.percentile_ms(90.0) < 1000  # ...but it is one call: p90 hides it
    assert corrected.percentile_ms(90.0) >= 1000  # the 10 % of slots that waited most
    assert step.missed_slots >= 20  # the calls queued behind the stall were sent late


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_closed_port_is_counted_as_refused() -> None:
    url = f"http://127.0.0.1:{closed_port()}/ICATService/ICAT"
    with OpenLoop(lean(url), {"search": search_facilities}, workers=2) as load:
        step = load.run(50, 0.2)
    # Every call sent was refused and none answered. A slot goes unsent only when a loaded
    # machine woke its worker after the step's end (counted, as a missed slot).
    assert step.errors == {"refused": step.sent} and step.sent + step.unsent == 10
    assert step.response_rate == 0
    # A refusal holds no worker: had each call hung for the step, the two would have sent two.
    assert step.sent > 2


def test_injected_faults_are_counted_by_icat_type() -> None:
    knobs = FaultKnobs(error_rate=1.0)
    with (
        LocalCatalogue(ServeConfig(knobs=knobs)) as cat,
        OpenLoop(lean(cat.service_url), {"search": search_facilities}) as load,
    ):
        began = time.monotonic()
        step = load.run(50, 0.2)
        took = time.monotonic() - began
    assert step.errors == {"INTERNAL": step.sent} and step.sent + step.unsent == 10
    assert step.sent > 0 and step.corrected.count == 0
    # A fault is an answer: every call sent was answered, within the step or the time run() took
    # (however slow the machine), which bounds the response rate from below.
    assert step.sent / max(step.duration_s, took) <= step.response_rate <= step.sent / 0.2


def test_missed_slots_are_counted_when_the_target_is_slower_than_the_schedule() -> None:
    slow = ServeConfig(knobs=FaultKnobs(latency_ms=100))
    ops = {"names": lambda c: c.entity_names()}
    with (
        LocalCatalogue(slow) as cat,
        OpenLoop(lean(cat.service_url, login=False), ops, workers=1, drain_s=1.0) as load,
    ):
        started = time.monotonic()
        step = load.run(100, 0.5)
        elapsed = time.monotonic() - started
    assert step.sent + step.unsent == 50 and step.sent <= 6
    assert step.missed_slots >= 45 and step.late >= step.sent - 1
    # Bounded by the schedule: the slots not sent in time were left, not sent late one after
    # the other (50 calls of 100 ms), which a busy machine could only make slower still.
    assert elapsed < 50 * 0.100


def test_a_call_hanging_past_the_drain_time_is_a_timeout_and_bounded() -> None:
    knobs = FaultKnobs(stall_every=2, stall_seconds=10.0)  # the 2nd request: the call
    with LocalCatalogue(ServeConfig(knobs=knobs)) as cat:
        version = connect(ClientConfig(cat.service_url), "lean")  # made before it stalls all
        with OpenLoop(lambda: version, {"search": lambda c: c.user_name()}, workers=1,
                      drain_s=0.2) as load:  # fmt: skip
            started = time.monotonic()
            step = load.run(4, 0.5)  # slots at 0 and 0.25 s: the first hangs, the second waits
            # given up after the drain time: returned while the call still hung (10 s)
            assert time.monotonic() - started < 10.0
    assert step.errors == {"timeout": 1} and step.sent == 1 and step.unsent == 1


def test_connection_per_call_with_a_new_client_and_with_reopen(
    catalogue: LocalCatalogue,
) -> None:
    made: list[Catalogue] = []
    closed: list[int] = []

    def factory() -> Catalogue:
        client = lean(catalogue.service_url)()
        close = client.close
        client.close = lambda: (closed.append(1), close())[1]  # type: ignore[method-assign]
        made.append(client)
        return client

    ops = {"search": search_facilities}
    with OpenLoop(factory, ops, workers=2, calls_per_connection=1) as load:
        per_call = load.run(40, 0.5)
        assert load.connection_mode == "per-call"
    assert per_call.errors == {} and len(made) == per_call.sent > 0
    assert per_call.sent + per_call.unsent == 20
    made.clear()
    closed.clear()
    with OpenLoop(factory, ops, workers=1, calls_per_connection=1, reconnect="reopen") as load:
        reopened = load.run(40, 0.5)
    # one client (one login), its connection closed after each call and reopened by the next
    assert reopened.errors == {} and len(made) == 1 and len(closed) == reopened.sent + 1


def assert_scheduled(step: StepResult, scheduled: dict[str, int]) -> None:
    """``step`` sent the calls of ``scheduled`` (operation: slots), but for its unsent slots.

    Exact on a quiet machine. On a loaded one, a worker may get to a slot only after the step
    has ended: that slot is not sent and counts as unsent, so each operation may fall short,
    by the unsent slots in all. An operation sent more often than scheduled never passes.
    """
    short = {name: n - (step.ops[name].count if name in step.ops else 0)
             for name, n in scheduled.items()}  # fmt: skip
    assert set(step.ops) <= set(scheduled), step.ops
    assert all(n >= 0 for n in short.values()), short
    assert sum(short.values()) == step.unsent, (short, step.unsent)


def test_a_mix_issues_each_op_by_its_weight_and_reports_success_per_op(
    catalogue: LocalCatalogue,
) -> None:
    assert sorted(weighted_cycle({"search": 21, "get": 8, "create": 1})).count("get") == 8
    assert weighted_cycle({"a": 2, "b": 1}) == ["a", "b", "a"]

    def wrong(client: Catalogue) -> object:
        raise WrongResult("not the expected Datafile")

    ops = {"search": search_facilities, "wrong": wrong}
    with OpenLoop(lean(catalogue.service_url), ops, {"search": 3, "wrong": 1}) as load:
        step = load.run(100, 0.4)
    assert_scheduled(step, {"search": 30, "wrong": 10})
    assert step.ops["search"].success_rate == 1.0 and step.ops["wrong"].success_rate == 0.0
    assert step.errors == {"wrong-result": step.ops["wrong"].count} and step.response_rate > 0
    with pytest.raises(ValueError, match="not given"):
        OpenLoop(lean(catalogue.service_url), ops, {"search": 1, "delete": 1})


def test_stop_ends_a_step_early_and_refuses_further_ones(catalogue: LocalCatalogue) -> None:
    sent: list[int] = []
    stopped: list[int] = []

    def search(client: Catalogue) -> object:
        sent.append(time.perf_counter_ns())
        return search_facilities(client)

    with OpenLoop(lean(catalogue.service_url), {"search": search}) as load:

        def stop() -> None:
            stopped.append(time.perf_counter_ns())
            load.stop()

        threading.Timer(0.3, stop).start()
        started = time.monotonic()
        step = load.run(50, 30.0)
        # A step of 30 s ended with the stop: no call began after it (but for one per worker
        # already past its check), and run() returned at once, not at the step's end.
        assert time.monotonic() - started < 30.0 / 3
        assert stopped and sum(t > stopped[0] for t in sent) <= load.workers
        assert step.sent == len(sent)
        assert load.run(50, 30.0).sent == 0


def test_failures_are_classified_by_cause() -> None:
    exhausted = OSError(errno.EMFILE, "Too many open files")
    wrapped = TransportFailure(TransportCause.CONNECTION, "u", "x")
    wrapped.__cause__ = exhausted
    assert classify_failure(wrapped) == "client-resources"
    assert classify_failure(TransportFailure(TransportCause.CONNECTION, "u", "x")) == "reset"
    assert classify_failure(TransportFailure(TransportCause.TLS, "u", "x")) == "tls"
    assert classify_failure(TransportFailure(TransportCause.HTTP_STATUS, "u", "x")) == "http-status"
    assert classify_failure(IcatSession("expired")) == "SESSION"
    assert classify_failure(ConnectionRefusedError()) == "refused"
    assert classify_failure(OSError(errno.EADDRNOTAVAIL, "no port")) == "client-resources"
    assert classify_failure(KeyError("x")) == "KeyError"


# --- sweeps --------------------------------------------------------------------------------


def step(rate: float, latency_ms: list[float], errors: int = 0, sent: int = 100) -> StepResult:
    stats = LatencyStats.of(int(v * MS) for v in latency_ms)
    errs = {"timeout": errors} if errors else {}
    op = OpStats("search", sent, sent - errors, errs, stats)
    return StepResult(rate, 1.0, sent, rate, rate, 0, 0, stats, stats, LatencyStats(), errs,
                      {"search": op})  # fmt: skip


def test_sustained_rate_is_the_highest_rate_within_the_objective() -> None:
    steps = [
        step(10, [5.0] * 100),
        step(20, [8.0] * 99 + [45.0]),  # p99 (rank 99) still 8 ms
        step(40, [8.0] * 100, errors=1),  # 1 % errors: not sustained
        step(80, [10.0] * 98 + [60.0, 60.0]),  # p99 over the objective
        step(160, [40.0] * 100),
    ]
    assert sustained_rate(steps, slo_ms=50) == 160
    assert sustained_rate(steps[:4], slo_ms=50) == 20
    assert sustained_rate([step(10, [60.0] * 10)], slo_ms=50) is None
    assert step_failure(step(10, [600.0] * 10), 50) is not None  # median > 10 x objective
    assert step_failure(step(10, [5.0] * 10, errors=50), 50) is not None
    assert step_failure(steps[3], 50) is None


def test_sweep_rates_and_repetitions() -> None:
    assert sweep_rates(SweepConfig(slo_ms=50, max_rate=100, start_rate=10)) == [10, 20, 40, 80, 100]
    assert sweep_rates(SweepConfig(slo_ms=50, max_rate=100, rates=[50, 5, 500])) == [5, 50]
    reps = [step(10, [2.0] * 10, sent=10), step(10, [4.0] * 10, sent=10)]
    merged = combine(reps)
    assert merged.sent == 20 and merged.corrected.mean_ms == 3.0
    assert merged.to_dict()["latency_ms"]["corrected"]["ci95"] == pytest.approx(
        [3 - 12.7062, 3 + 12.7062]
    )  # two repetition means 2 and 4: s = sqrt(2), half = t1 * s / sqrt(2)


def test_a_sweep_stops_at_the_first_clearly_failing_step(catalogue: LocalCatalogue) -> None:
    calls = 0

    def failing_from_the_second_step(client: Catalogue) -> object:
        nonlocal calls
        calls += 1
        if calls > 10:
            raise WrongResult("broken")
        return None

    class Counted(OpenLoop):
        def warm_up(self, rate: float, seconds: float) -> dict[str, float | int]:
            nonlocal calls
            done = super().warm_up(rate, seconds)
            calls = 0  # the warm-up before the first step is not a step
            return done

    # An objective no call on loopback misses however busy the machine: the first step is
    # sustained by its lack of errors, which is what this test is about, not by its speed.
    config = SweepConfig(slo_ms=60_000, max_rate=200, start_rate=50, step_s=0.2, warmup_s=0)
    with Counted(lambda: connect(ClientConfig(catalogue.service_url), "lean"),
                 {"q": failing_from_the_second_step}) as load:  # fmt: skip
        result = run_sweep(load, config)
    assert [s.demanded_rate for s in result.steps] == [50, 100], result.stopped
    assert result.sustained_rate == 50 and result.stopped is not None
    entry = result.to_dict()
    assert set(entry) == {"flavour", "slo_ms", "connection_mode", "steps", "sustained_rate",
                          "warmup"}  # fmt: skip
    assert set(entry["steps"][0]) == {
        *("demanded_rate", "duration_s", "sent", "request_rate", "response_rate"),
        *("missed_slots", "latency_ms", "errors"),
    }


def test_a_busy_machine_or_catalogue_does_not_make_the_client_bound() -> None:
    # the issue: every row "client-bound" because the whole machine's CPU was high (a
    # catalogue on the same host, other jobs). A busy thread of this process that is no load
    # thread (the built-in catalogue's) and a busy process of someone else are the machine's.
    other = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with Sampler(interval_s=0.1) as sampler:
            # the clients: one idle worker process
            idle = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
            try:
                sampler.add_process(idle.pid)
                busy = _spin_in(sampler, "catalogue busy", "sv7-local-catalogue", 0.8)
            finally:
                idle.kill()
                idle.wait()
    finally:
        other.kill()
        other.wait()
    summary = busy.client_summary()
    assert not busy.client_bound and summary["bound"] is False and summary["why"] is None
    assert summary["cpu_percent"] < 20 < summary["others_percent"]
    assert summary["load_avg"] is not None and len(busy.load_avg) == len(busy.t_s)


def _series(client: list[float], capacity: list[float], busiest: list[float],
            wait: list[float] | None = None) -> PhaseSeries:
    n = len(client)
    return PhaseSeries("p", 1.0, t_s=[float(i) for i in range(n)], dt_s=[1.0] * n,
                       client_cpu_percent=client, client_capacity_percent=capacity,
                       busiest_process_percent=busiest, others_cpu_percent=[50.0] * n,
                       load_avg=[3.5] * n, client_wait_percent=wait or [0.0] * n)


def test_a_phase_shorter_than_a_sampling_period_does_not_state_the_rest_of_the_machine(
) -> None:
    """The tryout saw "the rest of the machine used 0 % of CPU" for phases shorter than the
    sampler's period: over such a phase the kernel counts a few 10 ms ticks, or none."""
    short = PhaseSeries("p", 1.0, t_s=[0.4], dt_s=[0.4], client_cpu_percent=[40.0],
                        client_capacity_percent=[100.0], busiest_process_percent=[40.0],
                        others_cpu_percent=[0.0], load_avg=[3.5], client_wait_percent=[60.0])
    summary = short.client_summary()
    assert summary["busy_why"] == ("a client waited for a core 60 % of the time (load average "
                                   "3.5, the phase was too short to sample the rest of the "
                                   "machine)")
    assert short.too_short and short.machine_busy and summary["others_percent"] is None
    assert not _series([40.0], [100.0], [40.0], wait=[60.0]).too_short  # one whole period


def test_the_sampler_counts_loopback_bytes_apart_and_once() -> None:
    """A byte over loopback is both sent and received by the machine: in every interface's in
    and out, so the network chart counted a local run's bytes twice. Loopback's are recorded
    apart, once, and the figure drawn (results/machine_net.py) takes them once."""
    payload = 4_000_000
    with (socket.create_server(("127.0.0.1", 0)) as server, Sampler(interval_s=3600.0) as sampler,
          sampler.phase("send")):
        sender = socket.create_connection(server.getsockname())
        receiver, _ = server.accept()
        with sender, receiver:
            def drain() -> None:
                left = payload
                while left > 0:
                    left -= len(receiver.recv(65536)) or left
            reader = threading.Thread(target=drain)
            reader.start()
            sender.sendall(b"x" * payload)
            reader.join()
    send = next(s for s in sampler.series() if s.phase == "send")
    def megabits(values: list[float]) -> float:
        return sum(v * dt for v, dt in zip(values, send.dt_s, strict=True))
    loopback = megabits(send.net_loopback_mbit_s)
    assert loopback >= payload * 8 / 1e6  # every byte, headers beside (other jobs' too)
    # every interface's in and out hold each loopback byte: as received and as sent
    assert megabits(send.net_in_mbit_s) >= loopback and megabits(send.net_out_mbit_s) >= loopback
    entry = send.to_dict()
    assert len(entry["net_loopback_mbit_s"]) == len(entry["t_s"])
    drawn = phase_machine_net(entry)
    assert drawn is not None
    both = megabits(send.net_in_mbit_s) + megabits(send.net_out_mbit_s)
    assert drawn * sum(send.dt_s) == pytest.approx(both - loopback)


def test_a_sample_taken_in_another_thread_counts_the_cpu_since_the_last_sample() -> None:
    """Phases switch in whichever thread runs the part, and psutil's cpu_percent keeps its
    baseline per thread: the first sample a thread took read 0 % for every core (the false
    "the rest of the machine used 0 % of CPU"), however busy the machine had been."""
    with Sampler(interval_s=3600.0) as sampler:  # no sample of its own thread in the test
        end = time.process_time() + 0.2
        while time.process_time() < end:  # 0.2 s of CPU in this process, however long it takes
            pass

        def switch() -> None:
            with sampler.phase("next"):
                pass

        other = threading.Thread(target=switch)
        other.start()
        other.join()
    (idle, *_) = sampler.series()
    assert idle.phase == "idle"
    busy_s = sum(idle.per_core_percent[0]) / 100 * idle.dt_s[0]
    assert busy_s >= 0.1, (idle.per_core_percent, idle.dt_s)


def test_client_bound_is_the_suites_own_cpu_against_the_cores_it_could_use() -> None:
    one_core = _series([95.0, 97.0], [100.0, 100.0], [95.0, 97.0])
    assert one_core.client_bound
    assert one_core.client_summary()["why"] == "the busiest client used 96 % of one core"
    # eight clients on two cores: none saturated alone, together at what the cores allow
    together = _series([185.0, 190.0], [200.0, 200.0], [25.0, 26.0])
    assert together.client_bound
    assert together.client_summary()["why"].startswith("the clients used 188 % of CPU of the 200")
    waiting = _series([40.0, 40.0, 0.0], [100.0, 100.0, 0.0], [40.0, 40.0, 0.0],
                      wait=[50.0, 54.0, 99.0])
    summary = waiting.client_summary()
    # starved by a busy machine: said beside, not taken for a saturated client; the sample
    # without clients (capacity 0) counts for nothing
    assert not waiting.client_bound and waiting.machine_busy
    assert summary["busy_why"] == ("a client waited for a core 52 % of the time (load average "
                                   "3.5, the rest of the machine used 50 % of CPU)")
    assert not _series([30.0], [200.0], [20.0]).client_bound
