"""A partner runs in pieces (a tour, then ``--parts scale``; ``--interface rest``, then
``soap``): the campaign shows each part x interface from the newest run that measured it, and
says which run gave which (results/pieces.py)."""

from __future__ import annotations

import copy
import csv
import json
import random
from pathlib import Path
from typing import Any

import pytest

from igestbench.cli import main
from igestbench.report import build_report, render_html, render_markdown, write_csv
from igestbench.results.campaign import load_campaign
from igestbench.results.merge import merge
from igestbench.results.pieces import Piece, measured
from tests.campaign_helpers import bench, check, sample, sweep, write_result
from tests.test_report_scale import section

URL = "https://icat.example.org:443/ICATService/ICAT"
TOUR = ("verify", "full-cycle", "single-query", "burst", "multi-query", "sweep")


def tour(directory: Path, run_id: str = "tour", minutes: int = 0, **more: Any) -> Path:
    """A quick-tour-like run: checks, the four workloads over SOAP, a sweep, their samples."""
    benchmarks = [bench("full-cycle", "full-cycle/lookup Dataset", 1, [4.0, 5.0, 6.0]),
                  bench("single-query", "single-query/jpql", 1, [1.0, 1.2, 1.4]),
                  bench("burst", "burst/createMany", 1, [20.0, 22.0, 24.0])]
    return write_result(directory, "ESRF", URL, run_id=run_id, minutes=minutes, parts=TOUR,
                        checks=[check("a"), check("b")], benchmarks=benchmarks,
                        sweeps=[sweep([10, 20], 5.0)],
                        samples=[sample("burst/zeep/1", [50.0, 60.0], [30.0, 40.0]),
                                 sample("sweep/lean", [20.0, 30.0])], **more)


def scale_run(directory: Path, run_id: str = "scale", minutes: int = 60,
              interface: str = "soap", status: str = "complete", quick: bool = False) -> Path:
    """A ``--parts scale`` run with a scale section of ``interface``."""
    path = write_result(directory, "ESRF", URL, run_id=run_id, minutes=minutes,
                        parts=("scale",), status=status, profile="quick" if quick else None,
                        samples=[sample("scale", [70.0, 80.0])],
                        run_extra={"interfaces": [interface]})
    doc = json.loads(path.read_text())
    scale = section()
    for size in scale["sizes"]:
        for query in size["queries"]:
            query["interface"] = interface
    for growth in scale["growth"]:
        growth["interface"] = interface
    doc["scale"] = scale
    path.write_text(json.dumps(doc))
    return path


