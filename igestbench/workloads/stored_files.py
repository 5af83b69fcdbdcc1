"""Removing the files a run stored through an ICAT Data Service, before its objects.

Deleting a Datafile in ICAT leaves its file in the IDS's storage; only the IDS's ``delete``
removes both. So before the catalogue's cleanup removes the run's tree, every Datafile *with a
location* below the run's own Facilities (named after the run tag, each journaled before
anything was created below it) that the run's own account created is deleted through the IDS.
Asking the server rather than the journal finds also the Datafile of an upload a stop cut off
between the IDS's answer and the journal line; the run's Facility, account and location prove
the file is the run's, and nothing else is touched. Batched: one search per 20 Facilities (in
pages, so that no answer passes the server's entity limit) and one IDS ``delete`` per 200
Datafiles. The scale part's Facility is left out: its tree registers up to millions of
Datafiles with a location but stores no byte, and the catalogue's cleanup removes them.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from igestbench.client.base import Catalogue, ClientConfig
from igestbench.client.data_service import (
    DataService,
    IdsFault,
    connect_data_service,
    ids_url_for,
)
from igestbench.errors import UsageError
from igestbench.icat.query import Condition, Query
from igestbench.workloads.journal import Journal
from igestbench.workloads.survey import search_all

#: How the temporary storage folders of the built-in catalogue's IDS are named.
LOCAL_STORAGE_PREFIX = "sv7-ids-"
_FACILITIES_PER_SEARCH = 20
_DELETE_BATCH = 200
#: A dataset being read by someone is "busy" (503) for a moment: tries per batch.
_TRIES = 5


@dataclass
class StoredFilesReport:
    deleted: int = 0
    #: Datafiles whose files could not be deleted, with why (left for ``sv7 cleanup``).
    left: list[str] = field(default_factory=list)


def stored_datafiles(catalogue: Catalogue, facilities: Sequence[str]) -> list[int]:
    """Ids of the Datafiles with a location below these Facilities, created by this account."""
    user = catalogue.user_name()
    ids: list[int] = []
    names = list(dict.fromkeys(facilities))
    for start in range(0, len(names), _FACILITIES_PER_SEARCH):
        some = names[start : start + _FACILITIES_PER_SEARCH]
        query = Query("Datafile").select("id").where({
            "dataset.investigation.facility.name": Condition("IN", some),
            "location": Condition("IS NOT NULL"),
            "createId": Condition("=", user),
        }).order_by("id")  # fmt: skip
        ids += [int(i) for i in search_all(catalogue, query)]
    return sorted(set(ids))


def remove_stored_files(
    catalogue: Catalogue, service: DataService, facilities: Sequence[str]
) -> StoredFilesReport:
    """IDS-delete the run's stored Datafiles (see the module docstring)."""
    report = StoredFilesReport()
    ids = stored_datafiles(catalogue, facilities)
    for start in range(0, len(ids), _DELETE_BATCH):
        batch = ids[start : start + _DELETE_BATCH]
        for attempt in range(_TRIES):
            try:
                service.delete(batch)
                report.deleted += len(batch)
                break
            except IdsFault as exc:
                if exc.code != "DataNotOnlineException" or attempt == _TRIES - 1:
                    report.left += [f"Datafile {i} ({exc.code})" for i in batch]
                    break
                time.sleep(0.5 * (attempt + 1))
    return report


def clean_stored_files(
    catalogue: Catalogue, config: ClientConfig, journal: Journal
) -> StoredFilesReport | None:
    """Before a journal's cleanup: its files, through the IDS it names (None: it names none).

    The IDS must be the one beside the journal's catalogue: a journal edited to name another
    server's IDS is refused, never followed.
    """
    url = journal.data_service
    if url is None:
        return None
    if journal.catalogue is not None and url != ids_url_for(journal.catalogue.url):
        raise UsageError(
            f"the journal names the IDS {url}, which is not the one beside its catalogue "
            f"{journal.catalogue.url}; its files are left alone"
        )
    # only the Facilities named after the run's own tag: a journal edited to name another
    # Facility does not make its files the run's (as the catalogue's cleanup refuses it too)
    tag = journal.run_tag()
    facilities = [name for name in journal.facilities
                  if tag.owns_name(name) and name != tag.scale_facility]  # fmt: skip
    service = connect_data_service(config, url, catalogue)
    try:
        return remove_stored_files(catalogue, service, facilities)
    finally:
        service.close()


def remove_local_storage(journal: Journal) -> str | None:
    """The storage folder of a built-in catalogue's IDS that a killed run left, removed.

    Only a folder that is one (``sv7-ids-…`` holding ``main`` and ``cache``, as
    :class:`~igestbench.mock.ids.storage.MainStorage` lays it out) is removed: a journal edited
    to name another folder removes nothing.
    """
    if journal.data_storage is None:
        return None
    folder = Path(journal.data_storage)
    ours = (
        folder.name.startswith(LOCAL_STORAGE_PREFIX)
        and (folder / "main").is_dir()
        and (folder / "cache").is_dir()
    )
    if not ours:
        return None
    shutil.rmtree(folder, ignore_errors=True)
    return str(folder)
