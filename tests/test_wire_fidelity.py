"""Search answers with nested INCLUDEs have the shape of a real ICAT 6.2's answers.

The reference answers were recorded from a real ICAT 6.2.0 (fixtures/icat-6.2/responses);
the local catalogue is given the same objects and asked the same kind of query, and the element
structure (names, order, nesting, xsi:type) must agree — values, ids and times aside.
"""

from __future__ import annotations

import datetime as dt

import pytest
import requests
from lxml import etree

from igestbench.icat.beans import Bean
from igestbench.mock.catalogue import LocalCatalogue
from tests.soap_helpers import ENVELOPE, ICAT_62, login

REFERENCE = ICAT_62 / "responses"
XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"


def shape(element: etree._Element) -> list[str]:
    """Element names in document order, with xsi:type where present (prefix stripped)."""
    out = []
    for e in element.iter():
        if not isinstance(e.tag, str):
            continue
        name = etree.QName(e).localname
        t = e.get(XSI_TYPE)
        out.append(f"{name}[{t.split(':')[-1]}]" if t else name)
    return out


def reference(name: str) -> etree._Element:
    return etree.fromstring((REFERENCE / name).read_bytes())


def ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


def example_objects(cat: LocalCatalogue) -> None:
    """The objects the reference server held, as far as the captured answers show them."""
    s = cat.service
    sid = login(cat.service_url)
    start = dt.datetime(2024, 3, 3, 10, tzinfo=dt.UTC)
    fac = s.create(sid, Bean("Facility", {"name": "EXAMPLE", "fullName": "Example Facility"}))
    it = s.create(
        sid, Bean("InvestigationType", {"name": "experiment", "facility": ref("Facility", fac)})
    )
    dst = s.create(sid, Bean("DatasetType", {"name": "raw", "facility": ref("Facility", fac)}))
    inst = s.create(
        sid, Bean("Instrument", {"name": "BEAMLINE-1", "facility": ref("Facility", fac)})
    )
    inv = s.create(
        sid,
        Bean(
            "Investigation",
            {
                "name": "INV-1",
                "visitId": "1",
                "title": "An example investigation",
                "startDate": start,
                "facility": ref("Facility", fac),
                "type": ref("InvestigationType", it),
                "investigationInstruments": [
                    Bean("InvestigationInstrument", {"instrument": ref("Instrument", inst)})
                ],
            },
        ),
    )
    ds = s.create(
        sid,
        Bean(
            "Dataset",
            {
                "name": "run-0001",
                "complete": False,
                "investigation": ref("Investigation", inv),
                "type": ref("DatasetType", dst),
            },
        ),
    )
    s.create(
        sid,
        Bean(
            "Datafile",
            {
                "name": "frame-0001.nxs",
                "checksum": "adler32:0badcafe",
                "fileSize": 1048576,
                "dataset": ref("Dataset", ds),
                "location": "/data/INV-1/run-0001/frame-0001.nxs",
            },
        ),
    )


def search(cat: LocalCatalogue, query: str) -> etree._Element:
    sid = login(cat.service_url)
    body = ENVELOPE.format(
        body=f"<tns:search><sessionId>{sid}</sessionId><query>{query}</query></tns:search>"
    )
    r = requests.post(
        cat.service_url, data=body.encode(), timeout=10, headers={"Content-Type": "text/xml"}
    )
    assert r.status_code == 200, r.text
    return etree.fromstring(r.content)


@pytest.mark.parametrize(
    ("reference_file", "query"),
    [
        (
            "search-datafile-include-dataset-investigation-facility.xml",
            "SELECT df FROM Datafile df INCLUDE df.dataset ds, ds.investigation i, i.facility",
        ),
        (
            "search-investigation-include-facility-and-instruments.xml",
            "SELECT i FROM Investigation i "
            "INCLUDE i.facility, i.type, i.investigationInstruments ii, ii.instrument",
        ),
        ("search-count-and-fieldset.xml", "SELECT df.name, df.fileSize FROM Datafile df"),
    ],
)
def test_answers_have_the_shape_of_real_icat(
    fresh_catalogue: LocalCatalogue, reference_file: str, query: str
) -> None:
    expected = reference(reference_file)
    example_objects(fresh_catalogue)
    assert shape(search(fresh_catalogue, query)) == shape(expected)


def test_fault_has_the_shape_of_real_icat(fresh_catalogue: LocalCatalogue) -> None:
    expected = reference("fault-bad-query.xml")
    got = search_fault(fresh_catalogue, "SELECT x FROM Nothing x")
    assert shape(got) == shape(expected)
    assert got.findtext(".//faultstring") == expected.findtext(".//faultstring")


def search_fault(cat: LocalCatalogue, query: str) -> etree._Element:
    sid = login(cat.service_url)
    body = ENVELOPE.format(
        body=f"<tns:search><sessionId>{sid}</sessionId><query>{query}</query></tns:search>"
    )
    r = requests.post(cat.service_url, data=body.encode(), timeout=10)
    assert r.status_code == 500
    return etree.fromstring(r.content)
