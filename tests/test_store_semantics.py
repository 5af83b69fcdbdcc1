"""ICAT's write and read semantics in the local catalogue, through the service layer."""

from __future__ import annotations

from pathlib import Path

import pytest

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.icat.faults import (
    IcatBadParameter,
    IcatInsufficientPrivileges,
    IcatNoSuchObject,
    IcatObjectAlreadyExists,
    IcatSession,
    IcatValidation,
)
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.service import IcatService


def ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


def login(service: IcatService, user: str) -> str:
    return service.login("simple", {"username": user, "password": user})


def hierarchy(service: IcatService, sid: str, files: int = 2) -> dict[str, int]:
    fac = service.create(sid, Bean("Facility", {"name": "HZB"}))
    it = service.create(
        sid, Bean("InvestigationType", {"name": "exp", "facility": ref("Facility", fac)})
    )
    dt = service.create(sid, Bean("DatasetType", {"name": "raw", "facility": ref("Facility", fac)}))
    # cascade: the investigation is created with a dataset holding datafiles
    datafiles = [Bean("Datafile", {"name": f"f{i}"}) for i in range(files)]
    dataset = Bean(
        "Dataset", {"name": "ds", "type": ref("DatasetType", dt), "datafiles": datafiles}
    )
    inv = service.create(
        sid,
        Bean(
            "Investigation",
            {
                "name": "inv",
                "visitId": "1",
                "title": "t",
                "facility": ref("Facility", fac),
                "type": ref("InvestigationType", it),
                "datasets": [dataset],
            },
        ),
    )
    ds = service.search(sid, "SELECT d.id FROM Dataset d").items[0]
    return {"facility": fac, "investigation": inv, "dataset": ds, "dataset_type": dt}


@pytest.fixture()
def service(fresh_catalogue: LocalCatalogue) -> IcatService:
    return fresh_catalogue.service


def test_server_sets_audit_fields_and_cascades(service: IcatService) -> None:
    sid = login(service, "ingest")
    h = hierarchy(service, sid)
    df = service.search(sid, "SELECT d FROM Datafile d WHERE d.name = 'f1'").items[0]
    assert df["createId"] == df["modId"] == "simple/ingest"
    assert df["fileSize"] == 0  # ICAT 6.x default
    assert "dataset" not in df  # relations only when INCLUDEd
    got = service.get(sid, "Dataset INCLUDE 1", h["dataset"])
    assert got["investigation"]["name"] == "inv" and got["type"]["name"] == "raw"
    got = service.get(sid, "Dataset d INCLUDE d.datafiles", h["dataset"])
    assert sorted(f["name"] for f in got["datafiles"]) == ["f0", "f1"]


def test_validation_and_uniqueness(service: IcatService) -> None:
    sid = login(service, "root")
    h = hierarchy(service, sid, files=0)
    ds = ref("Dataset", h["dataset"])
    with pytest.raises(IcatValidation, match="Datafile: name cannot be null"):
        service.create(sid, Bean("Datafile", {"dataset": ds}))
    with pytest.raises(IcatValidation, match="cannot have length > 255"):
        service.create(sid, Bean("Datafile", {"dataset": ds, "name": "x" * 256}))
    with pytest.raises(IcatNoSuchObject, match=r"Dataset\[id:424242\] not found"):
        service.create(sid, Bean("Datafile", {"dataset": ref("Dataset", 424242), "name": "a"}))
    service.create(sid, Bean("Datafile", {"dataset": ds, "name": "a"}))
    with pytest.raises(
        IcatObjectAlreadyExists, match=r"Datafile exists with dataset = '.*', name = 'a'"
    ):
        service.create(sid, Bean("Datafile", {"dataset": ds, "name": "a"}))
    with pytest.raises(IcatBadParameter):
        service.create(
            sid,
            Bean(
                "ParameterType",
                {
                    "name": "p",
                    "units": "K",
                    "valueType": "COLOUR",
                    "facility": ref("Facility", h["facility"]),
                },
            ),
        )


