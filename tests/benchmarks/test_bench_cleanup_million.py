"""``sv7 cleanup`` of a run's tree of 10^6 Datafiles, straight through and after a kill -9.

The tree is a facility's shape, as the scale part of ``sv7 run`` grows it (issue 21): a Facility
with its types, Investigations of 25 Datasets, Datasets of 400 Datafiles, a DatafileParameter on
one Datafile in four (1,250,000 Datafiles and parameters, and the Datasets and Investigations
above them). It is built through createMany batches of 10,000 Datafiles and journaled one line per
batch, against ``sv7 serve`` in its own process; then ``sv7 cleanup`` (the command, as an operator
runs it) removes it: once straight through, once killed with SIGKILL in the middle of its deletes
and run again (the second run resumes: the journal's objects are not checked again, and only what
is left is surveyed). The wall times are printed, never asserted; what is asserted is that nothing
is left. ``SV7_BENCH_DATAFILES`` sets a smaller size for a quick try. Takes minutes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from igestbench.client import Catalogue, ClientConfig, connect
from igestbench.client.server_clock import server_clock
from igestbench.icat.beans import Bean
from igestbench.icat.endpoint import endpoint_of
from igestbench.icat.query import Condition, Query
from igestbench.workloads import CatalogueIdentity, Journal, RunTag
from igestbench.workloads.run_window import RunClock
from tests.benchmarks.served import served_catalogue

DATAFILES = int(os.environ.get("SV7_BENCH_DATAFILES", "1000000"))
FILES_PER_DATASET = 400
DATASETS_PER_INVESTIGATION = 25
PARAMETER_EVERY = 4
BATCH = 10_000


def ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    with served_catalogue() as (_, url):
        yield url


def login(url: str) -> Catalogue:
    client = connect(ClientConfig(url, read_timeout=600), "lean")
    client.login("simple", {"username": "ingest", "password": "ingest"})
    return client


def build(url: str, path: Path) -> tuple[str, float, int]:
    """A journaled run tree of :data:`DATAFILES` Datafiles: (its Facility's name, the seconds
    it took, how many objects it holds)."""
    client = login(url)
    tag = RunTag.new("bench")
    ours, theirs = server_clock(ClientConfig(url))
    identity = CatalogueIdentity(endpoint_of(url).service_url, client.version())
    journal = Journal.start(path, tag.name, identity, client.user_name(), RunClock(ours, theirs))
    began = time.perf_counter()
    name = f"{tag.name}-scale"
    journal.name_facility(name)
    facility = client.create(Bean("Facility", {"name": name}))
    journal.add("Facility", facility)
    types = [
        Bean("InvestigationType", {"name": "experiment", "facility": ref("Facility", facility)}),
        Bean("DatasetType", {"name": "raw", "facility": ref("Facility", facility)}),
        Bean("DatafileFormat", {"name": "NeXus", "version": "4.3",
                                "facility": ref("Facility", facility)}),
        Bean("ParameterType", {"name": "temperature", "units": "K", "valueType": "NUMERIC",
                               "applicableToDatafile": True,
                               "facility": ref("Facility", facility)}),
    ]  # fmt: skip
    kinds = client.create_many(types)
    for bean, new_id in zip(types, kinds, strict=True):
        journal.add(bean.entity, new_id)
    parameter_type = Bean("ParameterType", {"id": kinds[3], "name": "temperature", "units": "K",
                                            "valueType": "NUMERIC", "applicableToDatafile": True})
    datasets_needed = -(-DATAFILES // FILES_PER_DATASET)
    investigations = client.create_many([
        Bean("Investigation", {"name": f"inv-{n:05d}", "visitId": "1", "title": "bench",
                               "facility": ref("Facility", facility),
                               "type": ref("InvestigationType", kinds[0])})
        for n in range(-(-datasets_needed // DATASETS_PER_INVESTIGATION))])  # fmt: skip
    journal.add_many("Investigation", investigations)
    datasets: list[int] = []
    for start in range(0, datasets_needed, 1000):
        made = client.create_many([
            Bean("Dataset", {"name": f"ds-{n:07d}", "complete": True,
                             "type": ref("DatasetType", kinds[1]),
                             "investigation": ref("Investigation",
                                                  investigations[n // DATASETS_PER_INVESTIGATION])})
            for n in range(start, min(datasets_needed, start + 1000))])  # fmt: skip
        journal.add_many("Dataset", made)
        datasets += made
    for start in range(0, DATAFILES, BATCH):
        beans = []
        for serial in range(start, min(DATAFILES, start + BATCH)):
            values = {"name": f"f-{serial:09d}.nxs", "fileSize": serial,
                      "dataset": ref("Dataset", datasets[serial // FILES_PER_DATASET]),
                      "datafileFormat": ref("DatafileFormat", kinds[2])}  # fmt: skip
            if serial % PARAMETER_EVERY == 0:
                values["parameters"] = [Bean("DatafileParameter", {"type": parameter_type,
                                                                   "numericValue": serial})]
            beans.append(Bean("Datafile", values))
        journal.add_many("Datafile", client.create_many(beans))  # one journal line per batch
    seconds = time.perf_counter() - began
    objects = (1 + len(kinds) + len(investigations) + len(datasets) + DATAFILES
               + -(-DATAFILES // PARAMETER_EVERY))  # fmt: skip
    client.close()
    return name, seconds, objects


Cleaned = tuple[subprocess.CompletedProcess[str] | None, float, list[str]]


def sv7_cleanup(path: Path, kill_below: tuple[str, str, int] | None = None) -> Cleaned:
    """Run ``sv7 cleanup PATH``; with ``kill_below`` (the served URL, the run's Facility name, a
    number of Datafiles), SIGKILL it once fewer Datafiles than that are left below the Facility."""
    env = {**os.environ, "SV7_AUTH": "simple", "SV7_USER": "ingest", "SV7_PASSWORD": "ingest"}
    command = [sys.executable, "-m", "igestbench", "cleanup", str(path)]
    began = time.perf_counter()
    if kill_below is None:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
        lines = (done.stderr + done.stdout).splitlines()
        return done, time.perf_counter() - began, lines
    url, name, below = kill_below
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, text=True, env=env)
        while left(url, name) >= below and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        err.seek(0)
        lines = err.read().splitlines()
    return None, time.perf_counter() - began, lines


def left(url: str, name: str) -> int:
    client = login(url)
    query = Query("Datafile").where({"dataset.investigation.facility.name": Condition("=", name)})
    (count,) = client.search(query.count())
    (facilities,) = client.search(Query("Facility").where(name=Condition("=", name)).count())
    client.close()
    return int(count) + int(facilities)


def test_cleanup_of_a_million_datafiles(
    served: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    figures = []
    name, built_s, objects = build(served, tmp_path / "straight.journal.jsonl")
    done, straight_s, lines = sv7_cleanup(tmp_path / "straight.journal.jsonl")
    assert done is not None and done.returncode == 0, "\n".join(lines)
    assert left(served, name) == 0
    figures.append(("straight through", straight_s, lines))

    name, built_again_s, _ = build(served, tmp_path / "killed.journal.jsonl")
    # killed once a third of the Datafiles are gone, in the middle of its deletes
    kill = (served, name, DATAFILES * 2 // 3)
    _, killed_s, killed_lines = sv7_cleanup(tmp_path / "killed.journal.jsonl", kill)
    partly = left(served, name)
    assert 0 < partly < DATAFILES, "\n".join(killed_lines)  # something was deleted, not all
    done, resumed_s, lines = sv7_cleanup(tmp_path / "killed.journal.jsonl")
    assert done is not None and done.returncode == 0, "\n".join(lines)
    assert left(served, name) == 0
    figures.append(("killed a third of the way", killed_s, killed_lines))
    figures.append(("… then run again (resumed)", resumed_s, lines))
    with capsys.disabled():
        print(f"\nsv7 cleanup of {objects:,} objects ({DATAFILES:,} Datafiles; sv7 serve in its "
              f"own process; built by createMany in {built_s:.0f} s and {built_again_s:.0f} s, "
              f"{objects / built_s:,.0f} objects/s); load average {os.getloadavg()[0]:.1f}")
        for label, seconds, output in figures:
            print(f"  {label:30s} {seconds:7.1f} s")
            for line in output:
                print(f"      {line}")
        print(f"  (the kill left {partly:,} Datafiles and Facilities; resumed and cleaned)")
