"""What a new database of the local catalogue holds: what a fresh ICAT holds, unless asked for more.

A fresh ICAT has no Rule objects, so an ordinary user sees nothing: a search returns nothing,
COUNT gives 0, ``get`` of an existing id is INSUFFICIENT_PRIVILEGES and ``isAccessAllowed`` is
false. Root users (``rootUserNames``) may do anything since ICAT 4.4. ICAT 4.3 gave them implicit
rights on the authorization tables only; its deployments gave them the rest through a grouping
and rules made at installation (the 2014 campaign's catalogues had them), so the 4.3 profile
starts with that grouping, ``rootUsers``, and nothing for anyone else.

Example data comes with its own rules (``sv7 serve --example-data``, and what ``sv7 run``
without ``--target`` gives its built-in catalogue), as a facility sets them up: every logged-in
user may read what holds no one's data (facilities, types, instruments, users, rules …) and
everything of the one small Facility, ``EXAMPLE`` (an investigation, two datasets with a
parameter each, and six datafiles: published data, as after an embargo); what hangs below other
Facilities' Investigations only through further rules (``sv7 run --parts scale`` adds ICAT's
usual membership rules for its own tree). Every account of the catalogue has its User row.
"""

from __future__ import annotations

import datetime as dt

from igestbench.icat.beans import Bean
from igestbench.icat.schema import Profile
from igestbench.mock.service import IcatService

#: createId/modId of what the catalogue creates by itself.
SEED_USER = "sv7/local-catalogue"
EXAMPLE_FACILITY = "EXAMPLE"
#: Datafiles of the example data (what a reference query of ``sv7 run`` expects to count).
EXAMPLE_DATAFILES = 6


def seed_new_database(service: IcatService, example_data: bool = False) -> None:
    """Fill a new database: the 4.3 profile's ``rootUsers``, and example data if asked for."""
    with service.store.transaction():
        if service.profile.name == "4.3":
            _root_users_grouping(service)
        if example_data:
            _example_rules(service)
            _example_users(service)
            _example_hierarchy(service)


def _root_users_grouping(service: IcatService) -> None:
    store, profile = service.store, service.profile
    group_id = store.create(SEED_USER, Bean("Grouping", {"name": "rootUsers"}))
    group = Bean("Grouping", {"id": group_id})
    for user in service.authenticators.root_user_names:
        user_id = store.create(SEED_USER, Bean("User", {"name": user}))
        store.create(
            SEED_USER, Bean("UserGroup", {"user": Bean("User", {"id": user_id}), "grouping": group})
        )
    store.create_many(
        SEED_USER,
        [
            Bean("Rule", {"what": name, "crudFlags": "CRUD", "grouping": group})
            for name in profile.entity_names
        ],
    )


def investigation_path(profile: Profile, entity: str) -> str | None:
    """The path of NOT NULL many-to-one relations from ``entity`` up to its Investigation
    (``Datafile`` → ``dataset.investigation``; ``Investigation`` → ``""``); None: none."""
    if entity == "Investigation":
        return ""
    paths, frontier = {entity: ""}, [entity]
    while frontier:
        following = []
        for name in frontier:
            for rel in profile.entity(name).ones:
                if not rel.not_null or rel.type in paths:
                    continue
                path = f"{paths[name]}.{rel.name}".lstrip(".")
                if rel.type == "Investigation":
                    return path
                paths[rel.type] = path
                following.append(rel.type)
        frontier = following
    return None


def _example_rules(service: IcatService) -> None:
    """READ for every logged-in user (Rules without grouping): of every entity type that holds
    no one's data, and of what hangs below an Investigation only within EXAMPLE."""
    rules = []
    for name in service.profile.entity_names:
        path = investigation_path(service.profile, name)
        if path is None:
            what = name
        else:
            up = f"x.{path}." if path else "x."
            what = (f"SELECT x FROM {name} x WHERE {up}facility.name = '{EXAMPLE_FACILITY}'")
        rules.append(Bean("Rule", {"what": what, "crudFlags": "R"}))
    service.store.create_many(SEED_USER, rules)


def _example_users(service: IcatService) -> None:
    """A User row per account (InvestigationUser rows need one), as a facility has them."""
    made = set(service.authenticators.root_user_names) if service.profile.name == "4.3" else set()
    names = [n for n in dict.fromkeys(a.user_name for a in service.authenticators.accounts.values())
             if n not in made]  # 4.3: the root users have theirs (rootUsers grouping)
    service.store.create_many(SEED_USER, [Bean("User", {"name": n}) for n in names])


def _ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


def _example_hierarchy(service: IcatService) -> None:
    store = service.store

    def create(entity: str, **values: object) -> Bean:
        return _ref(entity, store.create(SEED_USER, Bean(entity, dict(values))))

    start = dt.datetime(2024, 3, 4, 9, 0, tzinfo=dt.UTC)
    facility = create(
        "Facility",
        name=EXAMPLE_FACILITY,
        fullName="Example Facility of the sv7 local catalogue",
        description="Example data: one investigation, two datasets, six datafiles",
    )
    instrument = create(
        "Instrument", name="BEAMLINE-1", fullName="Example beamline", facility=facility
    )
    investigation_type = create("InvestigationType", name="experiment", facility=facility)
    dataset_type = create("DatasetType", name="raw", facility=facility)
    file_format = create("DatafileFormat", name="NeXus", version="4.3", facility=facility)
    temperature = create(
        "ParameterType",
        name="temperature",
        units="K",
        valueType="NUMERIC",
        applicableToDataset=True,
        facility=facility,
    )
    investigation = create(
        "Investigation",
        name="EX-0001",
        visitId="1",
        title="Thermal expansion of example crystals",
        startDate=start,
        endDate=start + dt.timedelta(days=2),
        facility=facility,
        type=investigation_type,
    )
    create("InvestigationInstrument", investigation=investigation, instrument=instrument)
    parameter_type = Bean(
        "ParameterType", {"id": temperature.id, "name": "temperature", "applicableToDataset": True}
    )
    per_dataset = EXAMPLE_DATAFILES // 2
    for d, (sample, kelvin) in enumerate((("crystal-a", 293.0), ("crystal-b", 77.0))):
        begin = start + dt.timedelta(hours=6 * d)
        datafiles = [
            Bean(
                "Datafile",
                {
                    "name": f"{sample}-scan-{f + 1:03d}.nxs",
                    "location": f"example/EX-0001/{sample}/scan-{f + 1:03d}.nxs",
                    "fileSize": 1_048_576 * (f + 1),
                    "datafileFormat": file_format,
                },
            )
            for f in range(per_dataset)
        ]
        store.create(
            SEED_USER,
            Bean(
                "Dataset",
                {
                    "name": f"{sample}_001",
                    "complete": True,
                    "startDate": begin,
                    "endDate": begin + dt.timedelta(hours=1),
                    "investigation": investigation,
                    "type": dataset_type,
                    "datafiles": datafiles,
                    "parameters": [
                        Bean("DatasetParameter", {"type": parameter_type, "numericValue": kelvin})
                    ],
                },
            ),
        )
