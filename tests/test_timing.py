"""The timing primitive records every call, success or failure, and gets out of the way."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import threading
import time
from collections.abc import Callable

import pytest

from igestbench.icat.faults import IcatObjectAlreadyExists
from igestbench.measure.timing import Recorder, Timer, TimingRecord


class FakeClock:
    """A perf_counter_ns stand-in that advances by ``step_ns`` on every reading."""

    def __init__(self, start_ns: int = 1_000, step_ns: int = 10) -> None:
        self.now_ns = start_ns
        self.step_ns = step_ns

    def __call__(self) -> int:
        reading = self.now_ns
        self.now_ns += self.step_ns
        return reading


class Outer:
    class NestedError(Exception):
        pass


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def timer(recorder: Recorder) -> Timer:
    return Timer(recorder, clock=FakeClock())


def test_measure_records_success(timer: Timer, recorder: Recorder) -> None:
    with timer.measure("search Facility"):
        pass

    assert recorder.drain() == [TimingRecord("search Facility", 1_000, 10, True, None)]


def test_measure_records_failure_and_reraises_the_same_exception(
    timer: Timer, recorder: Recorder
) -> None:
    raised = IcatObjectAlreadyExists("Facility sv7-X exists")

    with pytest.raises(IcatObjectAlreadyExists) as caught, timer.measure("create Facility"):
        raise raised

    assert caught.value is raised
    assert recorder.drain() == [
        TimingRecord("create Facility", 1_000, 10, False, "IcatObjectAlreadyExists")
    ]


def test_decorator_records_success_and_returns_the_result(timer: Timer, recorder: Recorder) -> None:
    add = timer.timed("add")(lambda a, b: a + b)

    assert add(2, 3) == 5
    assert recorder.drain() == [TimingRecord("add", 1_000, 10, True, None)]


def test_decorator_records_failure_and_reraises(timer: Timer, recorder: Recorder) -> None:
    @timer.timed("connect")
    def connect() -> None:
        raise ConnectionRefusedError(111, "Connection refused")

    with pytest.raises(ConnectionRefusedError):
        connect()

    assert recorder.drain() == [TimingRecord("connect", 1_000, 10, False, "ConnectionRefusedError")]


def search(query: str, *, limit: int = 10) -> list[str]:
    """Search the catalogue."""
    return [query] * limit


def test_decorator_preserves_function_metadata(timer: Timer) -> None:
    timed_search = timer.timed()(search)

    assert timed_search.__name__ == "search"
    assert timed_search.__qualname__ == "search"
    assert timed_search.__doc__ == "Search the catalogue."
    assert timed_search.__module__ == search.__module__
    assert inspect.signature(timed_search) == inspect.signature(search)
    assert timed_search.__wrapped__ is search  # type: ignore[attr-defined]


def test_decorator_names_the_operation_after_the_function_by_default(
    timer: Timer, recorder: Recorder
) -> None:
    timer.timed()(search)("x", limit=1)

    (record,) = recorder.drain()
    assert record.op == "search"


@pytest.mark.parametrize(
    ("exception", "expected"),
    [
        (IcatObjectAlreadyExists("exists"), "IcatObjectAlreadyExists"),
        (ConnectionRefusedError(), "ConnectionRefusedError"),
        (TimeoutError(), "TimeoutError"),
        (Outer.NestedError(), "Outer.NestedError"),
        (KeyboardInterrupt(), "KeyboardInterrupt"),
    ],
)
def test_error_is_the_qualified_exception_class_name(
    timer: Timer, recorder: Recorder, exception: BaseException, expected: str
) -> None:
    with pytest.raises(type(exception)), timer.measure("op"):
        raise exception
    with pytest.raises(type(exception)):
        timer.timed("op")(_raiser(exception))()

    assert [record.error for record in recorder.drain()] == [expected, expected]


def _raiser(exception: BaseException) -> Callable[[], None]:
    def fail() -> None:
        raise exception

    return fail


def test_steps_are_recorded_under_their_cycle(timer: Timer, recorder: Recorder) -> None:
    with timer.measure("full cycle") as cycle:
        with cycle.step("lookup Facility"):
            pass
        with cycle.step("create Datafile"):
            pass

    assert recorder.drain() == [
        TimingRecord("full cycle/lookup Facility", 1_010, 10, True, None),
        TimingRecord("full cycle/create Datafile", 1_030, 10, True, None),
        TimingRecord("full cycle", 1_000, 50, True, None),
    ]


def test_a_failing_step_fails_its_cycle_too(timer: Timer, recorder: Recorder) -> None:
    with (
        pytest.raises(IcatObjectAlreadyExists),
        timer.measure("full cycle") as cycle,
        cycle.step("create Dataset"),
    ):
        raise IcatObjectAlreadyExists("Dataset exists")

    assert [(r.op, r.ok, r.error) for r in recorder.drain()] == [
        ("full cycle/create Dataset", False, "IcatObjectAlreadyExists"),
        ("full cycle", False, "IcatObjectAlreadyExists"),
    ]


def test_real_clock_start_times_are_monotonic_and_durations_real(recorder: Recorder) -> None:
    timer = Timer(recorder)
    noop = timer.timed("noop")(lambda: None)
    for _ in range(1_000):
        noop()
    with timer.measure("sleep"):
        time.sleep(0.01)

    records = recorder.drain()
    starts = [record.start_ns for record in records]
    assert starts == sorted(starts)
    assert all(record.duration_ns >= 0 for record in records)
    assert records[-1].duration_ns >= 10_000_000
    assert records[-1].start_ns >= records[-2].start_ns + records[-2].duration_ns


def test_a_plain_callable_is_a_sink() -> None:
    received: list[TimingRecord] = []
    timer = Timer(received.append, clock=FakeClock())

    with timer.measure("op"):
        pass

    assert received == [TimingRecord("op", 1_000, 10, True, None)]


def test_an_object_with_add_is_a_sink() -> None:
    class CountingSink:
        def __init__(self) -> None:
            self.count = 0

        def add(self, record: TimingRecord) -> None:
            self.count += 1

    sink = CountingSink()
    timer = Timer(sink)
    timer.timed("op")(lambda: None)()

    assert sink.count == 1


def test_drain_hands_over_and_empties(timer: Timer, recorder: Recorder) -> None:
    for op in ("a", "b"):
        with timer.measure(op):
            pass
    assert len(recorder) == 2

    assert [record.op for record in recorder.drain()] == ["a", "b"]
    assert len(recorder) == 0
    assert recorder.drain() == []


def test_drain_while_a_thread_records_loses_and_duplicates_nothing() -> None:
    recorder = Recorder()
    timer = Timer(recorder)
    count = 50_000

    def work() -> None:
        noop = timer.timed("noop")(lambda: None)
        for _ in range(count):
            noop()

    worker = threading.Thread(target=work)
    worker.start()
    batches = []
    while worker.is_alive():
        batches.append(recorder.drain())
    worker.join()
    batches.append(recorder.drain())

    collected = [record for batch in batches for record in batch]
    assert len(collected) == count
    starts = [record.start_ns for record in collected]
    assert starts == sorted(starts)


def test_records_are_frozen_and_picklable() -> None:
    record = TimingRecord("get Datafile", 5, 7, False, "IcatNoSuchObject")

    with pytest.raises(dataclasses.FrozenInstanceError):
        record.ok = True  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(record)) == record
