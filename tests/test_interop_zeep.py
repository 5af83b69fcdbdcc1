"""A plain zeep client against the local catalogue, from the WSDL it serves."""

from __future__ import annotations

from typing import Any

import pytest
import zeep
import zeep.exceptions

from igestbench.mock.catalogue import LocalCatalogue


def test_plain_zeep_logs_in_creates_and_searches(fresh_catalogue: LocalCatalogue) -> None:
    client = zeep.Client(fresh_catalogue.wsdl_url)
    service = client.service
    credentials = {
        "entry": [{"key": "username", "value": "ingest"}, {"key": "password", "value": "ingest"}]
    }
    sid = service.login("simple", credentials)
    assert service.getUserName(sid) == "simple/ingest"
    factory = client.type_factory("ns0")
    facility_id = service.create(sid, factory.facility(name="ALBA", fullName="ALBA Synchrotron"))
    assert facility_id > 0
    inv_type = factory.investigationType(name="proposal", facility=factory.facility(id=facility_id))
    service.create(sid, inv_type)
    results: list[Any] = service.search(sid, "SELECT f FROM Facility f WHERE f.name = 'ALBA'")
    assert len(results) == 1
    assert results[0].name == "ALBA" and results[0].id == facility_id
    assert service.search(sid, "SELECT COUNT(t) FROM InvestigationType t") == [1]
    assert service.search(sid, "SELECT t.name FROM InvestigationType t") == ["proposal"]
    with pytest.raises(zeep.exceptions.Fault) as info:
        service.create(sid, factory.facility(name="ALBA"))
    assert info.value.detail is not None
    service.logout(sid)
