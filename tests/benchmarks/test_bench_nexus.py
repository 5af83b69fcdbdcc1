"""Reading one NeXus file's metadata: the timed part of the full-cycle workload's file handling.

Files are read in rotation so each read opens a different file, as ingestion does. The payload
size must not matter (the reader never touches NXdata), which the two parameters show.
"""

from __future__ import annotations

import itertools
import statistics
import time
from pathlib import Path

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from igestbench.nexus import generate_run, read_metadata

FILES = 20

pytestmark = pytest.mark.benchmark(group="read_metadata")


@pytest.fixture(scope="module", params=[0, 1_000_000], ids=["no payload", "1 MB payload"])
def nexus_files(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> list[Path]:
    payload_bytes: int = request.param
    directory = tmp_path_factory.mktemp(f"nexus-{payload_bytes}")
    return generate_run(directory, "sv7-BENCH-0", FILES, seed=1, payload_bytes=payload_bytes)


def test_read_metadata_per_file(
    benchmark: BenchmarkFixture, capsys: pytest.CaptureFixture[str], nexus_files: list[Path]
) -> None:
    rotation = itertools.cycle(nexus_files)
    metadata = benchmark(lambda: read_metadata(next(rotation)))
    assert metadata.facility.name == "sv7-BENCH-0"

    durations_us = []
    for path in nexus_files * 10:
        start = time.perf_counter_ns()
        read_metadata(path)
        durations_us.append((time.perf_counter_ns() - start) / 1_000)
    size_kb = nexus_files[0].stat().st_size / 1_000
    with capsys.disabled():
        print(
            f"\nread_metadata: {statistics.median(durations_us):.0f} µs per file (median) "
            f"for {size_kb:.0f} kB files"
        )
