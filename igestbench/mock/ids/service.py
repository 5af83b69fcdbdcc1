"""The ICAT Data Service's calls over the local catalogue, as ids.server 2.1.1 answers them.

Every call that names data asks the catalogue with the user's session (through
:class:`~igestbench.mock.ids.selection.Selector`), so ICAT's rules decide: READ to get, and for
``put`` READ on the Dataset and DatafileFormat and CREATE on the new Datafile, which the
catalogue judges as for any create. Calls run in the catalogue's worker threads; the bytes of
a transfer move in the IDS's own threads (:mod:`igestbench.mock.ids.server`).

**Storage levels.** There is one main storage, on the local disk. By default the IDS presents
itself as two-level (``isTwoLevel`` true, storage unit DATASET) with an *emulated* archive:
``archive``, ``restore``, ``write`` and ``reset`` check their session and selection as
ids.server does and are accepted, but nothing ever leaves the main storage, so every status is
ONLINE and ``isPrepared`` is true at once. With ``two_level=False`` it is a single-level IDS:
``archive``, ``restore`` and ``write`` answer NotImplementedException as ids.server does there.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatError, IcatExceptionType
from igestbench.mock.ids.errors import (
    BadRequestException,
    InsufficientPrivilegesException,
    InternalException,
    NotFoundException,
    NotImplementedException,
    from_icat,
)
from igestbench.mock.ids.selection import (
    READER,
    DfInfo,
    DsInfo,
    Selection,
    Selector,
    parse_ids,
    validate_uuid,
)
from igestbench.mock.ids.storage import LockManager, MainStorage, PreparedStore
from igestbench.mock.ids.transfer import FileAnswer, ZipAnswer, entry_name
from igestbench.mock.ids.upload import Upload
from igestbench.mock.service import IcatService

#: The ids.server release whose behaviour this follows (the one that pairs with icat.server 6).
IDS_VERSION = "2.1.1"
_READER = READER
#: How ids.server names an ICAT fault in its messages (the SOAP client's exception class).
_ICAT_EXCEPTION = "class org.icatproject.IcatException_Exception"
_SINGLE_LEVEL = "This operation is unavailable for single level storage"
#: Wrapping of put's answer for the old GWT TopCAT (putAsPost's ``wrap`` and ``padding``).
WRAP_PREFIX = "<html><script type=\"text/javascript\">window.name='"
WRAP_PADDED = "<html><script type=\"text/javascript\">/*" + " *        \n" * 24 + "*/window.name='"
WRAP_SUFFIX = "';</script></html>"


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class Download:
    """What getData will send: the producer of its bytes, and the headers that go with it."""

    produce: FileAnswer | ZipAnswer
    filename: str
    partial: bool
    #: Content-Length (ids.server gives it only for one file named by id with a session).
    length: int | None
    datasets: tuple[int, ...]


class IdsService:
    """ids.server's calls (see module docstring); errors are IdsError exceptions."""

    def __init__(
        self,
        catalogue: IcatService,
        storage: MainStorage,
        prepared: PreparedStore,
        two_level: bool = True,
    ) -> None:
        self.catalogue = catalogue
        self.storage = storage
        self.prepared = prepared
        self.two_level = two_level
        self.locks = LockManager()
        self.selector = Selector(catalogue)

    # --- about the service ---------------------------------------------------------------

    def version(self) -> str:
        return _dumps({"version": IDS_VERSION})

    def icat_url(self) -> str:
        return self.catalogue.base_url

    def service_status(self, sid: str | None) -> str:
        try:
            user = self.catalogue.get_user_name(sid)
        except IcatError as exc:
            if exc.fault_type is IcatExceptionType.SESSION:
                raise InsufficientPrivilegesException(f"{_ICAT_EXCEPTION} {exc.message}") from None
            raise InternalException(f"{_ICAT_EXCEPTION} {exc.message}") from None
        if not self.catalogue.authz.is_root(user):
            raise InsufficientPrivilegesException(
                f"{user} is not included in the ids rootUserNames set."
            )
        locks = self.locks.info()
        return _dumps({"opsQueue": [], "lockCount": len(locks), "locks": locks, "failures": []})

    # --- selections ----------------------------------------------------------------------

    def _select(self, sid: str | None, ids: dict[str, str | None], files: bool = True) -> Selection:
        return self.selector.select(
            validate_uuid("sessionId", sid),
            ids.get("investigationIds"),
            ids.get("datasetIds"),
            ids.get("datafileIds"),
            datafiles=files,
        )

    def _prepared(self, prepared_id: str | None) -> dict[str, Any]:
        return self.prepared.load(validate_uuid("preparedId", prepared_id))

    def prepare_data(
        self, sid: str | None, ids: dict[str, str | None], compress: bool, zip_: bool
    ) -> str:
        selection = self._select(sid, ids)
        return self.prepared.save({
            "zip": zip_ or selection.must_zip,
            "compress": compress,
            "dsInfo": [ds.to_json() for ds in selection.datasets.values()],
            "dfInfo": [df.to_json() for df in selection.datafiles],
            "emptyDs": sorted(selection.empty),
        })  # fmt: skip

    def is_prepared(self, prepared_id: str | None) -> str:
        self._prepared(prepared_id)
        return "true"  # everything is in the main storage: prepared at once

    def datafile_ids(
        self, prepared_id: str | None, sid: str | None, ids: dict[str, str | None]
    ) -> str:
        if prepared_id is not None:
            p = self._prepared(prepared_id)
            return _dumps({
                "zip": p["zip"], "compress": p["compress"], "ids": [d["dfId"] for d in p["dfInfo"]],
            })  # fmt: skip
        selection = self._select(sid, ids)
        return _dumps({"ids": [df.id for df in selection.datafiles]})

    def size(self, prepared_id: str | None, sid: str | None, ids: dict[str, str | None]) -> str:
        if prepared_id is not None:
            p = self._prepared(prepared_id)
            return str(self._sum(_READER, [d["dfId"] for d in p["dfInfo"]], "df.id"))
        sid = validate_uuid("sessionId", sid)
        parsed = {
            k: parse_ids(k, ids.get(k)) for k in ("datafileIds", "datasetIds", "investigationIds")
        }
        if sum(len(v) for v in parsed.values()) == 1:
            # ids.server's fast path: one SUM, and only if it is 0 a look at the object
            size = (
                self._sum(sid, parsed["investigationIds"], "df.dataset.investigation.id")
                + self._sum(sid, parsed["datasetIds"], "df.dataset.id")
                + self._sum(sid, parsed["datafileIds"], "df.id")
            )
            if size == 0:
                self._exists_for_size(sid, parsed)
            return str(size)
        selection = self._select(sid, ids)
        return str(self._sum(sid, [df.id for df in selection.datafiles], "df.id"))

    def _sum(self, sid: str, ids: list[int], where: str) -> int:
        total = 0
        for start in range(0, len(ids), 500):
            chunk = ",".join(str(i) for i in ids[start : start + 500])
            query = (
                f"SELECT SUM(df.fileSize) FROM Datafile df WHERE {where} IN ({chunk}) "
                "AND df.location IS NOT NULL"
            )
            try:
                if sid == _READER:
                    items = self.catalogue.reader.search(_READER, query, None).items
                else:
                    items = self.catalogue.search(sid, query).items
            except IcatError as exc:
                raise InternalException(f"{_ICAT_EXCEPTION} {exc.message}") from None
            total += int(items[0] or 0) if items else 0
        return total

    def _exists_for_size(self, sid: str, parsed: dict[str, list[int]]) -> None:
        """getSize's answer to a sum of 0: any fault getting the object is NotFoundException."""
        try:
            if parsed["datafileIds"]:
                df = self.catalogue.get(sid, "Datafile", parsed["datafileIds"][0])
                if df.get("location") is None:
                    raise NotFoundException("Datafile not found")
            if parsed["datasetIds"]:
                self.catalogue.get(sid, "Dataset", parsed["datasetIds"][0])
            if parsed["investigationIds"]:
                self.catalogue.get(sid, "Investigation", parsed["investigationIds"][0])
        except IcatError as exc:
            raise NotFoundException(exc.message) from None

    def status(self, prepared_id: str | None, sid: str | None, ids: dict[str, str | None]) -> str:
        if prepared_id is not None:
            self._prepared(prepared_id)
            return "ONLINE"
        if sid is None:  # ids.server asks as its reader account: no rules apply
            self.selector.select(
                READER, ids.get("investigationIds"), ids.get("datasetIds"),
                ids.get("datafileIds"), datafiles=False,
            )
            return "ONLINE"
        self._select(sid, ids, files=False)
        return "ONLINE"

    # --- the emulated archive ------------------------------------------------------------

    def archive_or_restore(self, sid: str | None, ids: dict[str, str | None]) -> None:
        validate_uuid("sessionId", sid)
        if not self.two_level:
            raise NotImplementedException(_SINGLE_LEVEL)
        self._select(sid, ids, files=False)  # accepted: the data stay in the main storage

    def write(self, sid: str | None, ids: dict[str, str | None]) -> None:
        selection = self._select(sid, ids)
        with self.locks.lock(selection.datasets, shared=True):
            if not self.two_level:
                raise NotImplementedException(_SINGLE_LEVEL)

    def reset(self, prepared_id: str | None, sid: str | None, ids: dict[str, str | None]) -> None:
        if prepared_id is not None:
            self._prepared(prepared_id)
        else:
            self._select(sid, ids)

    # --- data ----------------------------------------------------------------------------

    def get_data(
        self,
        prepared_id: str | None,
        sid: str | None,
        ids: dict[str, str | None],
        compress: bool,
        zip_: bool,
        outname: str | None,
        offset: int,
    ) -> tuple[Download, Any]:
        """What to send and the lock to release once it is sent (datasets locked SHARED)."""
        length: int | None = None
        if prepared_id is not None:
            p = self._prepared(prepared_id)
            zip_, compress = bool(p["zip"]), bool(p["compress"])
            datasets = {d["dsId"]: DsInfo.from_json(d) for d in p["dsInfo"]}
            files = sorted(DfInfo.from_json(d) for d in p["dfInfo"])
        else:
            selection = self._select(sid, ids)
            datasets, files = selection.datasets, selection.datafiles
            if not zip_ and not selection.must_zip:
                length = max(0, selection.length - offset)
            zip_ = zip_ or selection.must_zip
        lock = self.locks.lock(datasets, shared=True)
        try:
            self._still_there(files)
            if not zip_ and not files:
                raise InternalException("class java.util.NoSuchElementException null")
            if outname is None:
                stamp = dt.datetime.now(self.catalogue.zone).strftime("%Y-%m-%d_%H-%M-%S")
                name = f"{stamp}.zip" if zip_ else files[0].name
            elif zip_ and outname.rsplit(".", 1)[-1] != "zip":
                name = outname + ".zip"
            else:
                name = outname
            produce: FileAnswer | ZipAnswer
            if zip_:
                entries = [(entry_name(datasets[f.ds_id], f), f.location) for f in files]
                produce = ZipAnswer(self.storage, entries, compress, self.catalogue.zone, offset)
            else:
                self.storage.path(files[0].location)  # refuses a location outside the storage
                produce = FileAnswer(self.storage, files[0].location, offset)
        except BaseException:
            lock.release()
            raise
        return Download(produce, name, offset != 0, length, tuple(datasets)), lock

    def _still_there(self, files: list[DfInfo]) -> None:
        """ids.server's check that no selected datafile was deleted since it was selected."""
        ids = [f.id for f in files]
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            listed = ",".join(map(str, chunk))
            query = f"SELECT COUNT(df) FROM Datafile df WHERE df.id IN ({listed})"
            items = self.catalogue.reader.search(_READER, query, None).items
            if int(items[0]) != len(chunk):
                raise NotFoundException("One of the datafiles requested has been deleted")

    def delete(self, sid: str | None, ids: dict[str, str | None]) -> None:
        selection = self._select(sid, ids)
        with self.locks.lock(selection.datasets, shared=False):
            beans = [Bean("Datafile", {"id": df.id}) for df in selection.datafiles]
            try:
                if beans:
                    self.catalogue.delete_many(sid, beans)
            except IcatError as exc:
                raise from_icat(exc) from None
            for df in selection.datafiles:
                # a file another Datafile still points at stays (ids.server's LIKE 'loc%')
                pattern = df.location.replace("'", "''")
                query = f"SELECT COUNT(df) FROM Datafile df WHERE df.location LIKE '{pattern}%'"
                shared = int(self.catalogue.reader.search(_READER, query, None).items[0])
                if shared == 0 and self.storage.exists(df.location):
                    self.storage.delete(df.location)

    def put(
        self, upload: Upload, params: Mapping[str, str | None], wrap: bool = False
    ) -> tuple[int, str]:
        """Store an upload and register its Datafile; (201, ids.server's JSON answer)."""
        sid = validate_uuid("sessionId", params.get("sessionId"))
        name = params.get("name")
        if name is None:
            raise BadRequestException("The name parameter must be set")
        format_id = _required_long(params, "datafileFormatId")
        dataset_id = _required_long(params, "datasetId")
        create_time = _long(params, "datafileCreateTime")
        mod_time = _long(params, "datafileModTime")
        try:
            ds = self.catalogue.get(sid, "Dataset ds INCLUDE ds.investigation.facility", dataset_id)
        except IcatError as exc:
            raise from_icat(exc) from None
        info = DsInfo.from_bean(ds)
        assert upload.path is not None
        with self.locks.lock([info.id], shared=True):
            location = self.storage.commit(upload.path, info.inv_id, info.id)
            try:
                df_id = self._register(
                    sid, name, format_id, location, upload, dataset_id, params,
                    create_time, mod_time,
                )  # fmt: skip
            except BaseException:
                self.storage.delete(location)
                raise
        escaped = location.replace("\\", "\\\\").replace("'", "\\'")
        body = _dumps(
            {"id": df_id, "checksum": upload.crc32, "location": escaped, "size": upload.size}
        )
        return 201, (WRAP_PREFIX + body + WRAP_SUFFIX) if wrap else body

    def _register(
        self,
        sid: str,
        name: str,
        format_id: int,
        location: str,
        upload: Upload,
        dataset_id: int,
        params: Mapping[str, str | None],
        create_time: int | None,
        mod_time: int | None,
    ) -> int:
        try:
            self.catalogue.get(sid, "DatafileFormat", format_id)
        except IcatError as exc:
            raise from_icat(exc) from None
        values: dict[str, Any] = {
            "name": name,
            "location": location,
            "fileSize": upload.size,
            "checksum": f"{upload.crc32:x}",  # Java's Long.toHexString
            "dataset": Bean("Dataset", {"id": dataset_id}),
            "datafileFormat": Bean("DatafileFormat", {"id": format_id}),
        }
        for key in ("description", "doi"):
            if params.get(key) is not None:
                values[key] = params[key]
        for key, millis in (("datafileCreateTime", create_time), ("datafileModTime", mod_time)):
            if millis is not None:
                values[key] = dt.datetime.fromtimestamp(millis / 1000, dt.UTC)
        try:
            return self.catalogue.create(sid, Bean("Datafile", values))
        except IcatError as exc:
            if exc.fault_type is IcatExceptionType.VALIDATION:
                raise BadRequestException(exc.message) from None
            raise from_icat(exc) from None


def _required_long(params: Mapping[str, str | None], name: str) -> int:
    value = _long(params, name)
    if value is None:
        raise BadRequestException(f"The {name} parameter must be set")
    return value


def _long(params: Mapping[str, str | None], name: str) -> int | None:
    """A Java long parameter (``Long.parseLong``): None when absent, BadRequest when no long."""
    text = params.get(name)
    if text is None:
        return None
    try:
        value = int(text, 10)
    except ValueError:
        value = None
    if value is None or text.strip() != text or not -(2**63) <= value < 2**63 or "_" in text:
        raise BadRequestException(f"The {name} parameter must be numeric")
    return value
