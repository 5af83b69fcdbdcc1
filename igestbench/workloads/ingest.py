"""The iGest sequence: ingest one NeXus file the way a facility's acquisition system does.

For each object of the file's hierarchy — Facility, Instrument, InvestigationType,
Investigation, DatasetType, Dataset, DatafileFormat — look it up by its uniqueness constraint and
create it if it is missing, then create the Datafile. Every step is timed on its own
(``full-cycle/lookup Dataset``, ``full-cycle/create Dataset`` …) so the report can show what the
existence checks cost next to the creates. Reading the NeXus file is part of the timed cycle.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from igestbench.client.base import Catalogue
from igestbench.icat.beans import Bean
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import Profile, RelType
from igestbench.measure.timing import Measurement, Timer
from igestbench.nexus import read_metadata, to_beans
from igestbench.workloads.journal import Journal

CYCLE_OP = "full-cycle"


def reference(bean: Bean) -> Bean:
    """A reference to an existing object, as ICAT wants it: the id only."""
    if bean.id is None:
        raise ValueError(f"{bean.entity} has no id yet")
    return Bean(bean.entity, {"id": bean.id})


def for_create(profile: Profile, bean: Bean) -> Bean:
    """The bean with its attributes and many-to-one references (by id) — what create needs."""
    entity = profile.entity(bean.entity)
    values: dict[str, Any] = {}
    for name, value in bean.values.items():
        if name == "id" or not entity.has_field(name) or value is None:
            continue
        f = entity.field(name)
        if f.rel is RelType.ATTRIBUTE:
            values[name] = value
        elif f.rel is RelType.ONE:
            values[name] = reference(value)
    return Bean(bean.entity, values)


def lookup_query(profile: Profile, bean: Bean) -> Query:
    """The search that finds ``bean``'s object by its uniqueness constraint."""
    entity = profile.entity(bean.entity)
    conditions: dict[str, Condition] = {}
    for name in entity.constraint or ("name",):
        value = bean.values.get(name)
        if entity.field(name).rel is RelType.ONE:
            if not isinstance(value, Bean):
                raise ValueError(f"{bean.entity}.{name} must refer to an object")
            conditions[f"{name}.id"] = Condition("=", reference(value).id)
        elif value is None:
            conditions[name] = Condition("IS NULL")
        else:
            conditions[name] = Condition("=", value)
    return Query(bean.entity).where(conditions)


class Ingestor:
    """Ingests NeXus files into one catalogue, journaling what it creates."""

    def __init__(self, catalogue: Catalogue, profile: Profile, journal: Journal, timer: Timer,
                 *, resumable: bool = False):  # fmt: skip
        self.catalogue = catalogue
        self.profile = profile
        self.journal = journal
        self.timer = timer
        #: look the Datafile up too before creating it, so that a file whose ingest was cut
        #: (a lost call) can be ingested again — an untimed preparation, not the measured cycle
        self.resumable = resumable

    def ingest(self, path: Path) -> Bean:
        """One full cycle for one file; returns the created Datafile (with its id)."""
        with self.timer.measure(CYCLE_OP) as cycle:
            with cycle.step("read NeXus"):
                beans = to_beans(read_metadata(path))
            *parents, datafile = beans.in_creation_order()
            for bean in parents:
                self._find_or_create(cycle, bean)
            if self.resumable:
                self._find_or_create(cycle, datafile)
            else:
                with cycle.step("create Datafile"):
                    self._create(datafile)
        return datafile

    def _find_or_create(self, cycle: Measurement, bean: Bean) -> None:
        with cycle.step(f"lookup {bean.entity}"):
            found = self.catalogue.search(lookup_query(self.profile, bean))
        if found:
            bean["id"] = found[0].id
            return
        with cycle.step(f"create {bean.entity}"):
            self._create(bean)

    def _create(self, bean: Bean) -> None:
        bean["id"] = self.catalogue.create(for_create(self.profile, bean))
        self.journal.add(bean.entity, bean["id"])
