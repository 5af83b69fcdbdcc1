"""Workload 5: ingestion with the bytes — files uploaded through the ICAT Data Service.

Each client puts ``count`` files of each size asked (``--file-sizes``) into its own Dataset
through the IDS (``ids/put/<size>``, one call each), in size order, then checks on the
catalogue that every Datafile it was answered has the size and CRC-32 checksum of what was sent,
and downloads every second file of each size back (``ids/getData/<size>``), comparing the bytes
as they arrive (never holding a file in memory). The Datafiles are journaled as they are
answered; what a stop cut off between the upload and its answer still hangs below the run's
Facility, where the cleanup finds it (:mod:`igestbench.workloads.stored_files`).

Files of at least :data:`NEXUS_MIN` bytes are NeXus files of the run, written by
:mod:`igestbench.nexus` with a payload that brings them to the size asked; smaller ones (the
default 1 KiB) cannot hold a NeXus file's metadata and are raw data files of that size, as
facilities upload beside their NeXus files.

Figures per size and direction are the registry's (:mod:`igestbench.results.figures`, workload
``ids``): files/s over the time the clients spent in those calls, as every rate, and MB/s (the
same times the file's size); the entry's ``checks`` name the sizes (``file_sizes``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from igestbench.client.data_service import DataService, IdsFault
from igestbench.client.transport import TransportFailure
from igestbench.crc import crc32
from igestbench.icat.faults import IcatError
from igestbench.icat.query import Condition, Query
from igestbench.nexus import generate_run
from igestbench.workloads.base import WorkloadContext, WorkloadResult

NAME = "ids"
PUT, GET = "ids/put", "ids/getData"
#: The smallest NeXus file of the run (its metadata alone): smaller sizes are raw data files.
NEXUS_MIN = 64 * 1024
_BLOCK = 1024 * 1024
_UNITS = (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))


def size_label(size: int) -> str:
    """``1KiB``, ``100MiB``, ``1500B``: how a size names its operations."""
    for unit, factor in _UNITS:
        if size >= factor and size % factor == 0:
            return f"{size // factor}{unit}"
    return f"{size}B"


@dataclass(frozen=True)
class Payload:
    """One local file to upload, of one of the sizes asked."""

    path: Path
    size: int
    crc32: int

    @property
    def label(self) -> str:
        return size_label(self.size)


def make_payloads(directory: Path, tag: str, sizes: Sequence[int]) -> list[Payload]:
    """One file per size (untimed; every client of the run uploads the same ones)."""
    directory.mkdir(parents=True, exist_ok=True)
    payloads = []
    for size in sorted(set(sizes)):
        if size >= NEXUS_MIN:
            (path,) = generate_run(
                directory / size_label(size), f"{tag}-{size_label(size)}", 1,
                payload_bytes=max(0, size - NEXUS_MIN),
            )  # fmt: skip
            _pad(path, size)  # HDF5 ignores bytes past its end of file
        else:
            path = directory / f"{tag}-{size_label(size)}.dat"
            path.write_bytes(os.urandom(size))
        payloads.append(Payload(path, size, _crc(path)))
    return payloads


def _pad(path: Path, size: int) -> None:
    have = path.stat().st_size
    if have > size:  # the metadata took more than planned: the file is as small as it can be
        return
    with path.open("ab") as out:
        out.write(b"\0" * (size - have))


def _crc(path: Path) -> int:
    crc = 0
    with path.open("rb") as source:
        while block := source.read(_BLOCK):
            crc = crc32(block, crc)
    return crc


class _Compare:
    """A write-only file that compares what is written with a local file, block by block."""

    def __init__(self, path: Path) -> None:
        self._source: BinaryIO = path.open("rb")
        self.same = True

    def write(self, data: bytes) -> int:
        if self.same and self._source.read(len(data)) != data:
            self.same = False
        return len(data)

    def finish(self) -> bool:
        """True when every byte matched and nothing of the local file is left over."""
        same = self.same and not self._source.read(1)
        self._source.close()
        return same


def run_ids_ingest(
    ctx: WorkloadContext,
    service: DataService,
    dataset_id: int,
    format_id: int,
    payloads: Sequence[Payload],
    count: int,
) -> WorkloadResult:
    """Upload ``count`` files of each payload, check them on the catalogue, download half."""
    stored: list[tuple[int, Payload]] = []
    for payload in payloads:
        op = f"{PUT}/{payload.label}"
        for index in range(count):
            name = f"{ctx.tag.name}-{payload.label}-{index:04d}{payload.path.suffix}"
            try:
                with ctx.timer.measure(op):
                    answer = service.put(payload.path, name, dataset_id, format_id)
            except (IdsFault, TransportFailure, IcatError):
                continue  # recorded as a failed call
            ctx.journal.add("Datafile", answer.id)
            stored.append((answer.id, payload))
    problems = _check_catalogue(ctx, stored)
    downloaded = identical = 0
    for df_id, payload in _every_second(stored):
        op = f"{GET}/{payload.label}"
        compare = _Compare(payload.path)
        try:
            with ctx.timer.measure(op):
                service.get_data([df_id], compare, payload.size)
        except (IdsFault, TransportFailure):
            compare.finish()
            continue
        downloaded += 1
        if compare.finish():
            identical += 1
        else:
            problems.append(f"Datafile {df_id}: the bytes downloaded differ from those sent")
    checks: dict[str, Any] = {
        "expected": count * len(payloads),
        "stored": len(stored),
        "downloaded": downloaded,
        "identical": identical,
        "file_sizes": {p.label: p.size for p in payloads},
    }
    if len(stored) != count * len(payloads):
        problems.append(f"{count * len(payloads)} files, {len(stored)} stored")
    return WorkloadResult(NAME, ctx.recorder.drain(), checks, problems)


def _every_second(stored: Sequence[tuple[int, Payload]]) -> list[tuple[int, Payload]]:
    """The files to download back: every second one of each size, the first included."""
    chosen: list[tuple[int, Payload]] = []
    seen: dict[int, int] = {}
    for df_id, payload in stored:
        n = seen.get(payload.size, 0)
        seen[payload.size] = n + 1
        if n % 2 == 0:
            chosen.append((df_id, payload))
    return chosen


def _check_catalogue(ctx: WorkloadContext, stored: Sequence[tuple[int, Payload]]) -> list[str]:
    """Each stored Datafile, asked of the catalogue: its size and ids.server's CRC-32 form."""
    problems: list[str] = []
    expected = {df_id: payload for df_id, payload in stored}
    ids = sorted(expected)
    found: dict[int, Any] = {}
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        query = Query("Datafile").where({
            "dataset.investigation.facility.name": Condition("=", ctx.tag.name),
            "id": Condition("IN", chunk),
        })  # fmt: skip
        for bean in ctx.catalogue.search(query):
            found[int(bean.id)] = bean
    for df_id in ids:
        payload = expected[df_id]
        bean = found.get(df_id)
        if bean is None:
            problems.append(f"Datafile {df_id} is not in the catalogue")
            continue
        if bean.get("fileSize") != payload.size or bean.get("checksum") != f"{payload.crc32:x}":
            problems.append(
                f"Datafile {df_id}: fileSize {bean.get('fileSize')}, checksum "
                f"{bean.get('checksum')} (sent {payload.size} bytes, CRC-32 {payload.crc32:x})"
            )
        if not bean.get("location"):
            problems.append(f"Datafile {df_id} has no location")
    return problems
