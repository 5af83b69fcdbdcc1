"""The scale part: a run-owned tree at growing sizes, the query set as root and as member.

Sizes stay in the hundreds here (CI time); the big sizes live in
tests/benchmarks/test_bench_scale.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from igestbench.client import Catalogue, ClientConfig, connect
from igestbench.config import RunConfig, ServeConfig, load_run_config
from igestbench.errors import UsageError
from igestbench.icat.beans import Bean
from igestbench.icat.credentials import Credentials
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.options import OptionError, sizes
from igestbench.results import ResultWriter, load_result
from igestbench.results.growth import fit, word_for
from igestbench.run import scale
from igestbench.run.cleanup import RunJournal
from igestbench.run.progress import Progress
from igestbench.run.runner import Target
from igestbench.workloads import Journal, RunTag
from igestbench.workloads.scale_queries import QUERIES, Call, ScaleQuery
from igestbench.workloads.scale_rules import (
    MEMBERSHIP_ENTITIES,
    add_membership_rules,
    membership_rule,
)
from igestbench.workloads.scale_tree import ScaleTree, TreeShape
from tests.test_run import credentials_env, left_on_server, sv7

READER = {"username": "reader", "password": "reader"}
ROOT = {"username": "root", "password": "root"}


def facility_rules(cat: LocalCatalogue) -> None:
    """What a facility has: ICAT's usual membership rules (not restricted to any Facility),
    and a User row for its member."""
    service = cat.service
    sid = service.login("simple", ROOT)
    rules = [
        Bean("Rule", {"crudFlags": "R", "what": membership_rule(e, "X").split(" AND f.name")[0]
                      .replace(" JOIN i.facility f", "")})
        for e in MEMBERSHIP_ENTITIES
    ]  # fmt: skip
    service.create_many(sid, rules)
    service.create(sid, Bean("User", {"name": "simple/reader"}))


def count(cat: LocalCatalogue, query: str, login: dict[str, str] = ROOT) -> int:
    sid = cat.service.login("simple", login)
    return int(cat.service.search(sid, query).items[0])


def test_against_a_served_catalogue_with_a_member_over_soap_and_rest(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        facility_rules(cat)
        rules_before = count(cat, "SELECT COUNT(r) FROM Rule r")
        env = {**credentials_env(), "SV7_PASSWORD_MEMBER": "reader"}
        result = sv7("run", "--target", cat.service_url, "--parts", "scale", "--scale-sizes",
                     "150,450", "--interface", "soap,rest", "--account", "member=simple/reader",
                     "--out", str(tmp_path), env=env)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert left_on_server(cat) == 0
        assert count(cat, "SELECT COUNT(r) FROM Rule r") == rules_before  # none added
        assert count(cat, "SELECT COUNT(x) FROM InvestigationUser x") == 0
        assert count(cat, "SELECT COUNT(u) FROM User u") == 1  # the member's row stays
    assert "the facility's own rules decide" in result.stderr
    (path,) = tmp_path.glob("*.json")
    data = load_result(path).raw  # valid as a result file
    section: dict[str, Any] = data["scale"]
    assert section["roles"] == {"root": "simple/ingest", "member": "simple/reader"}
    assert section["rules"]["added"] == 0
    assert [s["size"] for s in section["sizes"]] == [150, 450]
    for size in section["sizes"]:
        cells = {(q["query"], q["interface"], q["role"]) for q in size["queries"]}
        assert cells == {(q.name, i, r) for q in QUERIES for i in ("soap", "rest")
                         for r in ("root", "member")}  # fmt: skip
        for q in size["queries"]:
            assert q["n"] == section["calls"] == 20 and "errors" not in q, q
            assert q["p50_ms"] > 0 and q["p99_ms"] >= q["p50_ms"] and q["mean_ms"] > 0
    last = {(q["query"], q["role"]): q["rows"] for q in section["sizes"][-1]["queries"]}
    assert last[("page", "member")] == last[("page", "root")] == 450
    assert last[("like-prefix", "member")] == 10 and last[("parameter-range", "root")] == 20
    assert section["sizes"][1]["datafiles_added"] == 300 and section["sizes"][1]["rate_per_s"]
    growth = {(g["query"], g["interface"], g["role"]) for g in section["growth"]}
    assert len(growth) == len(QUERIES) * 4
    assert all(g["growth"] in ("flat", "logarithmic", "linear") for g in section["growth"])
    assert data["cleanup"]["left"] == 0 and not data["cleanup"].get("foreign")


def test_a_target_without_a_member_account_is_measured_as_root_and_says_why(
    tmp_path: Path,
) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        result = sv7("run", "--target", cat.service_url, "--parts", "scale", "--scale-sizes",
                     "100", "--interface", "soap", "--out", str(tmp_path),
                     env=credentials_env())  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert left_on_server(cat) == 0
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert data["scale"]["roles"] == {"root": "simple/ingest"}
    assert "--account member=MECH/NAME" in data["scale"]["member"]["why"]
    assert any("measured as root only" in n for n in data["notes"])


def local_target(cat: LocalCatalogue) -> Target:
    client = ClientConfig(cat.service_url)
    return Target(cat.service_url, Credentials("simple", "ingest", "ingest"), client, local=True)


def run_part(cat: LocalCatalogue, out: Path, sizes: tuple[int, ...]) -> dict[str, Any]:
    """The part as the runner runs it on its built-in catalogue, and the run's cleanup."""
    tag = RunTag.new("test")
    target = local_target(cat)
    writer = ResultWriter(out, run={"id": tag.run_id, "site": "test"},
                          target={"url": cat.service_url}, environment={})  # fmt: skip
    journal = RunJournal(writer.path, tag)
    journal.start(target, "6.2.0")
    config = RunConfig(parts=("scale",), scale_sizes=sizes, out=out)
    try:
        section = scale.scale(config, target, writer, Progress(live=False), tag, journal.path,
                              ("soap",))  # fmt: skip
    finally:
        cleanup = journal.finish(target)
    return {"scale": section, "cleanup": cleanup}


