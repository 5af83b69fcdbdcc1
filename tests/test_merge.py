"""sv7 merge: newest run per cell, history, bad files skipped with reasons, order independence."""

from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from igestbench.cli import main
from igestbench.errors import UsageError
from igestbench.results import ResultFileError, load_result
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.campaign_file import (
    CampaignConfig,
    CampaignSite,
    CampaignTarget,
    load_campaign_config,
)
from igestbench.results.merge import canonical_target, merge
from tests.campaign_helpers import check, write_result

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "fixtures" / "results"
T1 = "https://icat.one.example:8181/ICATService/ICAT"
T2 = "https://icat.two.example/ICATService/ICAT"


@pytest.mark.parametrize(("url", "canonical"), [
    ("https://ICAT.Example.org/ICATService/ICAT/", "https://icat.example.org:443/ICATService/ICAT"),
    ("https://icat.example.org:443/ICATService/ICAT", "https://icat.example.org:443/ICATService/ICAT"),
    ("icat.example.org", "https://icat.example.org:443/ICATService/ICAT"),
    ("http://icat.example.org/icat/ICAT", "http://icat.example.org:80/icat/ICAT"),
    ("HTTPS://[::1]:8443/ICATService/ICAT?wsdl", "https://[::1]:8443/ICATService/ICAT"),
])
def test_target_identity_is_canonical(url: str, canonical: str) -> None:
    assert canonical_target(url) == canonical


def campaign() -> CampaignConfig:
    return CampaignConfig(
        name="c", sites=(CampaignSite("ELETTRA", "IT"), CampaignSite("HZB", "DE")),
        targets=(CampaignTarget("One", "https://ICAT.one.example:8181/ICATService/ICAT/", "HZB"),
                 CampaignTarget("Two", "icat.two.example", "ELETTRA")))


def test_the_newest_run_counts_and_older_ones_are_history(tmp_path: Path) -> None:
    old = write_result(tmp_path, "ELETTRA", T1, run_id="old", minutes=0,
                       checks=[check("a", "failed", "refused")])
    new = write_result(tmp_path, "elettra", T1, run_id="new", minutes=60, checks=[check("a")])
    outcome = merge([new, old], campaign())
    (run,) = outcome.document["runs"]
    assert (run["site"], run["target"], run["file"]) == ("ELETTRA", "One", new.name)
    assert run["result"]["run"]["id"] == "new"
    (history,) = outcome.document["history"]
    assert (history["run_id"], history["passed"], history["total"]) == ("old", 0, 1)
    assert outcome.skipped == () and outcome.unexpected == ()


def test_merging_is_order_independent(tmp_path: Path) -> None:
    files = [write_result(tmp_path, site, url, run_id=f"{site}{i}", minutes=i * 7 % 5,
                          checks=[check("a", "passed" if i % 2 else "failed", "timeout")])
             for i in range(6) for site, url in (("ELETTRA", T1), ("HZB", T2))]
    files += [*sorted((RESULTS / "bad").iterdir()), files[0]]  # and a file given twice
    expected = merge(files, campaign()).document
    shuffler = random.Random(6)
    for attempt in range(5):
        shuffler.shuffle(files)
        assert merge(files, campaign()).document == expected
        dump_campaign(merge(files, campaign()).document, tmp_path / f"c{attempt}.json")
    written = {p.read_bytes() for p in tmp_path.glob("c*.json")}
    assert len(written) == 1  # byte for byte
    assert len(expected["runs"]) == 2 and len(expected["history"]) == 10


