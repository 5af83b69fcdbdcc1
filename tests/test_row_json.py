"""REST answers written straight from rows are, byte for byte, the answers encoded from Beans.

The REST front answers search and get with :meth:`IcatService.search_json` and ``get_json``
(rows → JSON text, :mod:`igestbench.mock.row_json`), as it answered them before with
``rest_json.search_json`` / ``bean_json`` of the Beans that :meth:`IcatService.search` and
``get`` still return to Python callers, through ``json.dumps``. Both must put the same bytes on
the wire: every attribute type (strings needing JSON escapes, dates with and without fractions,
doubles including infinities and zero, booleans, enumerations, nulls), entity results with and
without INCLUDE, nested INCLUDEs of both kinds, INCLUDE 1, scalars, aggregates (also over no
rows), multi-field rows with nulls, objects hidden by access rules — in UTC and in
Europe/Berlin with dates on both sides of its DST changes (issue 20).
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import pytest

from igestbench.config import ServeConfig
from igestbench.icat import rest_json
from igestbench.icat.beans import Bean
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.service import IcatService
from tests.test_row_xml import (
    GET_QUERIES,
    QUERIES,
    ROOT,
    VALUE_QUERIES,
    fill,
    reader_with_some_rules,
)

JSON_QUERIES = [
    *QUERIES,
    "SELECT ds FROM Dataset ds INCLUDE ds.datafiles df, df.parameters p, p.type t, t.facility",
    "SELECT f FROM Facility f WHERE f.name LIKE 'json%'",
    "SELECT p FROM DatafileParameter p INCLUDE p.datafile df, df.dataset",
    "Datafile INCLUDE 1 [name LIKE 'f-1%']",
]
JSON_VALUE_QUERIES = [
    *VALUE_QUERIES,
    "SELECT MAX(df.fileSize) FROM Datafile df WHERE df.name = 'none'",
    "SELECT MIN(df.fileSize), MAX(df.name) FROM Datafile df WHERE df.name = 'none'",
    "SELECT AVG(df.fileSize) FROM Datafile df",
    "SELECT SUM(df.fileSize) FROM Datafile df",
    "SELECT f.name, f.fullName, f.daysUntilRelease FROM Facility f",
    "SELECT pt.minimumNumericValue, pt.maximumNumericValue FROM ParameterType pt",
    "SELECT i.startDate, i.endDate, i.releaseDate FROM Investigation i",
    "SELECT DISTINCT ds.complete FROM Dataset ds",
]
#: what JSON must escape, and what it must not
JSON_NASTY = 'json "quoted" back\\slash / tab\t cr\r lf\n \u2028 \u00e9 \U0001f600 {braces} '


def fill_json(service: IcatService, sid: str) -> None:
    """Objects whose values need JSON's escapes, and doubles of -0.0 and -inf."""
    service.create(
        sid, Bean("Facility", {"name": JSON_NASTY, "fullName": "{x}", "daysUntilRelease": 0})
    )
    fac = service.create(sid, Bean("Facility", {"name": "json-2", "description": "\\u0041"}))
    service.create(
        sid,
        Bean(
            "ParameterType",
            {
                "name": "zero",
                "units": "\"'",
                "valueType": "STRING",
                "facility": Bean("Facility", {"id": fac}),
                "minimumNumericValue": -0.0,
                "maximumNumericValue": float("-inf"),
            },
        ),
    )


