"""What the swarm's calls do: the data the master prepares, the operations the workers run.

The master creates a small hierarchy under the run tag (NeXus files ingested as ``sv7 run``'s
sweep does) and tells the workers which Datafiles to look up; the workers never learn anything
but ids and names. Workloads, each an operation mix of the open-loop schedule:

* ``single-query``: lookups that return exactly one Datafile, by JPQL, the concise syntax and
  ``get`` in turn (``sv7 run``'s single-result queries);
* ``mix``: ``sv7 run``'s sweep mix (``--mix search=21,get=8,create=1``);
* ``burst``: each call a ``createMany`` of ``--batch-size`` Datafiles into the run's Dataset.

Whatever a worker creates is journaled in its memory and sent to the master, which appends it to
the run's journal file; everything also hangs below the run's Facility, so the Facility's
cleanup removes what a worker lost mid-run could not report.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from igestbench.client import Catalogue, ClientConfig, LeanCatalogue
from igestbench.errors import Sv7Error
from igestbench.icat.beans import Bean
from igestbench.icat.credentials import Credentials
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import get_profile
from igestbench.measure.schedule import ClientFactory, Operation
from igestbench.measure.timing import Recorder, Timer
from igestbench.nexus import generate_run
from igestbench.run.load_sweep import _lookups as sweep_lookups
from igestbench.workloads import Journal
from igestbench.workloads.ingest import Ingestor

__all__ = ["WORKLOAD_NAMES", "login_factory", "operations", "prepare", "targets_from_wire"]

WORKLOAD_NAMES = ("single-query", "mix", "burst")
#: NeXus files the master ingests for the lookups (as sv7 run's sweep).
PREPARED_FILES = 5


class _OneSession(LeanCatalogue):
    """A lean client that logs out when closed: a worker must not leave sessions behind."""

    def close(self) -> None:
        with contextlib.suppress(Sv7Error):
            self.logout()
        super().close()


def login_factory(client: ClientConfig, credentials: Credentials) -> ClientFactory:
    """Makes a logged-in lean client (one per Locust user: its own connection and session)."""

    def make() -> Catalogue:
        catalogue = _OneSession(client)
        try:
            catalogue.login(credentials.authenticator, credentials.as_login())
        except BaseException:
            catalogue.close()
            raise
        return catalogue

    return make


def prepare(factory: ClientFactory, journal: Journal, run_name: str, work: Path) -> list[Bean]:
    """Ingest the run's few NeXus files; the Datafiles (with their Dataset) to look up."""
    setup = factory()
    try:
        ingestor = Ingestor(setup, get_profile("6.2"), journal, Timer(Recorder()))
        for path in generate_run(work / run_name, run_name, PREPARED_FILES):
            ingestor.ingest(path)
        mine = Query("Datafile").where(
            {"dataset.investigation.facility.name": Condition("=", run_name)}
        )
        return list(setup.search(mine.include("dataset")))
    finally:
        setup.close()


def targets_to_wire(targets: Sequence[Bean]) -> list[dict[str, Any]]:
    return [{"id": int(t["id"]), "name": str(t["name"]), "dataset": int(t["dataset"].id)}
            for t in targets]  # fmt: skip


def targets_from_wire(data: Sequence[Mapping[str, Any]]) -> list[Bean]:
    return [
        Bean("Datafile", {"id": int(t["id"]), "name": str(t["name"]),
                          "dataset": Bean("Dataset", {"id": int(t["dataset"])})})
        for t in data
    ]  # fmt: skip


def _burst(dataset_id: int, batch_size: int, prefix: str, journal: Journal) -> Operation:
    turn = itertools.count()

    def create_many(client: Catalogue) -> object:
        first = next(turn) * batch_size
        beans = []
        for i in range(first, first + batch_size):
            name = f"{prefix}-{i:08d}.nxs"
            beans.append(
                Bean(
                    "Datafile",
                    {
                        "name": name,
                        "location": f"/sv7/swarm/{name}",
                        "fileSize": 0,
                        "dataset": Bean("Dataset", {"id": dataset_id}),
                    },
                )
            )
        # one object: create, as sv7 run's mix does; more: one createMany call
        ids = client.create_many(beans) if batch_size > 1 else [client.create(beans[0])]
        journal.add_many("Datafile", ids)
        return ids

    return create_many


def operations(
    workload: str,
    targets: Sequence[Bean],
    journal: Journal,
    *,
    mix: Mapping[str, int],
    batch_size: int,
    prefix: str,
) -> tuple[dict[str, Operation], dict[str, int]]:
    """(operations, weights) of ``workload`` for one worker; ``prefix`` keeps the names of the
    Datafiles it creates apart from every other worker's (Datafile names are unique per Dataset)."""
    if not targets:
        raise ValueError("the swarm needs Datafiles to look up")
    dataset_id = int(targets[0]["dataset"].id)
    if workload == "burst":
        return {"createMany": _burst(dataset_id, batch_size, prefix, journal)}, {"createMany": 1}
    lookups = sweep_lookups(list(targets), dataset_id, journal)
    if workload == "single-query":
        return lookups, {"search": 1, "concise": 1, "get": 1}
    if workload == "mix":
        # sv7 run's create numbers its files per process: here they must differ per worker too
        lookups["create"] = _burst(dataset_id, 1, f"{prefix}-c", journal)
        return lookups, dict(mix)
    raise ValueError(f"unknown workload {workload!r}; choose from {', '.join(WORKLOAD_NAMES)}")
