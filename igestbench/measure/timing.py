"""The timing primitive: every timed operation becomes one :class:`TimingRecord`.

A :class:`Timer` times calls with :func:`time.perf_counter_ns` and hands each record to a sink,
on success and on failure alike (a failed call is recorded with the exception's class name and
the exception is re-raised unchanged). Dropping failures would make a struggling catalogue look
fast, so there is no code path that times without recording.

Three ways to time, all with the same records::

    timer = Timer(recorder)

    search = timer.timed("search Datafile")(client.search)      # decorator

    with timer.measure("full cycle") as cycle:                  # context manager
        with cycle.step("lookup Facility"):                     # per-step timing: records
            ...                                                 # "full cycle/lookup Facility"

``start_ns`` is a ``perf_counter_ns`` reading, i.e. CLOCK_MONOTONIC on Linux: comparable between
the worker processes of one machine, meaningless as a wall-clock date; whoever writes result
files anchors it to wall-clock time once.

Overhead matters because the single-result queries of a local catalogue take tens of µs: the hot
paths are classes with ``__slots__`` (a ``@contextmanager`` generator costs several times more),
the sink's bound method is resolved once at construction, and nothing is looked up per call that
could be looked up before. ``tests/benchmarks/test_bench_timing.py`` measures what is left
(about 0.6 µs per decorated call, 0.8 µs per ``with`` block on the development machine). About
half of it is building the frozen dataclass record; a NamedTuple would save ~0.25 µs, but the
budget of 2 µs leaves room for the project's convention for records.
"""

from __future__ import annotations

import collections
import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import ParamSpec, Protocol, TypeVar, runtime_checkable

__all__ = [
    "Clock",
    "Measurement",
    "RecordSink",
    "Recorder",
    "Sink",
    "Timer",
    "TimingRecord",
]

P = ParamSpec("P")
R = TypeVar("R")

#: A source of monotonic nanoseconds; tests pass a fake one to get exact durations.
Clock = Callable[[], int]


@dataclass(frozen=True, slots=True)
class TimingRecord:
    """One timed operation: what it was, when it started, how long it took, how it ended."""

    op: str
    start_ns: int
    duration_ns: int
    ok: bool
    #: Qualified name of the exception class that ended the call (``IcatObjectAlreadyExists``,
    #: ``ConnectionRefusedError``), None on success. A name rather than the exception object so
    #: records stay small and picklable on their way from a worker process to the writer.
    error: str | None


@runtime_checkable
class RecordSink(Protocol):
    """An object that collects records, such as :class:`Recorder`."""

    def add(self, record: TimingRecord) -> object: ...


#: Where records go: an object with ``.add(record)`` or a plain callable taking the record.
Sink = RecordSink | Callable[[TimingRecord], object]


class Recorder:
    """Collects records in arrival order until someone drains them.

    One per worker process is the intended use. ``add`` and ``drain`` may run in different threads
    (a worker's timed loop and the thread streaming batches to the writer): both rely only on
    ``deque.append`` and ``deque.popleft``, which are atomic, so no record is lost or doubled and
    ``add`` pays no lock.
    """

    __slots__ = ("_records", "add")

    def __init__(self) -> None:
        self._records: collections.deque[TimingRecord] = collections.deque()
        # The deque's own bound method *is* the add: one call less on the timed path.
        self.add: Callable[[TimingRecord], None] = self._records.append

    def drain(self) -> list[TimingRecord]:
        """Remove and return every record collected so far, oldest first."""
        records = self._records
        return [records.popleft() for _ in range(len(records))]

    def __len__(self) -> int:
        return len(self._records)


def _emitter(sink: Sink) -> Callable[[TimingRecord], object]:
    return sink.add if isinstance(sink, RecordSink) else sink


class Measurement:
    """Times one ``with`` block; also the handle from which the block's steps are timed.

    Returned by :meth:`Timer.measure` and :meth:`step`; used once.
    """

    __slots__ = ("_clock", "_emit", "op", "start_ns")

    def __init__(self, op: str, emit: Callable[[TimingRecord], object], clock: Clock) -> None:
        self.op = op
        self._emit = emit
        self._clock = clock
        self.start_ns = 0

    def __enter__(self) -> Measurement:
        self.start_ns = self._clock()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Returning None (falsy) lets the exception, if any, propagate unchanged.
        duration_ns = self._clock() - self.start_ns
        if exc_type is None:
            self._emit(TimingRecord(self.op, self.start_ns, duration_ns, True, None))
        else:
            self._emit(
                TimingRecord(self.op, self.start_ns, duration_ns, False, exc_type.__qualname__)
            )

    def step(self, name: str) -> Measurement:
        """Time one step of this operation, recorded as ``"<op>/<name>"``."""
        return Measurement(f"{self.op}/{name}", self._emit, self._clock)


class Timer:
    """Times operations and sends each :class:`TimingRecord` to one sink.

    A Timer holds no per-call state, so one Timer may be shared by the threads of a process.
    """

    __slots__ = ("_clock", "_emit")

    def __init__(self, sink: Sink, *, clock: Clock = time.perf_counter_ns) -> None:
        self._emit = _emitter(sink)
        self._clock = clock

    def measure(self, op: str) -> Measurement:
        """A context manager that records the ``with`` block as operation ``op``."""
        return Measurement(op, self._emit, self._clock)

    def timed(self, op: str | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]:
        """A decorator that records each call as ``op`` (default: the function's qualified name).

        The wrapper keeps the function's name, docstring and signature (``functools.wraps``).
        """

        def decorate(func: Callable[P, R]) -> Callable[P, R]:
            name = op if op is not None else getattr(func, "__qualname__", repr(func))
            # Locals, not attribute lookups, inside the wrapper: it runs once per timed call.
            emit = self._emit
            clock = self._clock

            @functools.wraps(func)
            def timed_call(*args: P.args, **kwargs: P.kwargs) -> R:
                start_ns = clock()
                try:
                    result = func(*args, **kwargs)
                except BaseException as exc:
                    duration_ns = clock() - start_ns
                    emit(TimingRecord(name, start_ns, duration_ns, False, type(exc).__qualname__))
                    raise
                emit(TimingRecord(name, start_ns, clock() - start_ns, True, None))
                return result

            return timed_call

        return decorate
