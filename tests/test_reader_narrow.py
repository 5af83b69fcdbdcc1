"""An answer written as text fetches the objects at the leaves of its INCLUDE tree without their
many-to-one ids (it writes them only for what it INCLUDEs), and still gives every object its own
children and relations: one parent or several, nested INCLUDEs, SOAP XML and REST JSON, and the
same objects as the Beans a Python caller gets (which are built from whole rows)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.service import IcatService
from tests.sql_trace import statements


def _ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


@pytest.fixture(scope="module")
def tree() -> Iterator[tuple[IcatService, str, int, list[int], dict[int, list[int]], int]]:
    """(service, root's session, the Investigation, its two Datasets, each one's Datafiles,
    the DatafileFormat every Datafile of the first Dataset has)."""
    with LocalCatalogue(ServeConfig()) as cat:
        service = cat.service
        root = service.login("simple", {"username": "root", "password": "root"})
        fac = service.create(root, Bean("Facility", {"name": "F"}))
        typ = service.create(root, Bean("InvestigationType", {
            "name": "t", "facility": _ref("Facility", fac)}))  # fmt: skip
        inv = service.create(root, Bean("Investigation", {
            "name": "i", "visitId": "1", "title": "t", "facility": _ref("Facility", fac),
            "type": _ref("InvestigationType", typ)}))  # fmt: skip
        dst = service.create(root, Bean("DatasetType", {
            "name": "raw", "facility": _ref("Facility", fac)}))  # fmt: skip
        fmt = service.create(root, Bean("DatafileFormat", {
            "name": "nexus", "version": "4", "facility": _ref("Facility", fac)}))  # fmt: skip
        datasets, files = [], {}
        for d in range(2):
            ds = service.create(root, Bean("Dataset", {
                "name": f"d{d}", "investigation": _ref("Investigation", inv),
                "type": _ref("DatasetType", dst)}))  # fmt: skip
            datasets.append(ds)
            extra = {"datafileFormat": _ref("DatafileFormat", fmt)} if d == 0 else {}
            files[ds] = service.create_many(root, [Bean("Datafile", {
                "name": f"f{i}", "fileSize": 10 + i, "dataset": _ref("Dataset", ds), **extra})
                for i in range(3 + d)])  # fmt: skip
        yield service, root, inv, datasets, files, fmt


def _fetched(service: IcatService, run: object) -> list[str]:
    """The statements SQLite ran while ``run()`` answered (this thread's connection)."""
    with statements(service.store.conn) as seen:
        run()  # type: ignore[operator]
    return seen


def test_the_leaves_are_fetched_without_their_many_to_one_ids(tree) -> None:  # type: ignore[no-untyped-def]
    service, root, _, datasets, _, _ = tree
    query = f"SELECT ds FROM Dataset ds WHERE ds.id = {datasets[0]} INCLUDE ds.datafiles"
    for answer in (service.search_xml, service.search_json):
        statements = [s for s in _fetched(service, lambda: answer(root, query))  # noqa: B023
                      if 'FROM "Datafile"' in s or "FROM Datafile" in s]  # fmt: skip
        assert statements, "the Datafiles were not fetched by a statement of their own"
        for sql in statements:
            listed = sql.split(" FROM ")[0]
            assert "dataset_id" not in listed and "datafileFormat_id" not in listed, sql
    # a Python caller's Beans are built from whole rows
    statements = _fetched(service, lambda: service.search(root, query))
    assert any("datafileFormat_id" in s.split(" FROM ")[0] for s in statements if "Datafile" in s)


def _xml_children(answer: str) -> list[list[int]]:
    """Per Dataset of an XML answer, the ids of its Datafiles."""
    out = []
    for ret in re.findall(r"<return[^>]*>(.*?)</return>", answer):
        out.append([int(i) for i in re.findall(r"<datafiles>.*?<id>(\d+)</id>", ret)])
    return out


def test_several_parents_each_get_their_own_children(tree) -> None:  # type: ignore[no-untyped-def]
    service, root, inv, datasets, files, _ = tree
    query = (f"SELECT ds FROM Dataset ds WHERE ds.investigation.id = {inv} ORDER BY ds.id "
             "INCLUDE ds.datafiles")  # fmt: skip
    wanted = [files[ds] for ds in datasets]
    assert _xml_children(service.search_xml(root, query)) == wanted
    found = json.loads(service.search_json(root, query))
    assert [[f["id"] for f in o["Dataset"]["datafiles"]] for o in found] == wanted
    beans = service.search(root, query).items
    assert [[f.values["id"] for f in b.values["datafiles"]] for b in beans] == wanted


def test_nested_includes_keep_the_ids_they_follow(tree) -> None:  # type: ignore[no-untyped-def]
    service, root, inv, datasets, files, fmt = tree
    query = (f"SELECT ds FROM Dataset ds WHERE ds.investigation.id = {inv} ORDER BY ds.id "
             "INCLUDE ds.datafiles df, df.datafileFormat")  # fmt: skip
    answer = service.search_xml(root, query)
    assert _xml_children(answer) == [files[ds] for ds in datasets]
    formats = re.findall(r"<datafileFormat>.*?<id>(\d+)</id>.*?</datafileFormat>", answer)
    assert formats == [str(fmt)] * len(files[datasets[0]])
    found = json.loads(service.search_json(root, query))
    with_format = [f for o in found for f in o["Dataset"]["datafiles"] if "datafileFormat" in f]
    assert [f["datafileFormat"]["id"] for f in with_format] == [fmt] * len(files[datasets[0]])
    # a many-to-one INCLUDE at a leaf: the Datafiles' Dataset, fetched by its id
    one = service.search_xml(root, f"SELECT df FROM Datafile df WHERE df.id = "
                                   f"{files[datasets[1]][0]} INCLUDE df.dataset")  # fmt: skip
    assert re.search(rf"<dataset><createId>[^<]*</createId>.*<id>{datasets[1]}</id>", one)
