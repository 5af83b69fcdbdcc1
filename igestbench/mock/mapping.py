"""The one connection of the store that reads the database file through a memory map.

SQLite reads a database either by copying each page into its own page cache (``pread``) or
straight from the file's pages in the OS cache through a memory map (``PRAGMA mmap_size``).
Measured on a copy of the scale tree at 10⁶ Datafiles (2-core shared dev machine, 2026-11-26,
load 3-4): a whole-table scan costs about a quarter less CPU through a map that is already
populated (98-100 ms against 132-146 ms), a COUNT of every Datafile a fifth of it (1.2 ms
against 5.1 ms); a lookup through an index the same either way (10-16 µs of SQLite's time: a
few pages, which the small page cache keeps).

But the gain needs the map *warm*: the pages a read touches through a fresh map are first
faulted into it, and unmapping costs as much again — a COUNT through a map made for it and
unmapped after took 15 + 9 ms, five times its ``pread`` cost. And a map is per connection, the
store has one connection per thread (the event loop's and each worker's), and the resident set
of the process (what ``ps`` and psutil show, and what issue 21's "under 4 GiB at 10⁷" is about)
counts each mapped page once per mapping that touched it, although the machine holds it once:
with every connection mapping up to 2 GiB, the query set on four threads at once at 10⁷
Datafiles (a 3.3 GiB database) showed 10.1 GiB of resident set (``scale_memory``, 12:22 UTC).

So exactly one connection maps the file — up to :data:`MAP_BYTES`, kept mapped (warm) for the
server's life — and it is *lent*: a request running in a worker thread (a scan, a count, a bulk
write: the event loop sends there whatever reads many rows) borrows it for its whole time when
no other request holds it, and otherwise reads through its thread's own connection by
``pread``. The event loop's own reads (index lookups, by plan) never need it. The mapped part
of the resident set is then at most :data:`MAP_BYTES` whatever the threads do, one heavy read at
a time runs as fast as with a map of its own, and those beside it as without one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import apsw

#: The most of the database file the mapped connection maps (the file's first bytes).
MAP_BYTES = 2 * 1024**3


class MappedConnection:
    """The store's one memory-mapped connection, lent to one request at a time (thread-safe)."""

    def __init__(self, connect: Callable[[], apsw.Connection], size: int = MAP_BYTES) -> None:
        self._connect = connect
        self.size = size
        self._lock = threading.Lock()
        self._conn: apsw.Connection | None = None
        #: the statistics generation the connection has loaded (see Store.conn)
        self.statistics = -1

    def borrow(self) -> apsw.Connection | None:
        """The mapped connection, now the caller's until :meth:`give_back`; None when another
        request holds it (never waits)."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if self._conn is None:
                conn = self._connect()
                conn.execute(f"PRAGMA mmap_size = {self.size}")
                self._conn = conn
        except BaseException:
            self._lock.release()
            raise
        return self._conn

    def give_back(self) -> None:
        self._lock.release()
