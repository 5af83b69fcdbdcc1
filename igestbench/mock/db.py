"""The store's SQLite driver, apsw, and the few typed reads the store's modules share.

apsw rather than Python's sqlite3: it hands a row's values to Python in about half the CPU, and
it brings its own SQLite (3.53), newer than the system's (3.40 here), whose LIKE scans faster.
On the scale part's tree at 10⁵ Datafiles (``python -m tests.benchmarks.sqlite_drivers``, 2-core
dev machine, 2026-11-27): a Dataset's 400 Datafiles of 13 columns 0.41 against 0.72 ms, a LIKE
prefix over every name 5.9 against 8.0 ms. Both matter for issue 21's "≥ 3 times faster than
the real ICAT for each query": what was left there was per-row work.

setup.cfg keeps apsw below 3.54: SQLite 3.54 prepares a join with a bound parameter again at
every run (``tests/test_sqlite_driver.py``), which costs a one-row search more than the driver
saves it.

apsw types a row's values exactly (``int | float | str | bytes | None``) where sqlite3 said
``Any``; a module that knows what a statement returns says so through these functions, once.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import apsw

Row = Sequence[Any]


def one(conn: apsw.Connection, sql: str, params: Sequence[Any] = ()) -> Row:
    """The row of a statement that returns one (of an object known to exist, an aggregate)."""
    row: Row | None = conn.execute(sql, params).fetchone()
    if row is None:
        raise LookupError(f"no row from {sql!r}")
    return row


def scalar(conn: apsw.Connection, sql: str, params: Sequence[Any] = ()) -> Any:
    """The one value of a statement that returns one row of one column (COUNT, MAX …)."""
    return one(conn, sql, params)[0]


def rows(conn: apsw.Connection, sql: str, params: Sequence[Any] = ()) -> list[Row]:
    """Every row of a statement."""
    return list(conn.execute(sql, params))


def at_most(cursor: apsw.Cursor, n: int) -> list[Row]:
    """The first ``n`` rows of a statement (apsw's cursor has no ``fetchmany``); the rest are
    never stepped to: the statement is reset when the cursor goes."""
    return list(itertools.islice(cursor, n))
