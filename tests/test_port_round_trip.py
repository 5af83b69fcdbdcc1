"""Export a catalogue holding every entity type, import it into a fresh ``sv7 serve``, export
again: the same file apart from ids — with the server in UTC and in Europe/Berlin, with
``attributes`` USER and ALL, and from one zone into the other."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.icat.schema import get_profile
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.port_format import export_order
from tests.port_catalogue import fill
from tests.port_helpers import Port, answers, body, fault, without_ids

PROFILE = get_profile("6.2")


@contextmanager
def catalogue(zone: str = "UTC") -> Iterator[tuple[LocalCatalogue, Port, str]]:
    with LocalCatalogue(ServeConfig(timezone=zone)) as cat:
        port = Port(cat)
        yield cat, port, port.login()


def _tables(text: str) -> dict[str, int]:
    """Lines per table of an export file."""
    counts: dict[str, int] = {}
    current = ""
    for line in text.split("\n")[2:]:
        if line[:1].isupper() and line.endswith(")"):
            current = line.split("(")[0]
            counts[current] = 0
        elif line:
            counts[current] += 1
    return counts


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin"])
def test_a_catalogue_of_every_entity_type_round_trips_apart_from_ids(zone: str) -> None:
    with catalogue(zone) as (cat, port, sid):
        fill(cat.store)
        user = body(port.export(sid))
        everything = body(port.export(sid, attributes="ALL"))
    tables = _tables(user)
    assert list(tables) == list(export_order(PROFILE))
    assert all(tables.values()), [name for name, n in tables.items() if not n]
    if zone != "UTC":
        assert "+01:00," in everything and "+02:00," in everything
    with catalogue(zone) as (_, port, sid):
        assert port.import_text(sid, everything, attributes="ALL").status_code == 204
        assert without_ids(body(port.export(sid, attributes="ALL"))) == without_ids(everything)
        assert without_ids(body(port.export(sid))) == without_ids(user)
    with catalogue(zone) as (_, port, sid):
        assert port.import_text(sid, user).status_code == 204
        assert without_ids(body(port.export(sid))) == without_ids(user)


def test_a_catalogue_moves_between_time_zones_with_the_same_instants() -> None:
    with catalogue("UTC") as (cat, port, sid):
        fill(cat.store)
        utc = body(port.export(sid, attributes="ALL"))
    with catalogue("Europe/Berlin") as (_, port, sid):
        assert port.import_text(sid, utc, attributes="ALL").status_code == 204
        berlin = body(port.export(sid, attributes="ALL"))
    assert berlin != utc
    assert without_ids(berlin, utc_dates=True) == without_ids(utc, utc_dates=True)


def test_a_date_without_zone_is_read_in_the_servers_zone() -> None:
    text = "1.0\n\nFacilityCycle(facility(name:0),name:1,startDate:2)\n"
    with catalogue("Europe/Berlin") as (cat, port, sid):
        cat.store.create("simple/root", Bean("Facility", {"name": "F"}))
        r = port.import_text(sid, text + '"F","c",2024-01-15T10:20:30.1239\n')
        assert r.status_code == 204, r.text
        got = port.search(sid, "SELECT c.startDate FROM FacilityCycle c")
    # 10:20:30 in Berlin (UTC+1) is 09:20:30 UTC; the milliseconds are cut, not rounded
    instant = dt.datetime.fromisoformat(got[0].replace("Z", "+00:00"))
    assert instant == dt.datetime(2024, 1, 15, 9, 20, 30, 123000, tzinfo=dt.UTC)


def test_a_job_without_input_exports_an_empty_column_that_icat_cannot_import() -> None:
    """As on the real server (fixtures jobs.txt and answers.json): the null relation to a type
    without key is written as nothing, and the import stumbles on it."""
    with catalogue() as (cat, port, sid):
        store = cat.store
        fac = store.create("simple/root", Bean("Facility", {"name": "F"}))
        app = store.create(
            "simple/root",
            Bean(
                "Application",
                {"facility": Bean("Facility", {"id": fac}), "name": "reduce", "version": "1.0"},
            ),
        )
        dc = store.create("simple/root", Bean("DataCollection", {}))
        job = {"application": Bean("Application", {"id": app})}
        store.create(
            "simple/root",
            Bean("Job", {**job, "outputDataCollection": Bean("DataCollection", {"id": dc})}),
        )
        text = body(port.export(sid, query="SELECT j FROM Job j INCLUDE j.outputDataCollection"))
    assert '"F","reduce","1.0",NULL,,"' in text
    real = answers()["imports"]["empty column of a null relation"]
    with catalogue() as (cat, port, sid):
        cat.store.create("simple/root", Bean("Facility", {"name": "F"}))
        setup = '1.0\n\nApplication(facility(name:0),name:1,version:2)\n"F","reduce","1.0"\n'
        assert port.import_text(sid, setup).status_code == 204
        got = fault(port.import_text(sid, text))
    assert got[:2] == (real["status"], "BAD_PARAMETER")
    assert got[2].startswith("Expected token from types [COMMA] at token ")


def test_a_long_import_or_export_is_not_stopped_by_the_query_timeout() -> None:
    """--query-timeout bounds each statement of an import or export, not the whole file (ICAT
    has no limit): 3,000 objects take far longer than 50 ms in all, a few µs each."""
    lines = [f'"F","c{n}"' for n in range(3000)]
    text = "1.0\n\nFacilityCycle(facility(name:0),name:1)\n" + "\n".join(lines) + "\n"
    with LocalCatalogue(ServeConfig(query_timeout_s=0.05)) as cat:
        port = Port(cat)
        sid = port.login()
        cat.store.create("simple/root", Bean("Facility", {"name": "F"}))
        r = port.import_text(sid, text)
        assert r.status_code == 204, r.text
        exported = port.export(sid)
        assert exported.status_code == 200
        assert body(exported).count('"F","c') == 3000
