"""One bad file never breaks the campaign page (issue 18, point 4).

``sv7 merge`` decodes and checks every HdrHistogram and every entry the report reads, and
leaves a damaged entry out with a named reason; ``sv7 report`` never raises on a campaign file:
a damaged run is skipped and named, a damaged part of a run is left out and named. The fuzz
tests are seeded and run in seconds; ``SV7_FUZZ_ROUNDS=2000 pytest tests/test_report_fuzz.py``
runs a longer one by hand (and draws the charts of every mutated campaign).
"""

from __future__ import annotations

import base64
import copy
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.cli import main
from igestbench.report import build_report, render_html, render_markdown, write_csv
from igestbench.report.charts import build_charts, render_all
from igestbench.results import ResultFileError
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.histograms import HistogramError, decode_histogram
from igestbench.results.merge import merge
from tests.campaign_helpers import bench, check, sample, sweep, write_result

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "campaign"
U1 = "https://t1.example/ICATService/ICAT"
#: the longer run by hand: SV7_FUZZ_ROUNDS=2000
ROUNDS = int(os.environ.get("SV7_FUZZ_ROUNDS", "0"))


def _good_entry() -> dict[str, Any]:
    return bench("single-query", "single-query/jpql", 1, [2.0, 3.0, 4.0, 5.0])


def _flip(text: str, at: int) -> str:
    """``text`` with the character at ``at`` replaced by another base64 character."""
    return text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1:]


def test_merge_leaves_a_corrupt_histogram_out_and_the_page_names_it(tmp_path: Path) -> None:
    """The issue's case: a flipped byte in one histogram made sv7 report exit 1 with
    hdrh.codec.HdrLengthException for the whole campaign."""
    good, bad = _good_entry(), _good_entry()
    op = bad["ops"]["single-query/jpql"]
    op["histogram"] = _flip(op["histogram"], 20)
    bad["concurrency"] = 2
    files = [write_result(tmp_path, "A", U1, checks=[check("x")], benchmarks=[good, bad],
                          parts=("verify", "single-query"))]
    outcome = merge(files)
    (line,) = outcome.damaged
    assert line.startswith(f"{files[0].name}: benchmarks[1] (single-query, zeep, SOAP, 2 clients) "
                           "left out: ops.single-query/jpql histogram ")
    (run,) = outcome.document["runs"]
    assert [b["concurrency"] for b in run["result"]["benchmarks"]] == [1]  # the good one kept
    dump_campaign(outcome.document, tmp_path / "c.json")
    page = render_html(build_report(load_campaign(tmp_path / "c.json")))
    assert "benchmarks[1] (single-query, zeep, SOAP, 2 clients) left out" in page
    # and through the commands: merge says it and exits 1, report writes the page
    assert main(["merge", str(files[0]), "-o", str(tmp_path / "m.json")]) == 1
    assert main(["report", str(tmp_path / "m.json"), "-o", str(tmp_path / "r.html")]) == 0


def test_a_campaign_file_from_an_older_merge_is_checked_when_the_report_loads_it(
        tmp_path: Path) -> None:
    """A campaign written before merge checked histograms (or edited since): the report leaves
    the damaged entry out and names it instead of failing."""
    files = [write_result(tmp_path, "A", U1, checks=[check("x")], benchmarks=[_good_entry()])]
    doc = merge(files).document
    op = doc["runs"][0]["result"]["benchmarks"][0]["ops"]["single-query/jpql"]
    op["histogram"] = op["histogram"][:-6]
    dump_campaign(doc, tmp_path / "c.json")
    campaign = load_campaign(tmp_path / "c.json")
    (damaged,) = campaign.damaged
    assert damaged.where == "benchmarks[0]" and "histogram" in damaged.reason
    assert campaign.runs[0].result.benchmarks == ()
    assert "benchmarks[0] (single-query, zeep, SOAP, 1 client) left out" in render_html(
        build_report(campaign, charts=False))


