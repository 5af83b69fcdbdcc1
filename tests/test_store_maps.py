"""The store's memory map of its database file: one connection maps it, lent to one worker
request at a time (mock/mapping.py); and its WAL checkpoints, off the writer's path
(mock/checkpoints.py).

The resident set of ``sv7 serve`` counts each mapped page once per mapping that touched it, so
the maps must stay within one bound whatever the threads do, and stay mapped (warm) between
requests. Mappings are read from ``/proc/self/maps`` (Linux).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from igestbench.icat.schema import get_profile
from igestbench.mock.mapping import MappedConnection
from igestbench.mock.store import Store

pytestmark = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="needs Linux /proc")

MIB = 1024**2


def mappings(path: Path) -> list[int]:
    """The size of each mapping of ``path`` in this process (bytes)."""
    sizes = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and fields[5] == str(path):
            start, _, end = fields[0].partition("-")
            sizes.append(int(end, 16) - int(start, 16))
    return sizes


def mapped_bytes(path: Path) -> int:
    return sum(mappings(path))


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    """A store whose file holds about 12 MiB, whose mapped connection maps 8 MiB of it."""
    store = Store(get_profile(), str(tmp_path / "maps.sqlite"))
    with store.transaction():
        store.conn.execute("CREATE TABLE filler (x BLOB)")
        store.conn.executemany("INSERT INTO filler VALUES (randomblob(4000))",
                               [()] * 3000)  # fmt: skip
    store.checkpointer.stop()  # no checkpoint of its own beside this one:
    store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the pages in the file, not the WAL
    store.mapped = MappedConnection(store._connect, size=8 * MIB)
    yield store
    store.close()


def scan(store: Store) -> None:
    store.conn.execute("SELECT sum(length(x)) FROM filler").fetchall()


def test_scans_in_worker_threads_at_once_map_the_file_once(store: Store) -> None:
    path = Path(store.path)
    inside = threading.Barrier(4)
    leave = threading.Barrier(4)
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            with store.time_budget(60):  # a request in a worker thread (not inline)
                scan(store)
                inside.wait(30)
                leave.wait(30)
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
            inside.abort()
            leave.abort()

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    inside.wait(30)
    during = mapped_bytes(path)
    leave.wait(30)
    for t in threads:
        t.join(30)
    assert not errors
    # three scans of a 12 MiB file at once: one through the map (8 MiB), two by pread
    assert mappings(path) == [8 * MIB]
    assert during == 8 * MIB


def test_the_map_stays_warm_from_one_request_to_the_next(store: Store) -> None:
    path = Path(store.path)
    for _ in range(2):
        with store.time_budget(60):  # a request in a worker thread borrows the mapped connection
            scan(store)
    assert mappings(path) == [8 * MIB]  # one mapping, never unmapped and mapped again
    results: list[int] = []

    def other_request() -> None:
        with store.time_budget(60):
            scan(store)
            results.append(len(mappings(path)))

    t = threading.Thread(target=other_request)
    t.start()
    t.join(30)
    assert results == [1]  # another thread's request reads through the same mapping


def test_the_event_loop_reads_without_a_map(store: Store) -> None:
    with store.time_budget(60, inline_s=0.05):
        scan(store)
    assert mapped_bytes(Path(store.path)) == 0


def test_a_write_returns_before_its_checkpoint_copies_it_into_the_file(tmp_path: Path) -> None:
    """The writer does not wait for the WAL's checkpoint (mock/checkpoints.py): the pages of
    a committed write are in the WAL when it returns, and in the file once the checkpointer's
    thread has run."""
    store = Store(get_profile(), str(tmp_path / "wal.sqlite"))
    started, release = threading.Event(), threading.Event()

    def held_checkpoint(conn: apsw.Connection) -> None:
        started.set()
        release.wait(30)
        conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    store.checkpointer.checkpoint = held_checkpoint  # type: ignore[method-assign]
    try:
        with store.transaction():
            store.conn.execute("CREATE TABLE filler (x BLOB)")
            store.conn.executemany("INSERT INTO filler VALUES (randomblob(4000))",
                                   [()] * 3000)  # fmt: skip
        file = tmp_path / "wal.sqlite"
        assert started.wait(30)  # the checkpoint was asked for, after the commit returned
        assert file.stat().st_size < 4 * MIB  # and nothing of the write copied yet
        release.set()
        deadline = time.monotonic() + 30
        while store.checkpointer.checkpoints < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert file.stat().st_size > 10 * MIB
    finally:
        release.set()
        store.close()
