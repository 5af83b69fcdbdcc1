"""INCLUDEd objects come in id order (ICAT's), whatever order the index that finds them holds.

The reader orders them itself (not SQLite's sorter, which copied every row in and out again):
a Dataset's Datafiles are found through the unique key (dataset, name), so named in the
reverse order of their ids they arrive reversed and must still be answered by id.
"""

from __future__ import annotations

import re

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.mock.catalogue import LocalCatalogue


def _ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


def test_included_children_come_in_id_order_not_in_the_index_order() -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        service = cat.service
        root = service.login("simple", {"username": "root", "password": "root"})
        fac = service.create(root, Bean("Facility", {"name": "F"}))
        typ = service.create(root, Bean("InvestigationType", {
            "name": "t", "facility": _ref("Facility", fac)}))
        inv = service.create(root, Bean("Investigation", {
            "name": "i", "visitId": "1", "title": "t", "facility": _ref("Facility", fac),
            "type": _ref("InvestigationType", typ)}))
        dst = service.create(root, Bean("DatasetType", {
            "name": "raw", "facility": _ref("Facility", fac)}))
        ds = service.create(root, Bean("Dataset", {
            "name": "d", "investigation": _ref("Investigation", inv),
            "type": _ref("DatasetType", dst)}))
        ids = service.create_many(root, [Bean("Datafile", {
            "name": f"f{99 - i:02d}", "dataset": _ref("Dataset", ds)}) for i in range(30)])
        for query in (f"SELECT ds FROM Dataset ds WHERE ds.id = {ds} INCLUDE ds.datafiles",
                      f"Dataset INCLUDE Datafile [id = {ds}]"):
            answer = service.search_xml(root, query)
            found = [int(i) for i in re.findall(r"<datafiles>.*?<id>(\d+)</id>", answer)]
            assert found == sorted(ids), query
            beans = service.search(root, query).items
            assert [b.values["id"] for b in beans[0].values["datafiles"]] == sorted(ids)
        got = service.get_xml(root, "Dataset INCLUDE Datafile", ds)
        assert [int(i) for i in re.findall(r"<datafiles>.*?<id>(\d+)</id>", got)] == sorted(ids)