def test_bad_files_are_skipped_with_name_and_reason(tmp_path: Path) -> None:
    good = write_result(tmp_path, "HZB", T2, checks=[check("a")])
    outcome = merge([good, *sorted((RESULTS / "bad").iterdir())], campaign())
    reasons = {s.file: s.reason for s in outcome.skipped}
    assert reasons == {
        "bad-foreign.json": 'foreign JSON file: no "format": "igestbench-result" key',
        "bad-future-version.json": "written by a newer igestbench (version 99); this one "
                                   "reads up to 2",
        "bad-html-page.json": "not JSON but an HTML page (an error or login page saved as the "
                              "file?)",
        "bad-missing-site.json": "missing required key run.site",
        "bad-truncated.json": "looks truncated: it is cut off before its end (an "
                              "interrupted copy?); copy it again from its site",
    }
    assert [r["file"] for r in outcome.document["runs"]] == [good.name]
    assert outcome.document["skipped"][0] == {"file": "bad-foreign.json",
                                              "reason": reasons["bad-foreign.json"]}


@pytest.mark.parametrize("site", ["", "  "])
def test_a_file_whose_site_has_no_name_is_skipped(tmp_path: Path, site: str) -> None:
    """Tryout 4: an edited `"site": ""` was counted, a row without a name on the page (sv7 run
    refuses such a --site)."""
    good = write_result(tmp_path, "HZB", T2, checks=[check("a")])
    doc = json.loads(good.read_text(encoding="utf-8"))
    doc["run"]["site"] = site
    nameless = tmp_path / "nameless.json"
    nameless.write_text(json.dumps(doc), encoding="utf-8")
    outcome = merge([good, nameless])
    assert [(s.file, s.reason) for s in outcome.skipped] == [
        ("nameless.json", f"run.site is {site!r}: a site needs a name")]
    assert [r["file"] for r in outcome.document["runs"]] == [good.name]


def test_every_supported_version_is_accepted() -> None:
    files = sorted(RESULTS.glob("v*/*.json"))
    assert [f.parent.name for f in files] == ["v1", "v2"]
    for file in files:  # each on its own: the fixtures are one run id with other contents,
        outcome = merge([file])  # which merged together are a conflict (test_merge_doubts.py)
        (run,) = outcome.document["runs"]
        assert run["file_version"] == int(file.parent.name[1:]) and outcome.skipped == ()
        assert run["result"]["version"] == 2  # the campaign holds the current version only


def test_sites_and_targets_not_in_the_campaign_are_reported(tmp_path: Path) -> None:
    stray_site = write_result(tmp_path, "DESY", T1, checks=[check("a")])
    stray_target = write_result(tmp_path, "HZB", "https://other.example/ICATService/ICAT")
    outcome = merge([stray_site, stray_target], campaign())
    assert outcome.document["runs"] == []
    assert outcome.unexpected == (
        f"{stray_site.name}: site not in the campaign (site DESY, target "
        "https://icat.one.example:8181/ICATService/ICAT)",
        f"{stray_target.name}: target not in the campaign (site HZB, target "
        "https://other.example:443/ICATService/ICAT)",
    )


def test_without_a_campaign_the_files_define_it(tmp_path: Path) -> None:
    files = [write_result(tmp_path, "HZB", T1, parts=("verify", "burst")),
             write_result(tmp_path, "ELETTRA", T2, parts=("sweep", "verify"))]
    head = merge(files, name="nov").document["campaign"]
    assert head["declared"] is False and head["name"] == "nov"
    assert [s["name"] for s in head["sites"]] == ["ELETTRA", "HZB"]
    assert [t["name"] for t in head["targets"]] == ["icat.one.example:8181", "icat.two.example"]
    assert head["parts"] == ["verify", "burst", "sweep"]


