"""The registry of figures: each figure defined once, written one way, the same from every file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hdrh.histogram import HdrHistogram

from igestbench.measure.stats import LatencyStats
from igestbench.results import load_result
from igestbench.results.figures import (
    FIGURES,
    SUMMARY_FIELDS,
    SummaryRow,
    compute_summary,
    entry_figures,
    figure,
    format_value,
    summary_rows,
    sweep_figures,
)
from igestbench.results.pooling import pooled_percentiles_ms
from igestbench.results.sweeps import step_line, sweep_lines, sweep_verdict
from tests.campaign_helpers import write_result

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "results"


def op(latencies_ms: list[float], *, cold: int = 1, failed: int = 0,
       failed_ms: float = 0.0) -> dict[str, Any]:
    """An ``ops`` entry as the runner writes it (stats of the warm calls, cold ones apart)."""
    stats = LatencyStats.of(round(ms * 1e6) for ms in latencies_ms)
    p50, p99 = stats.percentiles_ms((50.0, 99.0)) if latencies_ms else (None, None)
    return {"count": len(latencies_ms) + failed, "ok": len(latencies_ms),
            "errors": {"IcatInternal": failed} if failed else {},
            "mean_ms": stats.mean_ms if latencies_ms else None, "p50_ms": p50, "p99_ms": p99,
            "histogram": stats.encode(), "cold_ms": [50.0] * cold, "failed_ms": failed_ms}


def entry(workload: str, ops: dict[str, Any], concurrency: int = 1, **extra: Any
          ) -> dict[str, Any]:
    return {"workload": workload, "flavour": "zeep", "concurrency": concurrency,
            "interface": "soap", "ops": ops, "checks": extra.pop("checks", {}),
            "problems": extra.pop("problems", []), **extra}


def by_metric(rows: list[SummaryRow]) -> dict[str, SummaryRow]:
    return {r.metric: r for r in rows}


# --- writing ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "unit", "bound", "text"), [
    (9399.7, "Datafiles/s", None, "9,400 Datafiles/s"),
    (412.3, "Datafiles/s", None, "412 Datafiles/s"),
    (99.97, "searches/s", None, "100 searches/s"),
    (29.365, "cycles/s", None, "29.4 cycles/s"),
    (4.1, "ms", None, "4.10 ms"),
    (0.5234, "ms", None, "0.523 ms"),
    (0.0, "ms", None, "0 ms"),
    (40.0, "requests/s", "lower", "≥ 40.0 requests/s"),
    (10.0, "requests/s", "upper", "< 10.0 requests/s"),
    (1.0, "errors", None, "1 error"),
    (1234.0, "errors", None, "1,234 errors"),
    (None, "ms", None, "—"),
    (float("nan"), "ms", None, "—"),
])
def test_one_way_to_write_a_figure(value: float | None, unit: str, bound: str | None,
                                   text: str) -> None:
    assert format_value(value, unit, bound) == text


def test_every_figure_is_defined_once_with_a_unit_naming_what_it_counts() -> None:
    keys = [(f.workload, f.metric) for f in FIGURES]
    assert len(keys) == len(set(keys))
    for f in FIGURES:
        assert f.unit and f.counts and f.over and f.samples, f
        assert not f.unit.startswith("/") and f.unit != "/s", f  # never a bare /s
    units = {f.unit for f in FIGURES if f.unit.endswith("/s")}
    assert units == {"cycles/s", "searches/s", "Datafiles/s", "result sets/s", "requests/s"}
    assert figure("burst", "createMany rate").unit == "Datafiles/s"
    with pytest.raises(KeyError):
        figure("burst", "throughput")


# --- the figures of an entry --------------------------------------------------------------------

def test_a_rate_covers_the_calls_of_the_latency_beside_it() -> None:
    # one client: the rate is 1000 / mean, whatever else the workload did meanwhile (the
    # issue: 41.8 result sets/s beside a 4.1 ms mean)
    e = entry("multi-query", {"multi-query/whole/fetch": op([3.0, 3.2, 3.1]),
                              "multi-query/whole/decode": op([1.0, 1.0, 1.0]),
                              "multi-query/paged/fetch": op([40.0, 41.0])},
              wall_s=1.0, throughput_per_s=3.0)
    rows = by_metric(entry_figures(e))
    assert rows["mean"].value == pytest.approx(3.1 + 1.0)
    assert rows["rate"].value == pytest.approx(1000 / 4.1, rel=1e-5)
    assert rows["rate"].text == "244 result sets/s" and rows["mean"].text == "4.10 ms"
    assert rows["rate"].samples == 3
    # p50 / p99: the fetch's (server and wire), exactly as the run computed them
    assert rows["p99"].value == pytest.approx(3.2)


def test_n_clients_rate_is_littles_law_over_the_clients_that_called() -> None:
    e = entry("single-query", {"single-query/jpql": op([2.0] * 10, cold=3),
                               "single-query/get": op([4.0] * 10, cold=3)}, concurrency=4)
    rows = by_metric(entry_figures(e))
    assert rows["mean"].value == pytest.approx(3.0)
    # three clients made calls (a fourth stopped before its first): 3 x 1000 / 3 ms
    assert rows["rate"].value == pytest.approx(1000.0)
    assert rows["rate"].text == "1,000 searches/s"
    # the pooled percentiles are those of the calls together
    assert rows["p99"].value == pytest.approx(4.0, rel=1e-3)
    assert rows["p50"].value == pytest.approx(2.0, rel=1e-3)


def test_a_failed_calls_time_is_in_the_rate_not_in_the_latency() -> None:
    e = entry("full-cycle", {"full-cycle": op([10.0, 10.0], failed=2, failed_ms=30.0)})
    rows = by_metric(entry_figures(e))
    assert rows["mean"].value == pytest.approx(10.0)
    assert rows["rate"].value == pytest.approx(2 * 1000 / 50.0)  # 2 ok in 20 + 30 ms
    assert rows["errors"].value == 2 and rows["errors"].text == "2 errors"


def test_burst_counts_the_datafiles_each_createMany_made() -> None:
    # 2 clients x 50 Datafiles in batches of 20: 3 calls each (20, 20, 10), one of them cold
    e = entry("burst", {"burst/create": op([2.0] * 49, cold=2),
                        "burst/createMany": op([25.0] * 4, cold=2)}, concurrency=2,
              checks={"batch_size": 20, "createMany.expected": 100, "create.expected": 100})
    rows = by_metric(entry_figures(e))
    assert rows["create rate"].value == pytest.approx(2 * 1000 / 2.0)
    per_call = 100 / 6  # every call's batch, the smaller last one included
    assert rows["createMany rate"].value == pytest.approx(2 * 4 * per_call * 1000 / 100.0, rel=1e-5)
    assert rows["createMany rate"].unit == "Datafiles/s"


def test_an_op_with_only_cold_calls_says_so_instead_of_a_number() -> None:
    e = entry("burst", {"burst/create": op([2.0] * 49), "burst/createMany": op([])},
              checks={"batch_size": 100, "createMany.expected": 50})
    rows = by_metric(entry_figures(e))
    many = rows["createMany rate"]
    assert many.value is None and many.text == "—" and "no warm call" in (many.note or "")
    assert "failed" not in many.marks


def test_a_failed_workload_shows_failed_and_counts_what_stopped_it() -> None:
    # the issue: "errors 0" beside "stopped … INTERNAL" — a client that stopped in its
    # preparation made no timed call, yet it is an error
    e = entry("burst", {}, concurrency=2,
              problems=["worker 0: INTERNAL: the query took too long",
                        "worker 1: INTERNAL: the query took too long"])
    rows = by_metric(entry_figures(e))
    assert rows["create rate"].text == "failed" and "failed" in rows["create rate"].marks
    assert rows["create rate"].note == "failed: INTERNAL: the query took too long"
    assert rows["errors"].value == 2 and rows["errors"].note is not None
    # new files count failed calls (cold ones too) and clients apart
    e2 = entry("burst", {}, errors={"calls": 1, "clients": 1, "causes": {"IcatInternal": 1}},
               problems=["worker 0: INTERNAL: boom"])
    assert by_metric(entry_figures(e2))["errors"].value == 2


def test_client_bound_marks_only_what_the_suite_measured_of_itself() -> None:
    ops = {"full-cycle": op([10.0, 11.0])}
    old = entry("full-cycle", ops, client_bound=True)  # the machine-wide flag of old files
    assert all(not r.marks for r in entry_figures(old))
    bound = entry("full-cycle", ops, client_bound=True,
                  client_cpu={"bound": True, "why": "the client used 97 % of one core"})
    rows = by_metric(entry_figures(bound))
    assert rows["rate"].marks == ("client-bound",)
    assert rows["rate"].note == "client-bound: the client used 97 % of one core"
    free = entry("full-cycle", ops, client_bound=False, client_cpu={"bound": False})
    assert all(not r.marks for r in entry_figures(free))


# --- the sweep ----------------------------------------------------------------------------------

def step(rate: float, mean: float, p99: float, errors: int = 0, **extra: Any) -> dict[str, Any]:
    return {"demanded_rate": rate, "sent": int(rate * 2), "request_rate": rate,
            "response_rate": rate, "missed_slots": 0, "errors": {"timeout": errors},
            "latency_ms": {"corrected": {"mean": mean, "p50": mean, "p99": p99}}, **extra}


def test_a_sweep_that_reached_its_cap_is_a_lower_bound_and_says_raise_the_cap() -> None:
    sweep = {"slo_ms": 50.0, "steps": [step(10, 2, 5), step(20, 2, 6), step(40, 3, 8)],
             "sustained_rate": 40.0, "interface": "soap", "flavour": "lean"}
    verdict = sweep_verdict(sweep)
    assert (verdict.value, verdict.bound, verdict.marks) == (40.0, "lower", ("capped",))
    assert verdict.text == "≥ 40.0 requests/s"
    assert verdict.reason == ("capped: reached --max-rate (40.0 requests/s) with the objective "
                              "met — raise --max-rate")
    (row,) = sweep_figures(sweep)
    assert (row.text, row.bound, row.samples, row.clients) == ("≥ 40.0 requests/s", "lower",
                                                               80, None)


def test_a_sweep_says_which_step_broke_the_objective_and_how() -> None:
    sweep = {"slo_ms": 50.0, "sustained_rate": 20.0,
             "steps": [step(10, 2, 5), step(20, 4, 30), step(40, 20, 72.1)]}
    verdict = sweep_verdict(sweep)
    assert verdict.bound is None and verdict.text == "20.0 requests/s"
    assert verdict.reason == "objective broken at 40.0 requests/s: p99 72.1 ms ≥ 50 ms"
    errors = {**sweep, "steps": [step(10, 2, 5), step(20, 4, 30), step(40, 4, 9, errors=3)]}
    assert sweep_verdict(errors).reason.endswith("errors on 3.8% of the calls (≥ 1%)")


def test_a_capped_sweep_says_when_a_lower_step_broke_the_objective() -> None:
    # tryout of 2026-11-26: "sustained ≥ 200 … capped … with the objective met" while the
    # 40 requests/s step had broken it (p99 98.3 ms): the highest rate that met the objective is
    # 200, but the reader must not take it for every rate up to 200
    sweep = {"slo_ms": 50.0, "sustained_rate": 80.0,
             "steps": [step(10, 2, 5), step(40, 20, 98.3), step(80, 2, 6)]}
    verdict = sweep_verdict(sweep)
    assert verdict.text == "≥ 80.0 requests/s" and verdict.marks == ("capped",)
    assert verdict.reason.endswith("; yet a lower step broke it: 40.0 requests/s "
                                   "(p99 98.3 ms ≥ 50 ms)")
    clean = {**sweep, "steps": [step(10, 2, 5), step(40, 2, 6), step(80, 2, 6)]}
    assert "lower step" not in sweep_verdict(clean).reason

def test_a_sweep_where_no_step_met_the_objective_is_never_none() -> None:
    # the issue: "sustained None/s" against a real ICAT
    sweep = {"slo_ms": 50.0, "sustained_rate": None,
             "steps": [step(10, 60, 120)], "stopped": "10/s: median latency 600 ms > 10 x 50 ms"}
    verdict = sweep_verdict(sweep)
    assert (verdict.value, verdict.bound, verdict.text) == (10.0, "upper", "< 10.0 requests/s")
    assert "no step met the objective" in verdict.reason and "p99 120 ms" in verdict.reason
    assert "None" not in verdict.line
    stopped_early = {"slo_ms": 50.0, "sustained_rate": 20.0, "steps": [step(10, 2, 5),
                     step(20, 2, 5)], "stopped": "time budget of 600 s reached before 40/s"}
    v = sweep_verdict(stopped_early)
    assert v.bound == "lower" and "time budget" in v.reason and v.marks == ()


def test_a_swarm_step_that_lost_a_worker_is_why_it_was_not_sustained() -> None:
    sweep = {"slo_ms": 50.0, "sustained_rate": 100.0,
             "steps": [step(100, 2, 5), step(200, 2, 5, lost_workers=1, workers=1)]}
    assert sweep_verdict(sweep, "--rates").reason == (
        "objective broken at 200 requests/s: 1 worker(s) lost: the step misses their calls")
    line = step_line(sweep["steps"][1], 50.0)
    assert "1 worker" in line and "broke the objective" in line


def test_sweep_lines_give_the_verdict_then_each_step() -> None:
    sweep = {"slo_ms": 50.0, "sustained_rate": 10.0, "interface": "rest", "flavour": "rest",
             "steps": [step(10, 2, 5), step(20, 30, 62.3, client_bound=True)]}
    head, first, second = sweep_lines(sweep, label="REST · rest")
    assert head == ("sweep REST · rest: sustained 10.0 requests/s (corrected mean and p99 < "
                    "50 ms, < 1% errors) — objective broken at 20.0 requests/s: p99 62.3 ms "
                    "≥ 50 ms")
    assert first.startswith("  10.0 requests/s demanded") and first.endswith("met the objective")
    assert "client-bound" in second and second.endswith("broke the objective: p99 62.3 ms ≥ 50 ms")


# --- the summary of a file ----------------------------------------------------------------------

def test_the_writer_keeps_a_summary_that_agrees_with_the_entries(tmp_path: Path) -> None:
    bench = entry("full-cycle", {"full-cycle": op([10.0, 12.0])})
    sweep = {"flavour": "lean", "slo_ms": 50.0, "steps": [step(10, 2, 5)],
             "sustained_rate": 10.0}
    path = write_result(tmp_path, "A", "https://t.example/ICATService/ICAT",
                        benchmarks=[bench], sweeps=[sweep])
    doc = json.loads(path.read_text())
    assert [tuple(row) for row in doc["summary"]] == [SUMMARY_FIELDS] * len(doc["summary"])
    assert doc["summary"] == [r.to_dict() for r in compute_summary(doc)]
    rows = summary_rows(load_result(path))
    assert [r.metric for r in rows] == ["rate", "mean", "p50", "p99", "errors", "sustained"]
    assert rows[0].text == "90.9 cycles/s" and rows[-1].text == "≥ 10.0 requests/s"


def test_old_files_get_their_summary_from_the_same_registry() -> None:
    for name in ("v1", "before-rest"):
        (path,) = (FIXTURES / name).glob("*.json")
        assert "summary" not in json.loads(path.read_text())
        rows = summary_rows(load_result(path))
        sustained = [r for r in rows if r.metric == "sustained"]
        assert sustained and all(r.text != "—" and "None" not in r.text for r in sustained)
    (current,) = (FIXTURES / "v2").glob("*.json")
    doc = json.loads(current.read_text())
    assert summary_rows(load_result(current)) == compute_summary(doc)


def test_a_bad_summary_row_in_a_partners_file_is_named_and_only_it_left_out(
    tmp_path: Path,
) -> None:
    # tryout 2026-11-26: one summary value written as a string cost the partner's whole file
    (current,) = (FIXTURES / "v2").glob("*.json")
    doc = json.loads(current.read_text())
    doc["summary"][0]["unit"] = 7
    doc["summary"][1]["value"] = "fast"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    result = load_result(bad)
    assert [(d.where, d.reason) for d in result.damages] == [
        ("summary[0]", "unit is an integer, expected a string"),
        ("summary[1]", "value is a string, expected a number"),
    ]
    assert result.raw["benchmarks"] == doc["benchmarks"]  # the measurements are all kept
    assert summary_rows(result) == compute_summary(doc)   # and give every figure


def test_a_summary_row_is_shown_as_its_measurement_gives_it(tmp_path: Path) -> None:
    # tryout 2026-11-26: a row edited to 999 ms was on the page and in summary.csv as measured
    (current,) = (FIXTURES / "v2").glob("*.json")
    doc = json.loads(current.read_text())
    measured = compute_summary(doc)
    i = next(i for i, row in enumerate(doc["summary"]) if row["unit"] == "ms"
             and row["value"])  # fmt: skip
    doc["summary"][i]["value"], doc["summary"][i]["text"] = 999.0, "999 ms"
    doc["summary"].append({**doc["summary"][i], "clients": 999})  # no entry behind it
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    result = load_result(edited)
    reasons = {d.where: d.reason for d in result.damages}
    assert reasons[f"summary[{i}]"].startswith("says 999 ms, its measurement gives ")
    assert reasons[f"summary[{len(doc['summary']) - 1}]"] == (
        "no measurement in the file gives this figure: left out")
    assert summary_rows(result) == measured
    assert not any(row.clients == 999 or row.value == 999.0 for row in summary_rows(result))


def test_pooled_percentiles_are_hdrhs_own_for_one_histogram() -> None:
    histogram = HdrHistogram(1, 60_000_000, 3)
    for us in (100, 200, 300, 400, 10_000):
        histogram.record_value(us)
    encoded = histogram.encode().decode("ascii")
    p50, p99 = pooled_percentiles_ms([encoded], (50.0, 99.0))
    assert p50 == histogram.get_value_at_percentile(50.0) / 1000
    assert p99 == histogram.get_value_at_percentile(99.0) / 1000


def test_summary_csv_rows_of_a_campaign(tmp_path: Path) -> None:
    from igestbench.results.campaign import dump_campaign, load_campaign
    from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
    from igestbench.results.figures import (
        SUMMARY_CSV_FIELDS,
        campaign_summary,
        summary_csv_cells,
    )
    from igestbench.results.merge import merge

    url = "https://t.example/ICATService/ICAT"
    sweep = {"flavour": "lean", "slo_ms": 50.0, "steps": [step(10, 2, 5), step(20, 60, 90)],
             "sustained_rate": 10.0}
    path = write_result(tmp_path, "A", url, benchmarks=[
        entry("full-cycle", {"full-cycle": op([10.0, 12.0])})], sweeps=[sweep])
    config = CampaignConfig("c", (CampaignSite("A"),), (CampaignTarget("T", url),))
    dump_campaign(merge([path], config).document, tmp_path / "c.json")
    lines = [summary_csv_cells(run, row)
             for run, row in campaign_summary(load_campaign(tmp_path / "c.json"))]
    assert all(len(line) == len(SUMMARY_CSV_FIELDS) for line in lines)
    named = [dict(zip(SUMMARY_CSV_FIELDS, line, strict=True)) for line in lines]
    rate = next(n for n in named if n["metric"] == "rate")
    assert (rate["site"], rate["target"], rate["unit"], rate["text"]) == (
        "A", "T", "cycles/s", "90.9 cycles/s")
    sustained = named[-1]
    assert (sustained["value"], sustained["text"], sustained["marks"]) == (10.0,
                                                                         "10.0 requests/s", "")
    assert sustained["note"] == "objective broken at 20.0 requests/s: p99 90.0 ms ≥ 50 ms"


def test_a_rows_own_reason_comes_without_the_clients_notes() -> None:
    e = entry("burst", {}, problems=["worker 0: INTERNAL: boom; try again"],
              client_cpu={"bound": True, "why": "the busiest client used 97 % of one core",
                          "machine_busy": True, "busy_why": "a client waited for a core"})
    row = by_metric(entry_figures(e))["create rate"]
    assert row.marks == ("client-bound", "machine-busy", "failed")
    assert row.reason == "failed: INTERNAL: boom; try again"
    assert row.note == ("failed: INTERNAL: boom; try again; client-bound: the busiest client "
                        "used 97 % of one core; machine busy: a client waited for a core")


def test_the_live_line_is_the_registrys_figure_over_the_calls_so_far() -> None:
    """The issue: a live 'full-cycle/zeep/1: 107 done, 77.2/s' (it counted the cycles' steps)
    ended as '29.365/s'. The live rate is the registry's over the same calls, so it converges
    on the phase's figure: given all the calls, it is that figure."""
    import io

    from igestbench.measure.timing import TimingRecord
    from igestbench.run.benchmarks import benchmark_entry
    from igestbench.run.progress import LiveFigures, Progress
    from igestbench.run.workers import WorkerOutcome, WorkerRun

    ms = 1_000_000

    def cycle(start: int, duration_ms: float, ok: bool = True) -> list[TimingRecord]:
        # a failed cycle: its last step failed, and the cycle with it (one error, not two)
        steps = [TimingRecord(f"full-cycle/lookup {e}", start, ms, ok or e != "Datafile",
                              None if ok or e != "Datafile" else "IcatInternal")
                 for e in ("Facility", "Dataset", "Datafile")]
        return [*steps, TimingRecord("full-cycle", start, round(duration_ms * ms), ok,
                                     None if ok else "IcatInternal")]

    by_worker = {w: [r for i in range(6) for r in cycle(i * 40 * ms, 30.0 + w + i,
                                                       ok=(w, i) != (1, 3))]
                 for w in (0, 1)}
    stream = io.StringIO()
    progress = Progress(stream, live=True)
    live = LiveFigures("full-cycle", 2)
    progress.start("full-cycle/zeep/2", figures=live)
    for worker, records in by_worker.items():
        progress.records(records, worker=worker)
    run = WorkerRun(by_worker, [WorkerOutcome(w, {}, [], None, 0) for w in (0, 1)], 0, 1)
    final = by_metric(entry_figures(benchmark_entry("full-cycle", "zeep", 2, run)))
    assert live.line() == f"12 calls, 1 error · {final['rate'].text}"
    assert "cycles/s" in stream.getvalue() and final["rate"].samples == 9
    assert final["errors"].value == 1


def test_the_figures_of_an_entry_left_out_are_not_shown(tmp_path: Path) -> None:
    # tryout 2026-11-26: merge said benchmarks[2] was left out, yet the page showed its figures
    # from the file's summary
    (current,) = (FIXTURES / "v2").glob("*.json")
    doc = json.loads(current.read_text())
    entry = doc["benchmarks"][0]
    op = next(iter(entry["ops"].values()))
    op["p50_ms"] = "fast"
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(doc))
    result = load_result(damaged)
    assert [d.where for d in result.damages] == ["benchmarks[0]"]  # said once, for the entry
    gone = (entry["workload"], entry.get("interface", "soap"), entry["flavour"],
            entry["concurrency"])  # fmt: skip
    assert any(row.key[:4] == gone for row in compute_summary(json.loads(current.read_text())))
    assert not any(row.key[:4] == gone for row in summary_rows(result))


def test_a_campaign_edited_after_merge_shows_the_measurements(tmp_path: Path) -> None:
    # a sealed campaign's rows were checked at merge and are read as they are; an edit breaks
    # the seal, and the report then checks and computes again (999 ms is not shown)
    from igestbench.results.campaign import dump_campaign, load_campaign
    from igestbench.results.merge import merge

    (current,) = (FIXTURES / "v2").glob("*.json")
    dump_campaign(merge([current]).document, tmp_path / "c.json", sealed=True)
    (run,) = load_campaign(tmp_path / "c.json").runs
    measured = compute_summary(json.loads(current.read_text()))
    assert summary_rows(run.result) == measured
    doc = json.loads((tmp_path / "c.json").read_text())
    rows = doc["runs"][0]["result"]["summary"]
    i = next(i for i, row in enumerate(rows) if row["unit"] == "ms" and row["value"])
    rows[i]["value"], rows[i]["text"] = 999.0, "999 ms"
    (tmp_path / "c.json").write_text(json.dumps(doc))
    campaign = load_campaign(tmp_path / "c.json")
    assert summary_rows(campaign.runs[0].result) == measured
    assert [d.where for d in campaign.damaged] == [f"summary[{i}]"]