def test_on_the_built_in_catalogue_the_rules_are_added_and_removed(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig(example_data=True)) as cat:
        rules_before = count(cat, "SELECT COUNT(r) FROM Rule r")
        outcome = run_part(cat, tmp_path, (120,))
        assert count(cat, "SELECT COUNT(r) FROM Rule r") == rules_before  # removed
        assert count(cat, "SELECT COUNT(f) FROM Facility f WHERE f.name LIKE 'sv7-%'") == 0
    section = outcome["scale"]
    assert section["rules"]["added"] == len(MEMBERSHIP_ENTITIES)
    assert section["roles"]["member"] == "simple/reader"
    member = [q for q in section["sizes"][0]["queries"] if q["role"] == "member"]
    assert member and all(q["n"] == 20 for q in member), member
    assert outcome["cleanup"]["left"] == 0 and not outcome["cleanup"].get("foreign")


def other_tree(cat: LocalCatalogue, member_id: int) -> None:
    """Another facility's Investigation, of which the member is an InvestigationUser too."""
    service = cat.service
    sid = service.login("simple", ROOT)
    facility = Bean("Facility", {"id": service.create(sid, Bean("Facility", {"name": "OTHER"}))})
    kind = service.create(sid, Bean("InvestigationType", {"name": "t", "facility": facility}))
    ds_type = service.create(sid, Bean("DatasetType", {"name": "raw", "facility": facility}))
    p_type = service.create(sid, Bean("ParameterType", {
        "name": "p", "units": "K", "valueType": "NUMERIC", "facility": facility,
        "applicableToDatafile": True, "applicableToDataset": True}))  # fmt: skip
    ptype = Bean("ParameterType", {"id": p_type, "applicableToDatafile": True,
                                   "applicableToDataset": True})  # fmt: skip
    service.create(
        sid,
        Bean(
            "Investigation",
            {
                "name": "secret",
                "visitId": "1",
                "title": "not the run's",
                "facility": facility,
                "type": Bean("InvestigationType", {"id": kind}),
                "investigationUsers": [
                    Bean(
                        "InvestigationUser",
                        {"user": Bean("User", {"id": member_id}), "role": "member"},
                    )
                ],
                "datasets": [
                    Bean(
                        "Dataset",
                        {
                            "name": "ds",
                            "complete": True,
                            "type": Bean("DatasetType", {"id": ds_type}),
                            "parameters": [
                                Bean("DatasetParameter", {"type": ptype, "numericValue": 1.0})
                            ],
                            "datafiles": [
                                Bean(
                                    "Datafile",
                                    {
                                        "name": "secret.nxs",
                                        "parameters": [
                                            Bean(
                                                "DatafileParameter",
                                                {"type": ptype, "numericValue": 2.0},
                                            )
                                        ],
                                    },
                                )
                            ],
                        },
                    )
                ],
            },
        ),
    )


