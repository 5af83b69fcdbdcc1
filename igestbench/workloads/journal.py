"""What a run created, and on which catalogue, so that it can remove exactly that.

Everything a run creates hangs below a Facility of its own, named after the run tag
(``sv7-<site>-<run id>…``), and every created object is written to the journal as soon as its
id is known. The run's journal is one JSON-lines file beside its result file
(``reports/<name>.journal.jsonl``); the runner and all its worker processes append to it, each
line in one ``write`` to a file opened with ``O_APPEND``, so lines of different processes never
mix. A kill -9 leaves the file behind for ``sv7 cleanup`` to finish the job.

The lines, in the order they are written::

    {"journal": 3, "run": "sv7-elettra-…", "catalogue": {"url": …, "api_version": …, "local": …},
     "account": "simple/ingest", "clock": {"client": "…Z", "server": "…Z"}}
    {"clock": {"client": "…Z", "server": "…Z"}}   # server sent no Date: a createTime read back
    {"facility": "sv7-elettra-…-full-cycle-zeep-c1-w0"}   # before anything below it is created
    {"data_service": "https://…/ids"}                     # before a file is stored through it
                                           # (+ "storage": its folder, for the built-in one)
    {"entity": "Datafile", "id": 4711}                     # a created object …
    {"entity": "Datafile", "ids": [4712, 4713, …]}         # … or a createMany batch of them
    {"cleaned": true}                                      # all above is cleaned up
    {"verified": {"window": …, "journaled": …, "foreign": […]}}  # sv7 cleanup's check (resumable)

The first line says which catalogue the journal belongs to (:mod:`.ownership` refuses to apply
it to another one), the run's tag, the account that created what follows and both clocks when
the run began (:mod:`.run_window`): what cleanup needs to ask the server which objects are the
run's. A server that sends no HTTP ``Date`` leaves the first line's server clock null; the
createTime of the run's first object gives it on a ``clock`` line (:mod:`.clock_facility`).
Every line is written whole (:mod:`.journal_io`); a torn line is skipped on reading, with
a note. Journals of version 2 (no account, no clocks) and of igestbench 0.1.0 (no first line)
still load; their window is taken from the run tag.
"""

from __future__ import annotations

import datetime as dt
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from igestbench.errors import Sv7Error, UsageError
from igestbench.workloads.journal_io import JournalWriteError, append_lines, read_lines
from igestbench.workloads.run_tag import InvalidRunTag, RunTag
from igestbench.workloads.run_window import RunClock, RunWindow

#: The ``journal`` key of a journal's first line (igestbench 0.1.0 wrote no such line: 1;
#: 2 had no account and no clocks; 3 had no ``clock`` line).
JOURNAL_VERSION = 4
READABLE_VERSIONS = (2, 3, 4)
#: How a run's journal is named beside its result file.
JOURNAL_SUFFIX = ".journal.jsonl"


@dataclass(frozen=True)
class CatalogueIdentity:
    """Which catalogue a journal belongs to: what the run saw when it started.

    ``url`` is the normalised service URL, ``api_version`` what getApiVersion answered; a
    ``local`` catalogue was the one ``sv7 run`` started for itself and stopped with the run.
    Two servers can share both URL and version (a reinstalled catalogue, a test copy behind the
    same name): that case is caught object by object, since cleanup deletes only what the
    server shows is the run's.
    """

    url: str
    api_version: str
    local: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "api_version": self.api_version, "local": self.local}

    @classmethod
    def from_dict(cls, data: Any) -> CatalogueIdentity:
        if not isinstance(data, dict):
            raise ValueError("catalogue is not an object")
        return cls(str(data["url"]), str(data["api_version"]), bool(data.get("local", False)))

    def describe(self) -> str:
        return f"{self.url} (ICAT {self.api_version})"


def journal_path_for(result_file: Path) -> Path:
    """``reports/<name>.journal.jsonl`` beside ``reports/<name>.json[.gz]``."""
    name = result_file.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return result_file.with_name(name + JOURNAL_SUFFIX)


class JournalInUse(Sv7Error):
    """Another process (a run still going, another ``sv7 cleanup``) holds the journal."""