@pytest.mark.parametrize(("mangle", "reason"), [
    (lambda t: 42, "is int, not an encoded HdrHistogram"),
    (lambda t: "not base64!", "is not base64 text"),
    (lambda t: t[:8], "is too short to be an HdrHistogram"),
    (lambda t: t[:-4], "is cut or padded"),
    (lambda t: _flip(t, 20), "is damaged (its compressed counts do not inflate"),
    (lambda t: base64.b64encode(b"\x1c\x84\x93\x14" + bytes(4)).decode(), "is cut short"),
    (lambda t: base64.b64encode(b"nonsense at all").decode(), "no V2 compression cookie"),
])
def test_every_damage_of_a_histogram_has_a_reason(mangle: Any, reason: str) -> None:
    text = _good_entry()["ops"]["single-query/jpql"]["histogram"]
    assert decode_histogram(text, 4).get_total_count() == 4
    with pytest.raises(HistogramError) as caught:
        decode_histogram(mangle(text))
    assert reason in str(caught.value)


def test_a_histogram_of_other_figures_is_refused() -> None:
    text = _good_entry()["ops"]["single-query/jpql"]["histogram"]
    with pytest.raises(HistogramError, match="holds 4 values where the figures beside it "
                                             "count 5"):
        decode_histogram(text, 5)


# --- fuzzing: mutated result files through merge, mutated campaign files through report ---

WRONG_VALUES: tuple[Any, ...] = (None, True, -1, 0, 1.5, 1e300, "", "x" * 300, [], [None],
                                 {}, {"x": 1}, "2026-13-45")


