"""Cleanup deletes only what the server proves to be the run's — whatever the journal says.

Each test is one way a copied, corrupted or edited journal (an operator's everyday mistake), or a
partner working beside the run, would have made cleanup delete a partner's data (issue 18.1):
a Facility line naming a partner's Facility, a run tag that matches other people's names, an
object another account hung below the run's tree, one that reaches into the tree through a
relation a delete cascades along, one created before the run began.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from igestbench.client import connect
from igestbench.client.base import Catalogue, ClientConfig
from igestbench.client.server_clock import server_clock
from igestbench.icat.beans import Bean
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
    run_window,
)
from igestbench.workloads.full_cycle import run_full_cycle
from igestbench.workloads.run_window import RunClock
from igestbench.workloads.survey import WHY_ACCOUNT, WHY_BEFORE, WHY_ELSEWHERE
from tests.test_run import credentials_env, sv7


def login(cat: LocalCatalogue, user: str = "ingest") -> Catalogue:
    client = connect(ClientConfig(url=cat.service_url), flavour="zeep")
    client.login("simple", {"username": user, "password": user})
    return client


def start(path: Path, client: Catalogue, cat: LocalCatalogue, tag: RunTag) -> Journal:
    """A run's journal as sv7 run starts it: tag, catalogue, account and both clocks."""
    identity = CatalogueIdentity(endpoint_of(cat.service_url).service_url, client.version())
    ours, theirs = server_clock(ClientConfig(url=cat.service_url))
    assert theirs is not None  # the local catalogue sends Date
    return Journal.start(path, tag.name, identity, client.user_name(), RunClock(ours, theirs))


def run(client: Catalogue, cat: LocalCatalogue, tmp: Path) -> tuple[Path, WorkloadContext]:
    """A genuine run: a few full cycles below a Facility of its own, journaled to a file."""
    path, tag = tmp / "run.journal.jsonl", RunTag.new("ours")
    ctx = WorkloadContext(client, get_profile("6.2"), tag, start(path, client, cat, tag))
    run_full_cycle(ctx, generate_run(tmp / tag.name, tag.name, 3))
    return path, ctx


def ids(client: Catalogue, entity: str, where: dict[str, str | Condition]) -> set[int]:
    return {int(i) for i in client.search(Query(entity).select("id").where(where))}


def below(client: Catalogue, facility: int) -> dict[str, set[int]]:
    """The ids of what hangs below Facility ``facility`` (and the Facility itself)."""
    paths = {"Facility": "id", "Investigation": "facility.id", "DatafileFormat": "facility.id",
             "Dataset": "investigation.facility.id", "DatasetType": "facility.id",
             "Datafile": "dataset.investigation.facility.id",
             "InvestigationType": "facility.id"}  # fmt: skip
    return {e: ids(client, e, {p: Condition("=", facility)}) for e, p in paths.items()}


def facility_of(ctx: WorkloadContext) -> int:
    (found,) = ids(ctx.catalogue, "Facility", {"name": Condition("=", ctx.tag.name)})
    return found


def a_tree(client: Catalogue, name: str) -> dict[str, int]:
    """Facility → InvestigationType, Investigation → DatasetType, Dataset → Datafile."""
    made = {"Facility": client.create(Bean("Facility", {"name": name}))}
    facility = Bean("Facility", {"id": made["Facility"]})
    made["InvestigationType"] = client.create(
        Bean("InvestigationType", {"name": "t", "facility": facility})
    )
    made["Investigation"] = client.create(Bean("Investigation", {
        "name": f"{name}-inv", "visitId": "1", "title": "t", "facility": facility,
        "type": Bean("InvestigationType", {"id": made["InvestigationType"]})}))  # fmt: skip
    made["DatasetType"] = client.create(Bean("DatasetType", {"name": "t", "facility": facility}))
    made["Dataset"] = client.create(Bean("Dataset", {
        "name": f"{name}-ds", "complete": False,
        "investigation": Bean("Investigation", {"id": made["Investigation"]}),
        "type": Bean("DatasetType", {"id": made["DatasetType"]})}))  # fmt: skip
    made["Datafile"] = client.create(Bean("Datafile", {
        "name": f"{name}.nxs", "dataset": Bean("Dataset", {"id": made["Dataset"]})}))  # fmt: skip
    return made


def still_there(client: Catalogue, made: dict[str, int]) -> bool:
    return all(ids(client, e, {"id": Condition("=", i)}) for e, i in made.items())