def test_the_added_rules_grant_nothing_outside_the_run_s_tree(tmp_path: Path) -> None:
    """The member is an InvestigationUser elsewhere too: the part's rules must not open that."""
    with LocalCatalogue(ServeConfig()) as cat:  # no rules at all: only the part's grant
        sid = cat.service.login("simple", ROOT)
        member_id = cat.service.create(sid, Bean("User", {"name": "simple/reader"}))
        other_tree(cat, member_id)
        client = connect(ClientConfig(cat.service_url), "lean")
        client.login("simple", {"username": "ingest", "password": "ingest"})
        tree = ScaleTree(client, Journal(), "sv7-test-run-scale", TreeShape(files_per_dataset=10),
                         member_user_id=member_id)  # fmt: skip
        tree.found()
        tree.grow_to(30)
        add_membership_rules(client, Journal(), tree.facility)
        client.close()
        outside = {
            "Investigation": "x.facility.name",
            "InvestigationUser": "x.investigation.facility.name",
            "Dataset": "x.investigation.facility.name",
            "Datafile": "x.dataset.investigation.facility.name",
            "DatafileParameter": "x.datafile.dataset.investigation.facility.name",
            "DatasetParameter": "x.dataset.investigation.facility.name",
        }  # fmt: skip
        assert set(outside) == set(MEMBERSHIP_ENTITIES)
        for entity, path in outside.items():
            query = f"SELECT COUNT(x) FROM {entity} x WHERE {path} = 'OTHER'"
            assert count(cat, query) == 1, entity  # it is there
            assert count(cat, query, READER) == 0, f"the member reads {entity} of OTHER"
        inside = "SELECT COUNT(x) FROM Datafile x WHERE x.dataset.investigation.facility.name"
        assert count(cat, f"{inside} = '{tree.facility}'", READER) == 30


# --- options -----------------------------------------------------------------------------


def test_sizes_are_rising_whole_numbers() -> None:
    assert sizes("1000,10_000,1e5") == (1000, 10_000, 100_000)
    assert sizes([300, 900]) == (300, 900)
    for bad in ("", "1000,1000", "10000,1000", "0", "x", "1.5e0", "-5"):
        with pytest.raises(OptionError):
            sizes(bad)


def test_a_target_needs_yes_above_100000_and_names_the_part() -> None:
    env = {"SV7_AUTH": "simple", "SV7_USER": "u", "SV7_PASSWORD": "p"}
    cli: dict[str, Any] = {"target": "icat.example.org"}
    assert "scale" not in load_run_config(cli, environ=env).parts  # only when named
    named = {**cli, "parts": "scale", "scale_sizes": "1000,200000"}
    with pytest.raises(UsageError, match="needs --yes"):
        load_run_config(named, environ=env)
    assert load_run_config({**named, "yes": True}, environ=env).scale_sizes[-1] == 200_000
    assert load_run_config({**named, "scale_sizes": "100000"}, environ=env).parts == ("scale",)
    # the built-in catalogue is the run's own: no question asked
    assert load_run_config({"scale_sizes": "1000,200000"}, environ={}).scale_sizes[-1] == 200_000
    assert "scale" in load_run_config({}, environ={}).parts