def test_a_campaign_toml_without_parts_expects_what_a_run_against_a_target_runs(
        tmp_path: Path) -> None:
    # sv7 run --target runs the scale part only when --parts names it: a campaign that names no
    # parts must not count every site short of it (every site at 6 of 7 parts, 86 %)
    toml = tmp_path / "campaign.toml"
    toml.write_text('[campaign]\nname = "nov"\n[[site]]\nname = "HZB"\n[[target]]\n'
                    f'name = "Two"\nurl = "{T2}"\n', encoding="utf-8")
    config = load_campaign_config(toml)
    assert "scale" not in config.parts and "scale" not in campaign().parts
    assert config.parts == ("verify", "full-cycle", "single-query", "burst", "multi-query",
                            "sweep")
    every = ("verify", "full-cycle", "single-query", "burst", "multi-query", "sweep")
    run = write_result(tmp_path / "r", "HZB", T2, parts=every)
    head = merge([run], config).document["campaign"]
    assert head["parts"] == list(every)
    asked = tmp_path / "scale.toml"  # a campaign that wants it says so
    asked.write_text(toml.read_text().replace('name = "nov"\n', 'name = "nov"\n'
                                              'parts = ["verify", "scale"]\n', 1))
    assert load_campaign_config(asked).parts == ("verify", "scale")


def test_the_example_campaign_file_is_its_results_merged(tmp_path: Path) -> None:
    # fixtures/campaign/README.md: campaign.json is `sv7 merge results/*.json --campaign
    # campaign.toml -o campaign.json`; a merge today must give the same file
    example = ROOT / "fixtures" / "campaign"
    out = tmp_path / "campaign.json"
    main(["merge", str(example / "results"), "--campaign", str(example / "campaign.toml"),
          "-o", str(out)])
    merged, kept = (json.loads(p.read_text()) for p in (out, example / "campaign.json"))
    merged.pop("tool"), kept.pop("tool")  # the version of igestbench that merged it
    # the seal (results/seal.py) names the checking code of the merge that wrote the file:
    # today's may differ from the one the committed file was merged with
    assert isinstance(merged.pop("checked"), str) and isinstance(kept.pop("checked"), str)
    assert merged == kept


def test_the_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = tmp_path / "campaign.toml"
    toml.write_text('[campaign]\nname = "nov"\nparts = ["verify"]\n'
                    '[[site]]\nname = "HZB"\n[[target]]\nname = "Two"\n'
                    f'url = "{T2}"\noperator = "HZB"\n', encoding="utf-8")
    good = write_result(tmp_path / "r", "HZB", T2, checks=[check("a")])
    out = tmp_path / "campaign.json"
    assert main(["merge", str(good), "--campaign", str(toml), "-o", str(out)]) == 0
    assert load_campaign(out).run("HZB", "Two") is not None
    bad = RESULTS / "bad" / "bad-truncated.json"
    assert main(["merge", str(good), str(bad), "--campaign", str(toml), "-o", str(out)]) == 1
    assert "skipped bad-truncated.json: looks truncated" in capsys.readouterr().err
    out.unlink()
    assert main(["merge", str(good), str(bad), "-o", str(out), "--strict"]) == 1
    assert "nothing written (--strict)" in capsys.readouterr().err
    assert not out.exists()


