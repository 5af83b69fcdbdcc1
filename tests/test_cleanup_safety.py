"""Cleanup on a partner's catalogue: it deletes only what still belongs to the run.

An id proves nothing on its own: two catalogues hand out the same ids, and on one catalogue an
id the run journaled may now be someone else's object. These tests give cleanup exactly those
situations and check that the partner's objects survive.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from igestbench.client import connect
from igestbench.client.base import Catalogue, ClientConfig
from igestbench.config import ServeConfig
from igestbench.icat.endpoint import endpoint_of
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import get_profile
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.nexus import generate_run
from igestbench.workloads import (
    CatalogueIdentity,
    Journal,
    RunTag,
    WorkloadContext,
    cleanup,
    run_full_cycle,
)
from igestbench.workloads.journal import JournalLock
from igestbench.workloads.ownership import facility_path
from igestbench.workloads.run_tag import InvalidRunTag
from tests.test_run import credentials_env, sv7

#: what a full cycle creates
ENTITIES = ("Facility", "Instrument", "InvestigationType", "Investigation", "DatasetType",
            "Dataset", "DatafileFormat", "Datafile")  # fmt: skip


def login(cat: LocalCatalogue) -> Catalogue:
    client = connect(ClientConfig(url=cat.service_url), flavour="zeep")
    client.login("simple", {"username": "ingest", "password": "ingest"})
    return client


def ingest(
    client: Catalogue, tmp: Path, site: str | RunTag, journal: Journal
) -> WorkloadContext:
    """What a run does: a few full cycles below a Facility of its own, journaled."""
    tag = site if isinstance(site, RunTag) else RunTag.new(site)
    ctx = WorkloadContext(client, get_profile("6.2"), tag, journal)
    run_full_cycle(ctx, generate_run(tmp / ctx.tag.name, ctx.tag.name, 3))
    return ctx


def below(client: Catalogue, facility: str) -> dict[str, set[int]]:
    """The ids of each entity that hang below the Facility named ``facility``."""
    found = {}
    for entity in ENTITIES:
        path = facility_path(entity)
        key = f"{path}.name" if path else "name"
        query = Query(entity).select("id").where({key: Condition("=", facility)})
        found[entity] = {int(i) for i in client.search(query)}
    return found


def start_journal(path: Path, client: Catalogue, cat: LocalCatalogue, tag: RunTag) -> Journal:
    identity = CatalogueIdentity(endpoint_of(cat.service_url).service_url, client.version())
    return Journal.start(path, tag.name, identity)


def journaled_run(
    client: Catalogue, cat: LocalCatalogue, tmp: Path, site: str
) -> tuple[Path, WorkloadContext]:
    """A run of ``site`` with its journal file in ``tmp`` (as sv7 run starts it)."""
    path = tmp / f"{site}.journal.jsonl"
    tag = RunTag.new(site)
    return path, ingest(client, tmp, tag, start_journal(path, client, cat, tag))


@pytest.fixture()
def two_catalogues() -> Iterator[tuple[LocalCatalogue, LocalCatalogue]]:
    with LocalCatalogue(ServeConfig()) as ours, LocalCatalogue(ServeConfig()) as partners:
        yield ours, partners


def test_a_journal_of_one_catalogue_deletes_nothing_on_another(
    two_catalogues: tuple[LocalCatalogue, LocalCatalogue], tmp_path: Path
) -> None:
    ours, partners = two_catalogues
    mine, theirs = login(ours), login(partners)
    partner = ingest(theirs, tmp_path, "partner", Journal())  # the partner's own data
    path, run = journaled_run(mine, ours, tmp_path, "ours")
    before = below(theirs, partner.tag.name)
    partners_ids = {(e, i) for e, ids in before.items() for i in ids}
    overlap = set(run.journal.entries) & partners_ids
    assert len(overlap) >= 8  # fresh catalogues hand out the same ids: the case to guard

    # a typo in the URL is enough: refused before anything is deleted, with the reason
    result = sv7("cleanup", "--journal", str(path), "--target", partners.service_url,
                 env=credentials_env())  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert f"belongs to the catalogue at {endpoint_of(ours.service_url).service_url}" in (
        result.stderr
    )
    assert "nothing deleted" in result.stderr and path.exists()
    assert below(theirs, partner.tag.name) == before

    # even past the URL (another server at the same address): the server says whose they are
    report = cleanup(theirs, Journal.load(path))
    assert report.deleted == 0 and below(theirs, partner.tag.name) == before
    assert len(report.foreign) == len(overlap)

    # the journal's own catalogue (the target comes from the journal): all gone, journal too
    result = sv7("cleanup", str(tmp_path), env=credentials_env())
    assert result.returncode == 0, result.stderr
    assert "journal removed" in result.stdout and not path.exists()
    assert below(mine, run.tag.name) == {e: set() for e in ENTITIES}
    assert below(theirs, partner.tag.name) == before
    mine.close()
    theirs.close()


def test_a_journaled_id_that_is_someone_elses_now_is_reported_and_left_alone(
    fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    client = login(fresh_catalogue)
    path, run = journaled_run(client, fresh_catalogue, tmp_path, "ours")
    # the journal names two of the partner's objects, as an id the catalogue gave to someone
    # else after the run's own object was deleted would
    partner = ingest(client, tmp_path, "partner", Journal())
    theirs = below(client, partner.tag.name)
    taken = [("Investigation", min(theirs["Investigation"])), ("Dataset", min(theirs["Dataset"]))]
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text(
        "\n".join(lines[:2] + [f'{{"entity": "{e}", "id": {i}}}' for e, i in taken] + lines[2:])
        + "\n",
        encoding="utf-8",
    )

    result = sv7("cleanup", str(path), env=credentials_env())
    assert result.returncode == 1, result.stderr
    assert "2 object(s) are not the run's" in result.stderr
    assert "Investigation" in result.stderr and "journal kept" in result.stderr
    assert path.exists()
    assert below(client, partner.tag.name) == theirs  # untouched
    assert below(client, run.tag.name) == {e: set() for e in ENTITIES}  # the run's own: gone

    report = cleanup(client, Journal.load(path))  # again, in-process: the same verdict
    assert report.deleted == 0 and set(report.foreign) == set(taken)
    client.close()


def test_a_journal_without_a_run_facility_proves_nothing(
    fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """A hand-made list of ids (no Facility line): nothing in it can be shown to be the run's."""
    client = login(fresh_catalogue)
    partner = ingest(client, tmp_path, "partner", Journal())
    theirs = below(client, partner.tag.name)
    journal = Journal()
    journal.add_many("Datafile", sorted(theirs["Datafile"]))
    with pytest.raises(InvalidRunTag, match="names no run"):
        cleanup(client, journal)
    assert below(client, partner.tag.name) == theirs
    client.close()


