"""Burst ingestion of 2,000 Datafiles: one ``create`` each vs ``createMany``, side by side.

Runs workload 3 (``run_burst``) through the zeep flavour and the lean path against ``sv7 serve``
in its own process and prints the wall time of each mode, Datafiles per second and the ratio
(issue 3's target on the local catalogue: createMany at least 20x faster). Printed, never asserted.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest

from igestbench.client import Catalogue, ClientConfig, connect
from igestbench.icat.beans import Bean
from igestbench.icat.schema import get_profile
from igestbench.workloads import Journal, RunTag, WorkloadContext, cleanup, run_burst
from tests.benchmarks.served import served_catalogue

N_FILES = 2000
BATCH = 500


@pytest.fixture(scope="module")
def service_url() -> Iterator[str]:
    with served_catalogue() as (_, url):
        yield url


@pytest.fixture(params=["zeep", "lean"])
def client(
    request: pytest.FixtureRequest, service_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Catalogue]:
    config = ClientConfig(service_url, cache_dir=tmp_path_factory.mktemp("wsdl"))
    cat = connect(config, request.param)
    cat.login("simple", {"username": "ingest", "password": "ingest"})
    yield cat
    cat.close()


def dataset_under(ctx: WorkloadContext) -> int:
    """A Facility → Dataset chain for this run, journaled; the Dataset's id."""
    cat, journal = ctx.catalogue, ctx.journal

    def create(entity: str, values: dict[str, object]) -> Bean:
        new = cat.create(Bean(entity, values))
        journal.add(entity, new)
        return Bean(entity, {"id": new})

    facility = create("Facility", {"name": ctx.tag.name})
    inv = create(
        "Investigation",
        {
            "name": "burst",
            "visitId": "1",
            "title": "burst benchmark",
            "facility": facility,
            "type": create("InvestigationType", {"name": "bench", "facility": facility}),
        },
    )
    dataset = create(
        "Dataset",
        {
            "name": "burst",
            "complete": False,
            "investigation": inv,
            "type": create("DatasetType", {"name": "raw", "facility": facility}),
        },
    )
    return int(dataset["id"])


def test_burst_one_by_one_vs_create_many(
    client: Catalogue, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ctx = WorkloadContext(
        client, get_profile("6.2"), RunTag.new("bench"), Journal(tmp_path / "journal.jsonl")
    )
    result = run_burst(ctx, dataset_under(ctx), N_FILES, batch_size=BATCH)
    assert result.ok, result.problems
    one = sum(r.duration_ns for r in result.records if r.op == "burst/create") / 1e9
    batches = [r.duration_ns / 1e9 for r in result.records if r.op == "burst/createMany"]
    many = sum(batches)
    per_call = statistics.median(
        r.duration_ns / 1e6 for r in result.records if r.op == "burst/create"
    )
    with capsys.disabled():
        print(
            f"\nburst of {N_FILES} Datafiles into one Dataset ({client.flavour} flavour, "
            "catalogue in its own process)"
        )
        print(
            f"  one create each : {one:7.2f} s  {N_FILES / one:8.0f} files/s  "
            f"(median {per_call:.2f} ms per call)"
        )
        print(
            f"  createMany x{BATCH}: {many:7.2f} s  {N_FILES / many:8.0f} files/s  "
            f"({len(batches)} calls)"
        )
        print(f"  createMany is {one / many:.1f}x faster (target >= 20x)")
    report = cleanup(client, ctx.journal)
    assert report.deleted + report.already_gone == len(ctx.journal)