def dumps(value: Any) -> bytes:
    """The REST front's JSON encoding (as Java's JsonGenerator: compact, UTF-8 as it is)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def search_from_beans(service: IcatService, sid: str, query: str) -> bytes:
    """The REST answer as it was built before issue 20: Beans, then rest_json, then JSON."""
    result = service.search(sid, query)
    items = list(result.items)
    if result.empty_aggregates:
        empty = tuple(None for _ in result.value_types) if result.multi else None
        items += [empty] * result.empty_aggregates
    entities = not result.value_types
    return dumps(
        rest_json.search_json(service.profile, items, entities, result.multi, service.zone)
    )


@pytest.fixture(scope="module", params=["UTC", "Europe/Berlin"])
def service(request: pytest.FixtureRequest) -> Iterator[IcatService]:
    cat = LocalCatalogue(ServeConfig(timezone=request.param))  # not started: no HTTP needed
    try:
        sid = cat.service.login("simple", ROOT)
        fill(cat.service, sid)
        fill_json(cat.service, sid)
        yield cat.service
    finally:
        cat.sock.close()
        cat.stop()


@pytest.mark.parametrize("query", JSON_QUERIES + JSON_VALUE_QUERIES)
def test_search_answers_are_the_bean_encoding(service: IcatService, query: str) -> None:
    sid = service.login("simple", ROOT)
    expected = search_from_beans(service, sid, query)
    got = service.search_json(sid, query).encode("utf-8")
    assert got == expected
    json.loads(got)  # and it is JSON


@pytest.mark.parametrize(
    ("entity", "query"), [*GET_QUERIES, ("Facility", "Facility f INCLUDE f.parameterTypes")]
)
def test_get_answers_are_the_bean_encoding(service: IcatService, entity: str, query: str) -> None:
    sid = service.login("simple", ROOT)
    for obj_id in service.search(sid, f"SELECT x.id FROM {entity} x").items:
        bean = service.get(sid, query, obj_id)
        expected = dumps(rest_json.bean_json(service.profile, bean, service.zone))
        assert service.get_json(sid, query, obj_id).encode("utf-8") == expected


def test_the_answer_holds_every_kind_of_value(service: IcatService) -> None:
    sid = service.login("simple", ROOT)
    answer = service.search_json(sid, "SELECT pt FROM ParameterType pt") + service.search_json(
        sid, "SELECT f FROM Facility f"
    )
    for text in (
        '"enforced":true',
        '"verified":false',
        '"minimumNumericValue":-1.5e-09',
        '"maximumNumericValue":null',  # a non-finite double is null, and kept
        '"valueType":"NUMERIC"',
        '"daysUntilRelease":0',
        '"datafileParameters":[]',  # a one-to-many not INCLUDEd is an empty array
        r"json \"quoted\" back\\slash / tab\t cr\r lf\n",
        r'"description":"\\u0041"',
    ):
        assert text in answer, text
    berlin = service.zone != dt.UTC
    dates = service.search_json(sid, "SELECT i FROM Investigation i") + service.search_json(
        sid, "SELECT ds FROM Dataset ds"
    )
    for utc, local in (
        ('"startDate":"2024-03-03T10:00:00.000Z"', '"startDate":"2024-03-03T11:00:00.000+01:00"'),
        ('"endDate":"2024-03-04T11:12:13.456Z"', '"endDate":"2024-03-04T12:12:13.456+01:00"'),
        (
            '"releaseDate":"2024-03-31T01:00:00.000Z"',
            '"releaseDate":"2024-03-31T03:00:00.000+02:00"',
        ),
        ('"endDate":"2023-10-29T00:59:59.999Z"', '"endDate":"2023-10-29T02:59:59.999+02:00"'),
        ('"endDate":"2023-10-29T01:59:59.999Z"', '"endDate":"2023-10-29T02:59:59.999+01:00"'),
    ):
        assert (local if berlin else utc) in dates


def test_objects_the_user_may_not_read_are_left_out_alike() -> None:
    with reader_with_some_rules() as (service, sid):
        for query in (
            "SELECT ds FROM Dataset ds INCLUDE ds.datafiles, ds.investigation, ds.type",
            "SELECT df FROM Datafile df INCLUDE df.dataset ds, ds.investigation",
        ):
            answer = service.search_json(sid, query)
            assert answer.encode("utf-8") == search_from_beans(service, sid, query)
            assert '"investigation":' not in answer
        assert len(json.loads(service.search_json(sid, "SELECT df FROM Datafile df"))) == 3
        query = "Dataset ds INCLUDE ds.datafiles, ds.investigation"
        for ds in service.search(sid, "SELECT ds.id FROM Dataset ds").items:
            got = service.get(sid, query, ds)
            expected = dumps(rest_json.bean_json(service.profile, got, service.zone))
            assert service.get_json(sid, query, ds).encode("utf-8") == expected
