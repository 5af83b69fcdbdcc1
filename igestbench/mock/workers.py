"""The threads that answer SOAP requests, so that no request can stall the event loop.

Every SOAP request is decoded, run against the store and encoded in one worker thread (one hop:
a search's SQL and the encoding of its answer cost a single hand-over). SQLite and lxml release
the GIL while they work, so the event loop keeps reading, answering and cutting connections while
a long query or a large body is being dealt with; the store gives each thread its own connection
and each request a time budget.

Requests with a large body go to a pool of their own with a single thread: parsing one costs up
to the element budget in memory, and taking them one at a time keeps a burst of them from
multiplying that, while small requests keep their own threads and stay fast. After each large
request the C heap's free memory is handed back to the system (glibc keeps it otherwise, and a
server that once parsed a large body would stay large).

A stop starts no more requests and waits (bounded) for the running ones to end before the store
closes their threads' SQLite connections: the store interrupts their SQL first, so they end
within moments, but closing a connection while its thread is still inside SQLite crashes the
process (what SQLite calls back is freed under it) — which a loaded machine, slow to give that
thread a core again, made happen (tests/test_catalogue_stop.py).

While the catalogue runs, the interpreter's GIL switch interval is at most 1 ms (Python's default
is 5 ms): the event loop gives up the GIL at every socket call and must win it back from a worker
busy in Python code (decoding a large request), and each such wait is up to one interval, several
times per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import functools
import sys
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import CancelledError, ThreadPoolExecutor
from typing import TypeVar

#: Bodies larger than this (bytes) are large requests.
LARGE_BODY = 1024 * 1024
#: Threads for ordinary requests: each holds one SQLite connection; several long queries at once
#: must still leave threads for everybody else.
REQUEST_THREADS = 8
#: The longest the event loop waits for the GIL while a worker runs Python code (seconds).
SWITCH_INTERVAL_S = 0.001
#: The longest a stop waits for the requests still running to end (seconds).
STOP_WAIT_S = 10.0

_T = TypeVar("_T")
_R = TypeVar("_R")


class RequestWorkers:
    """Two thread pools: ordinary requests, and large ones one at a time."""

    def __init__(self, threads: int = REQUEST_THREADS) -> None:
        self._ordinary = ThreadPoolExecutor(threads, thread_name_prefix="sv7-request")
        self._large = ThreadPoolExecutor(1, thread_name_prefix="sv7-large-request")
        self._running = True
        self._busy = 0
        self._stopping = False
        self._idle = threading.Condition()
        _SwitchInterval.lower()

    def run(self, function: Callable[[_T], _R], argument: _T, large: bool) -> Awaitable[_R]:
        """``function(argument)`` in a worker thread; call from the event loop."""
        loop = asyncio.get_running_loop()
        if large:
            return loop.run_in_executor(self._large, self._counted, _then_trim, function, argument)
        return loop.run_in_executor(self._ordinary, self._counted, _call, function, argument)

    def shutdown(self, wait_s: float = STOP_WAIT_S) -> None:
        """Start no more requests, and wait up to ``wait_s`` for the running ones, which end as
        the store interrupts their SQL (call :meth:`Store.interrupt` first)."""
        with self._idle:
            self._stopping = True
        for pool in (self._ordinary, self._large):
            pool.shutdown(wait=False, cancel_futures=True)
        with self._idle:
            self._idle.wait_for(lambda: self._busy == 0, timeout=wait_s)
        if self._running:
            self._running = False
            _SwitchInterval.restore()

    def _counted(
        self, runner: Callable[[Callable[[_T], _R], _T], _R], function: Callable[[_T], _R],
        argument: _T,
    ) -> _R:  # fmt: skip
        with self._idle:
            if self._stopping:  # taken from the queue just as the stop began
                raise CancelledError("the local catalogue is stopping")
            self._busy += 1
        try:
            return runner(function, argument)
        finally:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()


class _SwitchInterval:
    """The GIL switch interval, lowered while any catalogue of this process runs."""

    _lock = threading.Lock()
    _users = 0
    _saved = 0.0

    @classmethod
    def lower(cls) -> None:
        with cls._lock:
            if cls._users == 0:
                cls._saved = sys.getswitchinterval()
                sys.setswitchinterval(min(cls._saved, SWITCH_INTERVAL_S))
            cls._users += 1

    @classmethod
    def restore(cls) -> None:
        with cls._lock:
            cls._users -= 1
            if cls._users == 0:
                sys.setswitchinterval(cls._saved)


def _call(function: Callable[[_T], _R], argument: _T) -> _R:
    return function(argument)


def _then_trim(function: Callable[[_T], _R], argument: _T) -> _R:
    try:
        return function(argument)
    finally:
        _trim_heap()


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:  # pragma: no cover - every Linux has a C library
        return None
    with contextlib.suppress(OSError, AttributeError):
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
        return trim
    return None  # pragma: no cover - not glibc (musl, macOS): nothing to hand back this way


def _trim_heap() -> None:
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
