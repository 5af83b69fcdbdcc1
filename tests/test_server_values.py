"""Values on the wire as ICAT (JAXB) reads and writes them: empty booleans, the server's zone.

suds sends ``<complete/>`` for a boolean python-icat left unset: JAXB reads it as null, which a
Java primitive keeps as false, so ICAT accepts it (issue 11); an empty xs:long, xs:double or
xs:dateTime is null too. Dates without a zone are read in
the server's time zone, and answers are given in it (``Z`` for UTC, ``+01:00`` for CET); so are
``{ts …}`` literals of queries.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from igestbench.config import ServeConfig
from igestbench.errors import UsageError
from igestbench.icat.soapxml import escape
from igestbench.mock.catalogue import LocalCatalogue
from tests.soap_helpers import call, create, fault, login, returns


@pytest.fixture(scope="module")
def berlin() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(timezone="Europe/Berlin")) as cat:
        yield cat


def facility(url: str, sid: str, name: str) -> int:
    return create(url, sid, "facility", f"<name>{name}</name>")


def search_one(url: str, sid: str, query: str) -> str:
    r = call(url, "search", f"<sessionId>{sid}</sessionId><query>{query}</query>")
    assert r.status_code == 200, r.text
    (item,) = returns(r)
    return item.text or ""


def test_an_empty_boolean_is_false_as_jaxb_reads_it(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    sid = login(url, "root")
    fac = facility(url, sid, "empty-bool")
    pt = create(
        url,
        sid,
        "parameterType",
        f"<enforced/><facility><id>{fac}</id></facility><name>p</name><units>mm</units>"
        "<valueType>NUMERIC</valueType><verified> </verified>",
    )
    assert (
        search_one(url, sid, f"SELECT p.enforced FROM ParameterType p WHERE p.id = {pt}") == "false"
    )
    assert (
        search_one(url, sid, f"SELECT p.verified FROM ParameterType p WHERE p.id = {pt}") == "false"
    )


def test_create_many_fault_keeps_its_offset_with_empty_booleans(catalogue: LocalCatalogue) -> None:
    """python-icat's test_icat_exception_many: the second Datafile's Dataset does not exist."""
    url = catalogue.service_url
    sid = login(url, "root")
    fac = facility(url, sid, "offset")
    it = create(url, sid, "investigationType", f"<facility><id>{fac}</id></facility><name>t</name>")
    dst = create(url, sid, "datasetType", f"<facility><id>{fac}</id></facility><name>t</name>")
    inv = create(
        url,
        sid,
        "investigation",
        f"<facility><id>{fac}</id></facility><name>i</name><title>t</title>"
        f"<type><id>{it}</id></type><visitId>1</visitId>",
    )
    ds = create(
        url,
        sid,
        "dataset",
        f"<complete/><investigation><id>{inv}</id></investigation><name>d</name><type><id>{dst}</id></type>",
    )

    def datafile(name: str, dataset: str) -> str:
        inner = f"<dataset>{dataset}</dataset><name>{name}</name>"
        return f'<beans xsi:type="tns:datafile">{inner}</beans>'

    good = f"<complete/><id>{ds}</id><name>d</name>"
    bad = "<complete/><id>999999</id><name>e208342-invalid</name>"
    r = call(
        url,
        "createMany",
        f"<sessionId>{sid}</sessionId>"
        + datafile("a", good)
        + datafile("b", bad)
        + datafile("c", good)
        + datafile("d", bad),
    )
    code, _, icat_type, offset = fault(r)
    assert (code, icat_type, offset) == ("S:Server", "NO_SUCH_OBJECT_FOUND", 1)


def test_empty_longs_doubles_and_dates_are_null_as_jaxb_reads_them(
    catalogue: LocalCatalogue,
) -> None:
    """``<fileSize/>``, ``<minimumNumericValue> </minimumNumericValue>``, ``<startDate/>``:
    JAXB leaves each unset (null) where it cannot parse it, instead of a fault."""
    url = catalogue.service_url
    sid = login(url, "root")
    fac = create(url, sid, "facility", "<name>empty-values</name><daysUntilRelease/>")
    pt = create(
        url,
        sid,
        "parameterType",
        f"<facility><id>{fac}</id></facility><name>p</name><units>mm</units>"
        "<valueType>NUMERIC</valueType><minimumNumericValue> </minimumNumericValue>"
        "<maximumNumericValue/>",
    )
    cycle = create(
        url,
        sid,
        "facilityCycle",
        f"<facility><id>{fac}</id></facility><name>c</name><startDate/><endDate>\n</endDate>",
    )
    it = create(url, sid, "investigationType", f"<facility><id>{fac}</id></facility><name>t</name>")
    dst = create(url, sid, "datasetType", f"<facility><id>{fac}</id></facility><name>t</name>")
    inv = create(
        url,
        sid,
        "investigation",
        f"<facility><id>{fac}</id></facility><name>i</name><title>t</title>"
        f"<type><id>{it}</id></type><visitId>1</visitId>",
    )
    ds = create(
        url,
        sid,
        "dataset",
        f"<investigation><id>{inv}</id></investigation><name>d</name><type><id>{dst}</id></type>",
    )
    beans = "".join(
        f'<beans xsi:type="tns:datafile"><dataset><id>{ds}</id></dataset><fileSize/>'
        f"<datafileCreateTime/><name>{name}</name></beans>"
        for name in ("a", "b")
    )
    r = call(url, "createMany", f"<sessionId>{sid}</sessionId>{beans}")
    assert r.status_code == 200, r.text

    def get(entity: str, obj_id: int) -> dict[str, str]:
        inner = (
            f"<sessionId>{sid}</sessionId><query>{entity}</query>"
            f"<primaryKey>{obj_id}</primaryKey>"
        )
        (bean,) = returns(call(url, "get", inner))
        return {child.tag: child.text or "" for child in bean}

    assert "daysUntilRelease" not in get("Facility", fac)
    got = get("ParameterType", pt)
    assert "minimumNumericValue" not in got and "maximumNumericValue" not in got
    got = get("FacilityCycle", cycle)
    assert "startDate" not in got and "endDate" not in got
    count = f"SELECT COUNT(df) FROM Datafile df WHERE df.dataset.id = {ds} AND df.fileSize = 0"
    assert search_one(url, sid, count) == "2"  # null fileSize: ICAT 6.2 stores its default, 0


def test_a_wrong_long_is_still_refused(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    sid = login(url, "root")
    r = call(
        url,
        "create",
        f'<sessionId>{sid}</sessionId><bean xsi:type="tns:facility"><name>w</name>'
        "<daysUntilRelease>soon</daysUntilRelease></bean>",
    )
    assert fault(r)[0] == "S:Client"


def test_a_wrong_boolean_is_still_refused(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    sid = login(url, "root")
    r = call(
        url,
        "create",
        f'<sessionId>{sid}</sessionId><bean xsi:type="tns:parameterType"><enforced>maybe</enforced>'
        "<name>p</name></bean>",
    )
    assert fault(r)[0] == "S:Client"


def test_dates_without_zone_are_read_and_answered_in_the_server_zone(
    berlin: LocalCatalogue,
) -> None:
    url = berlin.service_url
    sid = login(url, "root")
    winter = create(url, sid, "facility", "<name>w</name><description>x</description>")
    # a date without a zone (as reference data made on a CET server carries) and one with Z
    cycle = create(
        url,
        sid,
        "facilityCycle",
        f"<facility><id>{winter}</id></facility><name>c1</name><startDate>2024-03-03T10:00:00</startDate>"
        "<endDate>2024-07-01T08:00:00Z</endDate>",
    )
    q = "SELECT c.{} FROM FacilityCycle c WHERE c.name = 'c1'"
    assert search_one(url, sid, q.format("startDate")) == "2024-03-03T10:00:00+01:00"
    assert search_one(url, sid, q.format("endDate")) == "2024-07-01T10:00:00+02:00"  # summer time
    r = call(url, "search", f"<sessionId>{sid}</sessionId><query>FacilityCycle [name='c1']</query>")
    (bean,) = returns(r)
    assert bean.findtext("startDate") == "2024-03-03T10:00:00+01:00"
    get = (
        f"<sessionId>{sid}</sessionId><query>FacilityCycle</query><primaryKey>{cycle}</primaryKey>"
    )
    (bean,) = returns(call(url, "get", get))
    assert bean.findtext("endDate") == "2024-07-01T10:00:00+02:00"


def test_ts_literals_are_read_in_the_server_zone(berlin: LocalCatalogue) -> None:
    """ICAT reads ``{ts …}`` (and a date string) in its JVM's zone: 00:00 in Berlin is 23:00Z."""
    url = berlin.service_url
    sid = login(url, "root")
    fac = facility(url, sid, "ts")
    for name, start in (("before", "2010-12-31T22:30:00Z"), ("after", "2010-12-31T23:30:00Z")):
        create(
            url,
            sid,
            "facilityCycle",
            f"<facility><id>{fac}</id></facility><name>{name}</name><startDate>{start}</startDate>",
        )
    where = f"c.facility.id = {fac} AND c.startDate > "
    for literal in ("{ts 2011-01-01 00:00:00}", "'2011-01-01 00:00:00'"):
        query = f"SELECT c.name FROM FacilityCycle c WHERE {where}{literal}"
        assert search_one(url, sid, escape(query)) == "after"
    count = f"SELECT COUNT(c) FROM FacilityCycle c WHERE {where}{{ts 2011-01-01 00:15:00}}"
    assert search_one(url, sid, count) == "1"
    # summer time: 00:00 is 22:00Z the day before
    create(
        url,
        sid,
        "facilityCycle",
        f"<facility><id>{fac}</id></facility><name>summer</name>"
        "<startDate>2011-06-30T22:30:00Z</startDate>",
    )
    query = f"SELECT c.name FROM FacilityCycle c WHERE {where}{{ts 2011-07-01 00:00:00}}"
    assert search_one(url, sid, query) == "summer"


def test_a_utc_server_answers_with_z(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    sid = login(url, "root")
    fac = facility(url, sid, "utc")
    create(
        url,
        sid,
        "facilityCycle",
        f"<facility><id>{fac}</id></facility><name>u1</name><startDate>2024-03-03T10:00:00</startDate>",
    )
    got = search_one(url, sid, "SELECT c.startDate FROM FacilityCycle c WHERE c.name = 'u1'")
    assert got == "2024-03-03T10:00:00Z"


def test_an_unknown_zone_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--timezone Mars/Olympus"):
        ServeConfig(timezone="Mars/Olympus")
    proc = subprocess.run(
        [sys.executable, "-m", "igestbench", "serve", "--timezone", "Mars/Olympus"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "not a known time zone" in proc.stderr
