"""SOAP and REST side by side against one local catalogue: the lean, zeep and rest clients.

``sv7 serve`` runs in its own process, so ``time.process_time()`` of this process is the
client's CPU alone. For each client, in one run, alternating between the clients round by round
so that a busy moment of the machine hits them alike, printed as medians:

* single-result lookups per second (one client, back to back; a JPQL search by name that must
  return exactly its one Datafile) and client CPU per lookup;
* one ``createMany`` of 2,000 Datafiles into a Dataset of their own: wall time, Datafiles per
  second, and client CPU per call (building the request, encoding, decoding the ids).

Figures are printed, never asserted (they depend on the machine); the answers are checked.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator

import pytest

from igestbench.client import Catalogue, ClientConfig, connect
from igestbench.icat.beans import Bean
from tests.benchmarks.served import served_catalogue

pytestmark = pytest.mark.benchmark(group="SOAP vs REST")

#: (client, interface) in the order printed.
CLIENTS = (("lean", "SOAP"), ("zeep", "SOAP"), ("rest", "REST"))
N_TARGETS = 100
N_LOOKUPS = 300
N_FILES = 2000
ROUNDS = 5
INGEST = {"username": "ingest", "password": "ingest"}


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Catalogue]]:
    with served_catalogue() as (_, url):
        config = ClientConfig(url, cache_dir=tmp_path_factory.mktemp("wsdl-cache"))
        made = {name: connect(config, name) for name, _ in CLIENTS}
        for client in made.values():
            client.login("simple", INGEST)
        yield made
        for client in made.values():
            client.logout()
            client.close()


def new_dataset(client: Catalogue, name: str) -> Bean:
    """A Facility → Dataset chain named ``name``; a reference to its Dataset."""

    def create(entity: str, values: dict[str, object]) -> Bean:
        return Bean(entity, {"id": client.create(Bean(entity, values))})

    facility = create("Facility", {"name": name})
    investigation = create("Investigation", {
        "name": name, "visitId": "1", "title": "SOAP vs REST", "facility": facility,
        "type": create("InvestigationType", {"name": "bench", "facility": facility}),
    })  # fmt: skip
    return create("Dataset", {
        "name": name, "complete": False, "investigation": investigation,
        "type": create("DatasetType", {"name": "raw", "facility": facility}),
    })  # fmt: skip


def datafiles(dataset: Bean, count: int, prefix: str) -> list[Bean]:
    return [Bean("Datafile", {"name": f"{prefix}-{i:05d}.nxs", "location": f"/bench/{prefix}/{i}",
                              "fileSize": i, "dataset": dataset}) for i in range(count)]


def lookups(client: Catalogue, names: list[str], dataset_id: int) -> tuple[float, float]:
    """(lookups/s, µs of client CPU per lookup) of searches by name, each checked."""
    cpu, wall = time.process_time(), time.perf_counter()
    for name in names:
        found = client.search(f"SELECT df FROM Datafile df WHERE df.dataset.id = {dataset_id} "
                              f"AND df.name = '{name}'")
        assert len(found) == 1 and found[0]["name"] == name
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return len(names) / wall, cpu / len(names) * 1e6


def create_many(client: Catalogue, name: str) -> tuple[float, float]:
    """(seconds, ms of client CPU) of one createMany of N_FILES Datafiles, counted after."""
    dataset = new_dataset(client, name)  # not timed
    beans = datafiles(dataset, N_FILES, name)
    cpu, wall = time.process_time(), time.perf_counter()
    ids = client.create_many(beans)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert len(set(ids)) == N_FILES
    (count,) = client.search(
        f"SELECT COUNT(df) FROM Datafile df WHERE df.dataset.id = {dataset['id']}"
    )
    assert int(count) == N_FILES
    return wall, cpu * 1000


def test_soap_and_rest_side_by_side(
    clients: dict[str, Catalogue], capsys: pytest.CaptureFixture[str]
) -> None:
    target = new_dataset(clients["lean"], "bench-targets")
    clients["lean"].create_many(datafiles(target, N_TARGETS, "target"))
    names = [f"target-{i % N_TARGETS:05d}.nxs" for i in range(N_LOOKUPS)]
    for client in clients.values():
        lookups(client, names[:20], int(target["id"]))  # warm connections and caches
    rates: dict[str, list[float]] = {name: [] for name in clients}
    lookup_cpu: dict[str, list[float]] = {name: [] for name in clients}
    many_s: dict[str, list[float]] = {name: [] for name in clients}
    many_cpu: dict[str, list[float]] = {name: [] for name in clients}
    for round_ in range(ROUNDS):
        for name, client in clients.items():  # alternating: the same moments for every client
            rate, cpu = lookups(client, names, int(target["id"]))
            rates[name].append(rate)
            lookup_cpu[name].append(cpu)
            wall, cpu = create_many(client, f"bench-{name}-{round_}")
            many_s[name].append(wall)
            many_cpu[name].append(cpu)

    med = statistics.median
    base_rate, base_many = med(rates["lean"]), med(many_s["lean"])
    lines = [
        "",
        f"SOAP vs REST (medians of {ROUNDS} alternating rounds; catalogue in its own process; "
        f"{N_LOOKUPS} single-result lookups, createMany of {N_FILES} Datafiles)",
        f"{'client':<6} {'interface':<9} {'lookups/s':>10} {'x lean':>7} {'CPU us/lookup':>14} "
        f"{'createMany s':>13} {'Datafiles/s':>12} {'x lean':>7} {'CPU ms/call':>12}",
    ]
    for name, interface in CLIENTS:
        lines.append(
            f"{name:<6} {interface:<9} {med(rates[name]):>10.0f} "
            f"{med(rates[name]) / base_rate:>7.2f} {med(lookup_cpu[name]):>14.0f} "
            f"{med(many_s[name]):>13.3f} {N_FILES / med(many_s[name]):>12.0f} "
            f"{base_many / med(many_s[name]):>7.2f} {med(many_cpu[name]):>12.1f}"
        )
    lines.append("x lean: the rate as a multiple of the lean SOAP client's (higher is faster)")
    with capsys.disabled():
        print("\n".join(lines))
