"""The local IDS's storage: one main storage (single level), prepared ids, dataset locks.

Laid out below one folder (a temporary one, or ``sv7 serve --ids-storage DIR`` to keep it)::

    main/<investigation id>/<dataset id>/<uuid>   the files, named as ids.storage_file names them
    cache/incoming/<uuid>.tmp                     uploads on their way (renamed into main/)
    cache/prepared/<preparedId>                   what prepareData selected, as JSON

A location is what the Datafile's ``location`` holds (``12/34/<uuid>``); one that would leave
``main/`` (an absolute path, ``..``, set by anybody over SOAP) is refused: the local IDS has no
digest key to prove its locations, so it trusts only those that stay inside its own folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from igestbench.mock.ids.errors import DataNotOnlineException, InternalException, NotFoundException

#: Prepared ids kept at most (the oldest beyond are forgotten), as ids.server's preparedCount.
PREPARED_COUNT = 10_000


class MainStorage:
    """Files below ``root/main``; uploads arrive in ``root/cache/incoming`` first."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.main = root / "main"
        self.incoming = root / "cache" / "incoming"
        for folder in (self.main, self.incoming):
            folder.mkdir(parents=True, exist_ok=True)
        # uploads a crash left half-written are no one's
        for leftover in self.incoming.glob("*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()

    def new_upload(self) -> Path:
        """A fresh path for an upload on its way."""
        return self.incoming / f"{uuid.uuid4()}.tmp"

    def commit(self, upload: Path, investigation_id: int, dataset_id: int) -> str:
        """Move a complete upload into the main storage; its location (``inv/ds/uuid``)."""
        location = f"{investigation_id}/{dataset_id}/{uuid.uuid4()}"
        target = self.main / location
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(upload, target)
        return location

    def path(self, location: str) -> Path:
        """The file of ``location``; InternalException for one outside the main storage."""
        parts = location.split("/")
        if not location or location.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise InternalException(f"location {location!r} is not in this IDS's main storage")
        return self.main.joinpath(*parts)

    def exists(self, location: str) -> bool:
        try:
            return self.path(location).is_file()
        except InternalException:
            return False

    def size(self, location: str) -> int:
        return self.path(location).stat().st_size

    def open(self, location: str) -> BinaryIO:
        """The file for reading; ids.server's answer to a missing one is an InternalException."""
        try:
            return self.path(location).open("rb")
        except FileNotFoundError:
            raise InternalException(
                f"class java.nio.file.NoSuchFileException {self.path(location)}"
            ) from None

    def delete(self, location: str) -> None:
        """Remove a file and the folders it leaves empty (as ids.storage_file does)."""
        path = self.path(location)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        folder = path.parent
        while folder != self.main:
            try:
                folder.rmdir()
            except OSError:  # not empty, or gone
                break
            folder = folder.parent

    def files(self) -> list[Path]:
        """Every stored file (tests and the benchmark count them)."""
        return sorted(p for p in self.main.rglob("*") if p.is_file())


class PreparedStore:
    """prepareData's selections, one JSON file each, kept until PREPARED_COUNT newer ones exist."""

    def __init__(self, root: Path, keep: int = PREPARED_COUNT) -> None:
        self.folder = root / "cache" / "prepared"
        self.folder.mkdir(parents=True, exist_ok=True)
        self.keep = keep
        self._lock = threading.Lock()

    def save(self, content: dict[str, Any]) -> str:
        prepared_id = str(uuid.uuid4())
        tmp = self.folder / f"{prepared_id}.tmp"
        tmp.write_text(json.dumps(content, separators=(",", ":")))
        os.replace(tmp, self.folder / prepared_id)
        self._prune()
        return prepared_id

    def load(self, prepared_id: str) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads((self.folder / prepared_id).read_text())
        except FileNotFoundError:
            raise NotFoundException(f"The preparedId {prepared_id} is not known") from None
        except (OSError, ValueError) as exc:
            raise InternalException(f"{type(exc).__name__} {exc}") from None
        return data

    def _prune(self) -> None:
        with self._lock:
            names = [p for p in self.folder.iterdir() if not p.name.endswith(".tmp")]
            if len(names) <= self.keep:
                return
            names.sort(key=lambda p: p.stat().st_mtime)
            for old in names[: len(names) - self.keep]:
                with contextlib.suppress(OSError):
                    old.unlink()


@dataclass
class _Entry:
    shared: bool
    count: int = 0


class LockManager:
    """ids.server's dataset locks: many SHARED (put, getData) or one EXCLUSIVE (delete).

    A call that cannot have its lock at once is refused with DataNotOnlineException "Data is
    busy" (503), as ids.server refuses it: deleting a dataset's files while they are being
    downloaded waits for no one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[int, _Entry] = {}

    def lock(self, dataset_ids: Iterable[int], shared: bool) -> DatasetLock:
        ids = sorted(set(dataset_ids))
        with self._lock:
            for ds in ids:
                entry = self._entries.get(ds)
                if entry is not None and not (shared and entry.shared):
                    raise DataNotOnlineException("Data is busy")
            for ds in ids:
                self._entries.setdefault(ds, _Entry(shared)).count += 1
        return DatasetLock(self, ids)

    def _release(self, ids: list[int]) -> None:
        with self._lock:
            for ds in ids:
                entry = self._entries[ds]
                entry.count -= 1
                if entry.count == 0:
                    del self._entries[ds]

    def info(self) -> list[dict[str, Any]]:
        with self._lock:
            return [
                {"id": ds, "type": "SHARED" if e.shared else "EXCLUSIVE", "count": e.count}
                for ds, e in self._entries.items()
            ]


class DatasetLock:
    def __init__(self, manager: LockManager, ids: list[int]) -> None:
        self._manager = manager
        self._ids: list[int] | None = ids

    def release(self) -> None:
        if self._ids is not None:
            ids, self._ids = self._ids, None
            self._manager._release(ids)

    def __enter__(self) -> DatasetLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
