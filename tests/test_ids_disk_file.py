"""How an upload's bytes reach their file (mock/ids/disk_file.py, writeback.py, upload.py)."""

from __future__ import annotations

import errno
import fcntl
import itertools
import os
import random
import zlib
from pathlib import Path
from typing import Any

import pytest

from igestbench.mock.ids import disk_file, writeback
from igestbench.mock.ids.disk_file import ALIGN, STAGE, DiskFile
from igestbench.mock.ids.upload import RawUpload

#: Sizes around every boundary the direct writer has: empty, a block, the staging buffer.
SIZES = [0, 1, ALIGN - 1, ALIGN, ALIGN + 1, STAGE - 1, STAGE, STAGE + 1, 3 * STAGE + 12345]


def pieces(data: bytes, seed: int) -> list[bytearray]:
    """``data`` cut in odd places (1 byte, 7, a block, a buffer and a bit …), as bytearrays as
    the HTTP layer hands them over."""
    rng = random.Random(seed)
    out, at = [], 0
    while at < len(data):
        size = rng.choice([1, 7, 4093, ALIGN, 65536, STAGE, STAGE + 3])
        out.append(bytearray(data[at : at + size]))
        at += size
    return out


@pytest.mark.parametrize("durable", [True, False])
@pytest.mark.parametrize("size", SIZES)
def test_an_upload_cut_anywhere_is_stored_whole_with_its_crc(
    tmp_path: Path, size: int, durable: bool
) -> None:
    data = os.urandom(size)
    upload = RawUpload(tmp_path / "f", durable)
    for piece in pieces(data, size):
        upload.write(piece)
    stored = upload.close()
    assert (tmp_path / "f").read_bytes() == data
    assert (stored.size, stored.crc32) == (size, zlib.crc32(data))


def test_a_kept_upload_bypasses_the_page_cache_where_the_file_system_allows(
    tmp_path: Path,
) -> None:
    kept = DiskFile(tmp_path / "kept", durable=True)
    temporary = DiskFile(tmp_path / "temporary", durable=False)
    try:
        if disk_file._DIRECT:
            assert kept.direct  # tmp_path: ext4 on the dev machine and in CI
        assert not temporary.direct
    finally:
        kept.abort()
        temporary.abort()
    assert not list(tmp_path.iterdir())


def _refuse_direct_at_open(real_open: Any) -> Any:
    def refusing(path: Any, flags: int, *args: Any) -> int:
        if flags & disk_file._DIRECT:
            raise OSError(errno.EINVAL, "Invalid argument")
        return int(real_open(path, flags, *args))

    return refusing


def _refuse_direct_at_write(monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    """Direct writes refused after the first ``after`` (as a file system may for some)."""
    real_write = os.write
    accepted = [after]

    def refusing(fd: int, data: Any) -> int:
        if fcntl.fcntl(fd, fcntl.F_GETFL) & disk_file._DIRECT:
            if not accepted[0]:
                raise OSError(errno.EINVAL, "Invalid argument")
            accepted[0] -= 1
        return real_write(fd, data)

    monkeypatch.setattr(disk_file.os, "write", refusing)


@pytest.mark.skipif(not disk_file._DIRECT, reason="no O_DIRECT on this platform")
@pytest.mark.parametrize("where", ["open", "write"])
def test_a_file_system_refusing_direct_io_gets_the_bytes_through_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    if where == "open":
        monkeypatch.setattr(disk_file.os, "open", _refuse_direct_at_open(os.open))
    else:
        _refuse_direct_at_write(monkeypatch, after=1)
    started: list[tuple[int, int]] = []
    monkeypatch.setattr(writeback, "start_writeback", lambda fd, o, n: started.append((o, n)))
    monkeypatch.setattr(writeback, "STEP", 100_000)
    data = os.urandom(3 * STAGE + 5)
    upload = RawUpload(tmp_path / "f", durable=True)
    for piece in pieces(data, 1):
        upload.write(piece)
    assert upload.close().crc32 == zlib.crc32(data)
    assert (tmp_path / "f").read_bytes() == data
    # through the cache, its writeback started as it came (from the first byte, or from
    # where the direct writes stopped), over contiguous ranges
    assert len(started) >= 2
    first = 0 if where == "open" else STAGE  # the direct writes wrote the first STAGE
    assert started[0][0] == first
    assert sum(n for _, n in started) > len(data) - first - 100_000
    assert all(a + n == b for (a, n), (b, _) in itertools.pairwise(started))


def test_writeback_starts_every_step_over_contiguous_ranges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[tuple[int, int]] = []
    monkeypatch.setattr(writeback, "start_writeback", lambda fd, o, n: started.append((o, n)))
    counter = writeback.Writeback(step=10)
    for size in (3, 3, 3, 3, 20, 1):
        if counter.wrote(size):
            counter.start(7)
    assert started == [(0, 12), (12, 20)]
    assert counter.started == 32 and counter.written == 33


def test_start_writeback_is_harmless_on_any_file(tmp_path: Path) -> None:
    with (tmp_path / "f").open("wb") as out:
        out.write(b"x" * 10000)
        out.flush()
        writeback.start_writeback(out.fileno(), 0, 10000)  # best effort: never raises
        writeback.start_writeback(out.fileno(), 0, 0)
    assert (tmp_path / "f").stat().st_size == 10000


def test_an_aborted_upload_leaves_no_file(tmp_path: Path) -> None:
    upload = RawUpload(tmp_path / "f", durable=True)
    upload.write(bytearray(os.urandom(STAGE + 17)))
    upload.abort()
    assert not list(tmp_path.iterdir())
