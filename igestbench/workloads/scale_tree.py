"""The scale part's tree: one run-owned Facility grown, size after size, to millions of Datafiles.

The shape is a facility's, not a benchmark's: Investigations of
:attr:`TreeShape.datasets_per_investigation` Datasets, Datasets of a few hundred Datafiles
(:attr:`TreeShape.files_per_dataset`), a numeric DatafileParameter on one Datafile in
:attr:`TreeShape.parameter_every`, and on every
Investigation an InvestigationUser naming the member account (when it has a User row), so that
the member reads the tree through ICAT's usual membership rules. Each size is grown on top of the
last, through createMany batches of :attr:`TreeShape.batch` Datafiles, each batch journaled as
soon as its ids are back (a stop between two batches leaves nothing the journal does not name;
one cut off mid-batch still hangs below the run's Facility, which cleanup removes by name).

Names are built from a serial number, so the tree never has to be read back: the Datafile of
serial *s* is ``<facility>-<s:09d>.nxs`` in Dataset *s // files_per_dataset*, and carries a
parameter of value *s* when *s* is a multiple of ``parameter_every``. Only ids are kept, in
compact arrays (8 bytes per Datafile).
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any

from igestbench.client.base import Catalogue
from igestbench.icat.beans import Bean
from igestbench.workloads.journal import Journal

#: The role the member holds in each of the tree's Investigations (InvestigationUser.role).
MEMBER_ROLE = "member"
PARAMETER_NAME = "sv7-scale-temperature"
PARAMETER_UNITS = "K"


@dataclass(frozen=True)
class TreeShape:
    """How the tree is laid out; recorded in the result file (``scale.shape``)."""

    files_per_dataset: int = 400
    datasets_per_investigation: int = 25
    #: One Datafile in this many carries a numeric DatafileParameter.
    parameter_every: int = 4
    #: Datafiles per createMany call.
    batch: int = 1000

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def files_per_investigation(self) -> int:
        return self.files_per_dataset * self.datasets_per_investigation


def _ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


@dataclass(frozen=True)
class Growth:
    """What growing to one size took."""

    size: int
    datafiles: int
    parameters: int
    datasets: int
    investigations: int
    #: wall time of every create of the step (Investigations, Datasets, Datafile batches)
    seconds: float
    calls: int

    @property
    def rate_per_s(self) -> float | None:
        """Datafiles created per second of the step (their parameters ride along)."""
        return self.datafiles / self.seconds if self.seconds > 0 else None


class ScaleTree:
    """One run-owned tree: its Facility, its types, and ids of what it holds."""

    def __init__(
        self,
        catalogue: Catalogue,
        journal: Journal,
        facility: str,
        shape: TreeShape | None = None,
        member_user_id: int | None = None,
    ) -> None:
        self.catalogue = catalogue
        self.journal = journal
        self.facility = facility
        self.shape = shape or TreeShape()
        self.member_user_id = member_user_id
        self.facility_id = 0
        self.parameter_type: Bean | None = None
        self.investigations = array("q")
        self.datasets = array("q")
        self.datafiles = array("q")
        self._types: dict[str, Bean] = {}
        self._dataset_ref: tuple[int, Bean] | None = None

    # --- what the tree holds -------------------------------------------------------------

    @property
    def size(self) -> int:
        return len(self.datafiles)

    def datafile_name(self, serial: int) -> str:
        return f"{self.facility}-{serial:09d}.nxs"

    def dataset_of(self, serial: int) -> int:
        """The id of the Dataset holding Datafile ``serial``."""
        return self.datasets[serial // self.shape.files_per_dataset]

    def files_in_dataset(self, index: int) -> int:
        fpd = self.shape.files_per_dataset
        return max(0, min(fpd, self.size - index * fpd))

    def files_in_investigation(self, index: int) -> int:
        fpi = self.shape.files_per_investigation
        return max(0, min(fpi, self.size - index * fpi))

    def parameters_below(self, size: int) -> int:
        """How many of the first ``size`` Datafiles carry a parameter."""
        every = self.shape.parameter_every
        return (size + every - 1) // every

    # --- growing -------------------------------------------------------------------------

    def found(self) -> None:
        """Create the Facility and the types below it (journaled: the Facility is named in the
        journal before it exists)."""
        self.journal.name_facility(self.facility)
        self.facility_id = self._create(
            Bean("Facility", {"name": self.facility, "fullName": "sv7 scale part",
                              "description": "created by sv7 run --parts scale; removed after"})
        )  # fmt: skip
        facility = _ref("Facility", self.facility_id)
        types = [
            Bean("InvestigationType", {"name": "experiment", "facility": facility}),
            Bean("DatasetType", {"name": "raw", "facility": facility}),
            Bean("DatafileFormat", {"name": "NeXus", "version": "4.3", "facility": facility}),
            Bean("ParameterType", {"name": PARAMETER_NAME, "units": PARAMETER_UNITS,
                                   "valueType": "NUMERIC", "applicableToDatafile": True,
                                   "facility": facility}),
        ]  # fmt: skip
        ids = self.catalogue.create_many(types)
        for bean, new_id in zip(types, ids, strict=True):
            self.journal.add(bean.entity, new_id)
            self._types[bean.entity] = _ref(bean.entity, new_id)
        # ICAT judges a parameter's type as sent: it must say it applies to Datafiles
        self.parameter_type = Bean("ParameterType", {
            "id": ids[3], "name": PARAMETER_NAME, "units": PARAMETER_UNITS,
            "valueType": "NUMERIC", "applicableToDatafile": True})  # fmt: skip

    def _create(self, bean: Bean) -> int:
        new_id = self.catalogue.create(bean)
        self.journal.add(bean.entity, new_id)
        return new_id

    def grow_to(self, size: int) -> Growth:
        """Add Datafiles (and the Datasets and Investigations they need) until ``size``."""
        if size < self.size:
            raise ValueError(f"the tree holds {self.size} Datafiles already, more than {size}")
        before = (self.size, len(self.datasets), len(self.investigations))
        calls = 0
        started = time.perf_counter()
        calls += self._add_investigations(self._needed(size, self.shape.files_per_investigation))
        calls += self._add_datasets(self._needed(size, self.shape.files_per_dataset))
        for start, stop in self._batches(self.size, size):
            beans = [self._datafile(s) for s in range(start, stop)]
            ids = self.catalogue.create_many(beans)
            if len(ids) != len(beans):
                raise ValueError(f"createMany of {len(beans)} Datafiles answered {len(ids)} ids")
            self.journal.add_many("Datafile", ids)
            self.datafiles.extend(ids)
            calls += 1
        seconds = time.perf_counter() - started
        return Growth(
            size=size,
            datafiles=self.size - before[0],
            parameters=self.parameters_below(self.size) - self.parameters_below(before[0]),
            datasets=len(self.datasets) - before[1],
            investigations=len(self.investigations) - before[2],
            seconds=seconds,
            calls=calls,
        )

    @staticmethod
    def _needed(size: int, per: int) -> int:
        return (size + per - 1) // per

    def _batches(self, start: int, stop: int) -> Iterator[tuple[int, int]]:
        for first in range(start, stop, self.shape.batch):
            yield first, min(first + self.shape.batch, stop)

    def _add_investigations(self, wanted: int) -> int:
        beans = []
        for index in range(len(self.investigations), wanted):
            users = []
            if self.member_user_id is not None:
                users = [Bean("InvestigationUser", {"user": _ref("User", self.member_user_id),
                                                    "role": MEMBER_ROLE})]  # fmt: skip
            beans.append(Bean("Investigation", {
                "name": f"{self.facility}-inv-{index:05d}", "visitId": "1",
                "title": f"sv7 scale investigation {index}",
                "facility": _ref("Facility", self.facility_id),
                "type": self._types["InvestigationType"], "investigationUsers": users}))
        if not beans:
            return 0
        ids = self.catalogue.create_many(beans)
        self.journal.add_many("Investigation", ids)
        self.investigations.extend(ids)
        return 1

    def _add_datasets(self, wanted: int) -> int:
        calls = 0
        per = self.shape.datasets_per_investigation
        while len(self.datasets) < wanted:
            # at most one Investigation's Datasets per call
            first = len(self.datasets)
            stop = min(wanted, (first // per + 1) * per)
            beans = [Bean("Dataset", {
                "name": f"dataset-{index:07d}", "complete": True,
                "investigation": _ref("Investigation", self.investigations[index // per]),
                "type": self._types["DatasetType"]}) for index in range(first, stop)]  # fmt: skip
            ids = self.catalogue.create_many(beans)
            self.journal.add_many("Dataset", ids)
            self.datasets.extend(ids)
            calls += 1
        return calls

    def _datafile(self, serial: int) -> Bean:
        name = self.datafile_name(serial)
        index = serial // self.shape.files_per_dataset
        if self._dataset_ref is None or self._dataset_ref[0] != index:
            # the Datafiles of a Dataset come one after another: one reference for them all
            self._dataset_ref = (index, _ref("Dataset", self.datasets[index]))
        values: dict[str, Any] = {
            "name": name,
            "location": f"/sv7/scale/{index:07d}/{name}",
            "fileSize": 1_048_576 + serial % 4096,
            "dataset": self._dataset_ref[1],
            "datafileFormat": self._types["DatafileFormat"],
        }
        if serial % self.shape.parameter_every == 0:
            assert self.parameter_type is not None
            values["parameters"] = [
                Bean("DatafileParameter", {"type": self.parameter_type, "numericValue": serial})
            ]
        return Bean("Datafile", values)
