"""One figure, one number: a run's figures as the terminal, the result file, the page's tables
and charts, the Markdown and the CSV show them (issue 19: the terminal said 166/s, the table
220/s and the chart ~413/s for the same burst entry; a rate without its unit)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest

from igestbench.report.charts import build_charts
from igestbench.results.campaign import load_campaign
from igestbench.results.figures import SummaryRow
from tests.test_run import local_env, sv7


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A small run of burst, single-query and the sweep over SOAP and REST against the
    built-in catalogue, merged and reported with --markdown and --csv, as a user does it."""
    base = tmp_path_factory.mktemp("everywhere")
    out = base / "results"
    ran = sv7("run", "--site", "EVERY", "--parts", "single-query,burst,sweep",
              "--interface", "soap,rest", "--concurrency", "1", "--files", "20",
              "--batch-size", "5", "--queries", "20", "--max-rate", "20", "--duration", "0.3",
              # an objective no answer on loopback misses however busy the machine: the sweep
              # reaches its cap, the case the sweep's test is about (how fast is for benchmarks)
              "--slo-ms", "60000",
              "--warmup", "0.1", "--out", str(out), env=local_env(), cwd=base)
    assert ran.returncode == 0, ran.stderr
    merged = sv7("merge", str(out), "-o", str(base / "c.json"), cwd=base)
    assert merged.returncode == 0, merged.stderr
    page = base / "report.html"
    reported = sv7("report", str(base / "c.json"), "-o", str(page), "--markdown", "--csv",
                   str(base / "csv"), cwd=base)
    assert reported.returncode == 0, reported.stderr
    (path,) = out.glob("*.json")
    return {"stdout": ran.stdout, "stderr": ran.stderr, "doc": json.loads(path.read_text()),
            "html": page.read_text(), "md": page.with_suffix(".md").read_text(),
            "csv": base / "csv", "campaign": base / "c.json"}


def rows(doc: object) -> dict[tuple[str, str, str, int | None, str], SummaryRow]:
    assert isinstance(doc, dict)
    found = [SummaryRow.from_dict(r) for r in doc["summary"]]
    return {r.key: r for r in found if r is not None}


def csv_rows(directory: object, name: str) -> list[dict[str, str]]:
    assert isinstance(directory, Path)
    return list(csv.DictReader((directory / name).read_text(encoding="utf-8").splitlines()))


def test_one_entry_is_the_same_three_numbers_everywhere(run: dict[str, object]) -> None:
    figures = rows(run["doc"])
    rate, mean, p99 = (figures[("burst", "soap", "zeep", 1, f"create {m}")]
                       for m in ("rate", "mean", "p99"))
    many = figures[("burst", "soap", "zeep", 1, "createMany rate")]
    assert rate.unit == many.unit == "Datafiles/s" and mean.unit == p99.unit == "ms"
    assert rate.text.endswith(" Datafiles/s") and many.value is not None
    # the terminal: the line ending the phase, and the summary at the end of the run
    stderr, stdout = str(run["stderr"]), str(run["stdout"])
    assert (f"sv7: burst/zeep/1: create {rate.text} (mean {mean.text}, p99 {p99.text}), "
            f"createMany {many.text}") in stderr
    (line,) = [ln for ln in stdout.splitlines() if re.match(r"\s+burst create\s+SOAP\s+zeep", ln)]
    assert rate.text in line and mean.text in line and p99.text in line
    assert not re.search(r"\d /s", stderr + stdout)  # no rate without what it counts
    # the page's table and the Markdown: the same texts
    for document in (str(run["html"]), str(run["md"])):
        assert rate.text in document and many.text in document
    # the chart: the same values
    campaign = load_campaign(Path(str(run["campaign"])))
    (scaling,) = [c for c in build_charts(campaign) if c.kind == "scaling"]
    panels = {p.title: p for p in scaling.panels}
    many_mean = figures[("burst", "soap", "zeep", 1, "createMany mean")]
    label = "EVERY · SOAP zeep (quick tour)"
    zeep = {s.label: s for s in panels["burst createMany: rate"].series}[label]
    assert zeep.y == (many.value,)
    assert {s.label: s for s in panels["burst createMany: mean latency"].series}[
        label].y == (many_mean.value,)
    # the CSV: the same values
    (bench,) = [r for r in csv_rows(run["csv"], "benchmarks.csv") if r["flavour"] == "zeep"]
    assert float(bench["burst_create_per_s"]) == rate.value
    assert float(bench["burst_create_many_per_s"]) == many.value
    query = figures[("single-query", "soap", "zeep", 1, "p99")]
    assert float(bench["query_p99_ms"]) == query.value and query.text in str(run["html"])


def test_the_interfaces_table_and_csv_take_the_registrys_figures(run: dict[str, object]) -> None:
    figures = rows(run["doc"])
    rest = figures[("burst", "rest", "rest", 1, "createMany rate")]
    written = [r for r in csv_rows(run["csv"], "interfaces.csv")
               if r["operation"] == "createMany" and r["interface"] == "rest"]
    assert [float(r["ops_per_s"]) for r in written] == [rest.value]
    assert rest.text in str(run["html"])


def test_the_sweep_is_said_the_same_in_the_terminal_and_the_file(run: dict[str, object]) -> None:
    figures = rows(run["doc"])
    soap = figures[("sweep", "soap", "lean", None, "sustained")]
    # 20/s was the cap and the local catalogue keeps up: capped, a lower bound, never None
    assert soap.bound == "lower" and soap.text == "≥ 20.0 requests/s" and "capped" in soap.marks
    stdout, stderr = str(run["stdout"]), str(run["stderr"])
    assert f"sweep SOAP · lean: sustained {soap.text}" in stdout
    assert f"sv7: sweep: sustained {soap.text}" in stderr
    assert "raise --max-rate" in stdout and "None" not in stdout + stderr
    assert soap.text in str(run["html"])
