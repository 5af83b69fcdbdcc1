"""Client CPU per call of the three flavours, side by side, against a catalogue in another process.

The local catalogue runs as ``python -m igestbench serve`` in its own process, so
``time.process_time()`` of this process is the client's CPU alone: building the request, HTTP,
parsing and decoding the answer. Printed (medians, and the ratio to python-icat, the reference):

* µs of client CPU per single-result search (targets: lean ≤ 0.25x, zeep ≤ 0.6x python-icat);
* µs of client CPU per row of a 2,000-row search (the decode cost of a large result).

Figures are printed, never asserted: they depend on the machine.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from igestbench.client import Catalogue, ClientConfig, connect
from igestbench.icat.beans import Bean
from tests.benchmarks.served import served_catalogue

pytestmark = pytest.mark.benchmark(group="client CPU")

FLAVOURS = ("python-icat", "zeep", "lean")
N_ROWS = 2000
N_SEARCHES = 300
N_LARGE = 5
ROOT = {"username": "root", "password": "root"}


@pytest.fixture(scope="module")
def service_url() -> Iterator[str]:
    """The service URL of ``sv7 serve`` started in a separate process (stopped afterwards)."""
    with served_catalogue() as (_, url):
        yield url


@pytest.fixture(scope="module")
def clients(service_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    cache_dir = tmp_path_factory.mktemp("wsdl-cache")
    made = {f: connect(ClientConfig(service_url, cache_dir=cache_dir), f) for f in FLAVOURS}
    for client in made.values():
        client.login("simple", ROOT)
    yield made
    for client in made.values():
        client.logout()
        client.close()


def fill(client: Catalogue) -> int:
    """A Facility → Dataset chain holding N_ROWS Datafiles; the Dataset's id."""
    facility = Bean("Facility", {"id": client.create(Bean("Facility", {"name": "BENCH"}))})
    inv_type = client.create(Bean("InvestigationType", {"name": "bench", "facility": facility}))
    ds_type = client.create(Bean("DatasetType", {"name": "raw", "facility": facility}))
    investigation = client.create(
        Bean(
            "Investigation",
            {
                "name": "bench",
                "visitId": "1",
                "title": "client CPU",
                "facility": facility,
                "type": Bean("InvestigationType", {"id": inv_type}),
            },
        )
    )
    dataset = client.create(
        Bean(
            "Dataset",
            {
                "name": "bench",
                "complete": False,
                "type": Bean("DatasetType", {"id": ds_type}),
                "investigation": Bean("Investigation", {"id": investigation}),
            },
        )
    )
    files = [
        Bean(
            "Datafile",
            {
                "name": f"bench-{i:04d}.nxs",
                "location": f"/data/bench/bench-{i:04d}.nxs",
                "fileSize": 1024 * i,
                "dataset": Bean("Dataset", {"id": dataset}),
            },
        )
        for i in range(N_ROWS)
    ]
    for start in range(0, N_ROWS, 500):
        client.create_many(files[start : start + 500])
    return dataset


def cpu_us(search: Callable[[str], Any], queries: Sequence[str]) -> list[float]:
    """Client CPU of each search, in µs."""
    samples = []
    for query in queries:
        start = time.process_time()
        search(query)
        samples.append((time.process_time() - start) * 1e6)
    return samples


def test_client_cpu_side_by_side(
    clients: dict[str, Catalogue], capsys: pytest.CaptureFixture[str]
) -> None:
    dataset_id = fill(clients["lean"])
    names = [f"bench-{i:04d}.nxs" for i in range(0, N_ROWS, N_ROWS // 100)]
    single = [f"SELECT df FROM Datafile df WHERE df.name = '{n}'" for n in names]
    single = (single * (N_SEARCHES // len(single) + 1))[:N_SEARCHES]
    large = f"SELECT df FROM Datafile df WHERE df.dataset.id = {dataset_id} ORDER BY df.name"

    per_search: dict[str, float] = {}
    per_row: dict[str, float] = {}
    for flavour, client in clients.items():
        cpu_us(client.search, single[:20])  # warm caches and the connection
        per_search[flavour] = statistics.median(cpu_us(client.search, single))
        per_row[flavour] = statistics.median(cpu_us(client.search, [large] * N_LARGE)) / N_ROWS

    # Same answers, whichever way they were read.
    reference = clients["zeep"].search(large)
    assert len(reference) == N_ROWS
    assert clients["lean"].search(large) == reference
    assert clients["python-icat"].search(large) == reference

    base_search, base_row = per_search["python-icat"], per_row["python-icat"]
    lines = [
        "",
        f"client CPU (median; catalogue in its own process; {N_SEARCHES} single-result "
        f"searches, {N_LARGE} x {N_ROWS}-row searches)",
        f"{'flavour':<12} {'us/search':>10} {'x py-icat':>10} {'us/row':>8} {'x py-icat':>10}",
    ]
    for flavour in FLAVOURS:
        lines.append(
            f"{flavour:<12} {per_search[flavour]:>10.0f} {per_search[flavour] / base_search:>10.2f}"
            f" {per_row[flavour]:>8.1f} {per_row[flavour] / base_row:>10.2f}"
        )
    lines.append("targets per search: lean <= 0.25x, zeep <= 0.6x python-icat")
    with capsys.disabled():
        print("\n".join(lines))
