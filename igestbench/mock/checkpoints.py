"""The store's WAL checkpoints, run by a thread of their own instead of by the writer.

In WAL mode a commit appends pages to the ``-wal`` file; a *checkpoint* copies them back into
the database file and, for a kept file (``synchronous = NORMAL``), waits for the disk
(``fsync``). SQLite runs one by itself in the committing connection whenever the WAL passed
1,000 pages — after every createMany of 10,000 Datafiles (about 10 MB of pages), so each such
call waited 20-35 ms for the copy and the disk before its answer could go (2-core shared dev
machine, 2026-11-26; a call takes 400-600 ms) — issue 21.6 wants createMany of 10,000 at
20,000 Datafiles/s or more.

Here the connections do not checkpoint on commit (``wal_autocheckpoint = 0``); the store tells
this thread after each write transaction, and it runs a PASSIVE checkpoint on its own
connection while the answer goes out and the next request is decoded. PASSIVE never waits for
readers or writers: it copies what no reader still needs, and the next writer starts the WAL
from its beginning again once everything was copied — as with SQLite's own checkpoints, a
long read keeps the WAL from being reset until it ends. Durability is unchanged: a commit is in
the WAL, which survives a crash of the process, before the writer returns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import apsw

log = logging.getLogger(__name__)


class Checkpointer:
    """A daemon thread that checkpoints the WAL after writes (see the module's docstring)."""

    def __init__(self, connect: Callable[[], apsw.Connection]) -> None:
        self._connect = connect
        self._wanted = threading.Event()
        self._stopping = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        #: checkpoints run so far
        self.checkpoints = 0

    def after_write(self) -> None:
        """A write transaction committed: checkpoint soon (never waits)."""
        if self._thread is None:
            with self._lock:  # started with the first write: a read-only store needs none
                if self._thread is None and not self._stopping:
                    self._thread = threading.Thread(
                        target=self._run, name="sv7-checkpoint", daemon=True)
                    self._thread.start()
        self._wanted.set()

    def stop(self, timeout_s: float = 30.0) -> None:
        """Run no more checkpoints and wait for the one running (before the connections close:
        closing one while its thread is inside SQLite crashes the process)."""
        with self._lock:
            self._stopping = True
        self._wanted.set()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _run(self) -> None:
        conn: apsw.Connection | None = None
        while True:
            self._wanted.wait()
            if self._stopping:
                return
            self._wanted.clear()
            try:
                if conn is None:
                    conn = self._connect()
                self.checkpoint(conn)
                self.checkpoints += 1
            except apsw.Error as exc:  # e.g. interrupted by a stop; the next write retries
                if not self._stopping:
                    log.warning("WAL checkpoint failed: %s", exc)

    @staticmethod
    def checkpoint(conn: apsw.Connection) -> None:
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
