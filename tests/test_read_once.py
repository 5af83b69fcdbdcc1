"""A query runs once (issue 21.6): where a read runs — on the event loop or in a worker thread —
is decided before any of its SQL runs (mock/plans.py), never by stopping it on the loop to run
it again in a worker; and a scan that an index also covers reads the narrower index, with the
same answer.

Each test records every statement SQLite runs, with the thread that ran it (the event loop is
the catalogue's own thread, the workers are ``sv7-request…``).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import apsw
import pytest

from igestbench.config import ServeConfig
from igestbench.mock import catalogue, plans
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.jpql import compile_search, parser
from igestbench.mock.store import Store
from tests.soap_helpers import call, login, returns
from tests.sql_trace import tracer
from tests.test_catalogue_no_stall import seed

FILES = 2_000  # a scan of them takes SQLite well over 10,000 steps (its progress handler's)


@contextlib.contextmanager
def traced(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LocalCatalogue,
                                                                 list[tuple[str, str]]]]:
    """A catalogue of FILES Datafiles, and the (thread name, SQL) of every statement run."""
    ran: list[tuple[str, str]] = []
    connect = Store._connect

    def tracing(self: Store) -> apsw.Connection:
        conn = connect(self)
        conn.exec_trace = tracer(lambda sql: ran.append((threading.current_thread().name, sql)))
        return conn

    monkeypatch.setattr(Store, "_connect", tracing)
    with LocalCatalogue(ServeConfig()) as cat:
        seed(cat.service, FILES)
        ran.clear()
        yield cat, ran


def search(cat: LocalCatalogue, sid: str, query: str) -> int:
    r = call(cat.service_url, "search",
             f"<sessionId>{sid}</sessionId><query>{query}</query>")
    assert r.status_code == 200, r.text
    return len(returns(r))


def runs_of(ran: list[tuple[str, str]], marker: str) -> list[str]:
    """The threads that ran a search statement holding ``marker``."""
    return [thread for thread, sql in ran if marker in sql and not sql.startswith("EXPLAIN")]


@pytest.fixture
def every_read_over_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[LocalCatalogue, list[tuple[str, str]]]]:
    """A traced catalogue whose event loop has no CPU time at all for a read."""
    monkeypatch.setattr(catalogue, "INLINE_SQL_S", 0.0)
    with traced(monkeypatch) as traced_catalogue:
        yield traced_catalogue


def test_a_read_over_the_loop_s_budget_runs_once_and_in_a_worker_from_then_on(
    every_read_over_budget: tuple[LocalCatalogue, list[tuple[str, str]]],
) -> None:
    # no CPU time at all for the loop: before, each such read ran there until the budget was
    # spent, was stopped and ran again in a worker (the profiles' 50 ms twice)
    cat, ran = every_read_over_budget
    sid = login(cat.service_url)
    assert search(cat, sid, "SELECT df FROM Datafile df WHERE df.name = 'df7'") == 1
    first = runs_of(ran, "'df7'")
    assert len(first) == 1, first
    assert not first[0].startswith("sv7-request")  # on the loop, to its end
    ran.clear()
    # once over budget may be a cost paid once: the loop runs it a second time
    assert search(cat, sid, "SELECT df FROM Datafile df WHERE df.name = 'df8'") == 1
    second = runs_of(ran, "'df8'")
    assert len(second) == 1 and not second[0].startswith("sv7-request"), second
    ran.clear()
    assert search(cat, sid, "SELECT df FROM Datafile df WHERE df.name = 'df9'") == 1
    third = runs_of(ran, "'df9'")
    assert len(third) == 1 and third[0].startswith("sv7-request"), third


def test_a_read_over_the_loop_s_budget_once_between_quick_runs_stays_on_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a garbage collection or a first use falls on one run of a read, the next is quick: the
    # read stays on the loop however often that happens over the catalogue's life
    budget = {"s": 0.0}
    real_budget = Store.time_budget

    def budgeted(self: Store, seconds: float, inline_s: float | None = None) -> Iterator[None]:
        return real_budget(self, seconds, None if inline_s is None else budget["s"])

    monkeypatch.setattr(Store, "time_budget", budgeted)
    with traced(monkeypatch) as (cat, ran):
        sid = login(cat.service_url)
        for name, over in (("df7", True), ("df8", False), ("df9", True), ("df10", False),
                           ("df11", True)):
            budget["s"] = 0.0 if over else 60.0
            ran.clear()
            assert search(cat, sid, f"SELECT df FROM Datafile df WHERE df.name = '{name}'") == 1
            threads = runs_of(ran, f"'{name}'")
            assert len(threads) == 1 and not threads[0].startswith("sv7-request"), (name, threads)


def test_the_first_query_of_a_new_catalogue_does_not_send_its_kind_to_a_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Building the query parser costs about 0.4 s of CPU. The first query used to pay it on
    # the event loop and be remembered as slow: every later get of a Datafile then went
    # through a worker thread, twice the CPU time of each (seen in issue 21's side by side).
    parser._lark.cache_clear()
    with traced(monkeypatch) as (cat, ran):
        sid = login(cat.service_url)
        for serial in (5, 6, 7):
            ran.clear()
            r = call(cat.service_url, "get", f"<sessionId>{sid}</sessionId>"
                     f"<query>Datafile</query><primaryKey>{serial}</primaryKey>")
            assert r.status_code == 200, r.text
            workers = [t for t, sql in ran if t.startswith("sv7-request")]
            assert ran and not workers, (serial, ran)


def test_a_read_estimated_too_big_for_the_loop_runs_once_in_a_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(plans, "INLINE_ROWS", FILES // 2)  # a scan of FILES rows is too much
    with traced(monkeypatch) as (cat, ran):
        sid = login(cat.service_url)
        assert search(cat, sid, "SELECT df FROM Datafile df WHERE df.name LIKE 'df19%'") == 111
        threads = runs_of(ran, "'df19%'")
        assert len(threads) == 1 and threads[0].startswith("sv7-request"), threads
        # a lookup by the unique key stays on the loop
        ran.clear()
        query = "SELECT df FROM Datafile df WHERE df.dataset.id = 1 AND df.name = 'df5'"
        assert search(cat, sid, query) == 1
        threads = runs_of(ran, "'df5'")
        assert len(threads) == 1 and not threads[0].startswith("sv7-request"), threads


def test_a_delete_runs_in_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    with traced(monkeypatch) as (cat, ran):
        sid = login(cat.service_url)
        r = call(cat.service_url, "delete", f'<sessionId>{sid}</sessionId><bean '
                 'xsi:type="tns:datafile"><id>3</id></bean>')  # fmt: skip
        assert r.status_code == 200, r.text
        deletes = [t for t, sql in ran if sql.startswith("DELETE")]
        assert deletes and all(t.startswith("sv7-request") for t in deletes), deletes


def test_a_scan_an_index_covers_reads_the_index_with_the_same_answer(tmp_path: object) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        seed(cat.service, FILES)
        store = cat.service.store
        profile = store.profile
        checked = 0
        for query, narrowed in (
            ("SELECT df FROM Datafile df WHERE df.name = 'df1'", True),
            ("SELECT df FROM Datafile df WHERE df.name LIKE 'df1%'", True),
            ("SELECT df FROM Datafile df WHERE df.name LIKE 'df1%' OR df.name = 'df9'", True),
            # the unique key serves it: no scan to narrow
            ("SELECT df FROM Datafile df WHERE df.dataset.id = 1 AND df.name = 'df1'", False),
            # fileSize is in no index: the table itself is scanned
            ("SELECT df FROM Datafile df WHERE df.fileSize > 3", False),
        ):
            compiled = compile_search(profile, query)
            plan = cat.service.reader.plans.plan(compiled.sql, compiled.params)
            assert (plan.sql != compiled.sql) is narrowed, query
            if narrowed:
                steps = [row[3] for row in store.conn.execute(
                    "EXPLAIN QUERY PLAN " + plan.sql, compiled.params)]  # fmt: skip
                assert any("USING COVERING INDEX ux_Datafile" in s for s in steps), steps
            plain = store.conn.execute(compiled.sql, compiled.params).fetchall()
            assert store.conn.execute(plan.sql, compiled.params).fetchall() == plain, query
            checked += bool(plain)
        assert checked >= 3


def test_a_page_too_slow_for_the_loop_goes_to_a_worker_when_it_asks_for_its_ids_too(
    every_read_over_budget: tuple[LocalCatalogue, list[tuple[str, str]]],
) -> None:
    # a big answer asked again asks for its ids first (mock/row_texts.py), by another
    # statement: the read was remembered as slow by its own, which must still send it away
    cat, ran = every_read_over_budget
    sid = login(cat.service_url)
    query = "SELECT df FROM Datafile df WHERE df.name LIKE 'df19%' ORDER BY df.name"
    for turn in range(3):
        ran.clear()
        assert search(cat, sid, query) == 111
        threads = runs_of(ran, "'df19%'")
        assert len(threads) == 1, threads
        if turn < 2:  # whole rows on the loop: over budget twice in a row makes it slow
            assert not threads[0].startswith("sv7-request"), (turn, threads)
    # the third asks for ids only, in a worker
    ids_only = [(t, sql) for t, sql in ran if sql.startswith('SELECT t0."id" FROM')]
    assert ids_only and all(t.startswith("sv7-request") for t, _ in ids_only), ran
