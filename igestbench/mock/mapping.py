"""How much of the database file the store's connections may map into memory, all together.

SQLite reads a database either by copying each page into its own page cache (``pread``) or
straight from the file's pages in the OS cache through a memory map (``PRAGMA mmap_size``).
Measured on a copy of the scale tree at 10⁶ Datafiles (2-core shared dev machine, 2026-11-26):
a whole-table scan costs about a quarter less CPU mapped (98-100 ms against 132-146 ms), a
COUNT of every Datafile a quarter of it (1.2 ms against 5.1 ms); a lookup through an index
costs the same either way (10-16 µs of SQLite's time: a few pages, which the small page cache
keeps).

But a map is per connection, the store has one connection per thread (the event loop's and
each worker's), and the resident set of the process (what ``ps`` and psutil show, and what the
issue's "under 4 GiB" is about) counts each mapped page once per mapping that touched it,
although the machine holds it once. With every connection mapping up to 2 GiB, scans on
several workers at 10⁷ Datafiles (a 3.5 GiB database) could show ten times 2 GiB of resident set.

So the maps are rationed, not given to every connection for good: a read that the event loop
runs (it visits at most :data:`~igestbench.mock.plans.INLINE_ROWS` rows by plan: index
lookups, where a map gains nothing) reads by ``pread``; a request that runs in a worker thread
(a scan, a count, a bulk write) takes a *lease* of the map from one budget shared by all
connections — as much of the file as the budget still has, up to :data:`MAP_BUDGET` — and
gives it back (the connection unmaps: its pages leave the resident set) when the request ends.
The mapped part of the resident set is then at most :data:`MAP_BUDGET` whatever the threads
do: one scan at a time is as fast as with a map of its own; scans running beside it read what
the budget has left by ``pread``. Taking and giving back a map costs about 60 µs per request
(map, unmap and the page faults of the pages read again), which is why the event loop's small
requests, thousands a second, do not take one.
"""

from __future__ import annotations

import threading

#: The bytes of the database file all connections together may have mapped at one time.
MAP_BUDGET = 2 * 1024**3
#: A lease is rounded up to this (the file grows while a bulk write runs), and none smaller is
#: worth its cost.
MAP_STEP = 64 * 1024**2


class MapBudget:
    """The part of :data:`MAP_BUDGET` not leased to a connection (thread-safe)."""

    def __init__(self, total: int = MAP_BUDGET, step: int = MAP_STEP) -> None:
        self.total = total
        self.step = step
        self._free = total
        self._lock = threading.Lock()

    @property
    def free(self) -> int:
        return self._free

    def take(self, file_bytes: int) -> int:
        """A lease for a file of ``file_bytes``: bytes the caller may map (0: read by pread)."""
        wanted = (file_bytes // self.step + 1) * self.step
        with self._lock:
            granted = min(wanted, self._free) // self.step * self.step
            if granted <= 0:
                return 0
            self._free -= granted
            return granted

    def give(self, lease: int) -> None:
        """Return a lease once its connection no longer maps it."""
        with self._lock:
            self._free += lease
            assert self._free <= self.total, "a lease was given back twice"