def test_a_tour_then_scale_shows_both(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                      ) -> None:
    first = tour(tmp_path / "r")
    second = scale_run(tmp_path / "r")
    out = tmp_path / "campaign.json"
    assert main(["merge", str(tmp_path / "r"), "-o", str(out)]) == 0
    said = (f"ESRF → icat.example.org: combined from 2 runs, each part and interface from the "
            f"newest run that measured it: verify, full-cycle (SOAP), single-query (SOAP), "
            f"burst (SOAP), multi-query (SOAP), sweep (SOAP) from {first.name} (started "
            f"2026-11-21 09:00:00 UTC); scale (SOAP) from {second.name} (started 2026-11-21 "
            "10:00:00 UTC)")
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [f"sv7 merge: {said}"]
    assert "1 combined from several runs" in captured.out
    doc = json.loads(out.read_text())
    # the files' own documents, unchanged: the newest in runs, the older one contributes
    (run,) = doc["runs"]
    assert run["file"] == second.name and run["pieces"] == ["scale/soap"]
    assert run["result"] == json.loads(second.read_text())
    (given,) = doc["contributions"]
    assert given["file"] == first.name and "replaced" not in doc
    assert given["pieces"] == ["verify", "full-cycle/soap", "single-query/soap", "burst/soap",
                               "multi-query/soap", "sweep/soap"]
    campaign = load_campaign(out)
    cell = campaign.run("ESRF", "icat.example.org")
    assert cell is not None and [o.file for o in cell.behind] == [second.name, first.name]
    assert cell.result.raw["scale"]["sizes"] and len(cell.result.benchmarks) == 3
    assert [s["phase"] for s in cell.result.samples] == ["burst/zeep/1", "sweep/lean", "scale"]
    workloads = {row.workload for row in cell.figures}
    assert {"burst", "sweep", "scale", "full-cycle"} <= workloads
    report = build_report(campaign)
    (row,) = report.participation.rows
    assert dict(zip(report.participation.parts, row.cells, strict=True)) == {
        "verify": 1, "full-cycle": 1, "single-query": 1, "burst": 1, "multi-query": 1,
        "sweep": 1, "scale": 1}
    assert report.success.rows[0].cells[0].state == "ok"  # the tour's checks
    aspects = {a.aspect: a for a in report.scores[0].aspects}
    assert aspects["reliability"].score is not None and aspects["checks"].score is not None
    assert aspects["reliability"].evidence.startswith("0 failed of ")  # the tour's calls
    assert report.benchmarks and report.benchmarks[0].burst_create_many_per_s is not None
    assert report.scale is not None
    assert said in report.notices
    assert [r.file for r in report.runs] == [second.name, first.name]
    assert report.history_count == 0  # the tour is counted, not only kept as history
    page = render_html(report)
    assert '<section id="scale">' in page and "createMany" in page
    write_csv(report, tmp_path / "csv")
    with (tmp_path / "csv" / "summary.csv").open(encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    by_run = {(r["workload"], r["run_id"]) for r in rows}
    assert ("burst", "tour") in by_run and ("scale", "scale") in by_run
    assert not {w for w, run_id in by_run if run_id == "scale"} - {"scale"}
    assert (tmp_path / "csv" / "scale.csv").read_text(encoding="utf-8").count("\n") > 1


def test_rest_then_soap_shows_both_interfaces(tmp_path: Path) -> None:
    rest = bench("burst", "burst/createMany", 1, [30.0, 33.0], flavour="rest")
    write_result(tmp_path, "ESRF", URL, run_id="rest", parts=("burst",),
                 benchmarks=[{**rest, "interface": "rest"}],
                 run_extra={"interfaces": ["rest"]})
    write_result(tmp_path, "ESRF", URL, run_id="soap", minutes=60, parts=("burst",),
                 benchmarks=[bench("burst", "burst/createMany", 1, [20.0, 22.0])],
                 run_extra={"interfaces": ["soap"]})
    outcome = merge(sorted(tmp_path.glob("*.json")))
    assert outcome.replaced == ()
    (line,) = outcome.combined
    assert "burst (REST) from ESRF_icat.example.org_rest.json" in line
    assert "burst (SOAP) from ESRF_icat.example.org_soap.json" in line
    out = tmp_path / "c.json"
    assert main(["merge", *map(str, sorted(tmp_path.glob("*.json"))), "-o", str(out)]) == 0
    cell = load_campaign(out).run("ESRF", "icat.example.org")
    assert cell is not None
    assert sorted(b["interface"] for b in cell.result.benchmarks) == ["rest", "soap"]
    assert cell.result.raw["run"]["interfaces"] == ["soap", "rest"]
    assert {(r.interface, r.metric) for r in cell.figures} >= {("soap", "createMany rate"),
                                                              ("rest", "createMany rate")}
    report = build_report(load_campaign(out), charts=False)
    (table,) = report.interfaces  # SOAP and REST side by side, saying they are of two runs
    assert {c.interface for c in table.columns} == {"soap", "rest"}
    assert table.sources == ("SOAP from ESRF_icat.example.org_soap.json; REST from "
                             "ESRF_icat.example.org_rest.json")
    assert f"Measured in different runs: {table.sources}." in render_html(report)
    assert f"Measured in different runs: {table.sources}." in render_markdown(report)


def test_rest_against_soap_is_a_ratio_within_one_run(tmp_path: Path) -> None:
    # the summary's REST vs SOAP compares lookups of one run, never of two (another day,
    # another network): a cell whose interfaces came in two runs has no ratio
    query = bench("single-query", "single-query/jpql", 1, [1.0, 1.2])
    rest = {**bench("single-query", "single-query/jpql", 1, [2.0, 2.4], flavour="rest"),
            "interface": "rest"}
    write_result(tmp_path / "two", "ESRF", URL, run_id="rest", parts=("single-query",),
                 benchmarks=[rest], run_extra={"interfaces": ["rest"]})
    write_result(tmp_path / "two", "ESRF", URL, run_id="soap", minutes=60,
                 parts=("single-query",), benchmarks=[query],
                 run_extra={"interfaces": ["soap"]})
    write_result(tmp_path / "one", "ESRF", URL, run_id="both", parts=("single-query",),
                 benchmarks=[query, rest], run_extra={"interfaces": ["soap", "rest"]})
    ratios = []
    for name in ("two", "one"):
        out = tmp_path / f"{name}.json"
        main(["merge", str(tmp_path / name), "-o", str(out)])
        summary = build_report(load_campaign(out), charts=False).summary
        assert summary is not None
        ratios.append(summary.rows[0].rest_vs_soap.value)
    assert ratios == [None, 0.5]


def test_a_newer_run_that_failed_before_its_benchmarks_keeps_the_older_ones(tmp_path: Path
                                                                           ) -> None:
    old = tour(tmp_path)
    new = write_result(tmp_path, "ESRF", URL, run_id="failed", minutes=60, parts=TOUR,
                       checks=[check("a"), check("b", "failed", "refused")],
                       status="failed", notes=["run stopped: the catalogue went away"])
    assert measured(json.loads(new.read_text())) == {Piece("verify")}
    outcome = merge([new, old])
    out = tmp_path / "c.json"
    main(["merge", str(new), str(old), "-o", str(out)])
    cell = load_campaign(out).run("ESRF", "icat.example.org")
    assert cell is not None and cell.result.status == "failed"
    assert [c["outcome"] for c in cell.result.checks] == ["passed", "failed"]  # the newest
    assert len(cell.result.benchmarks) == 3 and cell.result.sweeps  # the older run's
    assert outcome.replaced == () and len(outcome.combined) == 1
    report = build_report(load_campaign(out), charts=False)
    assert report.success.rows[0].cells[0].state == "partial"
    (row,) = report.benchmarks
    # the older, complete run measured them: not marked as an unfinished run's
    assert row.unfinished is None and row.burst_create_many_per_s is not None
    assert any(n.startswith("1 run failed — run stopped: the catalogue went away") and
               new.name in n for n in report.notices)


def test_a_full_runs_figures_beside_a_quick_scale_run_are_not_called_a_tours(tmp_path: Path
                                                                            ) -> None:
    tour(tmp_path, profile="full")
    scale_run(tmp_path, quick=True)
    out = tmp_path / "c.json"
    main(["merge", str(tmp_path), "-o", str(out)])
    campaign = load_campaign(out)
    cell = campaign.run("ESRF", "icat.example.org")
    assert cell is not None and cell.quick  # the cell holds a quick tour's figures (scale)
    (row,) = build_report(campaign, charts=False).benchmarks
    assert not row.quick  # but the benchmarks are the full run's


def test_the_order_of_the_files_does_not_matter(tmp_path: Path) -> None:
    files = [tour(tmp_path), scale_run(tmp_path),
             write_result(tmp_path, "ESRF", URL, run_id="checks", minutes=30,
                          checks=[check("a")])]
    documents = [merge(order).document for order in (files, files[::-1], files[1:] + files[:1])]
    assert documents[0] == documents[1] == documents[2]
    pieces = {c["file"]: c["pieces"] for c in documents[0]["contributions"]}
    # the checks of the middle run are newer than the tour's: the tour gives only its figures
    assert pieces == {files[2].name: ["verify"],
                      files[0].name: ["full-cycle/soap", "single-query/soap", "burst/soap",
                                      "multi-query/soap", "sweep/soap"]}


def test_an_older_piece_measured_again_is_history(tmp_path: Path) -> None:
    tour(tmp_path)
    tour(tmp_path, run_id="again", minutes=60)
    outcome = merge(sorted(tmp_path.glob("*.json")))
    assert outcome.combined == () and outcome.replaced == ()
    assert "contributions" not in outcome.document
    assert "pieces" not in outcome.document["runs"][0]  # a cell of one run, as before
    assert len(outcome.document["history"]) == 1


def test_an_interrupted_scale_run_keeps_what_it_measured(tmp_path: Path) -> None:
    tour(tmp_path)
    scale_run(tmp_path, status="interrupted")
    document = merge(sorted(tmp_path.glob("*.json"))).document
    assert document["runs"][0]["pieces"] == ["scale/soap"]  # the sizes it measured
    (contribution,) = document["contributions"]
    assert contribution["file"].endswith("_tour.json") and "verify" in contribution["pieces"]


def test_a_part_asked_in_a_run_that_stopped_before_it_was_not_measured(tmp_path: Path) -> None:
    tour(tmp_path)
    stopped = write_result(tmp_path, "ESRF", URL, run_id="stopped", minutes=60,
                           parts=("verify", "burst"), checks=[check("a")],
                           status="interrupted")
    assert measured(json.loads(stopped.read_text())) == {Piece("verify")}
    pieces = {c["file"]: c["pieces"] for c in
              merge(sorted(tmp_path.glob("*.json"))).document["contributions"]}
    assert pieces == {"ESRF_icat.example.org_tour.json": [
        "full-cycle/soap", "single-query/soap", "burst/soap", "multi-query/soap", "sweep/soap"]}


def test_a_campaign_file_from_before_loads_and_renders_as_before(tmp_path: Path) -> None:
    # fixtures/campaign/campaign.json was merged before cells were combined: no contributions
    root = Path(__file__).resolve().parents[1]
    campaign = load_campaign(root / "fixtures" / "campaign" / "campaign.json")
    assert all(not r.sources and r.behind == (r,) for r in campaign.runs)
    report = build_report(campaign, charts=False)
    assert not any("combined from" in n for n in report.notices)
    assert len(report.runs) == len(campaign.runs)


def test_a_damaged_contribution_costs_only_itself(tmp_path: Path) -> None:
    tour(tmp_path)
    scale_run(tmp_path)
    out = tmp_path / "c.json"
    main(["merge", str(tmp_path), "-o", str(out)])
    doc = json.loads(out.read_text())
    doc["contributions"][0]["pieces"] = ["nonsense"]
    out.write_text(json.dumps(doc))  # edited: no longer sealed, checked again
    campaign = load_campaign(out)
    cell = campaign.run("ESRF", "icat.example.org")
    assert cell is not None and not cell.sources and cell.result.raw["scale"]
    (skipped,) = campaign.skipped
    assert skipped.reason.startswith("contributions[0] of the campaign file: pieces is not")
    assert render_html(build_report(campaign, charts=False))


def test_figures_from_an_older_run_keep_that_runs_context(tmp_path: Path) -> None:
    # the newest run was interrupted after its checks, from a slower network: the tour's
    # figures beside it must not read as an interrupted run's, nor at the newer run's RTT
    old = tour(tmp_path, profile="full")
    new = write_result(tmp_path, "ESRF", URL, run_id="stopped", minutes=60, parts=TOUR,
                       checks=[check("a")], status="interrupted", profile="quick",
                       probe={"rtt": {"method": "tcp", "median_ms": 50.0}})
    out = tmp_path / "c.json"
    main(["merge", str(old), str(new), "-o", str(out)])
    campaign = load_campaign(out)
    cell = campaign.run("ESRF", "icat.example.org")
    assert cell is not None and not cell.quick  # the quick tour gave only its checks
    (row,) = build_report(campaign, charts=False).benchmarks
    assert row.unfinished is None and row.rtt_ms == 1.0 and not row.quick
    write_csv(build_report(campaign, charts=False), tmp_path / "csv")
    with (tmp_path / "csv" / "summary.csv").open(encoding="utf-8") as file:
        assert {r["run_id"] for r in csv.DictReader(file)} == {"tour"}


@pytest.mark.parametrize("seed", [8, 14])
def test_a_fuzzed_combined_campaign_always_gives_a_page(tmp_path: Path, seed: int) -> None:
    """Wrong types, deletions, cut lists, flipped characters in a combined cell's runs and
    contributions (tests/test_report_fuzz.py's mutations): a damaged contribution or run is
    skipped and named, never the page. (Seeds 8 and 14 found a scale section whose queries were
    no list, and a run whose site was one; a longer run: loop over more seeds by hand.)"""
    from tests.test_report_fuzz import _mutation, _paths, _render_everything

    tour(tmp_path / "r")
    scale_run(tmp_path / "r")
    rest = bench("burst", "burst/createMany", 1, [30.0, 33.0], flavour="rest")
    write_result(tmp_path / "r", "ESRF", URL, run_id="rest", minutes=30, parts=("burst",),
                 status="interrupted", benchmarks=[{**rest, "interface": "rest"}],
                 run_extra={"interfaces": ["rest"]})
    original = merge(sorted((tmp_path / "r").glob("*.json"))).document
    assert len(original["contributions"]) == 2
    # not "runs" itself: a campaign without its list of runs is one clean error (the frame)
    paths = [p for p in _paths(original) if p[:1] == ("contributions",)
             or (p[:1] == ("runs",) and len(p) > 1)]
    rng = random.Random(seed)
    for i in range(60):
        doc = copy.deepcopy(original)
        changed = [_mutation(rng, doc, paths) for _ in range(rng.choice((1, 2)))]
        path = tmp_path / "c.json"
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        try:
            page = _render_everything(path, tmp_path, draw=False)
        except Exception as exc:  # the failure names what was changed, to reproduce it
            raise AssertionError(f"round {i}: {changed}: {type(exc).__name__}: {exc}") from exc
        assert page.startswith("<!DOCTYPE html>"), changed