def test_the_sv7_run_command_line_refuses_before_anything_starts(tmp_path: Path) -> None:
    result = sv7("run", "--target", "127.0.0.1:9", "--parts", "scale", "--scale-sizes",
                 "1000000", "--out", str(tmp_path), env=credentials_env())  # fmt: skip
    assert result.returncode == 2 and "needs --yes" in result.stderr
    assert not list(tmp_path.iterdir())


def test_growth_words() -> None:
    assert fit([1000, 10_000, 100_000], [1.0, 1.0, 1.05]).word == "flat"  # type: ignore[union-attr]
    linear = fit([1000, 10_000, 100_000], [1.0, 10.0, 100.0])
    assert linear is not None and linear.slope == 1.0 and linear.word == "linear"
    assert "scans" in linear.meaning
    assert word_for(0.3) == "logarithmic"
    assert fit([1000], [3.0]) is None


def test_a_growing_answer_is_not_called_a_scan() -> None:
    # the quick tour's page: one Investigation filling up, 300 then 1,000 rows (tryout of
    # 2026-11-26: it read "linear: the database scans: no index serves this query")
    page = fit([300, 1000], [3.0, 10.0], [300, 1000])
    assert page is not None and page.word == "linear"
    assert "scans" not in page.meaning and "300 → 1,000 rows" in page.meaning
    # the same rows at every size: the cost grew by itself, a scan
    scan = fit([1000, 10_000], [1.0, 10.0], [10, 10])
    assert scan is not None and "scans" in scan.meaning


def test_a_scan_the_call_s_own_cost_flattened_is_still_a_scan() -> None:
    # sv7 run --parts scale on the built-in catalogue, 2026-11-27 11:17 UTC: REST's Datafile by
    # name alone (a scan) at 10^3, 10^4, 10^5 Datafiles read "logarithmic (slope 0.48): grows
    # slowly, as an index walk or a growing answer does"; its largest tenfold alone is 0.66
    scan = fit([1000, 10_000, 100_000], [0.837, 1.642, 7.504])
    assert scan is not None and scan.slope == 0.476 and scan.word == "linear"
    assert "scans" in scan.meaning and "0.66 between the two largest sizes" in scan.meaning
    # an index walk, or a slowly growing answer: the largest tenfold grows no faster
    walk = fit([1000, 10_000, 100_000], [1.0, 1.8, 3.3])
    assert walk is not None and walk.word == "logarithmic" and walk.top_slope is None
    assert "scans" not in walk.meaning
    # the two largest sizes too close for their own slope to be read (noise would decide)
    near = fit([1000, 10_000, 15_000], [1.0, 2.4, 3.4])
    assert near is not None and near.word == "logarithmic"
    # two sizes: the fit is their slope; nothing else to read
    two = fit([1000, 10_000], [1.0, 3.0])
    assert two is not None and two.word == "logarithmic"


def test_growth_meanings_say_what_the_sizes_show() -> None:
    # tryout of 2026-11-26: "flat: an index finds the answer" of a Datafile by name (a scan
    # hidden by the call's own cost at 10^3-10^4), "flat (slope -0.42)" of a call that fell,
    # and a member's COUNT "linear: the database scans: no index serves this query" while
    # root's same COUNT stayed flat (the member's rules, asked of every row, grew)
    flat = fit([1000, 10_000], [0.5, 0.6])
    assert flat is not None and flat.word == "flat" and "index" not in flat.meaning
    assert "did not grow" in flat.meaning
    fell = fit([300, 1000], [0.6, 0.35])
    assert fell is not None and fell.word == "flat" and fell.slope < -0.2
    assert "fell" in fell.meaning and "did not grow" not in fell.meaning
    root = fit([1000, 10_000, 100_000], [0.5, 0.6, 0.8])
    member = fit([1000, 10_000, 100_000], [1.0, 5.0, 40.0])
    assert root is not None and member is not None and root.word == "flat"
    read = member.beside_root(root)
    assert read.word == "linear" and read.slope == member.slope
    assert "rules" in read.meaning and "scans" not in read.meaning
    assert f"({root.slope:.2f})" in read.meaning
    # root's call grows as well: the table is what grows, for both
    grows = fit([1000, 10_000, 100_000], [1.0, 9.0, 80.0])
    assert "scans" in member.beside_root(grows).meaning
    assert member.beside_root(None) is member


