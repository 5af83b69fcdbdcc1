"""Answers encoded straight from rows are, byte for byte, the answers encoded from Beans.

The SOAP face answers search and get with :meth:`IcatService.search_xml` and ``get_xml`` (rows →
XML text, no Bean per row), as it answered them before with :func:`soapxml.encode_bean` from the
Beans that :meth:`IcatService.search` and ``get`` still return to Python callers. Both must
put the same bytes on the wire for the same objects: every attribute type (escaping of ``&<>``,
control characters, dates with and without fractions, doubles, booleans, enumerations, nulls),
nested INCLUDEs of both kinds, INCLUDE 1, objects hidden by access rules, both profiles.
A server in another zone than UTC (``--timezone``, here Europe/Berlin with dates on both sides
of its DST changes) answers from rows too, with the bytes the Beans with their dates in that
zone give (issue 11: it used to answer through the Beans).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest

from igestbench.config import ServeConfig
from igestbench.icat import soapxml
from igestbench.icat.beans import Bean
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.service import IcatService

ROOT = {"username": "root", "password": "root"}
READER = {"username": "reader", "password": "reader"}
NASTY = "a & b < c > d \"q\" 'a' \t tab \r cr \n lf \x85 \x7f é ✓"


def ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


def fill(service: IcatService, sid: str) -> None:
    """Objects with every kind of attribute value, nulls, and relations of both kinds."""
    fac = service.create(sid, Bean("Facility", {"name": NASTY, "daysUntilRelease": 3}))
    other = service.create(sid, Bean("Facility", {"name": "OTHER", "fullName": "<&>"}))
    it = service.create(
        sid, Bean("InvestigationType", {"name": "exp", "facility": ref("Facility", fac)})
    )
    dst = service.create(
        sid, Bean("DatasetType", {"name": "raw", "facility": ref("Facility", other)})
    )
    pt = service.create(
        sid,
        Bean(
            "ParameterType",
            {
                "name": "temperature",
                "units": "K",
                "valueType": "NUMERIC",
                "facility": ref("Facility", fac),
                "enforced": True,
                "verified": False,
                "applicableToDatafile": True,
                "minimumNumericValue": -1.5e-9,
                "maximumNumericValue": float("inf"),
            },
        ),
    )
    inv = service.create(
        sid,
        Bean(
            "Investigation",
            {
                "name": "INV&1",
                "visitId": "1",
                "title": NASTY,
                "startDate": dt.datetime(2024, 3, 3, 10, tzinfo=dt.UTC),
                "endDate": dt.datetime(2024, 3, 4, 11, 12, 13, 456789, tzinfo=dt.UTC),
                # Berlin's summer time begins at 01:00 UTC that day: +02:00 from then on
                "releaseDate": dt.datetime(2024, 3, 31, 1, 0, 0, tzinfo=dt.UTC),
                "facility": ref("Facility", fac),
                "type": ref("InvestigationType", it),
            },
        ),
    )
    for n in range(3):
        service.create(
            sid,
            Bean(
                "Dataset",
                {
                    "name": f"run-{n}",
                    "complete": n % 2 == 0,
                    "investigation": ref("Investigation", inv),
                    "type": ref("DatasetType", dst),
                    "startDate": dt.datetime(2001, 1, 1, 0, 0, 0, 1000 * n, tzinfo=dt.UTC),
                    # around the end of Berlin's summer time (01:00 UTC): +02:00, then +01:00
                    "endDate": dt.datetime(2023, 10, 29, n, 59, 59, 999000, tzinfo=dt.UTC),
                    "datafiles": [
                        Bean(
                            "Datafile",
                            {
                                "name": f"f-{n}-{i}.nxs",
                                "fileSize": 2**40 + i if i else None,
                                "location": NASTY if i == 1 else f"/data/{i}",
                                "parameters": [
                                    Bean(
                                        "DatafileParameter",
                                        {
                                            # ICAT judges the type as sent, not as stored
                                            "type": Bean(
                                                "ParameterType",
                                                {"id": pt, "applicableToDatafile": True},
                                            ),
                                            "numericValue": [0.1, 1e300, -2.5e-7][i],
                                            "error": None if i else 3.0,
                                        },
                                    )
                                ],
                            },
                        )
                        for i in range(3)
                    ],
                },
            ),
        )


QUERIES = [
    "SELECT df FROM Datafile df",
    "SELECT f FROM Facility f",
    "SELECT pt FROM ParameterType pt",
    "SELECT p FROM DatafileParameter p",
    "SELECT i FROM Investigation i",
    "SELECT ds FROM Dataset ds WHERE ds.name = 'nothing'",
    "SELECT df FROM Datafile df INCLUDE df.dataset ds, ds.investigation i, i.facility",
    "SELECT df FROM Datafile df INCLUDE 1",
    "SELECT ds FROM Dataset ds INCLUDE ds.datafiles df, df.parameters p, p.type",
    "SELECT i FROM Investigation i INCLUDE i.datasets ds, ds.datafiles, ds.type, i.facility",
    "SELECT ds FROM Dataset ds INCLUDE ds.type t, t.facility",
    "SELECT f FROM Facility f INCLUDE f.investigations, f.parameterTypes",
    "SELECT pt FROM ParameterType pt INCLUDE pt.datafileParameters p, p.datafile",
    "Dataset INCLUDE Datafile, DatafileParameter [name = 'run-1']",
    "SELECT df FROM Datafile df WHERE df.fileSize > 5 ORDER BY df.name DESC LIMIT 1, 4",
]
VALUE_QUERIES = [
    "SELECT df.name FROM Datafile df",
    "SELECT df.name, df.fileSize, df.dataset.startDate FROM Datafile df",
    "SELECT COUNT(df) FROM Datafile df",
    "SELECT MAX(p.numericValue) FROM DatafileParameter p",
    "SELECT ds.complete FROM Dataset ds",
    "SELECT pt.valueType, pt.maximumNumericValue FROM ParameterType pt",
    "SELECT ds.endDate, ds.name FROM Dataset ds",
    "SELECT MAX(ds.endDate) FROM Dataset ds",
    "SELECT i.releaseDate FROM Investigation i",
]


def in_zone(value: Any, zone: dt.tzinfo, seen: set[int]) -> Any:
    """``value`` with every date (of a Bean, its INCLUDEd objects, a tuple) expressed in
    ``zone``: the same instants, as the SOAP face converted them on the Beans before."""
    if isinstance(value, dt.datetime):
        return value.astimezone(zone)
    if isinstance(value, tuple):
        return tuple(in_zone(v, zone, seen) for v in value)
    if isinstance(value, list):
        return [in_zone(v, zone, seen) for v in value]
    if isinstance(value, Bean) and id(value) not in seen:
        seen.add(id(value))
        for name, v in value.values.items():
            value.values[name] = in_zone(v, zone, seen)
    return value


def from_beans(service: IcatService, sid: str, query: str) -> str:
    """The answer as it was built before issue 11: Beans, then soapxml's encoder."""
    result = service.search(sid, query)
    assert not result.value_types
    beans = in_zone(result.items, service.zone, set())
    return "".join(soapxml.encode_bean(service.profile, b, "return", "ns2") for b in beans)


