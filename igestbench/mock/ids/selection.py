"""Which datasets and datafiles a call of the IDS names, as the user may see them.

ids.server's ``DataSelection``: three comma-separated id lists (investigationIds, datasetIds,
datafileIds) are resolved by asking ICAT *with the user's session*, so ICAT's rules decide what
the user gets, and a refused or missing object is the IDS exception ids.server gives it. Only
datafiles with a location (stored through an IDS) count. Here the questions go straight to the
local catalogue's service, the same rules and sessions as over SOAP and REST.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatError
from igestbench.mock.ids.errors import BadRequestException, NotFoundException, from_icat
from igestbench.mock.service import IcatService
from igestbench.mock.values import java_long

#: The "session" of ids.server's own reader account (getStatus without a session, getSize of a
#: preparedId …): the catalogue read without its rules.
READER = "ids-reader"
_UUID = re.compile(r"[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}")


def validate_uuid(thing: str, value: str | None) -> str:
    """ids.server's check of a sessionId or preparedId before anything else."""
    if value is None or not _UUID.fullmatch(value):
        shown = "null" if value is None else value
        raise BadRequestException(f"The {thing} parameter '{shown}' is not a valid UUID")
    return value


def parse_ids(thing: str, text: str | None) -> list[int]:
    """A comma-separated list of Java longs (Java's ``split`` drops trailing empty parts)."""
    if text is None:
        return []
    parts = re.split(r"\s*,\s*", text)
    if len(parts) > 1:
        while parts and parts[-1] == "":
            parts.pop()
    ids: list[int] = []
    for part in parts:
        value = java_long(part)
        if value is None:
            raise BadRequestException(
                f"The {thing} parameter '{text}' is not a valid string representation of a "
                "comma separated list of longs"
            )
        ids.append(value)
    return ids


@dataclass(frozen=True)
class DsInfo:
    id: int
    name: str
    location: str | None
    inv_id: int
    inv_name: str
    visit_id: str
    facility_id: int
    facility_name: str

    def to_json(self) -> dict[str, Any]:
        return {
            "dsId": self.id, "dsName": self.name, "facilityId": self.facility_id,
            "facilityName": self.facility_name, "invId": self.inv_id, "invName": self.inv_name,
            "visitId": self.visit_id, "dsLocation": self.location,
        }  # fmt: skip

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> DsInfo:
        return cls(
            item["dsId"], item["dsName"], item["dsLocation"], item["invId"], item["invName"],
            item["visitId"], item["facilityId"], item["facilityName"],
        )

    @classmethod
    def from_bean(cls, ds: Bean) -> DsInfo:
        inv = ds["investigation"]
        facility = inv["facility"]
        return cls(
            int(ds["id"]), ds["name"], ds.get("location"), int(inv["id"]), inv["name"],
            inv.get("visitId") or "", int(facility["id"]), facility["name"],
        )


@dataclass(frozen=True, order=True)
class DfInfo:
    id: int
    name: str = field(compare=False)
    location: str = field(compare=False)
    create_id: str = field(compare=False)
    mod_id: str = field(compare=False)
    ds_id: int = field(compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "dsId": self.ds_id, "dfId": self.id, "dfName": self.name,
            "createId": self.create_id, "modId": self.mod_id, "dfLocation": self.location,
        }  # fmt: skip

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> DfInfo:
        return cls(
            item["dfId"], item["dfName"], item["dfLocation"], item["createId"], item["modId"],
            item["dsId"],
        )


@dataclass
class Selection:
    """The datasets and datafiles of a call, in id order."""

    datasets: dict[int, DsInfo]
    datafiles: list[DfInfo]
    empty: set[int]
    #: The sizes of the datafiles named by id (getData's Content-Length when not zipped).
    length: int
    must_zip: bool


