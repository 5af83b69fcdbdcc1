"""Worker processes: a barrier start, streamed records, and a clean stop when one fails."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from igestbench.client import ClientConfig
from igestbench.icat.credentials import Credentials
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.nexus import generate_run
from igestbench.run.workers import WorkerSpec, run_workers
from igestbench.workloads import Journal, RunTag

INGEST = Credentials("simple", "ingest", "ingest")


def specs(
    cat: LocalCatalogue, tmp: Path, workload: str, n: int, credentials: Credentials = INGEST
) -> list[WorkerSpec]:
    tag = RunTag.new("workers")
    out = []
    for i in range(n):
        t = RunTag(tag.site, f"{tag.run_id}-w{i}")
        files = tuple(generate_run(tmp / f"f{i}", t.name, 3))
        out.append(
            WorkerSpec(
                i,
                workload,
                "lean",
                ClientConfig(cat.service_url, cache_dir=tmp),
                credentials if i == 0 else INGEST,
                t,
                tmp / f"j{i}.jsonl",
                "6.2",
                files,
                20,
                10,
                10,
            )
        )
    return out


def test_workers_run_together_and_stream_records(catalogue: LocalCatalogue, tmp_path: Path) -> None:
    streamed: list[int] = []
    run = run_workers(
        specs(catalogue, tmp_path, "single-query", 3),
        on_records=lambda index, chunk: streamed.append(len(chunk)),
    )
    assert sorted(o.index for o in run.outcomes) == [0, 1, 2]
    assert all(
        o.error is None and o.checks == {"requests": 20, "correct": 20} for o in run.outcomes
    )
    assert len(run.records) == 60 == sum(streamed)
    assert run.wall_s > 0
    for i in range(3):  # each worker journaled what it prepared
        assert len(Journal.load(tmp_path / f"j{i}.jsonl")) >= 8


def test_a_worker_that_cannot_log_in_calls_the_start_off(
    catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    wrong = Credentials("simple", "ingest", "wrong")
    run = run_workers(specs(catalogue, tmp_path, "burst", 2, credentials=wrong))
    errors = {o.index: o.error for o in run.outcomes}
    assert errors[0] is not None and "do not match" in errors[0]
    assert errors[1] is not None and "called off" in errors[1]
    assert not [r for r in run.records if r.op.startswith("burst/")]


def test_a_failed_preparation_sends_no_records(catalogue: LocalCatalogue, tmp_path: Path) -> None:
    """A query workload's worker ingests NeXus files untimed first; when that preparation
    fails half-way (here: a file that is no NeXus file), the ingest calls it made are not the
    workload's figures: none reaches the entry (they used to show as full-cycle ops in a
    single-query entry of a stopped run)."""
    (spec,) = specs(catalogue, tmp_path, "single-query", 1)
    broken = tmp_path / "broken.nxs"
    broken.write_bytes(b"not HDF5")
    run = run_workers([dataclasses.replace(spec, files=(*spec.files[:2], broken))])
    (outcome,) = run.outcomes
    assert outcome.error is not None
    assert len(Journal.load(tmp_path / "j0.jsonl")) >= 8  # two files were ingested first
    assert run.records == []
