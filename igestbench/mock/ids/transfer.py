"""What getData sends, produced block by block in a thread: one file, or a zip of many.

The zip is written as ids.server's ``ZipOutputStream`` writes it: every entry DEFLATED (level 0,
i.e. stored blocks, unless ``compress``), sizes and CRC in a data descriptor after the data (the
stream cannot seek back), entries in datafile id order, named
``ids/<facility>/<investigation>/<visit>/<dataset>/<datafile name>`` with the first four parts
percent-encoded as Java's ``URLEncoder`` does (ids.storage_file's ZipMapper), a second entry of
the same name left out, ZIP64 where a file needs it. A ``Range: bytes=N-`` offset drops the first
N bytes of what would be sent, as ids.server's RangeOutputStream does.

One file, unzipped, goes from the file to the socket by ``sendfile`` where the connection is
plain TCP (:meth:`FileAnswer.send`, through ``ThreadStream.send_through``): no copy through
the server; over TLS it is read and sent in blocks (:meth:`FileAnswer.__call__`).
"""

from __future__ import annotations

import datetime as dt
import os
import socket
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from igestbench.mock.ids.selection import DfInfo, DsInfo
from igestbench.mock.ids.storage import MainStorage

#: Bytes read from a file, and sent, at a time.
BLOCK = 1024 * 1024
#: One file sent by ``sendfile`` goes in pieces of this size, the next one read ahead.
READ_AHEAD = 8 * 1024 * 1024
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-*_")

Emit = Callable[[bytes], None]


def java_url_encode(text: str) -> str:
    """``URLEncoder.encode(text, "UTF-8")``: space as +, all but ``a-zA-Z0-9.-*_`` as %XX."""
    out = []
    for byte in text.encode("utf-8"):
        if byte in _SAFE:
            out.append(chr(byte))
        elif byte == 0x20:
            out.append("+")
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


def entry_name(ds: DsInfo, df: DfInfo) -> str:
    """ids.storage_file's ZipMapper: the zip entry of a datafile."""
    parts = (ds.facility_name, ds.inv_name, ds.visit_id, ds.name)
    return "ids/" + "/".join(java_url_encode(p) for p in parts) + "/" + df.name


class _Skipping:
    """Passes on what is written after the first ``offset`` bytes (RangeOutputStream)."""

    def __init__(self, emit: Emit, offset: int) -> None:
        self.emit = emit
        self.skip = offset

    def __call__(self, data: bytes) -> None:
        if self.skip:
            if len(data) <= self.skip:
                self.skip -= len(data)
                return
            data = data[self.skip :]
            self.skip = 0
        self.emit(data)


class _Collector:
    """A write-only, unseekable file for zipfile: what it writes goes out in BLOCK-sized pieces."""

    def __init__(self, emit: Emit) -> None:
        self.emit = emit
        self.buffer = bytearray()

    def write(self, data: bytes) -> int:
        if len(data) >= BLOCK and not self.buffer:
            self.emit(bytes(data))
            return len(data)
        self.buffer += data
        if len(self.buffer) >= BLOCK:
            self.flush()
        return len(data)

    def flush(self) -> None:
        if self.buffer:
            self.emit(bytes(self.buffer))
            self.buffer.clear()

    def close(self) -> None:
        self.flush()


@dataclass(frozen=True)
class FileAnswer:
    """One stored file, from ``offset``."""

    storage: MainStorage
    location: str
    offset: int = 0

    def __call__(self, emit: Emit) -> None:
        with self.storage.open(self.location) as file:
            if self.offset:
                file.seek(self.offset)
            while block := file.read(BLOCK):
                emit(block)

    def send(self, sock: socket.socket, chunked: bool) -> None:
        """The same bytes straight from the file to ``sock`` (``sendfile``: no copy through
        this process), as one chunk when ``chunked``; raises when the file is shorter.

        Sent in :data:`READ_AHEAD` pieces, the kernel asked to read the next one from disk
        while one is sent (``POSIX_FADV_WILLNEED``): ``sendfile`` alone reads ahead less than
        ``read`` of 1 MiB does (on the 2-core shared dev machine, 15:34 UTC, load 3.8, 5 files
        of 100 MiB out of the page cache: 887-1,059 MB/s against 418-957 without the advice,
        338-1,102 read and sent in 1 MiB blocks; a ``dd``-like read 821-1,011)."""
        with self.storage.open(self.location) as file:
            fd = file.fileno()
            size = os.fstat(fd).st_size - self.offset
            if size <= 0:
                return
            if chunked:
                sock.sendall(b"%x\r\n" % size)
            _will_need(fd, self.offset, 2 * READ_AHEAD)
            sent = 0
            while sent < size:
                piece = min(READ_AHEAD, size - sent)
                _will_need(fd, self.offset + sent + READ_AHEAD, READ_AHEAD)
                done = sock.sendfile(file, self.offset + sent, piece)
                sent += done
                if done < piece:
                    break
            if sent != size:
                raise OSError(f"{self.location}: {sent} of {size} bytes sent, the file is shorter")
            if chunked:
                sock.sendall(b"\r\n")


def _will_need(fd: int, offset: int, length: int) -> None:
    """Ask the kernel to read a range ahead (where it can: ``posix_fadvise`` is POSIX)."""
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, offset, length, os.POSIX_FADV_WILLNEED)


@dataclass(frozen=True)
class ZipAnswer:
    """Several stored files as one zip, written as it is sent."""

    storage: MainStorage
    entries: Sequence[tuple[str, str]]  # (entry name, location) in order
    compress: bool
    zone: dt.tzinfo
    offset: int = 0

    def __call__(self, emit: Emit) -> None:
        out = _Collector(_Skipping(emit, self.offset) if self.offset else emit)
        level = None if self.compress else 0
        seen: set[str] = set()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=level) as archive:
            for name, location in self.entries:
                if name in seen:
                    continue  # ids.server: "Skipped duplicate"
                seen.add(name)
                with self.storage.open(location) as file:
                    size = self.storage.size(location)
                    now = dt.datetime.now(self.zone)
                    info = zipfile.ZipInfo(name, date_time=now.timetuple()[:6])
                    info.compress_type = zipfile.ZIP_DEFLATED
                    # the level of an entry given as a ZipInfo (Python 3.13 names it
                    # compress_level; before, only the private name exists)
                    for attribute in ("compress_level", "_compresslevel"):
                        if hasattr(info, attribute):
                            setattr(info, attribute, level)
                    info.file_size = size  # lets zipfile choose ZIP64 for a large file
                    with archive.open(info, "w", force_zip64=size > zipfile.ZIP64_LIMIT) as entry:
                        while block := file.read(BLOCK):
                            entry.write(block)
        out.flush()
