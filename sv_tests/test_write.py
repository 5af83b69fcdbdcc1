"""Writes (only with a writer account): a tagged hierarchy is created, read back, updated,
checked for access, and deleted without a trace; a reader account cannot write into it.

Everything hangs below a Facility named by the run tag (``sv7-<site>-<run id>``) and is
journaled as soon as it exists, so the module's teardown removes it even when a check failed
half-way. The last check deletes it on purpose and proves nothing is left.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from igestbench.client import Catalogue, ClientConfig
from igestbench.errors import Sv7Error
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatInsufficientPrivileges
from igestbench.verify.options import READ_ROLE, Account, VerifyOptions
from igestbench.workloads import Journal, RunTag, cleanup
from sv_tests.conftest import Fact, logged_in, need_account, raw_session

pytestmark = pytest.mark.part("write")


@dataclass
class Hierarchy:
    tag: RunTag
    journal: Journal = field(default_factory=Journal)
    ids: dict[str, int] = field(default_factory=dict)
    cleaned: bool = False

    def ref(self, entity: str) -> Bean:
        return Bean(entity, {"id": self.ids[entity]})

    def create(self, catalogue: Catalogue, bean: Bean) -> int:
        new_id = catalogue.create(bean)
        self.journal.add(bean.entity, new_id)
        self.ids.setdefault(bean.entity, new_id)
        return new_id


def build_hierarchy(catalogue: Catalogue, h: Hierarchy) -> None:
    name = h.tag.name
    h.journal.name_facility(name)  # cleanup deletes only what hangs below this Facility
    h.create(catalogue, Bean("Facility", {"name": name, "fullName": "sv7 service check"}))
    for entity in ("InvestigationType", "DatasetType"):
        h.create(catalogue, Bean(entity, {"name": "sv7-check", "facility": h.ref("Facility")}))
    investigation = {
        "name": name, "visitId": "1", "title": "sv7 service check",
        "facility": h.ref("Facility"), "type": h.ref("InvestigationType"),
    }  # fmt: skip
    h.create(catalogue, Bean("Investigation", investigation))
    dataset = {
        "name": "sv7-dataset", "complete": False,
        "investigation": h.ref("Investigation"), "type": h.ref("DatasetType"),
    }  # fmt: skip
    h.create(catalogue, Bean("Dataset", dataset))
    files = [
        Bean("Datafile", {"name": f"sv7-{i}.nxs", "dataset": h.ref("Dataset")}) for i in (1, 2)
    ]
    ids = catalogue.create_many(files)
    h.journal.add_many("Datafile", ids)
    h.ids["Datafile"] = ids[0]


@pytest.fixture(scope="module")
def hierarchy(writer: Catalogue, options: VerifyOptions) -> Iterator[Hierarchy]:
    h = Hierarchy(RunTag.new(options.site or "sv7"))
    try:
        build_hierarchy(writer, h)
        yield h
    finally:
        if not h.cleaned:
            cleanup(writer, h.journal)


def count_under_tag(catalogue: Catalogue, tag: RunTag) -> int:
    query = (
        "SELECT COUNT(df) FROM Datafile df "
        f"WHERE df.dataset.investigation.facility.name = '{tag.name}'"
    )
    return int(catalogue.search(query)[0])


def test_create_hierarchy(writer: Catalogue, hierarchy: Hierarchy) -> None:
    assert count_under_tag(writer, hierarchy.tag) == 2, "the two Datafiles are not under the tag"


def test_created_object_found_at_once(writer: Catalogue, hierarchy: Hierarchy) -> None:
    bean = Bean(
        "Datafile", {"name": "sv7-read-your-write.nxs", "dataset": hierarchy.ref("Dataset")}
    )
    new_id = hierarchy.create(writer, bean)
    found = writer.search(
        f"SELECT df.id FROM Datafile df WHERE df.name = '{bean['name']}' "
        f"AND df.dataset.id = {hierarchy.ids['Dataset']}"
    )
    assert found == [new_id], f"the Datafile created as {new_id} is found as {found}"


def test_update_visible_in_next_get(writer: Catalogue, hierarchy: Hierarchy) -> None:
    text = f"updated by {hierarchy.tag.name}"
    # ICAT's update sets every relation the bean leaves out to null: fetch them to send back
    dataset = writer.get("Dataset ds INCLUDE ds.investigation, ds.type", hierarchy.ids["Dataset"])
    dataset["description"] = text
    writer.update(dataset)
    again = writer.get("Dataset", hierarchy.ids["Dataset"])
    assert again.get("description") == text, f"get after update shows {again.get('description')!r}"


def test_is_access_allowed(
    hierarchy: Hierarchy, config: ClientConfig, writer_account: Account, options: VerifyOptions
) -> None:
    dataset = hierarchy.ref("Dataset")
    with raw_session(config, writer_account) as (soap, sid):
        assert soap.is_access_allowed(sid, dataset, "UPDATE"), "the writer may not update its own"
    reader = options.account(READ_ROLE)
    if reader is not None:
        with raw_session(config, reader) as (soap, sid):
            assert not soap.is_access_allowed(sid, dataset, "UPDATE"), "the reader may update"


def test_reader_cannot_write(
    hierarchy: Hierarchy, config: ClientConfig, options: VerifyOptions
) -> None:
    bean = Bean("Datafile", {"name": "sv7-by-reader.nxs", "dataset": hierarchy.ref("Dataset")})
    with logged_in(config, options.flavour, need_account(options, READ_ROLE)) as reader:
        try:
            new_id = reader.create(bean)
        except IcatInsufficientPrivileges:
            return
        # removed by the reader itself: the run's cleanup deletes only what the run's own
        # account created (createId), never another account's object
        with contextlib.suppress(Sv7Error):
            reader.delete(Bean("Datafile", {"id": new_id}))
    raise AssertionError("the reader account could create a Datafile")


@pytest.mark.part("cleanup")
def test_cleanup_leaves_nothing(writer: Catalogue, hierarchy: Hierarchy, fact: Fact) -> None:
    report = cleanup(writer, hierarchy.journal)
    hierarchy.cleaned = True
    by_entity: dict[str, list[int]] = defaultdict(list)
    for entity, obj_id in hierarchy.journal.entries:
        by_entity[entity].append(obj_id)
    left = 0
    for entity, ids in by_entity.items():
        id_list = ", ".join(map(str, ids))
        left += int(writer.search(f"SELECT COUNT(x) FROM {entity} x WHERE x.id IN ({id_list})")[0])
    fact("cleanup", {"deleted": report.deleted, "already_gone": report.already_gone, "left": left})
    assert left == 0, f"{left} of {len(hierarchy.journal)} created objects are still there"
    assert count_under_tag(writer, hierarchy.tag) == 0, "Datafiles are left under the tag"