def test_cleanup_of_a_missing_path_and_of_no_journals(tmp_path: Path) -> None:
    result = sv7("cleanup", str(tmp_path / "nope"), env=credentials_env())
    assert result.returncode == 2 and "no such journal file or directory" in result.stderr
    result = sv7("cleanup", str(tmp_path), env=credentials_env())
    assert result.returncode == 0 and "nothing to clean up" in result.stdout
    result = sv7("cleanup", env=credentials_env())
    assert result.returncode == 2 and "name a journal file" in result.stderr


def test_the_journal_of_a_run_still_going_is_left_alone(
    fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """``sv7 cleanup reports/`` from cron while a run goes on must not pull its data away."""
    client = login(fresh_catalogue)
    path, run = journaled_run(client, fresh_catalogue, tmp_path, "live")
    before = below(client, run.tag.name)
    with JournalLock(path):  # as the runner holds it for the whole run
        result = sv7("cleanup", str(tmp_path), env=credentials_env())
    assert result.returncode == 1 and "in use by a run still going" in result.stderr
    assert below(client, run.tag.name) == before and path.exists()
    result = sv7("cleanup", str(tmp_path), env=credentials_env())  # the run has ended
    assert result.returncode == 0, result.stderr
    assert below(client, run.tag.name) == {e: set() for e in ENTITIES} and not path.exists()
    client.close()