class Selector:
    """Resolves selections against one catalogue (see module docstring)."""

    def __init__(self, service: IcatService) -> None:
        self.service = service
        #: Rows per search when listing a dataset's datafiles: ICAT's maxEntities.
        self.page = service.max_entities

    def select(
        self,
        sid: str,
        investigation_ids: str | None,
        dataset_ids: str | None,
        datafile_ids: str | None,
        datafiles: bool = True,
    ) -> Selection:
        dfids = parse_ids("datafileIds", datafile_ids)
        dsids = parse_ids("datasetIds", dataset_ids)
        invids = parse_ids("investigationIds", investigation_ids)
        datasets: dict[int, DsInfo] = {}
        files: dict[int, DfInfo] = {}
        empty: set[int] = set()
        length = 0
        try:
            for dfid in dfids:
                found = self._search(
                    sid,
                    f"SELECT ds FROM Dataset ds JOIN ds.datafiles df WHERE df.id = {dfid} "
                    "AND df.location IS NOT NULL INCLUDE ds.investigation.facility",
                )
                if len(found) != 1:
                    self._get(sid, "Datafile", dfid)  # may tell a refusal apart
                    raise NotFoundException(f"Datafile {dfid}")
                ds = DsInfo.from_bean(found[0])
                datasets[ds.id] = ds
                if datafiles:
                    df = self._get(sid, "Datafile", dfid)
                    length += int(df.get("fileSize") or 0)
                    files[dfid] = DfInfo(
                        dfid, df["name"], df["location"], df["createId"], df["modId"], ds.id
                    )
            for dsid in dsids:
                bean = self._get(sid, "Dataset ds INCLUDE ds.investigation.facility", dsid)
                datasets[dsid] = DsInfo.from_bean(bean)
                self._datafiles(sid, dsid, files, empty, datafiles)
            for invid in invids:
                self._investigation(sid, invid, datasets, files, empty, datafiles)
        except IcatError as exc:
            raise from_icat(exc, other="class") from None
        # ids.server zips whenever more than one file could come
        must_zip = len(dfids) > 1 or bool(dsids) or bool(invids) or not (dfids or dsids or invids)
        return Selection(datasets, sorted(files.values()), empty, length, must_zip)

    def _search(self, sid: str, query: str) -> list[Any]:
        if sid == READER:
            return self.service.reader.search(READER, query, None).items
        return self.service.search(sid, query).items

    def _get(self, sid: str, query: str, obj_id: int) -> Bean:
        if sid == READER:
            return self.service.reader.get(READER, query, obj_id, None)
        return self.service.get(sid, query, obj_id)

    def _datafiles(
        self, sid: str, dsid: int, files: dict[int, DfInfo], empty: set[int], wanted: bool
    ) -> None:
        """The datafiles with a location of one dataset, a page of maxEntities at a time."""
        after = ""
        count = 0
        while True:
            rows = self._search(
                sid,
                "SELECT df.id, df.name, df.location, df.createId, df.modId FROM Datafile df "
                f"WHERE df.dataset.id = {dsid} AND df.location IS NOT NULL{after} "
                f"ORDER BY df.id LIMIT 0, {self.page}",
            )
            count += len(rows)
            if wanted:
                for dfid, name, location, create_id, mod_id in rows:
                    files[dfid] = DfInfo(dfid, name, location, create_id, mod_id, dsid)
            if len(rows) < self.page:
                break
            after = f" AND df.id > {rows[-1][0]}"
        if count == 0:
            empty.add(dsid)

    def _investigation(
        self,
        sid: str,
        invid: int,
        datasets: dict[int, DsInfo],
        files: dict[int, DfInfo],
        empty: set[int],
        wanted: bool,
    ) -> None:
        rows = self._search(
            sid,
            "SELECT inv.name, inv.visitId, inv.facility.id, inv.facility.name "
            f"FROM Investigation inv WHERE inv.id = {invid}",
        )
        if not rows:
            return  # ids.server: an investigation the user cannot see selects nothing
        inv_name, visit_id, facility_id, facility_name = rows[0]
        found = self._search(
            sid,
            "SELECT ds.id, ds.name, ds.location FROM Dataset ds "
            f"WHERE ds.investigation.id = {invid}",
        )
        for dsid, name, location in found:
            datasets[dsid] = DsInfo(
                dsid, name, location, invid, inv_name, visit_id, facility_id, facility_name
            )
            self._datafiles(sid, dsid, files, empty, wanted)