def test_create_many_is_all_or_nothing(service: IcatService) -> None:
    sid = login(service, "root")
    h = hierarchy(service, sid, files=0)
    ds = ref("Dataset", h["dataset"])
    beans = [Bean("Datafile", {"dataset": ds, "name": f"n{i}"}) for i in range(5)]
    beans.append(Bean("Datafile", {"dataset": ds, "name": "n2"}))  # duplicate inside the list
    with pytest.raises(IcatObjectAlreadyExists) as info:
        service.create_many(sid, beans)
    assert info.value.offset == 5
    assert service.search(sid, "SELECT COUNT(d) FROM Datafile d").items == [0]
    ids = service.create_many(sid, beans[:5])
    assert len(ids) == 5 and ids == sorted(ids)


def test_update_replaces_everything(service: IcatService) -> None:
    sid = login(service, "root")
    h = hierarchy(service, sid, files=1)
    df = service.search(sid, "SELECT d FROM Datafile d INCLUDE d.dataset").items[0]
    df["description"] = "checked"
    df["location"] = "/somewhere"
    service.update(sid, df)
    again = service.get(sid, "Datafile", df.id)
    assert again["description"] == "checked" and again["modId"] == "simple/root"
    service.update(
        sid, Bean("Datafile", {"id": df.id, "name": "f0", "dataset": ref("Dataset", h["dataset"])})
    )
    assert "description" not in service.get(sid, "Datafile", df.id)  # absent means null
    with pytest.raises(IcatValidation):
        service.update(sid, Bean("Datafile", {"id": df.id, "name": "f0"}))


def test_delete_cascades_and_reports_missing(service: IcatService) -> None:
    sid = login(service, "root")
    h = hierarchy(service, sid, files=3)
    service.delete(sid, ref("Investigation", h["investigation"]))
    assert service.search(sid, "SELECT COUNT(d) FROM Datafile d").items == [0]
    assert service.search(sid, "SELECT COUNT(d) FROM DatasetType d").items == [1]
    with pytest.raises(IcatNoSuchObject) as info:
        service.delete_many(sid, [ref("Facility", h["facility"]), ref("Facility", 999)])
    assert info.value.offset == 1
    assert service.search(sid, "SELECT COUNT(f) FROM Facility f").items == [1]  # rolled back


def grant_read_to_everyone(service: IcatService, root: str) -> None:
    names = service.get_entity_names()
    service.create_many(root, [Bean("Rule", {"what": n, "crudFlags": "R"}) for n in names])


def test_reader_reads_but_cannot_write(service: IcatService) -> None:
    root = login(service, "root")
    h = hierarchy(service, root)
    reader = login(service, "reader")
    assert service.search(reader, "SELECT COUNT(d) FROM Datafile d").items == [0]  # no rules yet
    grant_read_to_everyone(service, root)
    assert service.search(reader, "SELECT COUNT(d) FROM Datafile d").items == [2]
    with pytest.raises(IcatInsufficientPrivileges, match=r"CREATE access to this Datafile"):
        service.create(
            reader, Bean("Datafile", {"dataset": ref("Dataset", h["dataset"]), "name": "x"})
        )
    with pytest.raises(IcatInsufficientPrivileges):
        service.delete(reader, ref("Facility", h["facility"]))
    assert not service.is_access_allowed(reader, ref("Facility", h["facility"]), "DELETE")
    assert service.is_access_allowed(reader, ref("Facility", h["facility"]), "READ")
    new = Bean("Datafile", {"dataset": ref("Dataset", h["dataset"]), "name": "y"})
    assert not service.is_access_allowed(reader, new, "CREATE")
    assert service.is_access_allowed(root, new, "CREATE")
    assert service.search(root, "SELECT COUNT(d) FROM Datafile d").items == [2]  # rolled back


