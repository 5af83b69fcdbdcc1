"""A journal file on disk: whole lines appended, whole lines read back.

Several processes append to one journal (the runner and its workers), each line in one
``write`` to a file opened with ``O_APPEND``, so lines of different processes never mix. A write
can still stop half-way: a full disk (``ENOSPC`` after part of the line went out), a quota, a
kill -9 in the middle of a large write. :func:`append_lines` then cuts its own part off again, so
that the file keeps ending in a whole line, and raises :class:`JournalWriteError` (the run stops
and cleans up from what it holds in memory). Should a torn piece stay all the same (the process
was killed mid-write), :func:`read_lines` skips it and says so — at the end of the file, or in the
middle, where another writer's line followed the torn piece; the line glued to a torn piece is
recovered.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from igestbench.errors import Sv7Error, UsageError

#: How the message of a failed journal write begins (a worker reports it as text).
WRITE_FAILED = "cannot write the journal"
#: The system call that writes (a seam for tests that make the disk full).
_write = os.write


class JournalWriteError(Sv7Error):
    """A journal line could not be written whole (disk full, quota, I/O error)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{WRITE_FAILED} {path} ({reason})")
        self.path = path
        self.reason = reason


def encode(lines: Iterable[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, separators=(", ", ": ")) + "\n" for line in lines).encode()


def append_lines(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    """Append JSON lines in one write; on failure leave the file as it was and raise.

    Opened per write: a crash must not lose what the catalogue already holds, and there is no
    handle to leak (a write costs microseconds, a create milliseconds).
    """
    data = encode(lines)
    if not data:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    except OSError as exc:
        raise JournalWriteError(path, exc.strerror or str(exc)) from None
    written = 0
    try:
        while written < len(data):  # a regular file takes it whole; the loop is for short writes
            written += _write(fd, data[written:])
    except OSError as exc:
        if written:
            _cut_back(fd, written)
        raise JournalWriteError(path, exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def _cut_back(fd: int, written: int) -> None:
    """Remove the ``written`` bytes this process just appended, if they are still the file's
    end (another writer may have appended after them: then the reader skips the torn piece)."""
    try:
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if os.fstat(fd).st_size == end:
            os.ftruncate(fd, end - written)
    except OSError:
        pass  # the reader copes with a torn line


def read_lines(path: Path) -> tuple[list[tuple[int, Any]], list[str]]:
    """(line number, decoded JSON) of each whole line, and a note for each torn piece skipped.

    A line that is not JSON is torn when it is the last line without its newline, or when a
    valid JSON object follows the damage on the same line (the next writer's line glued to a
    piece that lost its newline): that object is kept. Anything else is an error naming the
    line: not a journal.
    """
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the journal ({exc.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        # a write cut in the middle of a character: only the damaged line is lost
        text = data.decode("utf-8", errors="replace")
    entries: list[tuple[int, Any]] = []
    skipped: list[str] = []
    raw = text.split("\n")
    last_complete = text.endswith("\n")
    for number, line in enumerate(raw, 1):
        if not line.strip():
            continue
        try:
            entries.append((number, json.loads(line)))
            continue
        except ValueError:
            pass
        glued = _recover(line)
        if glued is not None:
            entries.append((number, glued))
            skipped.append(f"{path}:{number}: a torn line before a whole one; torn part skipped")
        elif number == len(raw) and not last_complete:
            skipped.append(f"{path}:{number}: the last line is cut short (a write that did not "
                           "finish); skipped")  # fmt: skip
        else:
            raise UsageError(f"{path}:{number}: not a journal entry")
    return entries, skipped


def _recover(line: str) -> Any:
    """The JSON object at the end of a line whose beginning is a torn piece, if there is one."""
    for start in _object_starts(line):
        try:
            value = json.loads(line[start:])
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _object_starts(line: str) -> Iterator[int]:
    at = line.find('{"', 1)
    while at > 0:
        yield at
        at = line.find('{"', at + 1)


def repair_tail(path: Path) -> None:
    """Cut a torn last line off (call it only while holding the journal's lock), so that the
    next line appended starts on a line of its own."""
    try:
        with path.open("rb+") as raw:
            raw.seek(0, os.SEEK_END)
            size = raw.tell()
            if size == 0:
                return
            raw.seek(max(0, size - 65536))
            tail = raw.read()
            if tail.endswith(b"\n"):
                return
            cut = tail.rfind(b"\n")
            if cut < 0 and size > len(tail):
                return  # a last line longer than the tail read: leave it to the reader
            raw.truncate(size - len(tail) + cut + 1)
    except OSError as exc:
        raise JournalWriteError(path, exc.strerror or str(exc)) from None