def test_a_merge_that_counted_nothing_says_so_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tryout 4: every file outside the campaign (a target URL mistyped in campaign.toml) gave
    `campaign file: c.json (0 runs, 0 older, 0 skipped)` and exit 0."""
    toml = tmp_path / "campaign.toml"
    toml.write_text('[campaign]\nname = "nov"\nparts = ["verify"]\n'
                    '[[site]]\nname = "HZB"\n[[target]]\nname = "Two"\n'
                    'url = "https://typo.example/ICATService/ICAT"\n', encoding="utf-8")
    good = write_result(tmp_path / "r", "HZB", T2, checks=[check("a")])
    out = tmp_path / "campaign.json"
    assert main(["merge", str(good), "--campaign", str(toml), "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert "target not in the campaign" in captured.err
    assert "(0 runs, 0 older, 0 skipped, 1 not in the campaign)" in captured.out
    # one file in the campaign and one outside: counted, said, and not a failure
    toml.write_text(toml.read_text(encoding="utf-8").replace("https://typo.example", T2.split(
        "/ICATService")[0]), encoding="utf-8")
    stray = write_result(tmp_path / "r", "DESY", T2, checks=[check("a")])
    assert main(["merge", str(good), str(stray), "--campaign", str(toml), "-o", str(out)]) == 0
    assert "(1 run, 0 older, 0 skipped, 1 not in the campaign)" in capsys.readouterr().out


def test_a_gz_campaign_file_is_gzip_and_the_report_reads_it(tmp_path: Path) -> None:
    """TRYOUT3 finding 12: -o c.json.gz wrote plain JSON, and sv7 report of a real gzip
    campaign failed with a UTF-8 error. Now merge compresses by the name, report reads either
    by content; the plain file stays plain."""
    good = write_result(tmp_path / "r", "HZB", T2, checks=[check("a")])
    packed, plain = tmp_path / "c.json.gz", tmp_path / "c.json"
    assert main(["merge", str(good), "-o", str(packed)]) == 0
    assert main(["merge", str(good), "-o", str(plain)]) == 0
    assert packed.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed.read_bytes()) == plain.read_bytes()
    assert load_campaign(packed).run("HZB", "icat.two.example") is not None
    page = tmp_path / "report.html"
    assert main(["report", str(packed), "-o", str(page)]) == 0
    assert "HZB" in page.read_text(encoding="utf-8")
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(packed.read_bytes()[:-20])
    with pytest.raises(ResultFileError, match="gzip data"):
        load_campaign(cut)


@pytest.mark.parametrize(("text", "reason"), [
    ('[campaign]\nname = "x"\n[[target]]\nname = "T"\nurl = "h"\noperator = "Nobody"\n',
     "operator Nobody is not one of the [[site]] names"),
    ('[campaign]\nname = "x"\n[[site]]\nname = "HZB"\n[[site]]\nname = "hzb"\n',
     "site HZB, hzb listed more than once"),
    ('[campaign]\nname = "x"\nparts = ["dance"]\n', "unknown part 'dance'; choose from verify"),
    ('[campaign]\n', "name must be a non-empty string"),
    ("[campaign\n", "not valid TOML"),
])
def test_campaign_toml_errors_are_named(tmp_path: Path, text: str, reason: str) -> None:
    path = tmp_path / "campaign.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError, match=reason.replace("(", r"\(").replace(")", r"\)")
                       .replace("[", r"\[").replace("]", r"\]")):
        load_campaign_config(path)


def test_a_campaign_file_is_checked_on_load(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": "igestbench-campaign", "version": 7}), encoding="utf-8")
    with pytest.raises(ResultFileError, match="unknown campaign format version 7"):
        load_campaign(path)
    with pytest.raises(ResultFileError, match="not a campaign file"):
        load_campaign(RESULTS / "v2" / "ELETTRA_icat.example.org_20261121T223000-ab12.json")
    doc = merge([write_result(tmp_path, "HZB", T2, checks=[check("a")]),
                 write_result(tmp_path, "ELETTRA", T2, checks=[check("a")])]).document
    del doc["runs"][0]["result"]["run"]["site"]
    dump_campaign(doc, path)
    # one damaged run costs that run, named with why; the campaign and its other run load
    loaded = load_campaign(path)
    assert [r.site for r in loaded.runs] == ["HZB"]
    (skipped,) = loaded.skipped
    assert skipped.file == doc["runs"][0]["file"]
    assert skipped.reason == "runs[0] of the campaign file: missing required key run.site"


# --- hostile and odd inputs: not strict JSON, gzip bombs, patterns the shell left alone -----


def gzip_bomb(path: Path, inflated_mib: int) -> Path:
    """A small .json.gz that inflates to ``inflated_mib`` MiB (gzip members of 8 MiB each)."""
    member = gzip.compress(b" " * (8 * 2**20), compresslevel=9, mtime=0)
    path.write_bytes(member * (inflated_mib // 8))
    return path


def not_strict_json(good: Path, path: Path, constant: str) -> Path:
    """``good`` with one number replaced by ``constant`` (NaN, Infinity …), as Python's json
    module writes when allow_nan is left on."""
    text = good.read_text(encoding="utf-8")
    assert '"median_ms": 1.0' in text
    path.write_text(text.replace('"median_ms": 1.0', f'"median_ms": {constant}'), "utf-8")
    return path


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_a_file_with_nan_is_skipped_and_named(tmp_path: Path, constant: str) -> None:
    good = write_result(tmp_path / "good", "HZB", T2, checks=[check("a")])
    nan = not_strict_json(write_result(tmp_path / "bad", "ESRF", T1), tmp_path / "nan.json",
                          constant)
    outcome = merge([good, nan], campaign())
    assert [(s.file, s.reason) for s in outcome.skipped] == [
        ("nan.json", f"not valid JSON: {constant} is not a JSON number (written by a "
                     "non-strict writer?)")]
    assert [r["file"] for r in outcome.document["runs"]] == [good.name]
    dump_campaign(outcome.document, tmp_path / "campaign.json")  # strict JSON all through


@pytest.mark.parametrize("number", ["1e400", "-1e400"])
def test_a_number_beyond_a_doubles_range_is_skipped_and_named(tmp_path: Path, number: str) -> None:
    """Python's json reads 1e400 as infinity, which no JSON writer writes back: in a key no
    check reads (here the run's) it reached the campaign writer, and sv7 merge ended with a
    traceback (ValueError: Out of range float values)."""
    good = write_result(tmp_path / "good", "HZB", T2, checks=[check("a")])
    bad = write_result(tmp_path / "bad", "ESRF", T1)
    text = bad.read_text(encoding="utf-8")
    odd = tmp_path / "odd.json"
    odd.write_text(text.replace('"run": {', f'"run": {{"odd": {number}, ', 1), "utf-8")
    outcome = merge([good, odd], campaign())
    assert [(s.file, s.reason) for s in outcome.skipped] == [
        ("odd.json", f"not valid JSON: {number} (beyond a double's range) is not a JSON number "
                     "(written by a non-strict writer?)")]
    dump_campaign(outcome.document, tmp_path / "campaign.json")


def test_a_gzip_bomb_is_skipped_without_inflating_it(tmp_path: Path) -> None:
    good = write_result(tmp_path, "HZB", T2, checks=[check("a")])
    bomb = gzip_bomb(tmp_path / "bomb.json.gz", 64)
    outcome = merge([good, bomb], campaign(), max_bytes=16 * 2**20)
    assert [(s.file, s.reason) for s in outcome.skipped] == [
        ("bomb.json.gz", "inflates to more than 16 MiB: not a result file (a gzip bomb?), or "
                         "raise the limit with --max-size")]
    assert [r["file"] for r in outcome.document["runs"]] == [good.name]
    plain = tmp_path / "big.json"
    plain.write_bytes(b" " * (2 * 2**20))
    with pytest.raises(ResultFileError, match="larger than 1 MiB"):
        load_result(plain, max_bytes=2**20)
    compressed = write_result(tmp_path / "gz", "ESRF", T1)
    packed = compressed.with_suffix(".json.gz")
    packed.write_bytes(gzip.compress(compressed.read_bytes()))
    assert load_result(packed).site == "ESRF"  # a good .gz within the limit still loads


_PEAK_RSS = """
import resource, sys
from igestbench.cli import main
code = main(sys.argv[1:])
print(code, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def _merge_peak(*args: str) -> tuple[int, int]:
    """(exit status, peak RSS in bytes) of ``sv7 merge`` in a process of its own."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", _PEAK_RSS, "merge", *args],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    code, peak = done.stdout.split()[-2:]
    return int(code), int(peak)


def test_a_1_gib_gzip_bomb_costs_no_memory(tmp_path: Path) -> None:
    """Issue 10: a 1 MiB .gz inflating to 1 GiB took 3.1 GiB. Peak RSS is compared with the
    same merge without the bomb; the bound is generous (the bomb alone would be +1 GiB)."""
    good = write_result(tmp_path, "HZB", T2, checks=[check("a")])
    bomb = gzip_bomb(tmp_path / "bomb.json.gz", 1024)
    assert bomb.stat().st_size < 2**20
    code, baseline = _merge_peak(str(good), "-o", str(tmp_path / "a.json"))
    assert code == 0
    code, peak = _merge_peak(str(good), str(bomb), "-o", str(tmp_path / "b.json"))
    assert code == 1  # skipped, as any unreadable file
    assert peak - baseline < 100 * 2**20, f"{(peak - baseline) / 2**20:.0f} MiB more"


def test_directories_and_patterns_the_shell_left_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    one = write_result(results, "HZB", T2, checks=[check("a")])
    two = write_result(results, "ESRF", T1, checks=[check("a")])
    (results / "run.jsonl").write_text("{}\n")  # a journal: not a result file
    out = tmp_path / "campaign.json"
    # the README's example where there is no .json.gz: the shell passes the pattern on as is
    assert main(["merge", f"{results}/*.json", f"{results}/*.json.gz", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"{results}/*.json.gz: no file matches this pattern" in err
    assert "Traceback" not in err
    assert {r["file"] for r in load_campaign_document(out)["runs"]} == {one.name, two.name}
    out.unlink()
    assert main(["merge", str(results), "-o", str(out)]) == 0
    assert {r["file"] for r in load_campaign_document(out)["runs"]} == {one.name, two.name}
    capsys.readouterr()
    assert main(["merge", str(tmp_path / "nothing" / "*.json"), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no file matches this pattern" in err and "no result files to merge" in err


def test_strict_makes_a_nan_file_fatal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = write_result(tmp_path / "good", "HZB", T2, checks=[check("a")])
    nan = not_strict_json(good, tmp_path / "nan.json", "NaN")
    out = tmp_path / "campaign.json"
    assert main(["merge", str(good), str(nan), "-o", str(out), "--strict"]) == 1
    err = capsys.readouterr().err
    assert "skipped nan.json: not valid JSON: NaN" in err and not out.exists()


def load_campaign_document(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_runs_against_the_built_in_catalogue_are_one_target(tmp_path: Path) -> None:
    """Its port is new every run: the newest run replaces the older ones as for any target,
    whatever port each had; a file written before target.name (local only) counts too."""
    older = write_result(tmp_path, "local", "https://127.0.0.1:40001/ICATService/ICAT",
                         run_id="older", minutes=0, checks=[check("a", "failed", "refused")])
    document = json.loads(older.read_text())
    document["target"]["local"] = True  # as sv7 run wrote it before the built-in target's name
    older.write_text(json.dumps(document))
    newest = write_result(tmp_path, "local", "https://127.0.0.1:40777/ICATService/ICAT",
                          run_id="newest", minutes=30, checks=[check("a")], built_in=True)
    served = write_result(tmp_path, "local", "https://127.0.0.1:40001/ICATService/ICAT",
                          run_id="served", minutes=10, checks=[check("a")])  # sv7 serve, --target
    outcome = merge([older, newest, served])
    targets = outcome.document["campaign"]["targets"]
    assert [t["name"] for t in targets] == ["127.0.0.1:40001", "built-in"]
    # shown at the URL of its newest run
    assert targets[1]["url"] == "https://127.0.0.1:40777/ICATService/ICAT"
    runs = {run["target"]: run["result"]["run"]["id"] for run in outcome.document["runs"]}
    assert runs == {"built-in": "newest", "127.0.0.1:40001": "served"}
    (history,) = outcome.document["history"]
    assert (history["target"], history["run_id"]) == ("built-in", "older")
    # the report reads it like any target
    dump_campaign(outcome.document, tmp_path / "c.json")
    assert [t.name for t in load_campaign(tmp_path / "c.json").targets] == [
        "127.0.0.1:40001", "built-in"]
