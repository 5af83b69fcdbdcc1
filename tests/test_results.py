"""Result files: the writer's atomic, secret-free output and the loader's one-line diagnoses."""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import igestbench.results as results
from igestbench.errors import Sv7Error, UsageError
from igestbench.results import (
    FORMAT_VERSION,
    ResultFile,
    ResultFileError,
    ResultWriter,
    SecretInResultError,
    load_result,
    result_file_name,
    utc_timestamp,
)
from igestbench.results.example import main as example_main

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures" / "results"
V1_FILE = FIXTURES / "v1" / "ELETTRA_icat.example.org_20261121T223000-ab12.json"
#: what a result file cut short says: that it is, and what to do (merge skips it with this)
TRUNCATED_RESULT = ("looks truncated: it is cut off before its end (an interrupted copy?); "
                    "copy it again from its site")
SESSION_ID = "4f6c1a0e-8d2b-4c3e-9a77-0b5d2e8f1c34"

RUN = {"id": "20261121T223000-ab12", "site": "ELETTRA", "started": "2026-11-21T22:30:00.000Z"}
TARGET = {"url": "https://icat.example.org:8181/ICATService/ICAT", "api_version": "6.2.0"}
ENVIRONMENT = {"python": "3.11.7", "cores": 2}

# The child processes below write with the same writer as the tests, from the repository.
CHILD_PREAMBLE = f"""
import os, sys
from igestbench.results import ResultWriter
w = ResultWriter(sys.argv[1], run={RUN!r}, target={TARGET!r}, environment={{}}, autoflush_s=0)
"""


def open_writer(directory: Path, **kwargs: Any) -> ResultWriter:
    return ResultWriter(directory, run=RUN, target=TARGET, environment=ENVIRONMENT, **kwargs)