@pytest.fixture(
    scope="module", params=[("6.2", "UTC"), ("4.3", "UTC"), ("6.2", "Europe/Berlin")], ids=str
)
def service(request: pytest.FixtureRequest) -> Iterator[IcatService]:
    profile, zone = request.param
    # not started: no HTTP needed
    cat = LocalCatalogue(ServeConfig(profile=profile, timezone=zone))
    try:
        sid = cat.service.login("simple", ROOT)
        fill(cat.service, sid)
        yield cat.service
    finally:
        cat.sock.close()
        cat.stop()


@pytest.mark.parametrize("query", QUERIES)
def test_entity_answers_are_the_bean_encoding(service: IcatService, query: str) -> None:
    sid = service.login("simple", ROOT)
    expected = from_beans(service, sid, query)
    assert service.search_xml(sid, query) == expected
    if "nothing" not in query:
        assert expected.count("<return ") >= 1


#: (entity, get query) pairs: every object of the entity is got with the query.
GET_QUERIES = [
    ("Dataset", "Dataset"),
    ("Dataset", "Dataset INCLUDE 1"),
    ("Dataset", "Dataset INCLUDE Datafile, DatafileParameter"),
    ("Dataset", "Dataset ds INCLUDE ds.datafiles df, df.parameters p, p.type, ds.investigation"),
    ("Investigation", "Investigation i INCLUDE i.datasets ds, ds.datafiles, i.facility"),
    ("ParameterType", "ParameterType"),
]


@pytest.mark.parametrize(("entity", "query"), GET_QUERIES)
def test_get_answers_are_the_bean_encoding(service: IcatService, entity: str, query: str) -> None:
    sid = service.login("simple", ROOT)
    for obj_id in service.search(sid, f"SELECT x.id FROM {entity} x").items:
        bean = in_zone(service.get(sid, query, obj_id), service.zone, set())
        expected = soapxml.encode_bean(service.profile, bean, "return", "ns2")
        assert service.get_xml(sid, query, obj_id) == expected