class JournalLock:
    """An exclusive lock on a journal file for as long as it is held (``flock``).

    The runner holds it for the whole run, ``sv7 cleanup`` while it works: so a cleanup never
    deletes what a live run is still using, and two cleanups never race. The kernel releases it
    when the holder dies, also by kill -9. Where there is no ``flock`` (Windows) it is a no-op.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> JournalLock:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            import fcntl
        except ImportError:  # no flock here: nothing to hold
            os.close(fd)
            return self
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise JournalInUse(
                f"{self.path}: in use by a run still going (or another sv7 cleanup); skipped"
            ) from None
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the lock
            self._fd = None

    def __enter__(self) -> JournalLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()



class Journal:
    """Created objects in creation order, mirrored to a JSON-lines file if one is given.

    The ids are kept per entity in compact arrays (8 bytes an id), so that a run journaling a
    tree of millions of objects per createMany batch costs little memory.
    """

    def __init__(self, path: Path | None = None, facility: str | None = None) -> None:
        self.path = path
        #: the file :meth:`load` read it from (it writes nothing there): what a cleanup that
        #: leaves nothing of the run removes, as it removes a written journal's ``path``
        self.source: Path | None = None
        #: the Facility this journal object named (each worker names its own)
        self.facility: str | None = None
        #: the run tag, catalogue, account and clocks of the file's first line (None: unknown)
        self.run: str | None = None
        self.catalogue: CatalogueIdentity | None = None
        self.account: str | None = None
        self.clock: RunClock | None = None
        #: when the file was last written (this machine's clock), for a journal read back
        self.written_at: dt.datetime | None = None
        #: notes about torn lines skipped while reading the file
        self.skipped: list[str] = []
        #: sv7 cleanup's record of its verification (resuming without redoing it), if any
        self.verified: dict[str, Any] | None = None
        self._facilities: list[str] = []
        self._runs: list[tuple[str, array[int]]] = []
        #: the ICAT Data Service the run stored files through (None: it stored none)
        self.data_service: str | None = None
        #: the built-in catalogue's IDS storage folder (it dies with a killed run; sv7 cleanup
        #: removes it)
        self.data_storage: str | None = None
        if facility is not None:
            self.name_facility(facility)

    @classmethod
    def start(
        cls,
        path: Path,
        run: str,
        catalogue: CatalogueIdentity,
        account: str | None = None,
        clock: RunClock | None = None,
    ) -> Journal:
        """Begin a run's journal file with the line that says whose it is (never overwrites)."""
        RunTag.parse(run)  # a journal sv7 could not clean up after is never started
        clock = clock or RunClock(dt.datetime.now(dt.UTC))
        header = {"journal": JOURNAL_VERSION, "run": run, "catalogue": catalogue.to_dict(),
                  "account": account, "clock": clock.to_dict()}  # fmt: skip
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise UsageError(f"{path}: a journal already exists there; not overwritten") from None
        except OSError as exc:
            raise JournalWriteError(path, exc.strerror or str(exc)) from None
        os.close(fd)
        try:
            append_lines(path, [header])
        except JournalWriteError:
            path.unlink(missing_ok=True)  # an empty journal would only confuse sv7 cleanup
            raise
        journal = cls(path)
        journal.run, journal.catalogue = run, catalogue
        journal.account, journal.clock = account, clock
        return journal

    def _write(self, lines: Iterable[dict[str, Any]]) -> None:
        if self.path is not None:
            append_lines(self.path, lines)

    def name_facility(self, name: str) -> None:
        """Record a Facility name of the run: call it before creating anything below it."""
        self.facility = name
        self._facilities.append(name)
        self._write([{"facility": name}])

    def name_data_service(self, url: str, storage: str | None = None) -> None:
        """Record the IDS the run stores files through (and, for the built-in catalogue's, its
        storage folder): call it before the first upload."""
        self.data_service, self.data_storage = url, storage
        line: dict[str, str] = {"data_service": url}
        if storage is not None:
            line["storage"] = storage
        self._write([line])

    def add(self, entity: str, obj_id: int) -> None:
        self.add_many(entity, [obj_id])

    def add_many(self, entity: str, ids: Iterable[int]) -> None:
        """Record created objects of one entity: one line for the whole batch."""
        new = array("q", (int(i) for i in ids))
        if not new:
            return
        self._remember(entity, new)
        if len(new) == 1:
            self._write([{"entity": entity, "id": new[0]}])
        else:
            self._write([{"entity": entity, "ids": new.tolist()}])

    def _remember(self, entity: str, ids: array[int]) -> None:
        if self._runs and self._runs[-1][0] == entity:
            self._runs[-1][1].extend(ids)
        else:
            self._runs.append((entity, ids))

    def record_clock(self, reading: RunClock) -> None:
        """Record a later reading of both clocks (the server sent no ``Date`` at the start)."""
        self._write([{"clock": reading.to_dict()}])
        self._sync_clock(reading)

    def _sync_clock(self, reading: RunClock) -> None:
        self.clock = self.clock.synced_by(reading) if self.clock is not None else reading

    def mark_cleaned(self) -> None:
        """Everything journaled so far is cleaned up (call it while nobody else writes)."""
        self._forget()
        self._write([{"cleaned": True}])

    def _forget(self) -> None:
        self._runs.clear()
        self._facilities.clear()
        self.verified = None

    def record_verified(self, record: Mapping[str, Any]) -> None:
        """sv7 cleanup's verification, kept so that a cleanup stopped hard resumes after it."""
        self.verified = dict(record)
        self._write([{"verified": self.verified}])

    @property
    def entries(self) -> Sequence[tuple[str, int]]:
        return tuple((entity, i) for entity, ids in self._runs for i in ids)

    def ids_by_entity(self) -> dict[str, array[int]]:
        """The journaled ids of each entity (duplicates possible), without building tuples."""
        found: dict[str, array[int]] = {}
        for entity, ids in self._runs:
            found.setdefault(entity, array("q")).extend(ids)
        return found

    @property
    def facilities(self) -> tuple[str, ...]:
        """The Facility names the journal lists (everything the run creates hangs below one)."""
        return tuple(dict.fromkeys(self._facilities))

    def __len__(self) -> int:
        return sum(len(ids) for _, ids in self._runs)

    def run_tag(self) -> RunTag:
        """The run's tag, validated: the first line's, else (a journal written without one) the
        tag of its first Facility. :class:`InvalidRunTag` when there is no valid one."""
        if self.run is not None:
            return RunTag.parse(self.run)
        if not self._facilities:
            raise InvalidRunTag(
                "the journal names no run (no first line, no Facility line); nothing in it can "
                "be shown to be a run's: nothing deleted"
            )
        return RunTag.of_facility(self._facilities[0])

    def window(self, now: dt.datetime | None = None) -> RunWindow:
        """The run's window on the server's clock (:mod:`.run_window`).

        A journal read back from a file belongs to a run that ended, at the file's last write
        (or a cleanup already fixed its window: resumed as it was); otherwise the run is going.
        """
        if self.verified is not None and "window" in self.verified:
            return RunWindow.from_dict(self.verified["window"])
        clock = self.clock or RunClock(self.run_tag().started)
        if self.written_at is not None:
            return clock.window(self.written_at, in_flight=True)
        return clock.window(now or dt.datetime.now(dt.UTC), in_flight=False)

    @classmethod
    def load(cls, path: Path) -> Journal:
        """The journal a crashed run left; clear errors for a missing or damaged file."""
        journal = cls(None)
        journal.source = path
        entries, journal.skipped = read_lines(path)
        if not entries:
            raise UsageError(f"{path}: empty, not a journal")
        for index, (number, entry) in enumerate(entries):
            try:
                journal._read_line(entry, first=index == 0 and number == 1)
            except (ValueError, KeyError, TypeError):
                raise UsageError(f"{path}:{number}: not a journal entry") from None
        journal.written_at = dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC)
        return journal

    def _read_line(self, entry: Any, first: bool) -> None:
        if not isinstance(entry, dict):
            raise ValueError("not an object")
        if "journal" in entry:
            if not first:
                raise ValueError("a journal's first line in the middle")
            if entry["journal"] not in READABLE_VERSIONS:
                raise ValueError(f"unknown journal version {entry['journal']!r}")
            self.run = str(entry["run"])
            self.catalogue = CatalogueIdentity.from_dict(entry["catalogue"])
            account = entry.get("account")
            self.account = str(account) if account is not None else None
            clock = entry.get("clock")
            self.clock = RunClock.from_dict(clock) if clock is not None else None
        elif "clock" in entry:
            self._sync_clock(RunClock.from_dict(entry["clock"]))
        elif "facility" in entry:
            self._facilities.append(str(entry["facility"]))
        elif "data_service" in entry:
            self.data_service = str(entry["data_service"])
            storage = entry.get("storage")
            self.data_storage = str(storage) if storage is not None else None
        elif "cleaned" in entry:
            self._forget()
        elif "verified" in entry:
            if not isinstance(entry["verified"], dict):
                raise ValueError("verified is not an object")
            self.verified = entry["verified"]
        elif "ids" in entry:
            if not isinstance(entry["ids"], list):
                raise ValueError("ids is not a list")
            self._remember(str(entry["entity"]), array("q", (int(i) for i in entry["ids"])))
        else:
            self._remember(str(entry["entity"]), array("q", [int(entry["id"])]))


def journal_lines(journal: Journal) -> Iterator[str]:
    """What the journal says about itself, for messages (its torn lines, a resumed cleanup)."""
    yield from journal.skipped
    if journal.verified is not None:
        yield ("resuming a cleanup that was stopped: the journal's objects were checked then; "
               "what is left on the server is surveyed again")  # fmt: skip


__all__ = [
    "JOURNAL_SUFFIX",
    "CatalogueIdentity",
    "InvalidRunTag",
    "Journal",
    "JournalInUse",
    "JournalLock",
    "JournalWriteError",
    "RunTag",
    "journal_path_for",
]
