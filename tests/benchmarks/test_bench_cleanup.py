"""Cleanup of 10,000 objects with and without the ownership check, side by side.

The check (issue 10) asks the server which journaled objects still hang below the run's Facility
before deleting them: one search per entity type and 500 ids, so it must not make cleanup more
than ~2x slower. Both modes delete the same kind of hierarchy (a Facility → Dataset chain and
10,000 Datafiles created by createMany) through the zeep flavour — what ``sv7 run`` and
``sv7 cleanup`` use — against ``sv7 serve`` in its own process; the wall times of each mode
(median of the rounds) and their ratio are printed, never asserted.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from igestbench.client import Catalogue, ClientConfig, connect
from igestbench.icat.beans import Bean
from igestbench.icat.schema import get_profile
from igestbench.workloads import Journal, RunTag, WorkloadContext, cleanup
from igestbench.workloads.ownership import delete_in_batches
from tests.benchmarks.served import served_catalogue
from tests.benchmarks.test_bench_burst import dataset_under

N_OBJECTS = 10_000
ROUNDS = 4
CREATE_BATCH = 500


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Catalogue]:
    with served_catalogue() as (_, url):
        cat = connect(ClientConfig(url, cache_dir=tmp_path_factory.mktemp("wsdl")), "zeep")
        cat.login("simple", {"username": "ingest", "password": "ingest"})
        yield cat
        cat.close()


def journaled_run(client: Catalogue, tmp: Path) -> Journal:
    """A run's worth of objects: its Facility, types, Investigation, Dataset and Datafiles."""
    ctx = WorkloadContext(client, get_profile("6.2"), RunTag.new("bench"), Journal())
    dataset = Bean("Dataset", {"id": dataset_under(ctx)})
    for start in range(0, N_OBJECTS - len(ctx.journal), CREATE_BATCH):
        count = min(CREATE_BATCH, N_OBJECTS - len(ctx.journal))
        files = [Bean("Datafile", {"name": f"f{start + i:06d}.nxs", "dataset": dataset})
                 for i in range(count)]  # fmt: skip
        ctx.journal.add_many("Datafile", client.create_many(files))
    assert len(ctx.journal) == N_OBJECTS
    return ctx.journal


def test_cleanup_with_and_without_the_ownership_check(
    client: Catalogue, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checked: list[float] = []
    unchecked: list[float] = []
    for round_ in range(ROUNDS + 1):  # alternating, so that drift of a shared machine hits both
        journal = journaled_run(client, tmp_path)
        began = time.perf_counter()
        deleted, gone = delete_in_batches(client, list(reversed(journal.entries)))
        unchecked.append(time.perf_counter() - began)
        assert deleted + gone == N_OBJECTS

        journal = journaled_run(client, tmp_path)
        began = time.perf_counter()
        report = cleanup(client, journal)
        checked.append(time.perf_counter() - began)
        assert report.deleted + report.already_gone == N_OBJECTS and not report.foreign
        if round_ == 0:  # warm-up: the server compiles its queries, the client its types
            unchecked.clear()
            checked.clear()
    without, with_check = statistics.median(unchecked), statistics.median(checked)
    with capsys.disabled():
        print(f"\ncleanup of {N_OBJECTS} objects (zeep flavour, catalogue in its own process, "
              f"median of {ROUNDS})")  # fmt: skip
        print(f"  without ownership check: {without:6.2f} s  {N_OBJECTS / without:7.0f} objects/s")
        print(f"  with ownership check   : {with_check:6.2f} s  "
              f"{N_OBJECTS / with_check:7.0f} objects/s")  # fmt: skip
        print(f"  the check costs {with_check / without:.2f}x the time (target <= 2x)")
