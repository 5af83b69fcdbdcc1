"""What the whole-call budget of ``--timeout`` costs the lean client, the load path.

Every call of every flavour runs within a :class:`~igestbench.client.deadline.budget` and on
bounded sockets, which shrink their timeout before each operation
(:mod:`igestbench.client.deadline`). Side by side in one run, against ``sv7 serve`` in its own
process (so ``time.process_time()`` is the client's CPU alone), alternating round by round so
that a busy moment of the machine hits both alike:

* ``lean``: the lean client as it is;
* ``lean, no budget``: the same client on the connection it had before the budget existed
  (http.client's own connection classes, a plain SSL context, no budget around the call);

one search of each in turn (the order alternating), so that both meet the same moments.

Printed: µs of client CPU per single-result search (median of the rounds' medians) and the
ratio. Figures are printed, never asserted (they depend on the machine); the answers are checked.
"""

from __future__ import annotations

import http.client
import statistics
import time
from collections.abc import Iterator

import pytest

from igestbench.client import ClientConfig, LeanCatalogue
from igestbench.client.lean import KeepAliveConnection
from igestbench.icat.beans import Bean
from igestbench.icat.endpoint import Endpoint
from tests.benchmarks.served import served_catalogue

pytestmark = pytest.mark.benchmark(group="whole-call budget")

N_SEARCHES = 400
ROUNDS = 7
INGEST = {"username": "ingest", "password": "ingest"}


class UnboundedConnection(KeepAliveConnection):
    """The lean client's connection without the budget: as it was before (the reference)."""

    http_class = http.client.HTTPConnection
    https_class = http.client.HTTPSConnection

    def __init__(self, endpoint: Endpoint, config: ClientConfig) -> None:
        super().__init__(endpoint, config)
        self._budget = None  # transport_errors without a budget


@pytest.fixture(scope="module")
def clients() -> Iterator[dict[str, LeanCatalogue]]:
    with served_catalogue() as (_, url):
        config = ClientConfig(url)
        bounded, unbounded = LeanCatalogue(config), LeanCatalogue(config)
        unbounded._http.close()
        unbounded._http = UnboundedConnection(unbounded._endpoint, config)
        made = {"lean": bounded, "lean, no budget": unbounded}
        for client in made.values():
            client.login("simple", INGEST)
        yield made
        for client in made.values():
            client.logout()
            client.close()


def test_budget_cost_side_by_side(
    clients: dict[str, LeanCatalogue], capsys: pytest.CaptureFixture[str]
) -> None:
    lean = clients["lean"]
    facility = lean.create(Bean("Facility", {"name": "BUDGET-BENCH"}))
    query = f"SELECT f FROM Facility f WHERE f.id = {facility}"
    medians: dict[str, list[float]] = {name: [] for name in clients}
    order = list(clients.items())
    for _ in range(ROUNDS):
        samples: dict[str, list[float]] = {name: [] for name in clients}
        for i in range(N_SEARCHES):  # one search each, in turn: the same moment for both
            for name, client in order if i % 2 else order[::-1]:
                start = time.process_time()
                (found,) = client.search(query)
                samples[name].append((time.process_time() - start) * 1e6)
                assert found.id == facility
        for name, values in samples.items():
            medians[name].append(statistics.median(values))
    lean.delete(Bean("Facility", {"id": facility}))

    cpu = {name: statistics.median(values) for name, values in medians.items()}
    base = cpu["lean, no budget"]
    lines = [
        "",
        f"lean client CPU per single-result search (median of {ROUNDS} rounds x {N_SEARCHES}, "
        "in turn; "
        "catalogue in its own process)",
        f"{'client':<18} {'us/search':>10} {'ratio':>7}",
    ]
    for name, value in cpu.items():
        lines.append(f"{name:<18} {value:>10.1f} {value / base:>7.3f}")
    with capsys.disabled():
        print("\n".join(lines))
