"""The store's SQLite driver (igestbench/mock/db.py): what the local catalogue's speed rests on.

SQLite 3.54 (apsw 3.54.x) prepares a statement that joins tables and has a bound parameter
again at every run: the statement cache keeps it, but SQLite marks it expired at each binding.
Most of the local catalogue's searches are such joins (``df.dataset.id = 7`` joins Dataset),
and a fresh prepare cost them 5-25 µs of CPU each: 30-70 % more for a one-row search, beside
the real ICAT's light calls (2026-11-27, 2-core dev machine). apsw 3.53 prepares it once, so
setup.cfg keeps apsw below 3.54 until a later SQLite does too: this test says when.
SQLite asks the authorizer about each column while it prepares a statement, and never while it
runs one; so the authorizer's calls count the prepares.
"""

from __future__ import annotations

from collections.abc import Iterator

import apsw
import pytest

from igestbench.mock import db


@pytest.fixture
def conn() -> Iterator[apsw.Connection]:
    conn = apsw.Connection(":memory:")
    conn.execute("""
        CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT);
        CREATE TABLE child (id INTEGER PRIMARY KEY,
                            parent_id INTEGER NOT NULL REFERENCES parent (id), name TEXT);
        CREATE UNIQUE INDEX ux_child ON child (parent_id, name);
        INSERT INTO parent VALUES (1, 'p1'), (2, 'p2');
        INSERT INTO child (parent_id, name) VALUES (1, 'a'), (1, 'b'), (2, 'a'), (2, 'c');
    """)
    yield conn
    conn.close()


def prepares(conn: apsw.Connection, sql: str, runs: list[tuple[object, ...]]) -> int:
    """The authorizer's calls while ``sql`` ran once with each of ``runs``' bindings, after a
    run that prepared it: 0 when each run used the prepared statement again."""
    asked = 0

    def authorizer(*_: object) -> int:
        nonlocal asked
        asked += 1
        return apsw.SQLITE_OK

    conn.authorizer = authorizer
    try:
        # setting an authorizer expires every prepared statement: this run prepares it again
        db.rows(conn, sql, runs[0])
        asked = 0
        for bindings in runs:
            db.rows(conn, sql, bindings)
    finally:
        conn.authorizer = None
    return asked


@pytest.mark.parametrize("sql", [
    'SELECT c.id FROM child c JOIN parent p ON p.id = c.parent_id WHERE p.id = ? AND c.name = ?',
    "SELECT c.id FROM child c, parent p WHERE p.id = c.parent_id AND p.id = ? AND c.name = ?",
    "SELECT c.id FROM child c WHERE c.parent_id = ? AND c.name = ?",
])  # fmt: skip
def test_a_statement_with_bound_parameters_is_prepared_once(
    conn: apsw.Connection, sql: str
) -> None:
    runs = [(1, "a"), (2, "a"), (1, "b"), (2, "c")]
    assert prepares(conn, sql, runs) == 0, (
        f"SQLite {apsw.sqlite_lib_version()} prepares this statement again at each run")


def test_the_reads_every_module_shares(conn: apsw.Connection) -> None:
    assert db.scalar(conn, "SELECT count(*) FROM child WHERE parent_id = ?", (1,)) == 2
    assert db.one(conn, "SELECT name FROM parent WHERE id = ?", (2,)) == ("p2",)
    with pytest.raises(LookupError):
        db.one(conn, "SELECT name FROM parent WHERE id = ?", (3,))
    assert db.rows(conn, "SELECT id FROM child ORDER BY id") == [(1,), (2,), (3,), (4,)]
    assert db.at_most(conn.execute("SELECT id FROM child ORDER BY id"), 3) == [(1,), (2,), (3,)]
