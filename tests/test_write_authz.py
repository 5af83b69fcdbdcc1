"""CREATE and UPDATE authorisation as icat.server judges them (EntityBeanManager.create/update).

CREATE is checked once, on the top-level bean after the whole cascade is stored; UPDATE on the
stored object before the change (and, when a relation of the uniqueness key changes, DELETE
before and CREATE after). python-icat's own suite relies on both (issue 11).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatInsufficientPrivileges
from igestbench.mock.auth import Account
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.service import IcatService

ACCOUNTS = (Account("simple", "root", "root", root=True), Account("simple", "uo", "uo"))


def ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


@pytest.fixture()
def service() -> Iterator[IcatService]:
    with LocalCatalogue(ServeConfig(accounts=ACCOUNTS)) as cat:
        yield cat.service


def login(service: IcatService, user: str) -> str:
    return service.login("simple", {"username": user, "password": user})


def rule(service: IcatService, root: str, flags: str, what: str) -> None:
    service.create(root, Bean("Rule", {"crudFlags": flags, "what": what}))


def base(service: IcatService, root: str) -> dict[str, int]:
    fac = service.create(root, Bean("Facility", {"name": "HZB"}))
    it = service.create(
        root, Bean("InvestigationType", {"name": "exp", "facility": ref("Facility", fac)})
    )
    cycle = service.create(
        root, Bean("FacilityCycle", {"name": "c1", "facility": ref("Facility", fac)})
    )
    dt = service.create(
        root, Bean("DatasetType", {"name": "raw", "facility": ref("Facility", fac)})
    )
    return {"facility": fac, "type": it, "cycle": cycle, "dataset_type": dt}


def investigation(h: dict[str, int], name: str, **extra: object) -> Bean:
    values: dict[str, object] = {
        "name": name,
        "visitId": "1",
        "title": "t",
        "facility": ref("Facility", h["facility"]),
        "type": ref("InvestigationType", h["type"]),
    }
    values.update(extra)
    return Bean("Investigation", values)


def test_create_is_checked_on_the_top_level_bean_only(service: IcatService) -> None:
    root = login(service, "root")
    h = base(service, root)
    rule(service, root, "C", "Investigation")  # nothing on InvestigationFacilityCycle
    uo = login(service, "uo")
    cycles = [
        Bean("InvestigationFacilityCycle", {"facilityCycle": ref("FacilityCycle", h["cycle"])})
    ]
    inv = service.create(uo, investigation(h, "inv1", investigationFacilityCycles=cycles))
    n = service.search(
        root, f"SELECT COUNT(c) FROM InvestigationFacilityCycle c WHERE c.investigation.id = {inv}"
    )
    assert n.items == [1]
    # a child alone, without a rule of its own, is still refused
    cycle2 = service.create(
        root, Bean("FacilityCycle", {"name": "c2", "facility": ref("Facility", h["facility"])})
    )
    child = {
        "investigation": ref("Investigation", inv),
        "facilityCycle": ref("FacilityCycle", cycle2),
    }
    with pytest.raises(IcatInsufficientPrivileges, match="CREATE access to this Investigation"):
        service.create(uo, Bean("InvestigationFacilityCycle", child))


def test_create_many_judges_each_top_level_bean(service: IcatService) -> None:
    root = login(service, "root")
    h = base(service, root)
    rule(service, root, "C", "SELECT i FROM Investigation i WHERE i.name LIKE 'ok%'")
    uo = login(service, "uo")
    with pytest.raises(IcatInsufficientPrivileges) as info:
        service.create_many(uo, [investigation(h, "ok1"), investigation(h, "no1")])
    assert info.value.offset == 1
    assert service.search(root, "SELECT COUNT(i) FROM Investigation i").items == [0]


def dataset(service: IcatService, root: str, h: dict[str, int], inv: int, complete: bool) -> int:
    return service.create(
        root,
        Bean(
            "Dataset",
            {
                "name": "ds",
                "complete": complete,
                "investigation": ref("Investigation", inv),
                "type": ref("DatasetType", h["dataset_type"]),
            },
        ),
    )


def update_of(h: dict[str, int], ds: int, inv: int, complete: bool) -> Bean:
    return Bean(
        "Dataset",
        {
            "id": ds,
            "name": "ds",
            "complete": complete,
            "investigation": ref("Investigation", inv),
            "type": ref("DatasetType", h["dataset_type"]),
        },
    )


def test_update_is_judged_on_the_stored_object_before_the_change(service: IcatService) -> None:
    root = login(service, "root")
    h = base(service, root)
    inv = service.create(root, investigation(h, "inv1"))
    ds = dataset(service, root, h, inv, complete=False)
    rule(service, root, "U", "SELECT d FROM Dataset d WHERE d.complete = FALSE")
    nbour = login(service, "uo")
    service.update(nbour, update_of(h, ds, inv, complete=True))  # the rule no longer covers it
    assert service.get(root, "Dataset", ds)["complete"] is True
    # now the stored object is outside the rule: no further update
    with pytest.raises(IcatInsufficientPrivileges, match="UPDATE access to this Dataset"):
        service.update(nbour, update_of(h, ds, inv, complete=False))


def test_moving_to_another_parent_needs_delete_and_create(service: IcatService) -> None:
    root = login(service, "root")
    h = base(service, root)
    inv1 = service.create(root, investigation(h, "inv1"))
    inv2 = service.create(root, investigation(h, "inv2"))
    ds = dataset(service, root, h, inv1, complete=False)
    rule(service, root, "U", "Dataset")
    uo = login(service, "uo")
    service.update(uo, update_of(h, ds, inv1, complete=True))  # same parent: UPDATE suffices
    with pytest.raises(IcatInsufficientPrivileges, match="DELETE access to this Dataset"):
        service.update(uo, update_of(h, ds, inv2, complete=True))
    rule(service, root, "D", "Dataset")
    rule(service, root, "C", f"SELECT d FROM Dataset d WHERE d.investigation.id = {inv1}")
    with pytest.raises(IcatInsufficientPrivileges, match="CREATE access to this Dataset"):
        service.update(uo, update_of(h, ds, inv2, complete=True))
    assert service.get(root, "Dataset INCLUDE 1", ds)["investigation"]["id"] == inv1  # rolled back
    rule(service, root, "C", "Dataset")
    service.update(uo, update_of(h, ds, inv2, complete=True))
    assert service.get(root, "Dataset INCLUDE 1", ds)["investigation"]["id"] == inv2
