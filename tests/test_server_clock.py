"""The run's window on the server's clock is narrow even when the server sends no ``Date``.

A real ICAT 6.2.0 on Payara answers without an HTTP ``Date`` header: the run then reads the
server's clock from the createTime of its first object (``<tag>-clock``), journals the reading,
and cleanup's window is as narrow as with the header — not ±15 minutes of this machine's clock.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from igestbench.client.base import ClientConfig
from igestbench.client.server_clock import server_clock
from igestbench.config import ServeConfig
from igestbench.icat.credentials import Credentials
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.run.cleanup import RunJournal
from igestbench.run.runner import Target
from igestbench.workloads import CatalogueIdentity, Journal, RunTag
from igestbench.workloads.run_window import SYNCED_SKEW, RunClock
from tests.test_run import left_on_server

INGEST = Credentials("simple", "ingest", "ingest")


def target_of(cat: LocalCatalogue) -> Target:
    return Target(cat.service_url, INGEST, ClientConfig(url=cat.service_url), local=False)


def test_without_a_date_header_the_window_comes_from_a_create_time(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig(date_header=False)) as cat:
        assert server_clock(ClientConfig(url=cat.service_url))[1] is None  # as Payara
        run = RunJournal(tmp_path / "r.json", RunTag.new("payara"))
        before = dt.datetime.now(dt.UTC)
        run.start(target_of(cat), "6.2.0")
        after = dt.datetime.now(dt.UTC)
        journal = Journal.load(run.path)
        assert journal.clock is not None and journal.clock.server is not None
        window = journal.window()
        # as narrow as with a Date header: a minute's allowance, not fifteen
        assert before - SYNCED_SKEW - dt.timedelta(seconds=2) <= window.start
        assert window.start <= after - SYNCED_SKEW + dt.timedelta(seconds=2)
        assert journal.facilities == (f"{run.tag.name}-clock",)
        # the clock's Facility is the run's like any other: removed with the run
        section = run.finish(target_of(cat))
        assert section["left"] == 0 and section["deleted"] == 1 and not run.kept
        assert left_on_server(cat) == 0


def test_with_a_date_header_nothing_is_created_for_the_clock(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        run = RunJournal(tmp_path / "r.json", RunTag.new("dated"))
        run.start(target_of(cat), "6.2.0")
        journal = Journal.load(run.path)
        assert journal.clock is not None and journal.clock.server is not None
        assert journal.facilities == () and len(journal) == 0
        assert run.finish(target_of(cat))["deleted"] == 0


def test_a_clock_line_carries_the_servers_clock_back_to_the_runs_start(tmp_path: Path) -> None:
    start = dt.datetime(2026, 11, 26, 9, 0, tzinfo=dt.UTC)
    path, tag = tmp_path / "r.journal.jsonl", RunTag.new("x")
    identity = CatalogueIdentity("https://icat.example.org/ICATService/ICAT", "6.2.0")
    journal = Journal.start(path, tag.name, identity, "simple/ingest", RunClock(start))
    # two seconds later by our clock, the server's createTime said an hour and two seconds later
    second = dt.timedelta(seconds=1)
    journal.record_clock(RunClock(start + 2 * second, start + 2 * second + dt.timedelta(hours=1)))
    loaded = Journal.load(path)
    assert loaded.clock == RunClock(start, start + dt.timedelta(hours=1))
    window = loaded.window()
    assert window.start == start + dt.timedelta(hours=1) - SYNCED_SKEW
