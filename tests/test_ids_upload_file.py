"""How an upload's bytes reach their file (mock/ids/upload.py, writeback.py)."""

from __future__ import annotations

import itertools
import os
import random
import zlib
from pathlib import Path

import pytest

from igestbench.mock.ids import writeback
from igestbench.mock.ids.upload import RawUpload

MiB = 1024 * 1024
#: Sizes around the boundaries of a block, a buffer, a writeback step.
SIZES = [0, 1, 4095, 4096, 4097, MiB - 1, MiB, MiB + 1, 3 * MiB + 12345, writeback.STEP + 7]


def pieces(data: bytes, seed: int) -> list[bytearray]:
    """``data`` cut in odd places (1 byte, 7, a block, a buffer and a bit …), as bytearrays as
    the HTTP layer hands them over."""
    rng = random.Random(seed)
    out, at = [], 0
    while at < len(data):
        size = rng.choice([1, 7, 4093, 4096, 65536, MiB, MiB + 3])
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


def test_a_kept_upload_starts_its_writeback_as_it_arrives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[tuple[int, int]] = []
    monkeypatch.setattr(writeback, "start_writeback", lambda fd, o, n: started.append((o, n)))
    monkeypatch.setattr(writeback, "STEP", 100_000)
    data = os.urandom(3 * MiB + 5)
    upload = RawUpload(tmp_path / "kept", durable=True)
    for piece in pieces(data, 1):
        upload.write(piece)
    upload.close()
    # contiguous ranges from the first byte, all but the last few written before the fsync
    assert len(started) >= 3 and started[0][0] == 0
    assert all(a + n == b for (a, n), (b, _) in itertools.pairwise(started))
    assert sum(n for _, n in started) > len(data) - 100_000
    temporary = RawUpload(tmp_path / "temporary", durable=False)  # never synced: left alone
    before = len(started)
    for piece in pieces(data, 2):
        temporary.write(piece)
    temporary.close()
    assert len(started) == before


def test_writeback_starts_every_step_over_contiguous_ranges(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[tuple[int, int]] = []
    monkeypatch.setattr(writeback, "start_writeback", lambda fd, o, n: started.append((o, n)))
    counter = writeback.Writeback(step=10)
    written = 0
    for size in (3, 3, 3, 3, 20, 1):
        written += size
        if counter.due(written):
            counter.start(7, written)
    assert started == [(0, 12), (12, 20)]
    assert counter.started == 32


def test_start_writeback_is_harmless_on_any_file(tmp_path: Path) -> None:
    with (tmp_path / "f").open("wb") as out:
        out.write(b"x" * 10000)
        out.flush()
        writeback.start_writeback(out.fileno(), 0, 10000)  # best effort: never raises
        writeback.start_writeback(out.fileno(), 0, 0)
    assert (tmp_path / "f").stat().st_size == 10000


def test_an_aborted_upload_leaves_no_file(tmp_path: Path) -> None:
    upload = RawUpload(tmp_path / "f", durable=True)
    upload.write(bytearray(os.urandom(MiB + 17)))
    upload.abort()
    assert not list(tmp_path.iterdir())