def test_the_part_reads_a_member_s_growth_beside_root_s() -> None:
    from igestbench.run.scale import ScalePart

    part = ScalePart.__new__(ScalePart)  # only its sizes matter to growth()
    part.sizes = [
        {"size": size, "queries": [
            {"query": "count", "interface": "soap", "role": "root", "p50_ms": 0.5 + i / 10,
             "rows": 1},
            {"query": "count", "interface": "soap", "role": "member", "p50_ms": 10.0 ** i,
             "rows": 1}]}
        for i, size in enumerate((1000, 10_000, 100_000))]  # fmt: skip
    by_role = {g["role"]: g for g in part.growth()}
    assert by_role["root"]["growth"] == "flat"
    assert by_role["member"]["growth"] == "linear" and "rules" in by_role["member"]["meaning"]


def test_a_signal_during_the_part_stops_it_with_cleanup(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys

    from tests.test_run_stop import result_of, wait_for

    with LocalCatalogue(ServeConfig()) as cat:
        proc = subprocess.Popen(
            [sys.executable, "-m", "igestbench", "run", "--target", cat.service_url, "--parts",
             "scale", "--scale-sizes", "200,60000", "--interface", "soap", "--out",
             str(tmp_path)],
            env=credentials_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_for(proc, "scale/60,000")  # growing: a createMany in flight or about to be
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
        assert proc.returncode == 143, err
        assert left_on_server(cat) == 0
        assert count(cat, "SELECT COUNT(x) FROM Datafile x") == 0
    data = result_of(tmp_path)
    assert data["run"]["status"] == "interrupted"
    assert [s["size"] for s in data["scale"]["sizes"]][:1] == [200]  # the size measured is kept
    assert data["cleanup"]["left"] == 0


def test_a_refused_member_costs_its_figures_not_the_run(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        facility_rules(cat)
        env = {**credentials_env(), "SV7_PASSWORD_MEMBER": "wrong"}
        result = sv7("run", "--target", cat.service_url, "--parts", "scale", "--scale-sizes",
                     "100", "--interface", "soap", "--account", "member=simple/reader",
                     "--out", str(tmp_path), env=env)  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert left_on_server(cat) == 0
    data = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert data["scale"]["roles"] == {"root": "simple/ingest"}
    why = data["scale"]["member"]["why"]
    assert "login was refused" in why and "SV7_PASSWORD_MEMBER" in why, why
    assert "wrong" not in json.dumps(data)


class _Flaky:
    """A client whose search answers one row, but [] (a wrong answer) on the calls listed."""

    def __init__(self, wrong: set[int]) -> None:
        self.wrong, self.calls = wrong, 0

    def search(self, query: str) -> list[Any]:
        self.calls += 1
        return [] if self.calls in self.wrong else [1]


def test_a_query_records_its_failed_calls_the_warm_up_s_apart(tmp_path: Path) -> None:
    query = ScaleQuery("q", "a query", lambda tree, turn: Call("SELECT x FROM X x", None, 1))
    # calls 1 and 2 are the warm-up; 3 and 4 the first timed ones
    good, flaky = _Flaky(set()), _Flaky({2, 3, 4})
    tree = cast(ScaleTree, None)
    ok, bad = scale.measure_query(cast(list[Catalogue], [good, flaky]), tree, query, calls=5)
    assert ok["n"] == 5 and "errors" not in ok and "warmup_errors" not in ok
    assert bad["n"] == 3 and bad["calls"] == 5
    assert bad["errors"] == {"WrongResult": 2} and bad["warmup_errors"] == {"WrongResult": 1}
    assert "0 rows" in bad["error"]
