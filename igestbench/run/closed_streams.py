"""A terminal or pipe that goes away must not stop a run, nor make it lie.

``sv7 run … 2>&1 | head -2`` closes the reading end of the pipe early: the next progress line
raises ``BrokenPipeError`` (Python ignores SIGPIPE), and raised inside the run it cut the
measurement and the cleanup short. The run's output is for the person watching; once nobody
reads it, it is dropped and the run goes on — the result file is what counts. Dropping follows
the pattern of Python's documentation (signal module, "Note on SIGPIPE"): the stream's file
descriptor is pointed at ``os.devnull``, so that the interpreter's last flush at exit, and any
worker started later with this descriptor, write nowhere instead of failing again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

#: A reader gone (EPIPE) or a terminal hung up (EIO): nobody reads what is written.
_GONE = (errno.EPIPE, errno.EIO)


class DroppedWhenClosed:
    """A text stream whose writes are dropped once its reader has gone; everything else
    (``isatty``, ``fileno`` …) is the stream's own."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        #: True once a write found the reader gone
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except OSError as exc:
                self._drop(exc)
        return len(text)

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
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def dropped_when_closed() -> Iterator[tuple[DroppedWhenClosed, DroppedWhenClosed]]:
    """Within the block, ``sys.stdout`` and ``sys.stderr`` drop what nobody reads."""
    saved = sys.stdout, sys.stderr
    out, err = DroppedWhenClosed(sys.stdout), DroppedWhenClosed(sys.stderr)
    sys.stdout, sys.stderr = out, err
    try:
        yield out, err
    finally:
        out.flush()  # what print() left buffered: at exit it would fail outside the wrapper
        err.flush()
        sys.stdout, sys.stderr = saved
