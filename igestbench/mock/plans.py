"""Before a read runs: whether the event loop may run it, and the cheaper shape of a scan.

**Where a read runs.** The catalogue answers a small request on its event loop when that costs
less than handing it to a worker thread (:mod:`igestbench.mock.catalogue`). A read that visits
many rows must not hold the loop, so it is sent to a worker *before* any of its SQL runs, and
every query runs exactly once. What it will visit is estimated from SQLite's own plan
(``EXPLAIN QUERY PLAN``) and statistics, as the product of what each step of the plan reads: a
whole table (or index) its rows, a lookup by primary or unique key one row, a lookup by the
first columns of an index the rows per value ``sqlite_stat1`` gives (without statistics: the
whole table), each bound of a range a quarter of that. A read estimated at more than
:data:`INLINE_ROWS` runs in a worker. No estimate is exact (a value far more frequent than the
average, a range covering most of a table): a read that runs on the loop and costs it more CPU
time than the loop's budget (``inline_s`` of :meth:`Store.time_budget`; CPU, not wall time,
which on a busy machine swells with the wait for a core) runs to its end where it is, and its
statement (or ``get`` query) is remembered; when its next run costs the loop as much, it
runs in a worker from then on (one run over budget may have paid for something once).
The plan and its estimate are worked out once per statement and statistics (the store refreshes
them each time the rows it wrote double, so a table has at most doubled since).

**Scans made cheaper, still scans.** A statement that reads a whole table only to test columns
one of its indexes holds as well — a Datafile by name alone, where ICAT's unique key (dataset,
name) holds every name — finds its ids by a scan of that narrower index instead and reads only
the matching rows: ``… WHERE t0.id IN (SELECT t0.id FROM T t0 WHERE <the same condition>)``.
It still reads one entry per row of the table, so its cost grows with the catalogue as ICAT's
does (a scan stays a scan); an entry of that index is a fraction of a row. The shape is taken
only where SQLite's plan for it is that index scan.
"""

from __future__ import annotations

import contextlib
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import apsw

from igestbench.mock import db
from igestbench.mock.store import Store
from igestbench.mock.time_budget import RunElsewhere

#: A read estimated to visit more rows than this runs in a worker thread, not on the event loop
#: (20,000 index entries take about 2 ms; a 2,000-row page of an Investigation stays there).
INLINE_ROWS = 20_000
#: What one bound of a range keeps of the rows (SQLite's own guess without finer statistics).
RANGE_KEEPS = 0.25
#: Entries of a narrow index per page, which COUNT(*) of a whole table counts at once.
ENTRIES_PER_PAGE = 100
#: Statements whose plans are kept, and reads remembered as slow (each forgets beyond it).
_KEPT = 4096

#: ``FROM "Table" alias`` and ``JOIN "Table" alias`` of the statements the translator writes
_TABLES = re.compile(r'(?:FROM|JOIN) "(\w+)" (\w+)')
#: one step of a plan that reads a table: how, which index, its constraints
_STEP = re.compile(
    r"^(?P<op>SCAN|SEARCH) (?P<alias>\S+)"
    r"(?: USING (?:(?P<auto>AUTOMATIC )?(?:COVERING |PARTIAL )*INDEX ?(?P<index>\S*)"
    r"|INTEGER PRIMARY KEY))?(?: \((?P<terms>.*)\))?$"
)
#: an entity search on one table without joins, in id order (ICAT's order without ORDER BY)
_ONE_TABLE = re.compile(
    r'^SELECT (?P<select>.+?) FROM "(?P<table>\w+)" (?P<alias>t0) WHERE (?P<where>.+) '
    r'ORDER BY (?P=alias)\."id"$',
    re.S,
)


@dataclass(frozen=True)
class Plan:
    """How a compiled read statement is run."""

    #: the statement to run (the compiled one, or its narrower shape)
    sql: str
    #: the rows it is estimated to visit
    rows: float

    @property
    def inline(self) -> bool:
        """Whether the event loop may run it."""
        return self.rows <= INLINE_ROWS


