"""The cleanup side of ``sv7 run``: the run's journal, beside its result file, and its use.

The journal (``reports/<name>.journal.jsonl``) is started before the run creates anything, with
the catalogue it belongs to, the run's tag, its account and both clocks on its first line; its
path is printed and written into the result file (``run.journal``), so that after a kill -9
``sv7 cleanup reports/`` can finish the job. A server that sent no HTTP ``Date`` (Payara) has
its clock read from the createTime of the run's first object
(:mod:`igestbench.workloads.clock_facility`).

After each group of workers what they created is removed (polite on production) and the journal
says so; at the end of the run — however it ends — whatever is still the run's is removed and
the journal deleted, or kept with a note when something was left.

The run's cleanups need the journal file for nothing but its record of objects without a
Facility: the first line's facts are kept in memory too, and the server shows the rest (all of
the run's objects hang below Facilities named after its tag, or name the tag). So a journal that
can no longer be written (a full disk) or read stops the run but never its cleanup.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from igestbench.client import Catalogue, TransportFailure
from igestbench.client.repeats import RepeatPolicy, own_client
from igestbench.client.server_clock import server_clock
from igestbench.errors import Sv7Error
from igestbench.icat.endpoint import endpoint_of
from igestbench.icat.faults import IcatError
from igestbench.results.server_clock import CREATE_TIME, DATE_HEADER, LOCAL, clock_record
from igestbench.workloads import CatalogueIdentity, Journal, RunTag
from igestbench.workloads.clock_facility import NoCreateTime, clock_from_create
from igestbench.workloads.journal import JournalLock, journal_path_for
from igestbench.workloads.journal_io import WRITE_FAILED, JournalWriteError
from igestbench.workloads.ownership import CleanupReport, cleanup, count_left
from igestbench.workloads.run_window import RunClock
from igestbench.workloads.stored_files import clean_stored_files
from igestbench.workloads.tree_delete import CleanupProgress

if TYPE_CHECKING:
    from igestbench.run.runner import Target


class RunJournal:
    """The journal of one run and the counts of its cleanups."""

    def __init__(
        self,
        result_file: Path,
        tag: RunTag,
        progress: CleanupProgress | None = None,
        repeats: RepeatPolicy | None = None,
    ) -> None:
        self.path = journal_path_for(result_file)
        self.tag = tag
        self.progress = progress
        self.started = False
        self.lock = JournalLock(self.path)
        #: what the first line says, kept in memory: the cleanup needs nothing else
        self.memory = Journal(None)
        self.deleted = 0
        self.already_gone = 0
        #: journaled objects that proved not to be the run's (left alone), as "Entity id"
        self.foreign: list[str] = []
        #: the run's own objects kept because something foreign hangs below them
        self.kept_objects = 0
        #: files removed from the IDS's storage, and those that could not be (with why)
        self.files_deleted = 0
        self.files_left: list[str] = []
        #: how the cleanups' calls are repeated when lost, and how many were
        self.repeats = repeats or RepeatPolicy()
        #: where the server's clock came from (results/server_clock.py), once started
        self.server_clock: dict[str, Any] | None = None

    def start(self, target: Target, api_version: str) -> None:
        """Write the first line: call it before the run creates anything."""
        url = endpoint_of(target.url).service_url
        problem = "no Date header in the answer"
        try:
            client_time, server_time = self.repeats.call(lambda: server_clock(target.client))
        except TransportFailure as exc:  # the WSDL's URL filtered (a proxy): our clock, wider
            client_time, server_time = dt.datetime.now(dt.UTC), None
            problem = f"the WSDL's URL could not be read for its Date header ({exc})"
        catalogue = self._login(target)
        try:
            account = catalogue.user_name()
            identity = CatalogueIdentity(url, api_version, target.local)
            clock = RunClock(client_time, server_time)
            journal = Journal.start(self.path, self.tag.name, identity, account, clock)
            self.memory.run, self.memory.catalogue = self.tag.name, identity
            self.memory.account, self.memory.clock = account, clock
            self.started = True
            # held until the run ends: sv7 cleanup leaves a live run's journal alone
            self.lock = JournalLock(self.path).acquire()
            source = DATE_HEADER
            if server_time is None:  # no Date header (Payara): the server stamps a createTime
                failed = self._read_server_clock(catalogue, journal)
                source = LOCAL if failed else CREATE_TIME
                problem = f"{problem}; the clock Facility: {failed}" if failed else problem
            self.server_clock = self._clock_record(source, problem)
            with contextlib.suppress(Sv7Error):
                catalogue.logout()
        finally:
            catalogue.close()

    def _read_server_clock(self, catalogue: Catalogue, journal: Journal) -> str | None:
        """The server's clock from a createTime, into the journal; what failed, or None."""
        try:
            reading = clock_from_create(catalogue, journal, self.tag)
        except (IcatError, TransportFailure, NoCreateTime) as exc:
            return str(exc) or type(exc).__name__  # the window: the wide one of our clock
        journal.record_clock(reading)
        self.memory.clock = journal.clock
        return None

    def _clock_record(self, source: str, problem: str) -> dict[str, Any]:
        """``run.server_clock``: where the server's clock came from, and the window it gives."""
        clock = self.memory.clock
        assert clock is not None
        offset = (clock.server - clock.client).total_seconds() if clock.server else None
        return clock_record(source, offset, clock.skew.total_seconds(),
                            problem if source == LOCAL else None)

    def _login(self, target: Target) -> Catalogue:
        # the lean client: a cleanup is many small queries, and it spends the least per call;
        # each call safe to repeat is repeated when its connection is lost (client/repeats.py)
        catalogue = own_client(target.client, "lean", self.repeats)
        try:
            catalogue.login(target.credentials.authenticator, target.credentials.as_login())
        except BaseException:
            catalogue.close()
            raise
        return catalogue

    def _journal(self) -> Journal:
        """The journal file as it is now, or what memory holds when it cannot be read."""
        try:
            journal = Journal.load(self.path)
        except Sv7Error:
            journal = self.memory
        journal.written_at = None  # the run is going: its window ends now
        journal.run, journal.account, journal.clock = (
            self.memory.run, self.memory.account, self.memory.clock)  # fmt: skip
        return journal

    def _clean(self, catalogue: Catalogue, target: Target) -> CleanupReport:
        journal = self._journal()
        # the files stored through the IDS first: the catalogue's cleanup removes the
        # Datafiles, after which the IDS could no longer find their files
        stored = clean_stored_files(catalogue, target.client, journal)
        if stored is not None:
            self.files_deleted += stored.deleted
            self.files_left += stored.left
        # ownership's cleanup, which leaves the file alone: the run writes on, finish() removes it
        report = cleanup(catalogue, journal, progress=self.progress)
        self.deleted += report.deleted
        self.already_gone += report.already_gone
        self.kept_objects += report.kept
        self.foreign += [f"{e} {i}" for e, i in report.foreign]
        self.foreign += [f"Facility named {n!r}" for n in report.refused_names]
        return report

    def clean_group(self, target: Target) -> None:
        """Remove what one group of workers created, right after it; mark the journal so."""
        if not self.started:
            return
        catalogue = self._login(target)
        try:
            report = self._clean(catalogue, target)
        finally:
            catalogue.close()
        if report.complete and not self.foreign:  # every root of the run went
            Journal(self.path).mark_cleaned()  # no worker is running now

    def check_outcomes(self, errors: Iterable[str | None]) -> None:
        """Raise :class:`JournalWriteError` when a worker could not write the journal: the run
        stops (its cleanup goes by what the runner holds, not by the file)."""
        for error in errors:
            if error and error.startswith(WRITE_FAILED):
                # "cannot write the journal PATH (REASON)": the worker's reason
                reason = error.rpartition(" (")[2].removesuffix(")") or error
                raise JournalWriteError(self.path, reason)

    def finish(self, target: Target) -> dict[str, Any]:
        """Remove whatever is still the run's, count what is left under the run tag: the
        result file's ``cleanup`` section. The journal is deleted when nothing was left."""
        section: dict[str, Any]
        if not self.started:
            return {"deleted": 0, "already_gone": 0, "left": 0, "journal": None}
        try:
            catalogue = self._login(target)
            try:
                self._clean(catalogue, target)
                left = count_left(catalogue, self.tag)
            finally:
                catalogue.close()
            section = {"deleted": self.deleted, "already_gone": self.already_gone, "left": left}
        except (IcatError, TransportFailure) as exc:  # login refused, server gone: kept, said
            section = {"deleted": self.deleted, "already_gone": self.already_gone, "left": None,
                       "error": str(exc)}  # fmt: skip
        self.lock.release()
        if self.files_deleted or self.files_left:
            section["files_deleted"] = self.files_deleted
            section["files_left"] = self.files_left
        if self.foreign:
            section["foreign"] = self.foreign
        if self.kept_objects:
            section["kept"] = self.kept_objects
        if self.files_deleted or self.files_left:
            section["files_deleted"] = self.files_deleted
            section["files_left"] = self.files_left
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
