"""The ``rest`` client flavour and the REST JSON codec: Beans in and out, the same exceptions and
failure causes as the SOAP flavours, session ids kept out of every message."""

from __future__ import annotations

import contextlib
import datetime as dt
import socket
from collections.abc import Iterator
from unittest import mock
from zoneinfo import ZoneInfo

import pytest
import requests

from igestbench.client import (
    FLAVOURS,
    Catalogue,
    ClientConfig,
    RestCatalogue,
    TransportCause,
    TransportFailure,
    connect,
)
from igestbench.client.rest_flavour import rest_base_url
from igestbench.config import ServeConfig
from igestbench.icat import rest_json
from igestbench.icat.beans import Bean
from igestbench.icat.faults import (
    IcatBadParameter,
    IcatNoSuchObject,
    IcatNotImplemented,
    IcatObjectAlreadyExists,
    IcatSession,
    IcatValidation,
)
from igestbench.icat.schema import get_profile
from igestbench.mock.catalogue import LocalCatalogue

PROFILE = get_profile("6.2")
ROOT = {"username": "root", "password": "root"}
UTC = dt.UTC


def ref(entity: str, bean_id: int) -> Bean:
    return Bean(entity, {"id": bean_id})


@pytest.fixture()
def rest(fresh_catalogue: LocalCatalogue) -> Iterator[Catalogue]:
    with contextlib.closing(connect(ClientConfig(fresh_catalogue.url), "rest")) as client:
        client.login("simple", ROOT)
        yield client


# --- the codec -------------------------------------------------------------------------------


def test_dates_as_icat_writes_and_reads_them() -> None:
    instant = dt.datetime(2024, 3, 3, 10, 0, 0, 123456, tzinfo=UTC)
    assert rest_json.format_date(instant) == "2024-03-03T10:00:00.123Z"
    paris = ZoneInfo("Europe/Paris")
    assert rest_json.format_date(instant, paris) == "2024-03-03T11:00:00.123+01:00"
    assert rest_json.format_date(dt.datetime(2024, 7, 1, tzinfo=UTC), paris) == (
        "2024-07-01T02:00:00.000+02:00"
    )
    assert rest_json.parse_date("2024-03-03T11:00:00.123+01:00") == instant.replace(
        microsecond=123000
    )
    assert rest_json.parse_date("2024-03-03T10:00:00.000Z").tzinfo is UTC
    for text in ("2024-03-03T10:00:00Z", "2024-03-03T10:00:00.000", "03/03/2024"):
        with pytest.raises(ValueError):
            rest_json.parse_date(text)


def test_what_a_client_writes() -> None:
    dataset = Bean(
        "Dataset",
        {
            "id": None,
            "name": "run-1",
            "createId": "someone",  # the server's to set: never sent
            "investigation": Bean("Investigation", {"id": 7, "name": "MX-1"}),  # a reference
            "startDate": dt.datetime(2024, 3, 3, 10, tzinfo=UTC),
            "datafiles": [Bean("Datafile", {"name": "f.nxs"})],
        },
    )
    assert rest_json.write_json(PROFILE, [dataset]) == [
        {
            "Dataset": {
                "datafiles": [{"name": "f.nxs"}],
                "investigation": {"id": 7},
                "name": "run-1",
                "startDate": "2024-03-03T10:00:00.000Z",
            }
        }
    ]
    full = rest_json.write_body(PROFILE, Bean("Dataset", {"id": 3, "name": "x"}), full=True)
    assert full["id"] == 3 and full["description"] is None and full["type"] is None
    assert full["complete"] is False  # a primitive boolean cannot be null
    assert "datafiles" not in full and "createTime" not in full
    assert rest_json.reference_json([ref("Dataset", 3)]) == [{"Dataset": {"id": 3}}]


def test_what_a_client_reads() -> None:
    answer = {
        "Dataset": {
            "id": 1,
            "createTime": "2024-03-03T11:00:00.000+01:00",
            "complete": True,
            "datafiles": [],
            "parameters": [
                {"id": 2, "numericValue": 4.0, "type": {"id": 3, "valueType": "NUMERIC"}}
            ],
        }
    }
    bean = rest_json.bean_from_answer(PROFILE, answer)
    assert bean.entity == "Dataset" and "datafiles" not in bean  # empty: as SOAP leaves it out
    assert bean["createTime"] == dt.datetime(2024, 3, 3, 10, tzinfo=UTC)
    (parameter,) = bean["parameters"]
    assert parameter.entity == "DatasetParameter" and parameter["type"].entity == "ParameterType"
    found = rest_json.search_from_answer(
        PROFILE, [["a", 1, "2024-03-03T10:00:00.000Z"], 2.5, None, "text"]
    )
    assert found == [("a", 1, dt.datetime(2024, 3, 3, 10, tzinfo=UTC)), 2.5, "text"]
    # and back: what the server answers for the Bean is what was read
    assert rest_json.bean_json(PROFILE, bean)["Dataset"]["createTime"] == "2024-03-03T10:00:00.000Z"


# --- the flavour -----------------------------------------------------------------------------


def test_flavour_is_registered_and_speaks_the_protocol(fresh_catalogue: LocalCatalogue) -> None:
    assert FLAVOURS["rest"] is RestCatalogue
    assert rest_base_url("icat.example.org:8181") == "https://icat.example.org:8181/icat"
    assert rest_base_url("http://h/ICATService/ICAT?wsdl") == "http://h/icat"
    with contextlib.closing(connect(ClientConfig(fresh_catalogue.service_url), "rest")) as client:
        assert isinstance(client, Catalogue) and client.flavour == "rest"
        assert client.version() == "6.2.0"
        assert client.entity_names() == list(PROFILE.entity_names)
        with pytest.raises(IcatNotImplemented):
            client.entity_info("Dataset")
        client.login("simple", ROOT)
        assert client.user_name() == "simple/root"
        client.refresh()
        client.logout()
        with pytest.raises(IcatSession):
            client.user_name()