class Plans:
    """The plans of one store's read statements, and the reads too slow for the event loop."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._plans: dict[tuple[int, str], Plan] = {}
        self._slow: dict[str, None] = {}
        #: reads over budget the last time they ran (a second time in a row makes them slow)
        self._over_once: dict[str, None] = {}
        #: index name → (unique, columns); sqlite_stat1 per statistics: index → numbers
        self._indexes: dict[str, tuple[bool, int]] = {}
        self._stat: tuple[int, dict[str, list[int]]] = (-1, {})

    def statement(self, sql: str, params: Sequence[Any]) -> str:
        """The SQL to run for the compiled read ``sql``.

        Raises :class:`RunElsewhere`, before anything runs, when this thread answers on the
        event loop and the statement is estimated to visit too many rows, or was slow there.
        """
        plan = self.plan(sql, params)
        if self.store.inline and (not plan.inline or sql in self._slow):
            raise RunElsewhere
        return plan.sql

    def check(self, key: str) -> None:
        """Raise :class:`RunElsewhere` on the event loop for a read remembered as slow."""
        if self.store.inline and key in self._slow:
            raise RunElsewhere

    def timed(self, key: str) -> Timed:
        """Remember ``key`` as slow when the block costs the event loop more than its budget."""
        return Timed(self, key)

    def ran(self, key: str, cpu_s: float, budget: float) -> None:
        """A read of ``key`` on the event loop cost it ``cpu_s`` of its ``budget``.

        Once over budget may be a cost paid once (a code path's first use, a garbage
        collection that fell on it): a read is sent to a worker for good when it is over
        budget twice in a row. Before, one cold first call sent every later ``get`` of its
        entity there (a hand-over that doubled the CPU time of each).
        """
        if cpu_s > budget:
            if key in self._over_once:
                _keep(self._slow, key)
            else:
                _keep(self._over_once, key)
        elif self._over_once:
            self._over_once.pop(key, None)

    def plan(self, sql: str, params: Sequence[Any]) -> Plan:
        """The plan of ``sql`` under the store's present statistics (worked out once)."""
        key = (self.store.statistics, sql)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._work_out(sql, params)
            if len(self._plans) >= _KEPT:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _work_out(self, sql: str, params: Sequence[Any]) -> Plan:
        steps = self._steps(sql, params)
        rows = self._estimate(sql, steps)
        shape = _ONE_TABLE.match(sql)
        if shape is None or f"SCAN {shape['alias']}" not in steps:
            return Plan(sql, rows)
        alias, table = shape["alias"], shape["table"]
        narrow = (
            f'SELECT {shape["select"]} FROM "{table}" {alias} WHERE {alias}."id" IN '
            f'(SELECT {alias}."id" FROM "{table}" {alias} WHERE {shape["where"]}) '
            f'ORDER BY {alias}."id"'
        )
        narrow_steps = self._steps(narrow, params)
        if any(s.startswith(f"SCAN {alias} USING COVERING INDEX ") for s in narrow_steps) and (
            f"SCAN {alias}" not in narrow_steps
        ):
            return Plan(narrow, rows)
        return Plan(sql, rows)

    def _steps(self, sql: str, params: Sequence[Any]) -> list[str]:
        rows = self.store.conn.execute("EXPLAIN QUERY PLAN " + sql, tuple(params)).fetchall()
        return [str(row[3]) for row in rows]

    def _estimate(self, sql: str, steps: Sequence[str]) -> float:
        """The rows ``steps`` (a plan of ``sql``) visit: the product of every step's rows —
        as if each ran inside the one before (more than a plan of parallel branches visits;
        an estimate on the safe side)."""
        pairs = _TABLES.findall(sql)
        aliases = {alias: table for table, alias in pairs}
        names = {table for table, _ in pairs}
        total = 1.0
        for text in steps:
            step = _STEP.match(text)
            if step is None:
                continue  # a container (subquery, compound, sort) or a constant row
            if step["alias"] in aliases:
                total *= self._step_rows(aliases[step["alias"]], step)
            elif step["alias"] in names:
                # COUNT(*) of a whole table: SQLite adds up the entries of each page of an
                # index instead of visiting them (a page holds a hundred and more)
                total *= max(1.0, self._rows(step["alias"]) / ENTRIES_PER_PAGE)
        return total if math.isfinite(total) else math.inf

    def _step_rows(self, table: str, step: re.Match[str]) -> float:
        whole = float(self._rows(table))
        terms = [t for t in (step["terms"] or "").split(" AND ") if t]
        if step["op"] == "SCAN" or step["auto"]:
            return whole  # every row (an automatic index is built from every row first)
        equal = sum(1 for t in terms if t.endswith("=?") and t[-3] not in "<>")
        ranges = len(terms) - equal
        index = step["index"]
        if not index:  # the primary key
            base = 1.0 if equal else whole
        else:
            stat = self._statistics().get(index)
            unique, columns = self._index(index)
            if equal == 0:
                base = whole
            elif stat is not None and len(stat) > equal:
                base = float(stat[equal])
            else:
                base = 1.0 if unique and equal >= columns else whole
        return max(1.0, base * RANGE_KEEPS ** min(ranges, 2))

    def _rows(self, table: str) -> int:
        # ids only grow (AUTOINCREMENT): the largest is at least the rows, found in one descent
        top = db.scalar(self.store.conn, f'SELECT MAX(rowid) FROM "{table}"')
        return int(top or 0)

    def _statistics(self) -> dict[str, list[int]]:
        generation, stat = self._stat
        if generation != self.store.statistics:
            stat = {}
            with contextlib.suppress(apsw.Error):  # no sqlite_stat1 before the first ANALYZE
                for idx, text in self.store.conn.execute("SELECT idx, stat FROM sqlite_stat1"):
                    if idx:
                        stat[str(idx)] = [int(w) for w in str(text).split() if w.isdigit()]
            self._stat = (self.store.statistics, stat)
        return stat

    def _index(self, name: str) -> tuple[bool, int]:
        known = self._indexes.get(name)
        if known is None:
            conn = self.store.conn
            row = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?", (name,)
            ).fetchone()
            unique = bool(row and row[0] and str(row[0]).upper().startswith("CREATE UNIQUE"))
            columns = len(conn.execute(f'PRAGMA index_info("{name}")').fetchall())
            known = self._indexes[name] = (unique, columns)
        return known


