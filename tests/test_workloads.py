"""The four workloads, with both client flavours, against the local catalogue — and the cleanup."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from igestbench.client import connect
from igestbench.client.base import Catalogue, ClientConfig
from igestbench.icat.beans import Bean
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import get_profile
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.nexus import generate_run
from igestbench.workloads import (
    Journal,
    RunTag,
    WorkloadContext,
    cleanup,
    run_burst,
    run_full_cycle,
    run_multi_query,
    run_single_queries,
)

FLAVOURS = ("zeep", "python-icat")


@pytest.fixture(params=FLAVOURS)
def client(request: pytest.FixtureRequest, catalogue: LocalCatalogue) -> Iterator[Catalogue]:
    cat = connect(ClientConfig(url=catalogue.service_url), flavour=request.param)
    cat.login("simple", {"username": "ingest", "password": "ingest"})
    yield cat
    cat.logout()
    cat.close()


def context(client: Catalogue, tmp_path: Path, site: str = "test-site") -> WorkloadContext:
    return WorkloadContext(
        client, get_profile("6.2"), RunTag.new(site), Journal(tmp_path / "journal.jsonl")
    )


def under_tag(ctx: WorkloadContext, entity: str, path: str) -> int:
    query = Query(entity).where({path: Condition("=", ctx.tag.name)}).count()
    return int(ctx.catalogue.search(query)[0])


def assert_clean(ctx: WorkloadContext) -> None:
    assert under_tag(ctx, "Facility", "name") == 0
    assert under_tag(ctx, "Datafile", "dataset.investigation.facility.name") == 0


def test_full_cycle_creates_the_hierarchy_and_cleanup_removes_it(
    client: Catalogue, tmp_path: Path
) -> None:
    ctx = context(client, tmp_path)
    files = generate_run(
        tmp_path / "nexus", ctx.tag.name, 12, files_per_dataset=4, datasets_per_investigation=2
    )
    result = run_full_cycle(ctx, files)
    assert result.ok, result.problems
    assert result.checks == {"expected": 12, "found": 12}
    ops = [r.op for r in result.records]
    assert ops.count("full-cycle") == 12
    assert ops.count("full-cycle/read NeXus") == 12
    assert ops.count("full-cycle/create Facility") == 1  # then found by the existence checks
    assert ops.count("full-cycle/lookup Facility") == 12
    assert ops.count("full-cycle/create Dataset") == 3
    assert ops.count("full-cycle/create Datafile") == 12
    assert under_tag(ctx, "Investigation", "facility.name") >= 1

    report = cleanup(client, ctx.journal)
    assert report.deleted + report.already_gone == len(ctx.journal)
    assert_clean(ctx)


def test_single_burst_and_multi_query(client: Catalogue, tmp_path: Path) -> None:
    ctx = context(client, tmp_path)
    files = generate_run(tmp_path / "nexus", ctx.tag.name, 3)
    assert run_full_cycle(ctx, files).ok
    targets = ctx.catalogue.search(
        Query("Datafile")
        .where({"dataset.investigation.facility.name": Condition("=", ctx.tag.name)})
        .include("dataset")
    )
    assert len(targets) == 3

    single = run_single_queries(ctx, targets, 30)
    assert single.ok and single.checks == {"requests": 30, "correct": 30}
    assert {r.op for r in single.records} == {
        "single-query/jpql",
        "single-query/concise",
        "single-query/get",
    }

    dataset_id = int(targets[0]["dataset"].id)
    burst = run_burst(ctx, dataset_id, 60, batch_size=25)
    assert burst.ok, burst.problems
    assert burst.checks["create.found"] == burst.checks["createMany.found"] == 60
    assert sum(1 for r in burst.records if r.op == "burst/createMany") == 3

    expected = 60 * 2 + sum(1 for t in targets if t["dataset"].id == dataset_id)
    multi = run_multi_query(ctx, dataset_id, expected, page_size=50, repeat=2)
    assert multi.ok, multi.problems

    cleanup(client, ctx.journal)
    assert_clean(ctx)


def test_flavours_agree(catalogue: LocalCatalogue, tmp_path: Path) -> None:
    clients = [connect(ClientConfig(url=catalogue.service_url), flavour=f) for f in FLAVOURS]
    for c in clients:
        c.login("simple", {"username": "root", "password": "root"})
    ctx = context(clients[0], tmp_path)
    assert run_full_cycle(ctx, generate_run(tmp_path / "n", ctx.tag.name, 5)).ok
    mine = Query("Datafile").where(
        {"dataset.investigation.facility.name": Condition("=", ctx.tag.name)}
    )
    query = mine.include("dataset.investigation.facility").order_by("name")
    answers = [c.search(query) for c in clients]
    as_dicts = [[b.to_dict() for b in answer] for answer in answers]
    assert as_dicts[0] == as_dicts[1] and len(as_dicts[0]) == 5
    counts = [c.search(mine.count()) for c in clients]
    assert counts[0] == counts[1] == [5]
    cleanup(clients[1], ctx.journal)
    assert_clean(ctx)
    for c in clients:
        c.logout()
        c.close()


def test_cleanup_from_the_journal_file_after_a_crash(
    catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    first = connect(ClientConfig(url=catalogue.service_url), flavour="zeep")
    first.login("simple", {"username": "ingest", "password": "ingest"})
    ctx = context(first, tmp_path)
    run_full_cycle(ctx, generate_run(tmp_path / "n", ctx.tag.name, 4))
    # the run "crashes" here: no cleanup
    first.close()

    second = connect(ClientConfig(url=catalogue.service_url), flavour="zeep")
    second.login("simple", {"username": "ingest", "password": "ingest"})
    journal = Journal.load(tmp_path / "journal.jsonl")
    assert len(journal) == len(ctx.journal)
    cleanup(second, journal)
    ctx.catalogue = second
    assert_clean(ctx)
    second.close()


def test_cleanup_finds_a_facility_whose_id_never_came_back(
    catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """A Ctrl-C or a timeout between a create's request and its answer: the catalogue holds the
    object, the journal does not. It hangs below the run's Facility, which the journal names."""
    cat = connect(ClientConfig(url=catalogue.service_url), flavour="zeep")
    cat.login("simple", {"username": "ingest", "password": "ingest"})
    ctx = context(cat, tmp_path)
    first = (tmp_path / "journal.jsonl").read_text(encoding="utf-8").splitlines()[0]
    assert first == f'{{"facility": "{ctx.tag.name}"}}'  # written before anything is created
    facility = cat.create(Bean("Facility", {"name": ctx.tag.name}))  # never journaled
    cat.create(Bean("Investigation", {"facility": Bean("Facility", {"id": facility}),
                                      "name": "lost", "visitId": "1", "title": "t",
                                      "type": _investigation_type(cat, facility)}))
    # a name that only begins like the tag is not the run's (the run's are tag or tag-suffix)
    other = cat.create(Bean("Facility", {"name": ctx.tag.name + "0"}))

    report = cleanup(cat, Journal.load(tmp_path / "journal.jsonl"))  # as sv7 cleanup does
    # the Facility, its InvestigationType and Investigation: none journaled, all the run's
    assert (report.deleted, report.by_name, report.already_gone) == (3, 3, 0)
    assert_clean(ctx)
    assert cat.get("Facility", other).id == other
    cat.delete(Bean("Facility", {"id": other}))
    cat.close()


