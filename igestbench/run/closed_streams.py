"""A terminal or pipe that goes away must not stop a run, nor make it lie.

``sv7 run … 2>&1 | head -2`` closes the reading end of the pipe early: the next progress line
raises ``BrokenPipeError`` (Python ignores SIGPIPE), and raised inside the run it cut the
measurement and the cleanup short. The run's output is for the person watching; once nobody
reads it, it is dropped and the run goes on — the result file is what counts. Dropping follows
the pattern of Python's documentation (signal module, "Note on SIGPIPE"): the stream's file
descriptor is pointed at ``os.devnull``, so that the interpreter's last flush at exit, and any
worker started later with this descriptor, write nowhere instead of failing again.

The result file says so (:meth:`ClosedStreams.notes`, a run note): when the stream went away
and how many lines were not shown, so that a coordinator reading the file knows that whoever
ran it did not see the end of the run.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from igestbench.results.format import utc_timestamp

#: A reader gone (EPIPE) or a terminal hung up (EIO): nobody reads what is written.
_GONE = {errno.EPIPE: "its reader closed the pipe", errno.EIO: "the terminal hung up"}


class DroppedWhenClosed:
    """A text stream whose writes are dropped once its reader has gone; everything else
    (``isatty``, ``fileno`` …) is the stream's own."""

    def __init__(self, stream: TextIO, name: str,
                 now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)) -> None:
        self._stream = stream
        self._now = now
        #: ``stdout`` or ``stderr``: what the note calls it
        self.name = name
        #: True once a write found the reader gone
        self.gone = False
        #: when, and why (the errno's meaning)
        self.gone_at: dt.datetime | None = None
        self.why = ""
        #: lines written since (the one whose write failed included): nobody saw them
        self.dropped_lines = 0

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._drop(exc)
        self.dropped_lines += text.count("\n")
        return len(text)

    def note(self) -> str | None:
        """The run note of a stream gone (None: it is not): when, why, the lines not shown."""
        if self.gone_at is None:
            return None
        lines = f"{self.dropped_lines:,} line{'' if self.dropped_lines == 1 else 's'}"
        return (f"the terminal went away: {self.name} closed at {utc_timestamp(self.gone_at)} "
                f"({self.why}); the run went on, and the {lines} it wrote there since were "
                "not shown, nor its output after this file was finished")

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError as exc:
                self._drop(exc)

    def _drop(self, exc: OSError) -> None:
        if exc.errno not in _GONE:
            raise exc
        self.gone = True
        self.gone_at, self.why = self._now(), _GONE[exc.errno]
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class ClosedStreams:
    """``sys.stdout`` and ``sys.stderr``, each dropping what nobody reads."""

    def __init__(self, out: DroppedWhenClosed, err: DroppedWhenClosed) -> None:
        self.out, self.err = out, err

    def notes(self) -> list[str]:
        """The run notes of the streams gone so far (the runner adds them to the result file
        as it finishes it)."""
        return [n for n in (self.err.note(), self.out.note()) if n is not None]


@contextlib.contextmanager
def dropped_when_closed() -> Iterator[ClosedStreams]:
    """Within the block, ``sys.stdout`` and ``sys.stderr`` drop what nobody reads."""
    saved = sys.stdout, sys.stderr
    out, err = DroppedWhenClosed(sys.stdout, "stdout"), DroppedWhenClosed(sys.stderr, "stderr")
    sys.stdout, sys.stderr = out, err
    try:
        yield ClosedStreams(out, err)
    finally:
        out.flush()  # what print() left buffered: at exit it would fail outside the wrapper
        err.flush()
        sys.stdout, sys.stderr = saved
