"""What a run created, so that it can remove exactly that — on a partner's production catalogue.

Everything a run creates hangs below its own Facility, named after the run tag
(``sv7-<site>-<run id>``), and every created object is written to the journal as soon as its id
is known: appended to a JSON-lines file when one is given, so that ``sv7 cleanup --journal``
can finish the job after a crash. :func:`cleanup` deletes the journaled objects, newest first,
in deleteMany batches; objects that a cascade already removed are counted, not failed.

A create can reach the catalogue while its id never comes back: a Ctrl-C or a timeout between
the request and the answer. Such an object is not in the journal, but it still hangs below the
run's Facility, whose name the journal's first line holds; so after the journaled objects,
:func:`cleanup` deletes that Facility too if it is still there (with all below it, as ICAT
cascades). The name is the run's own tag — timestamp and random token — so it is never a
partner's.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from igestbench.client.base import Catalogue
from igestbench.errors import UsageError
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatNoSuchObject
from igestbench.icat.query import Condition, Query

_SITE = re.compile(r"[^A-Za-z0-9-]+")


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


class Journal:
    """Created objects in creation order, mirrored to a JSON-lines file if one is given."""

    def __init__(self, path: Path | None = None, facility: str | None = None) -> None:
        self.path = path
        #: the name of the run's Facility, under which everything it creates hangs
        self.facility: str | None = None
        self._entries: list[tuple[str, int]] = []
        if facility is not None:
            self.name_facility(facility)

    def name_facility(self, name: str) -> None:
        """Record the run's Facility name (first in the file): call it before creating."""
        self.facility = name
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps({"facility": name}) + "\n")

    def add(self, entity: str, obj_id: int) -> None:
        self.add_many(entity, [obj_id])

    def add_many(self, entity: str, ids: Iterable[int]) -> None:
        new = [(entity, int(i)) for i in ids]
        self._entries.extend(new)
        if self.path is not None:
            # opened per write: a crash must not lose what the catalogue already holds, and
            # there is no handle to leak (a write costs microseconds, a create milliseconds)
            with self.path.open("a", encoding="utf-8") as out:
                out.write("".join(json.dumps({"entity": e, "id": i}) + "\n" for e, i in new))

    @property
    def entries(self) -> Sequence[tuple[str, int]]:
        return tuple(self._entries)

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
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                if "facility" in entry:
                    journal.facility = str(entry["facility"])
                    continue
                journal._entries.append((str(entry["entity"]), int(entry["id"])))
            except (ValueError, KeyError, TypeError):
                if number == len(lines):
                    break  # the last line of a crashed run may be cut short
                raise UsageError(f"{path}:{number}: not a journal entry") from None
        return journal


@dataclass(frozen=True)
class CleanupReport:
    deleted: int
    already_gone: int
    #: run Facilities deleted by name, found after the journaled objects (ids lost in a create)
    by_name: int = 0


def _batches(entries: Sequence[tuple[str, int]], size: int) -> Iterator[list[Bean]]:
    for start in range(0, len(entries), size):
        yield [Bean(e, {"id": i}) for e, i in entries[start : start + size]]


def _delete(catalogue: Catalogue, batch: list[Bean]) -> tuple[int, int]:
    """(deleted, already gone) for one batch."""
    gone = 0
    while batch:
        try:
            catalogue.delete_many(batch)
        except IcatNoSuchObject as exc:
            if 0 <= exc.offset < len(batch):
                del batch[exc.offset]  # removed by an earlier cascade: the rest still goes
                gone += 1
                continue
            deleted = 0  # a server that names no index: one at a time
            for bean in batch:
                try:
                    catalogue.delete(bean)
                    deleted += 1
                except IcatNoSuchObject:
                    gone += 1
            return deleted, gone
        return len(batch), gone
    return 0, gone


def cleanup(catalogue: Catalogue, journal: Journal, batch_size: int = 200) -> CleanupReport:
    """Delete what the journal lists, newest first (children before their parents)."""
    deleted = gone = 0
    for batch in _batches(list(reversed(journal.entries)), batch_size):
        d, g = _delete(catalogue, batch)
        deleted += d
        gone += g
    by_name = 0
    if journal.facility is not None:
        mine = Query("Facility").where({"name": Condition("=", journal.facility)})
        for facility in catalogue.search(mine):
            catalogue.delete(facility)
            by_name += 1
    return CleanupReport(deleted + by_name, gone, by_name)