def test_the_api_cleanup_removes_the_journal_once_all_it_lists_is_gone(
    catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """The README's Python example left run.jsonl behind after a complete cleanup, where sv7 run
    and sv7 cleanup remove theirs: now the file goes once every object it lists is gone, and
    stays while anything is left, so that a later cleanup resumes from it."""
    cat = connect(ClientConfig(url=catalogue.service_url), flavour="zeep")
    cat.login("simple", {"username": "ingest", "password": "ingest"})
    root = connect(ClientConfig(url=catalogue.service_url), flavour="zeep")
    root.login("simple", {"username": "root", "password": "root"})
    ctx = context(cat, tmp_path)
    path = tmp_path / "journal.jsonl"
    assert run_full_cycle(ctx, generate_run(tmp_path / "n", ctx.tag.name, 2)).ok
    (facility,) = cat.search(Query("Facility").where(name=Condition("=", ctx.tag.name)))
    # another account's object below the run's Facility: it stays, and the Facility above it
    theirs = root.create(Bean("InvestigationType", {"name": "partner", "facility": facility}))

    first = cleanup(cat, ctx.journal)
    assert not first.complete and first.kept and path.exists()

    root.delete(Bean("InvestigationType", {"id": theirs}))
    report = cleanup(cat, Journal.load(path))  # later, from the file, as after a crash
    assert report.complete and not path.exists()
    assert report.journal_removed and not first.journal_removed
    assert_clean(ctx)
    cat.close()
    root.close()


def _investigation_type(cat: Catalogue, facility: int) -> Bean:
    return Bean("InvestigationType", {"id": cat.create(Bean("InvestigationType", {
        "name": "experiment", "facility": Bean("Facility", {"id": facility})}))})


def test_a_damaged_journal_is_a_clear_error(tmp_path: Path) -> None:
    from igestbench.errors import UsageError

    path = tmp_path / "j.jsonl"
    path.write_text('{"entity": "Datafile", "id": 1}\nnot json\n{"entity": "Dataset", "id": 2}\n')
    with pytest.raises(UsageError, match=r"j.jsonl:2: not a journal entry"):
        Journal.load(path)
    path.write_text('{"entity": "Datafile", "id": 1}\n{"entity": "Da')  # cut short by a crash
    assert Journal.load(path).entries == (("Datafile", 1),)


def test_wrong_answers_count_as_failures(catalogue: LocalCatalogue, tmp_path: Path) -> None:
    cat = connect(ClientConfig(url=catalogue.service_url), flavour="zeep")
    cat.login("simple", {"username": "ingest", "password": "ingest"})
    ctx = context(cat, tmp_path)
    ghost = Bean(
        "Datafile", {"id": 10**9, "name": "ghost.nxs", "dataset": Bean("Dataset", {"id": 1})}
    )
    result = run_single_queries(ctx, [ghost], 3, kinds=("jpql",))
    assert result.checks == {"requests": 3, "correct": 0}
    assert {r.error for r in result.records} == {"WrongResult"}
    cat.close()


@pytest.mark.parametrize("flavour", ["zeep", "lean", "python-icat"])
def test_multi_query_times_fetch_and_decode_apart_where_it_can(
    catalogue: LocalCatalogue, tmp_path: Path, flavour: str
) -> None:
    cat = connect(ClientConfig(url=catalogue.service_url), flavour=flavour)
    cat.login("simple", {"username": "ingest", "password": "ingest"})
    ctx = context(cat, tmp_path)
    assert run_full_cycle(ctx, generate_run(tmp_path / "n", ctx.tag.name, 1)).ok
    (df,) = cat.search(
        Query("Datafile")
        .where({"dataset.investigation.facility.name": Condition("=", ctx.tag.name)})
        .include("dataset")
    )
    dataset_id = int(df["dataset"].id)
    assert run_burst(ctx, dataset_id, 40, modes=("createMany",)).ok
    result = run_multi_query(ctx, dataset_id, 41, page_size=16, repeat=1)
    assert result.ok, result.problems
    ops = {r.op for r in result.records}
    whole = {"multi-query/whole", "multi-query/paged"}  # each search timed whole, and its steps
    if flavour == "python-icat":  # suds decodes as it receives: no split to be had
        assert ops == whole | {"multi-query/whole/search", "multi-query/paged/search"}
    else:
        assert ops == whole | {
            "multi-query/whole/fetch",
            "multi-query/whole/decode",
            "multi-query/paged/fetch",
            "multi-query/paged/decode",
        }
    searches = [r for r in result.records if r.op == "multi-query/whole"]
    steps = [r for r in result.records if r.op.startswith("multi-query/whole/")]
    assert len(searches) == 1 and sum(r.duration_ns for r in steps) <= searches[0].duration_ns
    cleanup(cat, ctx.journal)
    assert_clean(ctx)
    cat.close()
