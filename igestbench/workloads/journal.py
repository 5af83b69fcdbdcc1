"""What a run created, and on which catalogue, so that it can remove exactly that.

Everything a run creates hangs below a Facility of its own, named after the run tag
(``sv7-<site>-<run id>…``), and every created object is written to the journal as soon as its
id is known. The run's journal is one JSON-lines file beside its result file
(``reports/<name>.journal.jsonl``); the runner and all its worker processes append to it, each
line in one ``write`` to a file opened with ``O_APPEND``, so lines of different processes never
mix. A kill -9 leaves the file behind for ``sv7 cleanup`` to finish the job.

The lines, in the order they are written::

    {"journal": 2, "run": "sv7-elettra-…", "catalogue": {"url": …, "api_version": …, "local": …}}
    {"facility": "sv7-elettra-…-full-cycle-zeep-c1-w0"}   # before anything below it is created
    {"data_service": "https://…/ids"}                     # before a file is stored through it
                                           # (+ "storage": its folder, for the built-in one)
    {"entity": "Datafile", "id": 4711}                     # one per created object
    {"cleaned": true}                                      # all above is cleaned up

The first line says which catalogue the journal belongs to; :mod:`.ownership` refuses to apply it
to another one. Journals of igestbench 0.1.0 (no first line, one Facility) still load.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from igestbench.errors import Sv7Error, UsageError

_SITE = re.compile(r"[^A-Za-z0-9-]+")

#: The ``journal`` key of a journal's first line (igestbench 0.1.0 wrote no such line: 1).
JOURNAL_VERSION = 2
#: How a run's journal is named beside its result file.
JOURNAL_SUFFIX = ".journal.jsonl"


@dataclass(frozen=True)
class RunTag:
    """The name under which one run's objects live (the name of its own Facility)."""

    site: str
    run_id: str

    @classmethod
    def new(cls, site: str) -> RunTag:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
        return cls(site, f"{stamp}-{secrets.token_hex(2)}")

    @property
    def name(self) -> str:
        site = _SITE.sub("-", self.site).strip("-").lower() or "site"
        return f"sv7-{site}-{self.run_id}"


@dataclass(frozen=True)
class CatalogueIdentity:
    """Which catalogue a journal belongs to: what the run saw when it started.

    ``url`` is the normalised service URL, ``api_version`` what getApiVersion answered; a
    ``local`` catalogue was the one ``sv7 run`` started for itself and stopped with the run.
    Two servers can share both URL and version (a reinstalled catalogue, a test copy behind the
    same name): that case is caught object by object, since cleanup deletes only what still
    hangs below the run's own Facilities on the server.
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


def _append(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    """Append JSON lines in one write: concurrent writers (the run's workers) never interleave.

    Opened per write: a crash must not lose what the catalogue already holds, and there is no
    handle to leak (a write costs microseconds, a create milliseconds).
    """
    data = "".join(json.dumps(line) + "\n" for line in lines).encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        view = memoryview(data)
        while view:  # a regular file takes it whole; the loop is for the rare short write
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


class Journal:
    """Created objects in creation order, mirrored to a JSON-lines file if one is given."""

    def __init__(self, path: Path | None = None, facility: str | None = None) -> None:
        self.path = path
        #: the Facility this journal object named (each worker names its own)
        self.facility: str | None = None
        #: the run tag and catalogue of the file's first line (None: not known)
        self.run: str | None = None
        self.catalogue: CatalogueIdentity | None = None
        self._facilities: list[str] = []
        self._entries: list[tuple[str, int]] = []
        #: the ICAT Data Service the run stored files through (None: it stored none)
        self.data_service: str | None = None
        #: the built-in catalogue's IDS storage folder (it dies with a killed run; sv7 cleanup
        #: removes it)
        self.data_storage: str | None = None
        if facility is not None:
            self.name_facility(facility)

    @classmethod
    def start(cls, path: Path, run: str, catalogue: CatalogueIdentity) -> Journal:
        """Begin a run's journal file with the line that says whose it is (never overwrites)."""
        header = {"journal": JOURNAL_VERSION, "run": run, "catalogue": catalogue.to_dict()}
        try:
            with path.open("x", encoding="utf-8") as out:
                out.write(json.dumps(header) + "\n")
        except FileExistsError:
            raise UsageError(f"{path}: a journal already exists there; not overwritten") from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot write the journal ({exc.strerror})") from None
        journal = cls(path)
        journal.run, journal.catalogue = run, catalogue
        return journal

    def name_facility(self, name: str) -> None:
        """Record a Facility name of the run: call it before creating anything below it."""
        self.facility = name
        self._facilities.append(name)
        if self.path is not None:
            _append(self.path, [{"facility": name}])

    def name_data_service(self, url: str, storage: str | None = None) -> None:
        """Record the IDS the run stores files through (and, for the built-in catalogue's, its
        storage folder): call it before the first upload."""
        self.data_service, self.data_storage = url, storage
        line: dict[str, str] = {"data_service": url}
        if storage is not None:
            line["storage"] = storage
        if self.path is not None:
            _append(self.path, [line])

    def add(self, entity: str, obj_id: int) -> None:
        self.add_many(entity, [obj_id])

    def add_many(self, entity: str, ids: Iterable[int]) -> None:
        new = [(entity, int(i)) for i in ids]
        self._entries.extend(new)
        if self.path is not None and new:
            _append(self.path, ({"entity": e, "id": i} for e, i in new))

    def mark_cleaned(self) -> None:
        """Everything journaled so far is cleaned up (call it while nobody else writes)."""
        self._entries.clear()
        self._facilities.clear()
        if self.path is not None:
            _append(self.path, [{"cleaned": True}])

    @property
    def entries(self) -> Sequence[tuple[str, int]]:
        return tuple(self._entries)

    @property
    def facilities(self) -> tuple[str, ...]:
        """The names of the run's Facilities (everything the run creates hangs below one)."""
        return tuple(dict.fromkeys(self._facilities))

    def __len__(self) -> int:
        return len(self._entries)

    @classmethod
    def load(cls, path: Path) -> Journal:
        """The journal a crashed run left; clear errors for a missing or damaged file."""
        journal = cls(None)
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(f"{path}: cannot read the journal ({exc.strerror})") from None
        except UnicodeDecodeError:
            raise UsageError(f"{path}: not a journal (not UTF-8 text)") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                journal._read_line(json.loads(line), first=number == 1)
            except (ValueError, KeyError, TypeError):
                if number == len(lines) and number > 1:
                    break  # the last line of a crashed run may be cut short
                raise UsageError(f"{path}:{number}: not a journal entry") from None
        if not any(line.strip() for line in lines):
            raise UsageError(f"{path}: empty, not a journal")
        return journal

    def _read_line(self, entry: Any, first: bool) -> None:
        if not isinstance(entry, dict):
            raise ValueError("not an object")
        if "journal" in entry:
            if not first:
                raise ValueError("a journal's first line in the middle")
            if entry["journal"] != JOURNAL_VERSION:
                raise ValueError(f"unknown journal version {entry['journal']!r}")
            self.run = str(entry["run"])
            self.catalogue = CatalogueIdentity.from_dict(entry["catalogue"])
        elif "facility" in entry:
            self._facilities.append(str(entry["facility"]))
        elif "data_service" in entry:
            self.data_service = str(entry["data_service"])
            storage = entry.get("storage")
            self.data_storage = str(storage) if storage is not None else None
        elif "cleaned" in entry:
            self._entries.clear()
            self._facilities.clear()
        else:
            self._entries.append((str(entry["entity"]), int(entry["id"])))
