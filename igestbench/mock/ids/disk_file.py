"""An upload's bytes to its file: past the page cache where the file system allows it.

A kept storage (``--ids-storage``) syncs each upload before ``put`` answers. Written through the
page cache, every byte is copied once more by the kernel into pages of the cache, and on the
2-core shared dev machine that copy was two thirds of the server's CPU time per uploaded byte
(``perf``: ``copy_folio_from_iter_atomic``), up to 2 s per GB when the cache had to grow into
fresh memory. With ``O_DIRECT`` the disk reads the bytes from a buffer of ours instead: they
are copied into one page-aligned staging buffer (a copy in the CPU's cache, cheap) and written
from it in :data:`STAGE`-sized, aligned writes — the server's CPU per GB received fell to about
a third and no longer depends on the state of the page cache, and a 2 GiB upload does not
evict the catalogue from it. The tail of the file (less than a block) is written without
``O_DIRECT``, then the file is synced as before.

Where ``O_DIRECT`` is refused (tmpfs, some network file systems: ``EINVAL`` at open or at the
first write) the file is written through the page cache, its writeback started as it arrives
(:mod:`~igestbench.mock.ids.writeback`) so that the final ``fsync`` waits for little. A
temporary storage is never synced and is always written through the page cache.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import mmap
import os
from pathlib import Path

from igestbench.mock.ids.writeback import Writeback

#: The staging buffer: the size of each direct write (a multiple of every block size).
STAGE = 1024 * 1024
#: Direct writes start and end at multiples of this (the largest logical block size in use).
ALIGN = 4096
_DIRECT = getattr(os, "O_DIRECT", 0)  # Linux, FreeBSD; 0 elsewhere: through the cache


class DiskFile:
    """A new file written sequentially; :meth:`close` syncs it if ``durable``."""

    def __init__(self, path: Path, durable: bool) -> None:
        self.path = path
        self.durable = durable
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_CLOEXEC", 0)
        self.direct = False
        if durable and _DIRECT:
            try:
                self.fd = os.open(path, flags | _DIRECT, 0o644)
                self.direct = True
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
        if not self.direct:
            self.fd = os.open(path, flags, 0o644)
        self._stage: mmap.mmap | None = mmap.mmap(-1, STAGE) if self.direct else None
        self._filled = 0  # bytes waiting in the staging buffer
        self._writeback = Writeback()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data).cast("B")
        while view and self._stage is not None:
            size = min(len(view), STAGE - self._filled)
            self._stage[self._filled : self._filled + size] = view[:size]
            self._filled += size
            view = view[size:]
            if self._filled == STAGE:
                self._write_stage()  # may turn to the page cache (then _stage is None)
        if view:
            self._write_cached(view)

    def _write_cached(self, view: memoryview) -> None:
        self._write_all(view)
        if self.durable and self._writeback.wrote(len(view)):
            self._writeback.start(self.fd)

    def _write_stage(self) -> None:
        """Write out the staging buffer's aligned part; keep the rest (the tail) in it."""
        assert self._stage is not None
        aligned = self._filled - self._filled % ALIGN
        if aligned:
            try:
                with memoryview(self._stage) as view:
                    self._write_all(view[:aligned])
            except OSError as exc:
                if exc.errno != errno.EINVAL:
                    raise
                refused = True  # accepted at open, refused at write
            else:
                refused = False
            if refused:  # (outside the handler: its traceback holds the buffer's view)
                self._through_the_cache()
                return
        if aligned < self._filled:
            self._stage.move(0, aligned, self._filled - aligned)
        self._filled -= aligned

    def _through_the_cache(self) -> None:
        """From now on (or for the tail) write through the page cache."""
        assert self._stage is not None
        flags = fcntl.fcntl(self.fd, fcntl.F_GETFL)
        fcntl.fcntl(self.fd, fcntl.F_SETFL, flags & ~_DIRECT)
        stage, self._stage = self._stage, None
        # writeback ranges are offsets in the file: they start where the direct writes ended
        self._writeback.started = self._writeback.written = os.lseek(self.fd, 0, os.SEEK_CUR)
        with memoryview(stage) as view:
            self._write_cached(view[: self._filled])
        self._filled = 0
        stage.close()

    def _write_all(self, view: memoryview) -> None:
        while view:
            written = os.write(self.fd, view)
            if not written:  # pragma: no cover - the kernel says ENOSPC instead
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
            view = view[written:]

    def close(self) -> None:
        """Write what is left, sync if durable, close."""
        try:
            if self._stage is not None:
                self._write_stage()
                if self._stage is not None and self._filled:
                    self._through_the_cache()
            if self.durable:
                os.fsync(self.fd)
        finally:
            self._release()

    def abort(self) -> None:
        """Close and remove the file."""
        self._release()
        with contextlib.suppress(OSError):
            self.path.unlink()

    def _release(self) -> None:
        if self._stage is not None:
            self._stage.close()
            self._stage = None
        if self.fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = -1