def write_doc(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def good_doc() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(V1_FILE.read_text(encoding="utf-8"))
    return doc


def message(path: Path) -> str:
    with pytest.raises(ResultFileError) as caught:
        load_result(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ")
    assert "\n" not in text
    return text


# --- the public API -----------------------------------------------------------------------


def test_public_api_is_listed_in_all() -> None:
    public = {name for name, value in vars(results).items()
              if not name.startswith("_") and type(value).__name__ != "module"}
    assert public == set(results.__all__)


def test_errors_join_the_tree() -> None:
    assert issubclass(ResultFileError, UsageError)
    assert issubclass(SecretInResultError, Sv7Error)


# --- writing and reading back -------------------------------------------------------------


def test_round_trip_through_the_loader(tmp_path: Path) -> None:
    finished = dt.datetime(2026, 11, 21, 22, 41, 5, 250000, tzinfo=dt.UTC)
    with open_writer(tmp_path, now=lambda: finished) as writer:
        writer.set_section("probe", {"rtt": {"method": "tcp", "median_ms": 0.1}})
        writer.append("checks", {"id": "t::a", "outcome": "passed"})
        writer.append("benchmarks", {"workload": "burst", "flavour": "zeep"})
        writer.append("sweeps", {"flavour": "lean", "steps": []})
        writer.append("samples", {"phase": "burst/zeep/1", "t_s": (0.0, 1.0)})
        writer.append("notes", "one line")
    assert writer.path.name == "ELETTRA_icat.example.org_20261121T223000-ab12.json"
    result = load_result(writer.path)
    assert result.site == "ELETTRA"
    assert result.run_id == "20261121T223000-ab12"
    assert result.status == "complete"
    assert result.started == dt.datetime(2026, 11, 21, 22, 30, tzinfo=dt.UTC)
    assert result.finished == finished
    assert result.target_url == TARGET["url"]
    assert result.target_host == "icat.example.org"  # from the URL: the section had no host
    assert result.api_version == "6.2.0"
    assert result.checks == ({"id": "t::a", "outcome": "passed"},)
    assert result.samples[0]["t_s"] == [0.0, 1.0]  # a tuple is written as JSON's list
    assert len(result.benchmarks) == len(result.sweeps) == 1
    assert result.raw["notes"] == ["one line"]
    assert result.raw["run"]["finished"] == "2026-11-21T22:41:05.250Z"
    assert result.version == FORMAT_VERSION
    assert result.identity == ("ELETTRA", TARGET["url"])


def test_the_file_is_partial_from_the_start(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    result = load_result(writer.path)
    assert (result.status, result.finished) == ("partial", None)
    writer.finish("failed")
    assert load_result(writer.path).status == "failed"
    with pytest.raises(ValueError, match="finished"):
        writer.append("notes", "too late")


@pytest.mark.parametrize(("error", "status"), [(KeyboardInterrupt, "interrupted"),
                                               (RuntimeError, "failed")])
def test_leaving_the_with_block_by_an_error_says_so(
        tmp_path: Path, error: type[BaseException], status: str) -> None:
    with pytest.raises(error), open_writer(tmp_path) as writer:
        writer.append("notes", "started")
        raise error
    assert load_result(writer.path).status == status


def test_gzip(tmp_path: Path) -> None:
    with open_writer(tmp_path, compress=True) as writer:
        writer.append("notes", "é ünïcode survives")
    assert writer.path.name.endswith(".json.gz")
    data = writer.path.read_bytes()
    assert json.loads(gzip.decompress(data))["notes"] == ["é ünïcode survives"]
    assert load_result(writer.path).status == "complete"
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(data[: len(data) // 2])
    assert message(cut).endswith(f"gzip data {TRUNCATED_RESULT}")


def test_file_names_hold_safe_characters_only() -> None:
    assert result_file_name("DESY_Hamburg", "::1", "r1") == "DESY-Hamburg_1_r1.json"
    assert result_file_name("../..", "a/b", "x y", compress=True) == "unknown_a-b_x-y.json.gz"


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    open_writer(tmp_path).finish()
    with pytest.raises(ResultFileError, match="already exists"):
        open_writer(tmp_path)


def test_appends_wait_for_the_flush_interval(tmp_path: Path) -> None:
    now = [0.0]
    writer = open_writer(tmp_path, autoflush_s=5.0, clock=lambda: now[0])
    writer.append("notes", "a")
    assert load_result(writer.path).raw["notes"] == []
    now[0] = 5.0
    writer.append("notes", "b")
    assert load_result(writer.path).raw["notes"] == ["a", "b"]


def test_the_writer_refuses_what_the_loader_would(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    with pytest.raises(ValueError, match=r"target\.port is a string, expected an integer"):
        writer.set_section("target", {**TARGET, "port": "443"})
    with pytest.raises(ValueError, match="cannot set section 'run'"):
        writer.set_section("run", RUN)
    with pytest.raises(ValueError, match="'probe' is not a list section"):
        writer.append("probe", {})
    with pytest.raises(ValueError, match="an item of notes must be str"):
        writer.append("notes", {"not": "a line"})
    # not JSON: written as null (no value), never as NaN, which sv7 merge refuses
    writer.append("samples", {"phase": "p", "cpu_percent": [math.nan, 1.5, -math.inf]})
    writer.flush()
    assert "NaN" not in writer.path.read_text() and "Infinity" not in writer.path.read_text()
    with pytest.raises(ValueError, match="status must be one of"):
        writer.finish("done")
    with pytest.raises(ValueError, match=r"run\.id"):
        ResultWriter(tmp_path, run={"site": "X"}, target=TARGET, environment={})
    assert load_result(writer.path).raw["target"] == TARGET
    (sample,) = load_result(writer.path).raw["samples"]
    assert sample == {"phase": "p", "cpu_percent": [None, 1.5, None]}


def test_later_changes_of_the_callers_objects_stay_out(tmp_path: Path) -> None:
    check = {"id": "t::a", "outcome": "passed"}
    with open_writer(tmp_path) as writer:
        writer.append("checks", check)
        check["outcome"] = "failed"
    assert load_result(writer.path).checks[0]["outcome"] == "passed"


# --- atomic replacement -------------------------------------------------------------------


def test_a_reader_between_flushes_sees_each_complete_version(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, autoflush_s=0)
    for i in range(20):
        writer.append("notes", f"line {i}")
        assert load_result(writer.path).raw["notes"] == [f"line {j}" for j in range(i + 1)]
    assert [p.name for p in tmp_path.iterdir()] == [writer.path.name]  # no temporary left


def test_a_concurrent_reader_never_sees_half_a_file(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, autoflush_s=0)
    stop = threading.Event()
    seen: list[int] = []
    failures: list[Exception] = []

    def read() -> None:
        while not stop.is_set():
            try:
                seen.append(len(load_result(writer.path).samples))
            except ResultFileError as exc:
                failures.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(150):
            writer.append("samples", {"phase": f"p{i}", "cpu_percent": [float(i)] * 50})
    finally:
        stop.set()
        reader.join()
    assert failures == []
    assert len(set(seen)) > 1 and seen == sorted(seen)  # it did read between flushes


def test_a_crash_in_the_middle_of_a_write_keeps_the_previous_version(tmp_path: Path) -> None:
    script = CHILD_PREAMBLE + """
w.append("notes", "first")
w.append("notes", "second")
def die(fd):
    os.ftruncate(fd, os.fstat(fd).st_size // 2)  # half of the new version reached the disk
    os._exit(17)
os.fsync = die
w.append("notes", "third")
"""
    child = subprocess.run([sys.executable, "-c", script, str(tmp_path)], cwd=ROOT, check=False)
    assert child.returncode == 17
    final = tmp_path / "ELETTRA_icat.example.org_20261121T223000-ab12.json"
    result = load_result(final)
    assert (result.status, result.raw["notes"]) == ("partial", ["first", "second"])
    (half,) = tmp_path.glob(".*.tmp")  # the dead child's half file, never renamed
    assert 0 < half.stat().st_size < final.stat().st_size
    assert "truncated" in message(half)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_kill_at_any_moment_leaves_a_loadable_partial_file(tmp_path: Path) -> None:
    script = CHILD_PREAMBLE + """
print("ready", flush=True)
for i in range(100000):
    w.append("samples", {"phase": f"p{i}", "cpu_percent": [1.5] * 200})
"""
    for attempt in range(3):
        directory = tmp_path / str(attempt)
        child = subprocess.Popen([sys.executable, "-c", script, str(directory)], cwd=ROOT,
                                 stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        threading.Event().wait(0.05 + 0.07 * attempt)
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        (final,) = directory.glob("*.json")
        result = load_result(final)
        assert result.status == "partial"
        assert [s["phase"] for s in result.samples] == [f"p{i}" for i in range(len(result.samples))]


# --- secrets ------------------------------------------------------------------------------


def test_a_session_id_inside_a_value_is_refused_before_writing(tmp_path: Path) -> None:
    writer = open_writer(tmp_path, secrets=[SESSION_ID, "hunter"])
    writer.append("checks", {"id": "t::login", "outcome": "passed"})
    leak = {"id": "t::get", "explanation": f"GET ?sessionId={SESSION_ID} failed"}
    with pytest.raises(SecretInResultError, match=r"checks\[1\]\.explanation") as caught:
        writer.append("checks", leak)
    assert SESSION_ID not in str(caught.value)
    with pytest.raises(SecretInResultError, match=r"notes\[0\] holds a secret"):
        writer.append("notes", "hunter")  # a short secret: refused as a whole value …
    writer.append("notes", "files under /hunter/data")  # … but not searched inside others
    writer.finish()
    for path in tmp_path.iterdir():
        assert SESSION_ID.encode() not in path.read_bytes()
    assert load_result(writer.path).raw["notes"] == ["files under /hunter/data"]


def test_a_password_that_is_a_word_of_the_format_does_not_stop_the_run(tmp_path: Path) -> None:
    # seen 2026-11-26 against a real ICAT whose root's password is "root" (as on many test
    # catalogues): the scale section's role key "root" was taken for the password and the run
    # failed; every file writes that word, so it reveals nothing of the password
    writer = open_writer(tmp_path, secrets=["root", "complete", "hunter"])
    writer.set_section("scale", {"version": 1, "sizes": [],
                                 "roles": {"root": "simple/root", "member": None}})
    with pytest.raises(SecretInResultError, match=r"scale\.roles\.hunter holds a secret"):
        writer.set_section("scale", {"version": 1, "sizes": [], "roles": {"hunter": None}})
    writer.finish()
    result = load_result(writer.path)
    assert result.status == "complete"
    assert result.raw["scale"]["roles"]["root"] == "simple/root"


def test_a_word_like_password_in_the_suites_own_words_does_not_stop_the_run(
    tmp_path: Path,
) -> None:
    # seen 2026-11-27: with the password "password" (8 characters, so searched inside every
    # string) a refused reader's hint "check the authenticator, user name and password of
    # simple/reader" stopped the run ("refusing to write a result file: notes[0] holds a
    # secret"); a word-like password is refused as a whole value only, a long mixed one anywhere
    writer = open_writer(tmp_path, secrets=["password", "Icat-2024!"])
    hint = "check the authenticator, user name and password of simple/reader"
    writer.append("notes", hint)
    with pytest.raises(SecretInResultError, match=r"notes\[1\] holds a secret"):
        writer.append("notes", "password")
    with pytest.raises(SecretInResultError, match=r"notes\[1\] holds a secret"):
        writer.append("notes", "login as alice:Icat-2024!@host refused")
    writer.finish()
    assert load_result(writer.path).raw["notes"] == [hint]


@pytest.mark.parametrize("key", ["password", "sessionId", "session_id", "PassWord"])
def test_credential_keys_are_refused(tmp_path: Path, key: str) -> None:
    run = {**RUN, "options": {"auth": "simple", key: "x"}}
    expected = re.escape(f"run.options.{key} is a credential's key")
    with pytest.raises(SecretInResultError, match=expected):
        ResultWriter(tmp_path, run=run, target=TARGET, environment={})
    assert list(tmp_path.iterdir()) == []  # refused before anything was written


# --- the loader's diagnoses ---------------------------------------------------------------


@pytest.mark.parametrize(("name", "reason"), [
    ("bad-truncated.json", TRUNCATED_RESULT),
    ("bad-foreign.json", 'foreign JSON file: no "format": "igestbench-result" key'),
    ("bad-html-page.json", "not JSON but an HTML page"),
    ("bad-future-version.json",
     f"written by a newer igestbench (version 99); this one reads up to {FORMAT_VERSION}"),
    ("bad-missing-site.json", "missing required key run.site"),
])
def test_each_bad_fixture_gets_its_own_message(name: str, reason: str) -> None:
    path = FIXTURES / "bad" / name
    assert reason in message(path)


def test_every_cut_of_a_good_file_reads_as_truncated(tmp_path: Path) -> None:
    data = V1_FILE.read_bytes()
    path = tmp_path / "cut.json"
    for end in range(1, len(data.rstrip())):
        path.write_bytes(data[:end])
        assert message(path).endswith(TRUNCATED_RESULT)


@pytest.mark.parametrize(("content", "reason"), [
    (b"", "empty file"),
    (b" \n", "empty file"),
    (b"\xff\xfe\x00binary", "not JSON: not even UTF-8 text"),
    (b"Hello, world", "not JSON (it starts with 'Hello, world')"),
    (b"<?xml version='1.0'?><a/>", "not JSON but XML or other markup"),
    (b'{"format": "igestbench-result", x}', "not valid JSON: Expecting property name"),
    (b'{"a": 1}}', "not valid JSON: Extra data (line 1, column 9)"),
    (b"[1, 2]", "foreign JSON file: a list at the top"),
    (b'{"format": "pyperf"}', "foreign JSON file: format is 'pyperf'"),
    (b'{"format": "igestbench-result"}', "missing required key version"),
    (b'{"format": "igestbench-result", "version": "1"}', "version is a string"),
    (b'{"format": "igestbench-result", "version": 0}', "unknown format version 0"),
])
def test_unreadable_content(tmp_path: Path, content: bytes, reason: str) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(content)
    assert reason in message(path)


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    assert message(tmp_path / "nowhere.json").endswith(": not found")
    assert "cannot read" in message(tmp_path)


@pytest.mark.parametrize(("change", "reason"), [
    (lambda d: d.pop("tool"), "missing required key tool"),
    (lambda d: d["target"].pop("url"), "missing required key target.url"),
    (lambda d: d.update(run=[]), "run is a list, expected an object"),
    (lambda d: d["run"].update(started="yesterday"), "run.started is not an ISO 8601 time"),
    (lambda d: d["run"].update(started="2026-11-21T22:30:00"), "run.started is not an ISO"),
    (lambda d: d["run"].update(status="running"), "run.status is 'running', not one of"),
    (lambda d: d["target"].update(port=True), "target.port is true or false, expected an"),
    (lambda d: d["checks"].append("passed"), "checks[5] is a string, expected an object"),
    (lambda d: d.update(environment=None), "environment is null, expected an object"),
])
def test_missing_or_ill_typed_keys_are_named(tmp_path: Path, change: Any, reason: str) -> None:
    doc = good_doc()
    change(doc)
    assert reason in message(write_doc(tmp_path / "r.json", doc))


def test_several_problems_are_counted(tmp_path: Path) -> None:
    doc = good_doc()
    del doc["run"]["site"], doc["target"]["url"]
    text = message(write_doc(tmp_path / "r.json", doc))
    assert text.endswith("missing required key run.site (and 1 more)")


def test_unknown_keys_are_ignored(tmp_path: Path) -> None:
    doc = good_doc()
    doc["hologram"] = {"frames": [1, 2]}
    doc["run"]["weather"] = "rain"
    doc["checks"][0]["colour"] = "green"
    result = load_result(write_doc(tmp_path / "r.json", doc))
    assert result.raw["hologram"] == {"frames": [1, 2]}
    assert result.checks[0]["colour"] == "green"


# --- the compatibility fixtures -----------------------------------------------------------


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("v*/*.json*")), ids=lambda p: p.parent.name)
def test_every_committed_version_still_loads(path: Path) -> None:
    result = load_result(path)
    assert result.version == int(path.parent.name[1:])
    assert result.site == "ELETTRA" and result.status == "complete"


def test_the_version_1_fixture(tmp_path: Path) -> None:
    result = load_result(V1_FILE)
    assert result.identity == ("ELETTRA", "https://icat.example.org/ICATService/ICAT")
    assert (result.run_id, result.target_host, result.api_version, result.tool_version) == (
        "20261121T223000-ab12", "icat.example.org", "6.2.0", "0.1.0")
    assert result.started == dt.datetime(2026, 11, 21, 22, 30, 0, 123000, tzinfo=dt.UTC)
    assert [c["outcome"] for c in result.checks] == [
        "passed", "passed", "passed", "failed", "skipped"]
    assert [b["workload"] for b in result.benchmarks] == ["full-cycle", "single-query"]
    assert [s["demanded_rate"] for s in result.sweeps[0]["steps"]] == [100, 200]
    assert result.samples[0]["phase"] == "full-cycle/zeep/1"
    assert result.raw["cleanup"] == {"deleted": 120, "already_gone": 3, "left": 0}


def test_the_generator_still_writes_the_committed_current_version(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert example_main([str(tmp_path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 6
    for committed in (FIXTURES / f"v{FORMAT_VERSION}").iterdir():
        fresh = json.loads((tmp_path / committed.parent.name / committed.name).read_bytes())
        old = json.loads(committed.read_bytes())
        fresh["tool"].pop("version"), old["tool"].pop("version")  # a release is not a change
        assert fresh == old
    for bad in (FIXTURES / "bad").iterdir():
        assert (tmp_path / "bad" / bad.name).read_bytes() == bad.read_bytes()


def test_a_version_1_file_without_id_and_status_is_upgraded(tmp_path: Path) -> None:
    doc = good_doc()
    del doc["run"]["id"], doc["run"]["status"]
    result = load_result(write_doc(tmp_path / "r.json", doc))
    assert (result.version, result.raw["version"]) == (1, FORMAT_VERSION)
    assert (result.run_id, result.status) == ("20261121T223000-v1", "complete")
    doc["run"]["finished"] = None
    assert load_result(write_doc(tmp_path / "r.json", doc)).status == "partial"
    doc["checks"][2] = {"id": "t::x"}  # version 1 did not type list items; version 2 does
    text = message(write_doc(tmp_path / "r.json", doc))
    assert text.endswith("missing required key checks[2].outcome (in a version-1 file, upgraded)")


def test_version_2_types_the_keys_inside_list_items(tmp_path: Path) -> None:
    writer = open_writer(tmp_path)
    with pytest.raises(ValueError, match=r"checks\[0\]\.outcome is 'green', not one of"):
        writer.append("checks", {"id": "t::a", "outcome": "green"})
    with pytest.raises(ValueError, match=r"sweeps\[0\]\.stopped is an integer, expected a"):
        writer.append("sweeps", {"steps": [], "stopped": 3})
    writer.append("sweeps", {"steps": [], "stopped": "time budget reached"})
    writer.finish()
    doc = json.loads(writer.path.read_text(encoding="utf-8"))
    doc["benchmarks"] = [{"workload": "burst"}]
    doc["probe"] = None
    assert message(write_doc(tmp_path / "r.json", doc)).endswith(
        "missing required key benchmarks[0].flavour")


def test_metadata_differences() -> None:
    a = load_result(V1_FILE)
    raw = json.loads(json.dumps(a.raw))
    raw["target"]["api_version"] = "6.1.0"
    b = ResultFile(**{**vars(a), "raw": raw})
    assert a.metadata_differences(a) == {}
    assert a.metadata_differences(b) == {"target.api_version": ("6.2.0", "6.1.0")}
    assert a.metadata("environment.cores") == 8
    assert a.metadata("environment.nothing.deeper") is None


def test_timestamps_are_utc_with_milliseconds() -> None:
    cet = dt.timezone(dt.timedelta(hours=1))
    assert utc_timestamp(dt.datetime(2026, 1, 2, 3, 4, 5, 678999, tzinfo=cet)) == (
        "2026-01-02T02:04:05.678Z")
    with pytest.raises(ValueError, match="timezone-aware"):
        utc_timestamp(dt.datetime(2026, 1, 2))


def test_a_file_made_readable_only_by_root_is_reported(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    path = write_doc(tmp_path / "r.json", good_doc())
    path.chmod(0)
    assert "cannot read (Permission denied)" in message(path)