class Timed:
    """The block of :meth:`Plans.timed`: the event loop thread's CPU time over it. A class,
    not a generator's context manager, which cost several times as much per read.

    CPU time, not wall time: on a busy machine the wall time of any read swells with the wait
    for a core, which says nothing of the read. But CPU time is a system call to read, and a
    thread spends no more CPU time than wall time passes: a block whose wall time (a cheap
    clock) stayed within the budget needs no second reading to know it stayed within it.
    """

    __slots__ = ("budget", "cpu", "key", "plans", "wall")

    def __init__(self, plans: Plans, key: str) -> None:
        self.plans = plans
        self.key = key
        self.budget = plans.store.inline_s
        self.cpu = self.wall = 0.0

    def __enter__(self) -> None:
        if self.budget is not None:
            self.cpu = time.thread_time()
            self.wall = time.perf_counter()

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        budget = self.budget
        if budget is None or error is not None:
            return
        over = time.perf_counter() - self.wall > budget
        self.plans.ran(self.key, time.thread_time() - self.cpu if over else 0.0, budget)


def _keep(kept: dict[str, None], key: str) -> None:
    """Add ``key`` to ``kept``, which forgets its oldest beyond :data:`_KEPT` keys."""
    if len(kept) >= _KEPT:
        with contextlib.suppress(KeyError, RuntimeError, StopIteration):
            kept.pop(next(iter(kept)))  # another thread may be at it too
    kept[key] = None