def test_crud_and_faults(rest: Catalogue) -> None:
    facility = rest.create(Bean("Facility", {"name": "ESRF"}))
    inv_type, ds_type = rest.create_many(
        [
            Bean("InvestigationType", {"name": "exp", "facility": ref("Facility", facility)}),
            Bean("DatasetType", {"name": "raw", "facility": ref("Facility", facility)}),
        ]
    )
    investigation = rest.create(
        Bean(
            "Investigation",
            {
                "name": "MX-1",
                "visitId": "1",
                "title": "t",
                "facility": ref("Facility", facility),
                "type": ref("InvestigationType", inv_type),
            },
        )
    )
    dataset = Bean(
        "Dataset",
        {
            "name": "run-1",
            "description": "first",
            "investigation": ref("Investigation", investigation),
            "type": ref("DatasetType", ds_type),
        },
    )
    dataset_id = rest.create(dataset)
    # update as SOAP's: what the bean lacks becomes null
    rest.update(Bean("Dataset", {**dataset.values, "id": dataset_id, "description": None}))
    got = rest.get("Dataset INCLUDE 1", dataset_id)
    assert "description" not in got and got["investigation"]["name"] == "MX-1"
    with pytest.raises(IcatNoSuchObject):
        rest.update(Bean("Dataset", {"name": "no id"}))
    batch = [
        Bean("Datafile", {"name": f"f{i}", "dataset": ref("Dataset", dataset_id)}) for i in range(3)
    ]
    rest.create_many(batch)
    with pytest.raises(IcatObjectAlreadyExists) as info:
        rest.create_many(
            [Bean("Datafile", {"name": "new", "dataset": ref("Dataset", dataset_id)}), batch[1]]
        )
    assert info.value.offset == 1
    with pytest.raises(IcatValidation):
        rest.create(Bean("Datafile", {"name": "orphan"}))
    with pytest.raises(IcatBadParameter):
        rest.search("SELECT x FROM Nothing x")
    with pytest.raises(IcatNoSuchObject):
        rest.get("Dataset", 999999)
    assert rest.search("SELECT MAX(df.fileSize) FROM Datafile df WHERE df.id < 0") == []
    files = rest.search("SELECT df FROM Datafile df")
    rest.delete_many(files[:2])
    rest.delete(files[2])
    assert rest.search("SELECT COUNT(df) FROM Datafile df") == [0]


def test_session_ids_never_reach_messages(
    fresh_catalogue: LocalCatalogue, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The REST API carries the session id in its URLs: neither faults nor transport failures
    may repeat it."""
    client = connect(ClientConfig(fresh_catalogue.url), "rest")
    client.login("simple", ROOT)
    (sid,) = list(fresh_catalogue.service.sessions._sessions)
    assert sid not in repr(client)
    fresh_catalogue.service.sessions.close(sid)  # ICAT echoes the id in the SESSION fault
    with pytest.raises(IcatSession) as fault:
        client.search("SELECT f FROM Facility f")
    assert sid not in str(fault.value) and "<session>" in str(fault.value)
    fresh_catalogue.stop()  # the next request fails on the wire, its URL holding the id
    with pytest.raises(TransportFailure) as failure:
        client.user_name()
    assert failure.value.cause in (TransportCause.REFUSED, TransportCause.CONNECTION)
    assert sid not in str(failure.value) and failure.value.__cause__ is None
    # urllib3's MaxRetryError names the URL in its message: a failure that ends there
    failing = requests.ConnectionError(f"Max retries exceeded with url: /icat/session/{sid}")
    monkeypatch.setattr(client._http, "request", mock.Mock(side_effect=failing))  # type: ignore[attr-defined]
    with pytest.raises(TransportFailure) as failure:
        client.user_name()
    assert failure.value.cause is TransportCause.CONNECTION
    assert sid not in str(failure.value) and "<session>" in str(failure.value)
    client.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_transport_failures_have_the_causes_of_the_soap_flavours(
    web_server: str, catalogue_43: LocalCatalogue
) -> None:
    cases = [
        (f"http://127.0.0.1:{closed_port()}", TransportCause.REFUSED),
        (web_server, TransportCause.NOT_ICAT),  # a web page where /icat/version should be
        (web_server + "/missing", TransportCause.NOT_ICAT),  # the path is not where REST is
        (catalogue_43.url, TransportCause.HTTP_STATUS),  # ICAT 4.3 had no REST API: 404
    ]
    for url, cause in cases:
        with pytest.raises(TransportFailure) as info:
            connect(ClientConfig(url), "rest")
        assert info.value.cause is cause, url


def test_silent_server_times_out() -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(TransportFailure) as info:
            connect(ClientConfig(url, read_timeout=0.3, connect_timeout=2), "rest")
    assert info.value.cause is TransportCause.TIMEOUT


def test_tls_trust_follows_the_configuration() -> None:
    with LocalCatalogue(ServeConfig(tls="ca")) as cat:
        assert cat.tls is not None
        with pytest.raises(TransportFailure) as info:
            connect(ClientConfig(cat.url), "rest")
        assert info.value.cause is TransportCause.TLS
        for config in (
            ClientConfig(cat.url, ca_file=cat.tls.ca),
            ClientConfig(cat.url, insecure=True),
        ):
            with contextlib.closing(connect(config, "rest")) as client:
                client.login("simple", ROOT)
                assert client.user_name() == "simple/root"
