"""The cleanup side of ``sv7 run``: the run's journal, beside its result file, and its use.

The journal (``reports/<name>.journal.jsonl``) is started before the run creates anything, with
the catalogue it belongs to on its first line; its path is printed and written into the result
file (``run.journal``), so that after a kill -9 ``sv7 cleanup reports/`` can finish the job.
After each group of workers what they created is removed (polite on production) and the journal
says so; at the end of the run — however it ends — whatever is still journaled is removed and
the journal deleted, or kept with a note when something was left.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from igestbench.client import Catalogue, TransportFailure, connect
from igestbench.errors import Sv7Error
from igestbench.icat.endpoint import endpoint_of
from igestbench.icat.faults import IcatError
from igestbench.icat.query import Condition, Query
from igestbench.workloads import CatalogueIdentity, Journal, RunTag, cleanup
from igestbench.workloads.journal import JournalLock, journal_path_for
from igestbench.workloads.ownership import count_left
from igestbench.workloads.stored_files import clean_stored_files

if TYPE_CHECKING:
    from igestbench.run.runner import Target


class RunJournal:
    """The journal of one run and the counts of its cleanups."""

    def __init__(self, result_file: Path, tag: RunTag) -> None:
        self.path = journal_path_for(result_file)
        self.tag = tag
        self.started = False
        self.lock = JournalLock(self.path)
        self.deleted = 0
        self.already_gone = 0
        #: journaled objects that proved not to be the run's (left alone), as "Entity id"
        self.foreign: list[str] = []
        #: files removed from the IDS's storage, and those that could not be (with why)
        self.files_deleted = 0
        self.files_left: list[str] = []

    def start(self, target: Target, api_version: str) -> None:
        """Write the first line: call it before the run creates anything."""
        url = endpoint_of(target.url).service_url
        Journal.start(self.path, self.tag.name, CatalogueIdentity(url, api_version, target.local))
        self.started = True
        # held until the run ends: sv7 cleanup leaves a live run's journal alone
        self.lock = JournalLock(self.path).acquire()

    def _login(self, target: Target) -> Catalogue:
        catalogue = connect(target.client, "zeep")
        try:
            catalogue.login(target.credentials.authenticator, target.credentials.as_login())
        except BaseException:
            catalogue.close()
            raise
        return catalogue

    def _clean(self, catalogue: Catalogue, target: Target) -> Journal:
        journal = Journal.load(self.path)
        # the files stored through the IDS first: the catalogue's cleanup removes the
        # Datafiles, after which the IDS could no longer find their files
        stored = clean_stored_files(catalogue, target.client, journal)
        if stored is not None:
            self.files_deleted += stored.deleted
            self.files_left += stored.left
        report = cleanup(catalogue, journal)
        self.deleted += report.deleted
        self.already_gone += report.already_gone
        self.foreign += [f"{e} {i}" for e, i in report.foreign]
        return journal

    def clean_group(self, target: Target) -> None:
        """Remove what one group of workers created, right after it; mark the journal so."""
        if not self.started:
            return
        catalogue = self._login(target)
        try:
            journal = self._clean(catalogue, target)
            if not self.foreign and count_left(catalogue, journal.facilities) == 0:
                Journal(self.path).mark_cleaned()  # no worker is running now
        finally:
            catalogue.close()

    def finish(self, target: Target) -> dict[str, Any]:
        """Remove whatever is still journaled, count what is left under the run tag: the
        result file's ``cleanup`` section. The journal is deleted when nothing was left."""
        section: dict[str, Any]
        if not self.started:
            return {"deleted": 0, "already_gone": 0, "left": 0, "journal": None}
        try:
            catalogue = self._login(target)
        except Sv7Error as exc:
            section = {"deleted": self.deleted, "already_gone": self.already_gone, "left": None,
                       "error": str(exc)}  # fmt: skip
            return self._keep(section)
        try:
            self._clean(catalogue, target)
            query = Query("Facility").where({"name": Condition("LIKE", self.tag.name + "%")})
            (left,) = catalogue.search(query.count())
            section = {"deleted": self.deleted, "already_gone": self.already_gone,
                       "left": int(left)}  # fmt: skip
        except (IcatError, TransportFailure) as exc:
            section = {"deleted": self.deleted, "already_gone": self.already_gone, "left": None,
                       "error": str(exc)}  # fmt: skip
        finally:
            catalogue.close()
        self.lock.release()
        if self.files_deleted or self.files_left:
            section["files_deleted"] = self.files_deleted
            section["files_left"] = self.files_left
        if self.foreign:
            section["foreign"] = self.foreign
        if section["left"] == 0 and not self.foreign and not self.files_left:
            self.path.unlink(missing_ok=True)
            section["journal"] = None
            return section
        return self._keep(section)

    @property
    def kept(self) -> bool:
        """Whether the journal is kept (something was left): it is gone once all is clean."""
        return self.started and self.path.exists()

    def _keep(self, section: dict[str, Any]) -> dict[str, Any]:
        self.lock.release()
        section["journal"] = str(self.path)
        return section