def test_the_answer_holds_every_kind_of_value(service: IcatService) -> None:
    if service.zone != dt.UTC:
        pytest.skip("the dates below are those of a server in UTC")
    sid = service.login("simple", ROOT)
    answer = service.search_xml(sid, "SELECT pt FROM ParameterType pt") + service.search_xml(
        sid, "SELECT i FROM Investigation i"
    )
    for text in (
        "<enforced>true</enforced>",
        "<verified>false</verified>",
        "<minimumNumericValue>-1.5e-09</minimumNumericValue>",
        "<maximumNumericValue>INF</maximumNumericValue>",
        "<valueType>NUMERIC</valueType>",
        "<startDate>2024-03-03T10:00:00Z</startDate>",
        "<endDate>2024-03-04T11:12:13.456Z</endDate>",
        "a &amp; b &lt; c &gt; d",
    ):
        assert text in answer


@pytest.mark.parametrize("query", VALUE_QUERIES)
def test_value_answers_are_unchanged(service: IcatService, query: str) -> None:
    sid = service.login("simple", ROOT)
    result = service.search(sid, query)
    items = in_zone(result.items, service.zone, set())
    if result.multi:
        expected = "".join(
            '<return xsi:type="ns2:fieldSet">'
            + "".join(
                soapxml.encode_scalar(v, t, "fields")
                for v, t in zip(row, result.value_types, strict=True)
            )
            + "</return>"
            for row in items
        )
    else:
        expected = "".join(soapxml.encode_scalar(v, result.value_types[0]) for v in items)
    assert service.search_xml(sid, query) == expected


@contextlib.contextmanager
def reader_with_some_rules() -> Iterator[tuple[IcatService, str]]:
    """(service, reader's session) of a catalogue filled by :func:`fill` where the reader may
    read Datasets, DatasetTypes and the Datafiles named ``*-1.nxs`` only."""
    with_rules = LocalCatalogue(ServeConfig())  # a new database has no rules
    try:
        service = with_rules.service
        root = service.login("simple", ROOT)
        fill(service, root)
        service.create_many(
            root,
            [
                Bean("Rule", {"what": "Dataset", "crudFlags": "R"}),
                Bean("Rule", {"what": "DatasetType", "crudFlags": "R"}),
                Bean(
                    "Rule",
                    {
                        "what": "SELECT df FROM Datafile df WHERE df.name LIKE '%-1.nxs'",
                        "crudFlags": "R",
                    },
                ),
            ],
        )
        yield service, service.login("simple", READER)
    finally:
        with_rules.sock.close()
        with_rules.stop()


def test_objects_the_user_may_not_read_are_left_out_alike() -> None:
    with reader_with_some_rules() as (service, sid):
        for query in (
            "SELECT ds FROM Dataset ds INCLUDE ds.datafiles, ds.investigation, ds.type",
            "SELECT df FROM Datafile df INCLUDE df.dataset ds, ds.investigation",
        ):
            answer = service.search_xml(sid, query)
            assert answer == from_beans(service, sid, query)
            assert "<investigation>" not in answer
        assert service.search_xml(sid, "SELECT df FROM Datafile df").count("<return ") == 3
        query = "Dataset ds INCLUDE ds.datafiles, ds.investigation"
        for ds in service.search(sid, "SELECT ds.id FROM Dataset ds").items:
            got = service.get(sid, query, ds)
            assert service.get_xml(sid, query, ds) == soapxml.encode_bean(
                service.profile, got, "return", "ns2"
            )
            assert len(got["datafiles"]) == 1 and "investigation" not in got


def test_a_server_in_berlin_answers_in_its_offset_of_the_day() -> None:
    """Winter and summer offsets, and the instants either side of both DST changes."""
    cat = LocalCatalogue(ServeConfig(timezone="Europe/Berlin"))
    try:
        service = cat.service
        sid = service.login("simple", ROOT)
        fill(service, sid)
        answer = service.search_xml(sid, "SELECT i FROM Investigation i") + service.search_xml(
            sid, "SELECT ds FROM Dataset ds"
        )
        for text in (
            "<startDate>2024-03-03T11:00:00+01:00</startDate>",
            "<endDate>2024-03-04T12:12:13.456+01:00</endDate>",
            "<releaseDate>2024-03-31T03:00:00+02:00</releaseDate>",
            "<endDate>2023-10-29T02:59:59.999+02:00</endDate>",
            "<endDate>2023-10-29T02:59:59.999+01:00</endDate>",
            "<startDate>2001-01-01T01:00:00.001+01:00</startDate>",
        ):
            assert text in answer
    finally:
        cat.sock.close()
        cat.stop()