def _paths(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path to a value inside ``node`` (object keys and list indexes)."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:3]):  # the first items stand for the rest
            yield from _paths(value, (*path, i))


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        doc = doc[key]
    if value is _DELETE:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


_DELETE = object()


def _mutation(rng: random.Random, doc: Any, paths: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    """Change ``doc`` in one place; the path changed."""
    path = rng.choice(paths)
    node = doc
    for key in path:
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return ()  # an earlier change of this round replaced or removed the way there
    if isinstance(node, str) and len(node) > 8 and rng.random() < 0.5:
        at = rng.randrange(len(node))  # a flipped character (histograms, times, names)
        value: Any = node[:at] + chr(rng.choice((ord("A"), ord("/"), 0x7f, 0xe9))) \
            + node[at + 1:]
    elif isinstance(node, list) and node and rng.random() < 0.3:
        value = node[: rng.randrange(len(node))]  # a list cut short
    elif rng.random() < 0.1:
        value = _DELETE
    else:
        value = rng.choice(WRONG_VALUES)
    _set(doc, path, value)
    return path


def _small_campaign(tmp_path: Path) -> dict[str, Any]:
    """Four real runs of the example campaign (REST and SOAP, python-icat, a failed one, a
    version-1 file) and a synthetic swarm run, merged; sampler series cut short for speed."""
    chosen = []
    for path in sorted((EXAMPLE / "results").glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except ValueError:
            continue  # the example's truncated file
        key = (doc["run"]["site"], doc["version"], doc["run"]["status"],
               tuple(doc["run"].get("interfaces") or ()), tuple(doc["run"].get("flavours", ())))
        if key not in {k for k, _ in chosen}:
            chosen.append((key, path))
    files = [p for _, p in chosen][:6]
    files.append(_swarm_file(tmp_path))
    doc = merge(files).document
    for run in doc["runs"]:
        for s in run["result"].get("samples", ()):
            for name, series in s.items():
                if isinstance(series, list):
                    s[name] = series[:3]
    return doc


def _swarm_file(directory: Path) -> Path:
    entry = sweep([10, 20, 40], 3.0)
    text = _good_entry()["ops"]["single-query/jpql"]["histogram"]
    for step in entry["steps"]:
        step.update(workers=2, lost_workers=0, histograms={"corrected": text,
                                                           "uncorrected": text})
    entry["swarm"] = {"version": 1, "workers": 2, "hosts": 1, "users_per_worker": 8,
                      "workload": "single-query", "created": 3, "lost": [],
                      "per_worker": [{"id": "w1", "steps": [{"index": 0, "rate": 5, "sent": 5,
                                                              "cpu_percent": 3.0, "users": 8,
                                                              "histogram": text}]}]}
    path = write_result(directory, "ESRF", "https://127.0.0.1:8181/ICATService/ICAT",
                        run_id="swarm1", parts=("sweep",), sweeps=[entry], minutes=10**4)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["run"]["mode"] = "swarm"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _render_everything(campaign_path: Path, tmp_path: Path, draw: bool) -> str:
    campaign = load_campaign(campaign_path)
    report = build_report(campaign, campaign, charts=False)
    charts = build_charts(campaign)
    if draw:
        render_all(charts)
    render_markdown(report)
    write_csv(report, tmp_path / "csv")
    return render_html(report)


def test_fuzzed_campaign_files_always_give_a_page(tmp_path: Path) -> None:
    """Wrong types, deletions, cut lists and flipped characters anywhere in a real campaign
    file: the report is written (a damaged run skipped or a part left out, and named), or —
    only when the campaign's own head is damaged — one clean error naming the file."""
    original = _small_campaign(tmp_path)
    paths = [p for p in _paths(original) if p]
    rng = random.Random(18)
    rounds = ROUNDS or 100
    path = tmp_path / "c.json"
    head_errors = 0
    for i in range(rounds):
        doc = copy.deepcopy(original)
        changed = [_mutation(rng, doc, paths) for _ in range(rng.choice((1, 1, 2, 3)))]
        path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
        try:
            page = _render_everything(path, tmp_path, draw=ROUNDS > 0 and i % 10 == 0)
        except ResultFileError:
            # only the campaign's frame may make the file unreadable as a campaign
            assert any(p and p[0] not in ("runs", "history", "skipped", "unexpected",
                                          "damaged") for p in changed), changed
            head_errors += 1
            continue
        except Exception as exc:  # the failure names what was changed, to reproduce it
            raise AssertionError(f"round {i}: {changed}: {type(exc).__name__}: {exc}") from exc
        assert page.startswith("<!DOCTYPE html>"), changed
    assert head_errors < rounds / 4  # most mutations hit the runs, as most of the file is runs


def test_fuzzed_result_files_are_merged_or_skipped_and_reported(tmp_path: Path) -> None:
    """Result files truncated, with bytes flipped or values of the wrong type: merge skips the
    file or leaves the entry out with a reason, and the report of what it wrote is a page."""
    sources = [p for p in sorted((EXAMPLE / "results").glob("*.json"))][:4]
    texts = [p.read_text(encoding="utf-8") for p in sources]
    docs = [json.loads(t) for t in texts]
    rng = random.Random(4)
    rounds = ROUNDS // 4 or 40
    out = tmp_path / "files"
    out.mkdir()
    for i in range(rounds):
        n = rng.randrange(len(texts))
        how = rng.choice(("truncate", "flip", "type"))
        if how == "truncate":
            data = texts[n].encode()[: rng.randrange(len(texts[n]))]
        elif how == "flip":
            raw = bytearray(texts[n].encode())
            for _ in range(rng.randint(1, 4)):
                raw[rng.randrange(len(raw))] = rng.randrange(256)
            data = bytes(raw)
        else:
            doc = copy.deepcopy(docs[n])
            _mutation(rng, doc, [p for p in _paths(doc) if p])
            data = json.dumps(doc).encode()
        damaged = out / f"damaged-{i}.json"
        damaged.write_bytes(data)
        outcome = merge([*sources[:n], damaged, *sources[n + 1:]])
        names = {s.file for s in outcome.skipped}
        runs = {r["file"] for r in outcome.document["runs"]} | {
            h["file"] for h in outcome.document["history"]}
        assert damaged.name in names | runs | {u["file"] for u in outcome.document["unexpected"]}
        dump_campaign(outcome.document, tmp_path / "c.json")
        try:
            page = _render_everything(tmp_path / "c.json", tmp_path, draw=False)
        except Exception as exc:
            raise AssertionError(f"round {i} ({how} of {sources[n].name}): "
                                 f"{type(exc).__name__}: {exc}") from exc
        if damaged.name in names:
            assert f"{damaged.name}: skipped" in page
        damaged.unlink()


def test_a_campaign_with_a_damaged_head_is_one_clean_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = [write_result(tmp_path, "A", U1, checks=[check("x")],
                          samples=[sample("idle", [1.0])])]
    doc = merge(files).document
    doc["campaign"]["sites"] = "A"
    dump_campaign(doc, tmp_path / "c.json")
    assert main(["report", str(tmp_path / "c.json"), "-o", str(tmp_path / "r.html")]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"sv7 report: {tmp_path / 'c.json'}: damaged campaign file")
