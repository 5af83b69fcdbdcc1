"""The three client flavours against the local catalogue: CRUD, queries, faults, transport."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import zeep
import zeep.cache
import zeep.exceptions

import igestbench.client
from igestbench.client import (
    Catalogue,
    ClientConfig,
    TransportCause,
    TransportFailure,
    connect,
    endpoint_of,
)
from igestbench.client.transport import classify, decode_answer, read_answer, redact
from igestbench.config import ServeConfig
from igestbench.errors import UsageError
from igestbench.icat.beans import Bean
from igestbench.icat.entity_info import entity_info
from igestbench.icat.faults import (
    IcatBadParameter,
    IcatObjectAlreadyExists,
    IcatSession,
    IcatValidation,
)
from igestbench.icat.operations import operation
from igestbench.icat.query import Query
from igestbench.icat.schema import RelType, get_profile
from igestbench.mock.catalogue import LocalCatalogue
from tests.soap_helpers import ICAT_62

FLAVOURS = ("zeep", "python-icat", "lean")
ROOT = {"username": "root", "password": "root"}
REFERENCE = ICAT_62
NESTED_INCLUDES = (
    "SELECT i FROM Investigation i INCLUDE i.facility",
    "SELECT df FROM Datafile df INCLUDE df.dataset.investigation.facility",
)


def ref(bean_id: int, entity: str) -> Bean:
    return Bean(entity, {"id": bean_id})


def login(catalogue: LocalCatalogue, flavour: str, cache_dir: Path, **options: Any) -> Catalogue:
    config = ClientConfig(catalogue.service_url, cache_dir=cache_dir, **options)
    client = connect(config, flavour)
    client.login("simple", ROOT)
    return client


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wsdl-cache")


@pytest.fixture(params=FLAVOURS)
def client(
    request: pytest.FixtureRequest, fresh_catalogue: LocalCatalogue, cache_dir: Path
) -> Iterator[Catalogue]:
    with contextlib.closing(login(fresh_catalogue, request.param, cache_dir)) as c:
        yield c


@pytest.fixture(params=["6.2", "4.3"])
def profile_catalogue(request: pytest.FixtureRequest) -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(profile=request.param)) as cat:
        yield cat


def build_hierarchy(client: Catalogue, n_files: int = 3) -> dict[str, int]:
    """Facility → … → Datafiles, by create and create_many; the ids by entity name."""
    facility = client.create(Bean("Facility", {"name": "ESRF", "fullName": "European Synchr."}))
    instrument, inv_type = client.create_many(
        [
            Bean("Instrument", {"name": "ID01", "facility": ref(facility, "Facility")}),
            Bean(
                "InvestigationType", {"name": "experiment", "facility": ref(facility, "Facility")}
            ),
        ]
    )
    investigation = client.create(
        Bean(
            "Investigation",
            {
                "name": "MX-1234",
                "visitId": "1",
                "title": "Protein crystals",
                "facility": ref(facility, "Facility"),
                "type": ref(inv_type, "InvestigationType"),
            },
        )
    )
    ds_type, df_format = client.create_many(
        [
            Bean("DatasetType", {"name": "raw", "facility": ref(facility, "Facility")}),
            Bean(
                "DatafileFormat",
                {
                    "name": "NeXus",
                    "version": "4.3",
                    "facility": ref(facility, "Facility"),
                },
            ),
        ]
    )
    dataset = client.create(
        Bean(
            "Dataset",
            {
                "name": "run-1",
                "complete": False,
                "investigation": ref(investigation, "Investigation"),
                "type": ref(ds_type, "DatasetType"),
            },
        )
    )
    client.create_many(
        [
            Bean(
                "Datafile",
                {
                    "name": f"frame-{i}.nxs",
                    "fileSize": 1000 * (i + 1),
                    "location": f"/data/run-1/frame-{i}.nxs",
                    "dataset": ref(dataset, "Dataset"),
                    "datafileFormat": ref(df_format, "DatafileFormat"),
                },
            )
            for i in range(n_files)
        ]
    )
    return {
        "Facility": facility,
        "Instrument": instrument,
        "InvestigationType": inv_type,
        "Investigation": investigation,
        "DatasetType": ds_type,
        "Dataset": dataset,
        "DatafileFormat": df_format,
    }


# --- the API ---------------------------------------------------------------------------------


def test_public_api_is_complete() -> None:
    exported = set(igestbench.client.__all__)
    assert all(hasattr(igestbench.client, name) for name in exported)
    defined_here = {
        name
        for name, value in vars(igestbench.client).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "").startswith("igestbench.client")
    }
    assert defined_here <= exported
    assert set(igestbench.client.FLAVOURS) == {*FLAVOURS, "rest"}  # rest: tests/test_rest_*.py
    with pytest.raises(UsageError, match="unknown client flavour"):
        connect(ClientConfig("localhost"), "soap4r")


@pytest.mark.parametrize(
    ("url", "service_url"),
    [
        ("icat.example.org", "https://icat.example.org/ICATService/ICAT"),
        ("icat.example.org:8181", "https://icat.example.org:8181/ICATService/ICAT"),
        ("https://icat.example.org/", "https://icat.example.org/ICATService/ICAT"),
        ("http://127.0.0.1:80/icat/ICAT", "http://127.0.0.1:80/icat/ICAT"),
        ("https://h:8181/ICATService/ICAT?wsdl", "https://h:8181/ICATService/ICAT"),
        (" https://[::1]:8181/ICATService/ICAT/ ", "https://[::1]:8181/ICATService/ICAT"),
    ],
)
def test_urls_normalise_to_service_and_wsdl(url: str, service_url: str) -> None:
    endpoint = endpoint_of(url)
    assert endpoint.service_url == service_url
    assert endpoint.wsdl_url == service_url + "?wsdl"


@pytest.mark.parametrize("url", ["ftp://h/x", "https://h:99999/", "https://h/x?y=1", "https://"])
def test_bad_urls_are_usage_errors(url: str) -> None:
    with pytest.raises(UsageError):
        endpoint_of(url)


# --- sessions, CRUD and queries, per flavour and profile -------------------------------------


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_session_and_metadata(
    flavour: str, profile_catalogue: LocalCatalogue, cache_dir: Path
) -> None:
    profile = profile_catalogue.profile
    with contextlib.closing(login(profile_catalogue, flavour, cache_dir)) as client:
        assert client.flavour == flavour
        assert isinstance(client, Catalogue)
        assert client.version() == profile.api_version
        assert client.user_name() == "simple/root"
        assert client.entity_names() == sorted(profile.entity_names)
        info = client.entity_info("Dataset")
        assert info == entity_info(profile.entity("Dataset"))  # what the model says, via the wire
        assert info.constraint == ("investigation", "name")
        assert info.field("datafiles").rel is RelType.MANY
        assert {f.name for f in client.entity_info("Parameter").fields} >= {"type", "stringValue"}
        client.refresh()
        client.logout()
        with pytest.raises(IcatSession):
            client.user_name()


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_hierarchy_create_search_update_delete(
    flavour: str, profile_catalogue: LocalCatalogue, cache_dir: Path
) -> None:
    with contextlib.closing(login(profile_catalogue, flavour, cache_dir)) as client:
        ids = build_hierarchy(client)
        found = client.search("SELECT df FROM Datafile df ORDER BY df.name")
        assert [df["name"] for df in found] == ["frame-0.nxs", "frame-1.nxs", "frame-2.nxs"]
        assert found[0]["createId"] == "simple/root" and found[0]["fileSize"] == 1000

        by_query = client.search(
            Query("Datafile").where({"dataset.name": "= 'run-1'", "fileSize": "> 1500"})
        )
        assert sorted(df["name"] for df in by_query) == ["frame-1.nxs", "frame-2.nxs"]
        (deepest,) = client.search(
            Query("Datafile")
            .where(name="= 'frame-0.nxs'")
            .include("dataset.investigation.facility")
        )
        assert deepest["dataset"]["investigation"]["facility"]["name"] == "ESRF"

        investigation = client.get("Investigation INCLUDE 1", ids["Investigation"])
        assert investigation["facility"]["id"] == ids["Facility"]
        assert investigation["type"]["name"] == "experiment"

        dataset = client.get("Dataset INCLUDE 1", ids["Dataset"])
        dataset["description"] = "updated"
        client.update(dataset)
        assert client.get("Dataset", ids["Dataset"])["description"] == "updated"

        first, second, third = (ref(df["id"], "Datafile") for df in found)
        client.delete(first)
        client.delete_many([second, third])
        assert client.search("SELECT COUNT(df) FROM Datafile df") == [0]
        client.delete(ref(ids["Facility"], "Facility"))  # cascades down to the Dataset
        assert client.search("SELECT COUNT(ds) FROM Dataset ds") == [0]


@pytest.mark.parametrize("query", NESTED_INCLUDES)
def test_nested_includes_are_decoded(client: Catalogue, query: str) -> None:
    build_hierarchy(client, n_files=2)
    found = client.search(query)
    assert found
    for item in found:
        facility = (
            item["facility"]
            if item.entity == "Investigation"
            else (item["dataset"]["investigation"]["facility"])
        )
        assert facility["name"] == "ESRF"
        assert facility["createId"] == "simple/root"  # the element plain zeep stumbles over


def test_aggregates_and_field_sets(client: Catalogue) -> None:
    build_hierarchy(client)
    assert client.search("SELECT COUNT(df) FROM Datafile df") == [3]
    assert client.search(Query("Datafile").select("fileSize").aggregate("SUM")) == [6000]
    assert client.search("SELECT MAX(df.fileSize) FROM Datafile df") == [3000]
    assert client.search("SELECT AVG(df.fileSize) FROM Datafile df") == [2000.0]
    assert client.search("SELECT MIN(df.fileSize) FROM Datafile df WHERE df.id < 0") == []
    rows = client.search(Query("Datafile").select("name", "fileSize").order_by("name"))
    assert rows == [("frame-0.nxs", 1000), ("frame-1.nxs", 2000), ("frame-2.nxs", 3000)]
    assert client.search("SELECT ds.name FROM Dataset ds") == ["run-1"]


# --- faults ----------------------------------------------------------------------------------


def test_faults_are_translated(client: Catalogue) -> None:
    ids = build_hierarchy(client, n_files=1)
    dataset = ref(ids["Dataset"], "Dataset")
    batch = [Bean("Datafile", {"name": f"new-{i}", "dataset": dataset}) for i in range(3)]
    batch.append(Bean("Datafile", {"name": "frame-0.nxs", "dataset": dataset}))
    with pytest.raises(IcatObjectAlreadyExists) as info:
        client.create_many(batch)
    assert info.value.offset == 3
    assert client.search("SELECT COUNT(df) FROM Datafile df") == [1]  # all or nothing
    no_title = Bean(
        "Investigation",
        {
            "name": "X",
            "visitId": "1",
            "facility": ref(ids["Facility"], "Facility"),
            "type": ref(ids["InvestigationType"], "InvestigationType"),
        },
    )
    with pytest.raises(IcatValidation):
        client.create(no_title)
    with pytest.raises(IcatBadParameter):
        client.search("SELECT x FROM Nothing x")
    client.logout()
    with pytest.raises(IcatSession):
        client.search("SELECT f FROM Facility f")


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_session_ids_never_reach_messages(
    flavour: str, fresh_catalogue: LocalCatalogue, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sessions = fresh_catalogue.service.sessions
    opened: list[str] = []
    original_open = sessions.open

    def remember(user: str) -> str:
        opened.append(original_open(user))
        return opened[-1]

    monkeypatch.setattr(sessions, "open", remember)
    with contextlib.closing(login(fresh_catalogue, flavour, cache_dir)) as client:
        (sid,) = opened
        assert sid not in repr(client)
        sessions.close(sid)  # ended on the server: ICAT echoes the id in the SESSION fault
        with pytest.raises(IcatSession) as info:
            client.search("SELECT f FROM Facility f")
    assert sid not in str(info.value) and "<session>" in str(info.value)


def test_redact_hides_session_ids_in_icat_messages() -> None:
    sid = "0d9a5f0e-1c2b-4a6e-9f1d-3b2a1c0d9e8f"
    assert redact(f"Unable to find user by sessionid: {sid}") == (
        "Unable to find user by sessionid: <session>"
    )
    assert redact(f"Session id:{sid} has expired") == "Session id:<session> has expired"
    assert redact(f"odd {sid} place", sid) == "odd <session> place"


# --- zeep needs our decoding, and the flavours agree -----------------------------------------


def test_plain_zeep_fails_on_nested_includes_where_we_do_not() -> None:
    answer = REFERENCE / "responses" / "search-investigation-include-facility-and-instruments.xml"
    # The reference WSDL imports its schema from the server it came from: serve it from a cache.
    cache = zeep.cache.InMemoryCache()
    xsd_url = "https://localhost:8181/ICATService/ICAT?xsd=1"
    cache.add(xsd_url, (REFERENCE / "ICATService.xsd1.xsd").read_bytes())
    plain = zeep.Client(str(REFERENCE / "ICATService.wsdl"), transport=zeep.Transport(cache=cache))
    response = requests.Response()
    response.status_code = 200
    response._content = answer.read_bytes()
    binding = plain.service._binding
    with pytest.raises(zeep.exceptions.XMLParseError, match="Unexpected element 'createId'"):
        binding.process_reply(plain, binding.get("search"), response)

    profile = get_profile("6.2")
    search = operation(profile, "search")
    element = read_answer(xsd_url, 200, answer.read_bytes(), search, None)
    (investigation,) = decode_answer(profile, search, element)
    assert investigation["facility"]["name"] == "EXAMPLE"
    assert investigation["investigationInstruments"][0]["instrument"]["name"] == "BEAMLINE-1"


def test_plain_zeep_fails_on_the_local_catalogue_too(
    fresh_catalogue: LocalCatalogue, cache_dir: Path
) -> None:
    with contextlib.closing(login(fresh_catalogue, "lean", cache_dir)) as ours:
        build_hierarchy(ours, n_files=1)
        plain = zeep.Client(fresh_catalogue.wsdl_url)
        entries = [{"key": key, "value": value} for key, value in ROOT.items()]
        sid = plain.service.login("simple", {"entry": entries})
        for query in NESTED_INCLUDES:
            with pytest.raises(zeep.exceptions.XMLParseError, match="Unexpected element"):
                plain.service.search(sid, query)
            assert ours.search(query)
        plain.service.logout(sid)
        plain.transport.session.close()


def test_flavours_agree(fresh_catalogue: LocalCatalogue, cache_dir: Path) -> None:
    clients = [login(fresh_catalogue, flavour, cache_dir) for flavour in FLAVOURS]
    try:
        ids = build_hierarchy(clients[0], n_files=5)
        queries: list[str | Query] = [
            *NESTED_INCLUDES,
            Query("Datafile").select("name", "fileSize", "location").order_by("name"),
            Query("Datafile").where(fileSize="> 2500").count(),
            "SELECT AVG(df.fileSize) FROM Datafile df",
            "SELECT ds FROM Dataset ds INCLUDE ds.datafiles, ds.type",
        ]
        for query in queries:
            zeep_answer, *others = (c.search(query) for c in clients)
            assert zeep_answer
            for answer in others:
                assert sort_items(answer) == sort_items(zeep_answer), str(query)
        gets = [c.get("Investigation INCLUDE 1", ids["Investigation"]) for c in clients]
        assert gets[1:] == gets[:1] * 2
    finally:
        for c in clients:
            c.close()


def sort_items(items: list[Any]) -> list[Any]:
    """Results with MANY relations in id order (ICAT does not promise any order for them)."""
    for item in items:
        if isinstance(item, Bean):
            for name, value in item.values.items():
                if isinstance(value, list):
                    item[name] = sorted(value, key=lambda b: b.id)
    return items


# --- transport failures ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def tls_catalogue() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(tls="ca")) as cat:
        yield cat


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_closed_port_is_refused(flavour: str, cache_dir: Path) -> None:
    config = ClientConfig(f"http://127.0.0.1:{closed_port()}", cache_dir=cache_dir)
    with pytest.raises(TransportFailure) as info:
        connect(config, flavour)
    assert info.value.cause is TransportCause.REFUSED


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_tls_trust_follows_the_configuration(
    flavour: str, tls_catalogue: LocalCatalogue, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tls_catalogue.tls is not None
    url = tls_catalogue.service_url
    with pytest.raises(TransportFailure) as info:
        connect(ClientConfig(url, cache_dir=cache_dir), flavour)
    assert info.value.cause is TransportCause.TLS
    # A CA bundle in the environment must not replace the one the user chose.
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", "/nonexistent/bogus-ca.pem")
    monkeypatch.setenv("CURL_CA_BUNDLE", "/nonexistent/bogus-ca.pem")
    for options in ({"ca_file": tls_catalogue.tls.ca}, {"insecure": True}):
        with contextlib.closing(login(tls_catalogue, flavour, cache_dir, **options)) as client:
            assert client.user_name() == "simple/root"


def test_insecure_and_ca_file_contradict(tls_catalogue: LocalCatalogue) -> None:
    assert tls_catalogue.tls is not None
    config = ClientConfig(tls_catalogue.service_url, ca_file=tls_catalogue.tls.ca, insecure=True)
    for flavour in FLAVOURS:
        with pytest.raises(UsageError, match="contradict"):
            connect(config, flavour)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_silent_server_times_out(flavour: str, cache_dir: Path) -> None:
    with socket.socket() as silent:  # accepts connections (the kernel does) and says nothing
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        config = ClientConfig(url, read_timeout=0.3, connect_timeout=2, cache_dir=cache_dir)
        with pytest.raises(TransportFailure) as info:
            connect(config, flavour)
    assert info.value.cause is TransportCause.TIMEOUT


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(
    ("path", "cause"),
    [("/missing/ICAT", TransportCause.HTTP_STATUS), ("/ICATService/ICAT", TransportCause.NOT_ICAT)],
)
def test_web_server_is_not_icat(
    flavour: str, path: str, cause: TransportCause, web_server: str, cache_dir: Path
) -> None:
    with pytest.raises(TransportFailure) as info:
        connect(ClientConfig(web_server + path, cache_dir=cache_dir), flavour)
    assert info.value.cause is cause
    if cause is TransportCause.HTTP_STATUS:
        assert info.value.status == 404


def test_classify_names_dns_failures() -> None:
    error = requests.ConnectionError(socket.gaierror(-2, "Name or service not known"))
    failure = classify(error, "https://nowhere.invalid/ICATService/ICAT")
    assert failure.cause is TransportCause.DNS
    assert str(failure).startswith("https://nowhere.invalid/ICATService/ICAT: host name not found")
