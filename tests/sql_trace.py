"""The statements SQLite runs on a store's connection, as tests look at them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import apsw

ExecTracer = Callable[[apsw.Cursor, str, Any], bool]


def tracer(record: Callable[[str], object]) -> ExecTracer:
    """An apsw exec tracer that hands ``record`` each statement with its values in place
    (what Python's sqlite3 gave a trace callback), and lets it run."""

    def trace(cursor: apsw.Cursor, sql: str, bindings: Any) -> bool:
        record(cursor.expanded_sql or sql)
        return True

    return trace


@contextlib.contextmanager
def statements(conn: apsw.Connection) -> Iterator[list[str]]:
    """The statements ``conn`` runs inside the block."""
    seen: list[str] = []
    conn.exec_trace = tracer(seen.append)
    try:
        yield seen
    finally:
        conn.exec_trace = None
