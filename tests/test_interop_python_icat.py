"""An unmodified python-icat client against the local catalogue (interoperability, issue 2)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import icat
import icat.exception
import pytest
from icat.query import Query

from igestbench.mock.catalogue import LocalCatalogue


@pytest.fixture()
def client(fresh_catalogue: LocalCatalogue) -> Iterator[Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # suds' own
        c = icat.Client(fresh_catalogue.wsdl_url)
    c.login("simple", {"username": "root", "password": "root"})
    yield c
    c.logout()
    c.cleanup()


def build_hierarchy(client: Any, n_files: int = 3) -> dict[str, Any]:
    facility = client.new("Facility", name="ESRF", fullName="European Synchrotron")
    facility.create()
    instrument = client.new("Instrument", name="ID01", facility=facility)
    instrument.create()
    inv_type = client.new("InvestigationType", name="experiment", facility=facility)
    inv_type.create()
    investigation = client.new(
        "Investigation",
        name="MX-1234",
        visitId="1",
        title="Protein crystals",
        facility=facility,
        type=inv_type,
    )
    investigation.create()
    client.new(
        "InvestigationInstrument", investigation=investigation, instrument=instrument
    ).create()
    ds_type = client.new("DatasetType", name="raw", facility=facility)
    ds_type.create()
    dataset = client.new(
        "Dataset", name="run-1", investigation=investigation, type=ds_type, complete=False
    )
    dataset.create()
    df_format = client.new("DatafileFormat", name="NeXus", version="4.3", facility=facility)
    df_format.create()
    files = []
    for i in range(n_files):
        df = client.new(
            "Datafile",
            name=f"frame-{i}.nxs",
            dataset=dataset,
            datafileFormat=df_format,
            fileSize=1000 * (i + 1),
            location=f"/data/run-1/frame-{i}.nxs",
        )
        df.create()
        files.append(df)
    return {
        "facility": facility,
        "investigation": investigation,
        "dataset": dataset,
        "files": files,
        "format": df_format,
        "instrument": instrument,
    }


def test_client_builds_entity_classes(client: Any) -> None:
    assert client.apiversion == "6.2.0"
    assert len(client.typemap) >= 53
    assert client.getUserName() == "simple/root"
    assert client.getRemainingMinutes() > 100


def test_create_hierarchy_and_find_it_again(client: Any) -> None:
    h = build_hierarchy(client)
    assert all(df.id for df in h["files"])

    q = Query(
        client,
        "Datafile",
        conditions={"dataset.name": "= 'run-1'"},
        order=["name"],
        includes=["dataset.investigation.facility"],
    )
    found = client.search(q)
    assert [df.name for df in found] == ["frame-0.nxs", "frame-1.nxs", "frame-2.nxs"]
    assert found[0].dataset.investigation.facility.name == "ESRF"
    assert found[0].createId == "simple/root"

    q = Query(
        client,
        "Datafile",
        conditions={"dataset.investigation.name": "= 'MX-1234'", "fileSize": "> 1500"},
    )
    assert sorted(df.name for df in client.search(q)) == ["frame-1.nxs", "frame-2.nxs"]

    q = Query(client, "Datafile", order=["name"], limit=(1, 1))
    assert [df.name for df in client.search(q)] == ["frame-1.nxs"]

    count = Query(client, "Datafile", aggregate="COUNT")
    assert client.search(count) == [3]
    total = Query(client, "Datafile", attributes="fileSize", aggregate="SUM")
    assert client.search(total) == [6000]
    names = Query(client, "Datafile", attributes=["name", "fileSize"], order=["name"])
    assert client.search(names)[0] == ("frame-0.nxs", 1000)

    inv = client.get("Investigation INCLUDE 1", h["investigation"].id)
    assert inv.facility.name == "ESRF"
    assert inv.type.name == "experiment"

    q = Query(client, "Investigation", includes=["investigationInstruments.instrument"])
    (inv,) = client.search(q)
    assert inv.investigationInstruments[0].instrument.name == "ID01"


def test_faults_map_to_python_icat_exceptions(client: Any) -> None:
    h = build_hierarchy(client, n_files=1)
    dup = client.new("Datafile", name="frame-0.nxs", dataset=h["dataset"])
    with pytest.raises(icat.exception.ICATObjectExistsError):
        dup.create()
    no_title = client.new("Investigation", name="X", visitId="1", facility=h["facility"])
    with pytest.raises(icat.exception.ICATValidationError):
        no_title.create()
    with pytest.raises(icat.exception.ICATParameterError):
        client.search("SELECT x FROM Nothing x")
    with pytest.raises(icat.exception.ICATNoObjectError):
        client.get("Dataset", 999_999)
    client.logout()
    with pytest.raises(icat.exception.ICATSessionError):
        client.search("SELECT f FROM Facility f")


def test_create_many_update_delete(client: Any) -> None:
    h = build_hierarchy(client, n_files=0)
    beans = [client.new("Datafile", name=f"b-{i}", dataset=h["dataset"]) for i in range(50)]
    ids = client.createMany(beans)
    assert len(ids) == 50
    beans2 = [client.new("Datafile", name=f"c-{i}", dataset=h["dataset"]) for i in range(3)]
    beans2.append(client.new("Datafile", name="b-7", dataset=h["dataset"]))
    with pytest.raises(icat.exception.ICATObjectExistsError) as info:
        client.createMany(beans2)
    assert info.value.offset == 3
    assert client.search("SELECT COUNT(o) FROM Datafile o") == [50]  # all or nothing

    ds = client.get("Dataset INCLUDE 1", h["dataset"].id)  # update needs the relations
    ds.description = "updated"
    ds.update()
    assert client.get("Dataset", ds.id).description == "updated"

    client.delete(h["facility"])  # cascades all the way down
    assert client.search("SELECT COUNT(o) FROM Datafile o") == [0]
    assert client.search("SELECT COUNT(o) FROM Investigation o") == [0]


def test_python_icat_config_reads_authenticators(fresh_catalogue: LocalCatalogue) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        c = icat.Client(fresh_catalogue.wsdl_url)
    info = c.getAuthenticatorInfo()
    assert [a.mnemonic for a in info] == ["simple"]
    keys = {k.name: k.hide for k in info[0].keys}
    assert keys == {"username": False, "password": True}
    c.cleanup()


def test_python_icat_against_the_4_3_profile(catalogue_43: LocalCatalogue) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        c = icat.Client(catalogue_43.wsdl_url)
    try:
        assert c.apiversion == "4.3.3"
        assert len(c.typemap) >= 38 and "log" in c.typemap
        c.login("simple", {"username": "ingest", "password": "ingest"})
        h = build_hierarchy(c, n_files=2)
        q = Query(c, "Datafile", conditions={"dataset.name": "= 'run-1'"}, includes="1")
        assert sorted(df.dataset.name for df in c.search(q)) == ["run-1", "run-1"]
        assert h["facility"].id
    finally:
        c.cleanup()