def test_a_journal_line_naming_a_partners_facility_deletes_nothing_of_it(
    fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    client = login(fresh_catalogue)
    path, ctx = run(client, fresh_catalogue, tmp_path)
    # the partner's Facility, made by the same account in the run's own time: only its name
    # says it is not the run's
    partner = a_tree(client, "PARTNER-0")
    with path.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"facility": "PARTNER-0"}) + "\n")
        out.write(json.dumps({"entity": "Facility", "id": partner["Facility"]}) + "\n")

    result = sv7("cleanup", str(path), env=credentials_env())
    assert result.returncode == 1, result.stdout + result.stderr
    assert still_there(client, partner)
    assert "'PARTNER-0'" in result.stderr and "not the run's" in result.stderr
    assert "journal kept" in result.stderr and path.exists()
    assert ids(client, "Facility", {"name": Condition("=", ctx.tag.name)}) == set()  # the run's
    client.close()


@pytest.mark.parametrize("tag", ["%", "sv7-", "PART", ""])
def test_a_run_tag_sv7_does_not_write_is_refused_before_any_request(
    tag: str, fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    root = login(fresh_catalogue, "root")
    theirs = {"User": root.create(Bean("User", {"name": "PARTNER-user"})),
              "Grouping": root.create(Bean("Grouping", {"name": "PARTNER-group"}))}  # fmt: skip
    path = tmp_path / "run.journal.jsonl"

    def journal(url: str) -> None:
        header = {"journal": 2, "run": tag, "catalogue": {"url": url, "api_version": "6.2.0"}}
        lines = [header, *({"entity": e, "id": i} for e, i in theirs.items())]
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    # at an address where nothing answers: the refusal comes before any request
    journal("http://127.0.0.1:9/ICATService/ICAT")
    result = sv7("cleanup", str(path), env=credentials_env("root", "root"))
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert "is not a run tag sv7 writes" in line and "nothing deleted" in line, line
    # at the catalogue itself: nothing of the partner's is touched
    journal(endpoint_of(fresh_catalogue.service_url).service_url)
    result = sv7("cleanup", str(path), env=credentials_env("root", "root"))
    assert result.returncode == 1 and "is not a run tag sv7 writes" in result.stderr
    assert still_there(root, theirs) and path.exists()
    root.close()


def test_what_another_account_hung_below_the_runs_tree_is_kept_with_what_it_needs(
    fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    client, root = login(fresh_catalogue), login(fresh_catalogue, "root")
    path, ctx = run(client, fresh_catalogue, tmp_path)
    facility = facility_of(ctx)
    before = below(client, facility)
    investigation = min(before["Investigation"])
    dataset_type = min(before["DatasetType"])
    theirs = {"Dataset": root.create(Bean("Dataset", {
        "name": "partner-ds", "complete": False,
        "investigation": Bean("Investigation", {"id": investigation}),
        "type": Bean("DatasetType", {"id": dataset_type})}))}  # fmt: skip
    theirs["Datafile"] = root.create(Bean("Datafile", {
        "name": "partner.nxs", "dataset": Bean("Dataset", {"id": theirs["Dataset"]})}))

    result = sv7("cleanup", str(path), env=credentials_env())
    assert result.returncode == 1, result.stdout + result.stderr
    assert still_there(client, theirs)
    # what a delete would take the partner's Dataset along with stays: the Investigation, the
    # Facility, the DatasetType the Dataset names (a cascade along Dataset.type) and the
    # Investigation's InvestigationType
    after = below(client, facility)
    assert after["Investigation"] == {investigation} and after["Facility"] == {facility}
    assert after["DatasetType"] == {dataset_type} and len(after["InvestigationType"]) == 1
    assert after["Dataset"] == {theirs["Dataset"]} and after["Datafile"] == {theirs["Datafile"]}
    assert WHY_ACCOUNT in result.stderr and "kept" in result.stderr and path.exists()

    report = cleanup(client, Journal.load(path))  # again: the same verdict, nothing more goes
    assert report.deleted == 0 and report.kept == 4
    assert {(e, i) for e, i in report.foreign} >= {("Dataset", theirs["Dataset"])}
    assert below(client, facility) == after
    client.close()
    root.close()


def test_a_partners_object_reached_by_a_cascade_across_trees_is_kept(
    fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """ICAT deletes every Datafile of a DatafileFormat with it, in any Facility."""
    client, root = login(fresh_catalogue), login(fresh_catalogue, "root")
    path, ctx = run(client, fresh_catalogue, tmp_path)
    (fmt,) = ids(client, "DatafileFormat", {"facility.name": Condition("=", ctx.tag.name)})
    partner = a_tree(root, "PARTNER-1")
    theirs = root.create(Bean("Datafile", {
        "name": "uses-the-runs-format.nxs", "dataset": Bean("Dataset", {"id": partner["Dataset"]}),
        "datafileFormat": Bean("DatafileFormat", {"id": fmt})}))  # fmt: skip

    report = cleanup(client, Journal.load(path))
    assert ("Datafile", theirs) in report.foreign
    assert dict(report.reasons)[WHY_ELSEWHERE] == 1
    assert still_there(root, {**partner, "Datafile": theirs, "DatafileFormat": fmt})
    mine = {"investigation.facility.name": Condition("=", ctx.tag.name)}
    assert ids(client, "Dataset", mine) == set()
    client.close()
    root.close()


def test_an_object_created_before_the_run_began_is_kept(
    fresh_catalogue: LocalCatalogue, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older object moved below the run's Facility (update keeps createTime) is not the
    run's, though the same account made it."""
    monkeypatch.setattr(run_window, "SYNCED_SKEW", dt.timedelta(0))  # no allowance: no waiting
    client = login(fresh_catalogue)
    older = a_tree(client, "OLDER")
    (investigation,) = client.search(Query("Investigation").where(
        id=Condition("=", older["Investigation"])).include("1"))  # fmt: skip
    while server_clock(ClientConfig(url=fresh_catalogue.service_url))[1] <= (
        investigation["createTime"] + dt.timedelta(seconds=1)
    ):  # the Date header is to the second
        pass
    path, ctx = run(client, fresh_catalogue, tmp_path)
    investigation.values["facility"] = Bean("Facility", {"id": facility_of(ctx)})
    client.update(investigation)

    report = cleanup(client, Journal.load(path))
    # the Investigation with its Dataset and Datafile; the run's Facility stays above them
    assert dict(report.reasons)[WHY_BEFORE] == 3 and report.kept == 1
    assert ids(client, "Investigation", {"id": Condition("=", older["Investigation"])})
    assert ids(client, "Dataset", {"id": Condition("=", older["Dataset"])})
    client.close()


def test_a_journal_of_another_account_is_refused(
    fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    client = login(fresh_catalogue)
    path, ctx = run(client, fresh_catalogue, tmp_path)
    result = sv7("cleanup", str(path), env=credentials_env("root", "root"))
    assert result.returncode == 1
    assert "created by simple/ingest" in result.stderr and "nothing deleted" in result.stderr
    assert facility_of(ctx)
    assert sv7("cleanup", str(path), env=credentials_env()).returncode == 0
    client.close()


def test_after_kill_9_a_genuine_journal_cleans_up_everything(
    fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """Including what the journal never saw: a create whose answer never came, and a journal
    whose last line a kill cut short."""
    client = login(fresh_catalogue)
    path, ctx = run(client, fresh_catalogue, tmp_path)
    mine = {"investigation.facility.name": Condition("=", ctx.tag.name)}
    (dataset,) = ids(client, "Dataset", mine)
    client.create_many([Bean("Datafile", {"name": f"unjournaled-{n}.nxs",
                                          "dataset": Bean("Dataset", {"id": dataset})})
                        for n in range(5)])  # fmt: skip
    with path.open("a", encoding="utf-8") as out:
        out.write('{"entity": "Datafile", "ids": [99999')  # the write a kill -9 cut
    result = sv7("cleanup", str(tmp_path), env=credentials_env())
    assert result.returncode == 0, result.stderr
    assert "cut short" in result.stdout and "5 of them not listed in the journal" in result.stdout
    assert ids(client, "Facility", {"name": Condition("=", ctx.tag.name)}) == set()
    assert not path.exists()
    client.close()


def test_local_catalogue_supports_like_with_escape(catalogue: LocalCatalogue) -> None:
    """ICAT (4.6+) passes ``LIKE … ESCAPE`` through to the database; so does the local one."""
    client = login(catalogue, "root")
    made = [client.create(Bean("Facility", {"name": name}))
            for name in ("esc_a%b", "escXaYb", "esc!c")]  # fmt: skip
    like = "SELECT f.name FROM Facility f WHERE f.name LIKE '{}' ESCAPE '{}' ORDER BY f.name"
    assert client.search(like.format("esc!_a!%b", "!")) == ["esc_a%b"]
    assert client.search(like.format("esc\\_a\\%%", "\\")) == ["esc_a%b"]
    assert client.search(like.format("esc!!%", "!")) == ["esc!c"]
    assert sorted(client.search(like.format("esc_a%b", "!"))) == ["escXaYb", "esc_a%b"]
    client.delete_many([Bean("Facility", {"id": i}) for i in made])
    client.close()


def test_a_journal_from_before_this_version_still_cleans_up(
    fresh_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """Version 2 (no account, no clocks): the window comes from the run tag's own time."""
    client = login(fresh_catalogue)
    path, ctx = run(client, fresh_catalogue, tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header = {"journal": 2, "run": header["run"], "catalogue": header["catalogue"]}
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    result = sv7("cleanup", str(path), env=credentials_env())
    assert result.returncode == 0, result.stderr
    assert ids(client, "Facility", {"name": Condition("=", ctx.tag.name)}) == set()
    client.close()


def test_a_cleanup_stopped_hard_resumes_without_checking_the_journal_again(
    fresh_catalogue: LocalCatalogue, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sv7 cleanup records its verification in the journal: after a kill -9 in the middle of
    the deletes, the next one neither checks the journal's objects again (that is recorded)
    nor surveys what is gone (only what is left), and finishes the job."""
    from igestbench.run.leftovers import clean_one
    from igestbench.workloads import ownership, tree_delete

    client = login(fresh_catalogue)
    path, ctx = run(client, fresh_catalogue, tmp_path)
    facility = facility_of(ctx)
    before = below(client, facility)
    real = tree_delete.delete_batch
    calls: list[int] = []

    def killed(catalogue: Catalogue, batch: list[Bean]) -> tuple[int, int]:
        calls.append(len(batch))
        if len(calls) == 2:
            raise KeyboardInterrupt  # as far as the catalogue is concerned, a kill -9
        return real(catalogue, batch)

    def logins(url: str) -> tuple[ClientConfig, Any]:
        from igestbench.icat.credentials import Credentials

        return ClientConfig(url=url), Credentials("simple", "ingest", "ingest")

    monkeypatch.setattr(tree_delete, "delete_batch", killed)
    monkeypatch.setattr(tree_delete, "OBJECTS_PER_CALL", 2)  # a call per level: many calls
    with pytest.raises(KeyboardInterrupt):
        clean_one(path, None, logins)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert "verified" in lines[-1] and lines[-1]["verified"]["journaled"] == len(ctx.journal)
    assert below(client, facility) != {e: set() for e in before}  # stopped half-way

    monkeypatch.setattr(ownership, "check_journal", None)  # a call would fail: it is recorded
    outcome = clean_one(path, None, logins)
    assert outcome.complete, outcome.lines
    assert ids(client, "Facility", {"name": Condition("=", ctx.tag.name)}) == set()
    assert not path.exists()
    client.close()


def test_the_cleanups_questions_go_out_side_by_side_a_level_at_a_time(
    fresh_catalogue: LocalCatalogue, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Some forty questions precede the deletes; against a slow server (0.6 s a call) one by
    one they took 17 s and a stopped sv7 swarm overran its 10 s. They go out side by side, on
    connections of the same session: a handful of rounds, each as long as its slowest answer."""
    from igestbench.workloads import lanes as lanes_module

    client = login(fresh_catalogue)
    path, ctx = run(client, fresh_catalogue, tmp_path)
    facility = facility_of(ctx)
    rounds: list[int] = []
    on_lanes: list[int] = []
    real_map = lanes_module.Lanes.map

    def spied(self: lanes_module.Lanes, calls: Any) -> Any:
        rounds.append(len(calls))
        return real_map(self, calls)

    real_run = lanes_module.Lanes._on_a_lane

    def counted(self: lanes_module.Lanes, call: Any) -> Any:
        on_lanes.append(1)
        return real_run(self, call)

    monkeypatch.setattr(lanes_module.Lanes, "map", spied)
    monkeypatch.setattr(lanes_module.Lanes, "_on_a_lane", counted)
    lean = connect(ClientConfig(url=fresh_catalogue.service_url), "lean")
    lean.login("simple", {"username": "ingest", "password": "ingest"})
    try:
        report = cleanup(lean, Journal.load(path))
    finally:
        lean.close()
    assert report.deleted >= 10 and report.complete
    assert not below(client, facility)["Facility"]
    asked = sum(rounds)
    assert asked >= 30, rounds  # the tree's questions, all of them still asked
    assert len(rounds) <= 12, rounds  # a level (or a stage) at a time
    assert len(on_lanes) == asked - sum(1 for n in rounds if n < 2)  # on the session's lanes