def test_rules_grant_access_by_query(service: IcatService) -> None:
    root = login(service, "root")
    h = hierarchy(service, root)
    reader = login(service, "reader")
    # allow the reader to create datafiles in investigation 'inv' only
    service.create(
        root,
        Bean(
            "Rule",
            {
                "crudFlags": "C",
                "what": "SELECT d FROM Datafile d JOIN d.dataset ds JOIN ds.investigation i "
                "WHERE i.name = 'inv'",
            },
        ),
    )
    service.create(
        reader, Bean("Datafile", {"dataset": ref("Dataset", h["dataset"]), "name": "ok"})
    )


def test_sessions_are_checked(service: IcatService) -> None:
    with pytest.raises(IcatSession, match=r"Session Id cannot be null or empty."):
        service.search("", "Facility")


def test_file_database_survives_a_restart(tmp_path: Path) -> None:
    db = str(tmp_path / "cat.sqlite")
    with LocalCatalogue(ServeConfig(db=db, example_data=True)) as cat:
        sid = login(cat.service, "root")
        hierarchy(cat.service, sid)
    with LocalCatalogue(ServeConfig(db=db, example_data=True)) as cat:
        sid = login(cat.service, "root")
        assert cat.service.search(sid, "SELECT COUNT(d) FROM Datafile d").items == [2 + 6]
        rules = cat.service.search(sid, "SELECT COUNT(r) FROM Rule r").items
        assert rules == [53]  # the example data and its rules came once, not again


def test_profile_4_3_root_needs_rules_which_are_seeded(catalogue_43: LocalCatalogue) -> None:
    service = catalogue_43.service
    assert service.get_api_version() == "4.3.3"
    assert len(service.get_entity_names()) == 38
    sid = login(service, "ingest")
    h = hierarchy(service, sid)
    assert service.search(sid, "SELECT COUNT(d) FROM Datafile d").items == [2]
    # root's CRUD on data comes from the seeded rootUsers grouping; remove it and it is gone
    service.delete(
        sid,
        Bean(
            "Grouping",
            {
                "id": service.search(
                    sid, "SELECT g.id FROM Grouping g WHERE g.name = 'rootUsers'"
                ).items[0]
            },
        ),
    )
    with pytest.raises(IcatInsufficientPrivileges):
        service.create(
            sid, Bean("Datafile", {"dataset": ref("Dataset", h["dataset"]), "name": "z"})
        )


def test_create_many_reports_the_first_bad_attribute_in_the_entitys_order(
    service: IcatService,
) -> None:
    """A bean is checked by the attributes it holds, in whatever order it holds them
    (mock/values.py present_values); a fault is still the one ICAT reports first: the first
    bad attribute in the entity's order, at the bean's offset."""
    sid = login(service, "root")
    h = hierarchy(service, sid, files=0)
    ds = ref("Dataset", h["dataset"])
    good = Bean("Datafile", {"dataset": ds, "name": "ok"})
    # name (too long) comes before description (not a string) in the bean, after it in ICAT
    bad = Bean("Datafile", {"name": "x" * 256, "description": 5, "dataset": ds})
    with pytest.raises(IcatValidation, match="Datafile: description must be a string") as info:
        service.create_many(sid, [good, bad])
    assert info.value.offset == 1
    missing = Bean("Datafile", {"fileSize": True, "dataset": ds})  # no name, fileSize not a long
    with pytest.raises(IcatValidation, match="Datafile: fileSize must be an integer"):
        service.create_many(sid, [missing])
    # the order a bean holds its values in changes nothing of what is stored
    values = {"name": "a", "location": "/x", "fileSize": 7, "dataset": ds, "checksum": "c"}
    ids = service.create_many(sid, [Bean("Datafile", values),
                                    Bean("Datafile", {**dict(reversed(values.items())),
                                                      "name": "b"})])  # fmt: skip
    rows = [service.get(sid, "Datafile", i) for i in ids]
    assert [(r["location"], r["fileSize"], r["checksum"], r["createId"]) for r in rows] == [
        ("/x", 7, "c", "simple/root")] * 2
