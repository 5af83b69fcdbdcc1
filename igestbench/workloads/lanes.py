"""Independent queries of one session sent side by side, each on a connection of its own.

A cleanup asks a server some forty small questions before it deletes anything (which objects
exist, whose they are, what hangs below them: :mod:`.ownership`, :mod:`.survey`), most answered
"none" in a millisecond of the server's time. Against a slow or distant server their round trips
are the cleanup's time, and a stopped run must clean up within seconds (issue 18: systemd allows
90 s, CI runners less). So questions that do not depend on each other's answers go out together
on up to :data:`LANES` connections in the cleanup's session — opened without a call or a login
(the lean client's ``sibling``); a client that cannot open one sends them one by one.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import TypeVar

from igestbench.client.base import Catalogue

#: Queries in flight at once: polite (a run measures with 16 clients), and enough that each
#: level of a run's tree is one round trip.
LANES = 8

_T = TypeVar("_T")


class Lanes:
    """Independent queries side by side, each on a connection of ``catalogue``'s session."""

    def __init__(self, catalogue: Catalogue, lanes: int = LANES) -> None:
        self.catalogue = catalogue
        self._sibling: Callable[[], Catalogue] | None = getattr(catalogue, "sibling", None)
        self._lanes = lanes
        self._pool: ThreadPoolExecutor | None = None
        self._idle: queue.SimpleQueue[Catalogue] = queue.SimpleQueue()
        self._made: list[Catalogue] = []
        self._lock = threading.Lock()

    def map(self, calls: Sequence[Callable[[Catalogue], _T]]) -> list[_T]:
        """Each call's answer, in order; the first failure is raised."""
        if self._sibling is None or self._lanes < 2 or len(calls) < 2:
            return [call(self.catalogue) for call in calls]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._lanes, thread_name_prefix="sv7-lane")
        futures = [self._pool.submit(self._on_a_lane, call) for call in calls]
        return [future.result() for future in futures]

    def _on_a_lane(self, call: Callable[[Catalogue], _T]) -> _T:
        try:
            lane = self._idle.get_nowait()
        except queue.Empty:
            assert self._sibling is not None
            lane = self._sibling()
            with self._lock:
                self._made.append(lane)
        try:
            return call(lane)
        finally:
            self._idle.put(lane)

    def close(self) -> None:
        """Wait for the queries in flight (each bounded by ``--timeout``), close the lanes."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        for lane in self._made:
            lane.close()
        self._made.clear()

    def __enter__(self) -> Lanes:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
