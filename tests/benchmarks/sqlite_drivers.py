"""The store's SQLite driver: apsw (its own SQLite) beside Python's sqlite3, on one database.

The local catalogue reads through apsw (``igestbench/mock/db.py``). What decided it were the two
queries of issue 21's set that stayed near "3 times faster than the real ICAT": a Dataset with its
400 Datafiles (the rows' values handed to Python are most of its cost) and a LIKE prefix over
every name (SQLite's scan). This script grows the scale part's tree (Investigations of 25
Datasets of 400 Datafiles) to ``--size`` Datafiles in a temporary database with the local
catalogue, then times on that one file, in ``--rounds`` rounds that alternate which driver goes
first, each round ``--calls`` calls per statement and driver:

* ``rows``: every column of the Datafiles of one Dataset (another Dataset on each call), as the
  reader fetches an INCLUDE's children;
* ``like``: the ids of the Datafiles whose name starts with a prefix shared by ten, through the
  covering (dataset, name) index, as the reader narrows that scan.

It prints, per statement and driver, the least and the median over the rounds of the CPU per
call, and sqlite3's least over apsw's (above 1: apsw is faster). No timing is asserted.

    python -m tests.benchmarks.sqlite_drivers [--size 100000] [--rounds 5] [--calls 200]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw

from igestbench.client import ClientConfig, connect
from igestbench.config import ServeConfig
from igestbench.icat.schema import get_profile
from igestbench.mock import tables
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.workloads import Journal
from igestbench.workloads.scale_tree import ScaleTree, TreeShape

FACILITY = "sv7-drivers"
#: Datafiles per createMany while growing (the scale part's batch)
BATCH = 10_000

Run = Callable[[str, Sequence[Any]], int]


def grow(db: Path, size: int, facility: str = FACILITY) -> ScaleTree:
    """The scale part's tree of ``size`` Datafiles in ``db`` under a Facility named
    ``facility``, made through this checkout's local catalogue."""
    with LocalCatalogue(ServeConfig(db=str(db))) as cat:
        client = connect(ClientConfig(cat.service_url, read_timeout=600), "lean")
        client.login("simple", {"username": "root", "password": "root"})
        tree = ScaleTree(client, Journal(facility=facility), facility, TreeShape(batch=BATCH))
        tree.found()
        while tree.size < size:
            tree.grow_to(min(size, tree.size + BATCH))
        client.logout()
        client.close()
    return tree


def statements(tree: ScaleTree, calls: int) -> dict[str, list[tuple[str, tuple[Any, ...]]]]:
    """Per statement, ``calls`` (SQL, parameters) spread over the tree."""
    datafile = get_profile().entity("Datafile")
    select = f"SELECT {tables.select_list(datafile, 'o')} FROM {tables.table(datafile)} o"
    rows = f'{select} WHERE o."dataset_id" IN (?) ORDER BY o."id"'
    like = ('SELECT t0."id" FROM "Datafile" t0 INDEXED BY "ux_Datafile" '
            'WHERE t0."name" LIKE ?')  # fmt: skip
    step = max(1, tree.size // calls)
    return {
        "rows": [(rows, (tree.datasets[i % len(tree.datasets)],)) for i in range(calls)],
        "like": [(like, (tree.datafile_name((i * step) // 10 * 10)[: -len("0.nxs")] + "%",))
                 for i in range(calls)],
    }


def drivers(db: Path) -> dict[str, Run]:
    """Each driver's way to run a statement and take every row, on its own connection."""
    old = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
    new = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    for conn in (old, new):
        conn.execute("PRAGMA mmap_size = 0")  # as the store's own connections read

    def run_old(sql: str, params: Sequence[Any]) -> int:
        return len(old.execute(sql, params).fetchall())

    def run_new(sql: str, params: Sequence[Any]) -> int:
        return len(list(new.execute(sql, params)))

    return {"sqlite3 " + sqlite3.sqlite_version: run_old,
            "apsw " + apsw.sqlite_lib_version(): run_new}  # fmt: skip


def cpu_per_call(run: Run, calls: list[tuple[str, tuple[Any, ...]]]) -> float:
    """CPU milliseconds per call of ``calls``, after one untimed pass."""
    for sql, params in calls:
        run(sql, params)
    start = time.process_time()
    for sql, params in calls:
        run(sql, params)
    return (time.process_time() - start) / len(calls) * 1e3


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="Datafiles in the tree")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (alternating order)")
    parser.add_argument("--calls", type=int, default=200, help="calls per statement and round")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sv7-drivers-") as tmp:
        db = Path(tmp) / "tree.sqlite"
        started = time.monotonic()
        tree = grow(db, args.size)
        print(f"{tree.size:,} Datafiles grown in {time.monotonic() - started:.0f} s; "
              f"{args.rounds} rounds of {args.calls} calls per statement and driver, "
              "CPU ms per call", flush=True)  # fmt: skip
        runs = drivers(db)
        figures: dict[tuple[str, str], list[float]] = {}
        for name, calls in statements(tree, args.calls).items():
            for round_ in range(args.rounds):
                order = list(runs) if round_ % 2 == 0 else list(reversed(runs))
                for driver in order:
                    figures.setdefault((name, driver), []).append(
                        cpu_per_call(runs[driver], calls))
        old, new = list(runs)
        for name in ("rows", "like"):
            line = [f"  {name:5}"]
            for driver in (old, new):
                values = figures[(name, driver)]
                line.append(f"{driver}: least {min(values):.3f}, "
                            f"median {statistics.median(values):.3f}")  # fmt: skip
            ratio = min(figures[(name, old)]) / min(figures[(name, new)])
            print("   ".join(line) + f"   sqlite3/apsw {ratio:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
