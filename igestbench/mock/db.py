"""The store's SQLite driver, apsw, and the few typed reads the store's modules share.

apsw rather than Python's sqlite3: it hands a row's values to Python in about half the time
(a Dataset's 400 Datafiles of 13 columns: 0.31-0.37 ms against 0.61-0.65 ms), and it brings its
own SQLite, newer than the system's (a LIKE over 10⁵ names scanned in 15-18 ms against 22-24
ms). Both matter for issue 21's "≥ 3 times faster than the real ICAT for each query": what was left
there was per-row work. The README's "SQLite through apsw" gives the side by side.

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
