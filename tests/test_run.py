"""``sv7 run`` end to end against local catalogues: result files, cleanup, Ctrl-C, exit codes."""

from __future__ import annotations

import functools
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from igestbench.config import RunConfig, ServeConfig
from igestbench.measure.schedule import StepSchedule, weighted_cycle
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.run import service_checks
from igestbench.run.progress import Progress
from igestbench.run.runner import Runner
from igestbench.verify import runner as verify_runner
from tests.soap_helpers import issued_sessions

WORKLOADS = "full-cycle,single-query,burst,multi-query"
#: a sweep of a few seconds: low rates, short steps
FAST_SWEEP = ["--max-rate", "40", "--duration", "0.5", "--warmup", "0.1"]
SMALL = [
    "--concurrency",
    "1,2",
    "--cycles",
    "3",
    "--files",
    "40",
    "--queries",
    "20",
    "--batch-size",
    "20",
    "--page-size",
    "16",
]


def sv7(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "igestbench", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
    )


def credentials_env(user: str = "ingest", password: str = "ingest") -> dict[str, str]:
    return {
        **os.environ,
        "SV7_AUTH": "simple",
        "SV7_USER": user,
        "SV7_PASSWORD": password,
        "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
    }


def local_env() -> dict[str, str]:
    """The environment of a run against the built-in catalogue: no SV7_* credentials."""
    return {k: v for k, v in credentials_env().items() if not k.startswith("SV7_")}


def result_of(out: Path) -> dict[str, object]:
    (path,) = out.glob("*.json")
    data: dict[str, object] = json.loads(path.read_text())
    return data


def left_on_server(cat: LocalCatalogue) -> int:
    sid = cat.service.login("simple", {"username": "root", "password": "root"})
    result = cat.service.search(sid, "SELECT COUNT(f) FROM Facility f WHERE f.name LIKE 'sv7-%'")
    return int(result.items[0])


def test_run_against_a_target_writes_a_clean_result_file(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        issued = issued_sessions(cat)
        result = sv7(
            "run",
            "--target",
            cat.service_url,
            "--site",
            "TEST-SITE",
            "--parts",
            WORKLOADS,
            "--flavour",
            "zeep,python-icat",
            "--interface",
            "soap",  # REST: tests/test_run_interfaces.py
            *SMALL,
            "--out",
            str(tmp_path),
            env=credentials_env(),
        )
        assert result.returncode == 0, result.stderr
        assert left_on_server(cat) == 0
    data = result_of(tmp_path)
    text = (next(tmp_path.glob("*.json"))).read_text()
    assert "ingest" not in text.replace("simple/ingest", "")  # the user name only, no password
    assert issued and not any(sid in text for sid in issued)  # no session id, ever
    run = data["run"]
    assert isinstance(run, dict) and run["status"] == "complete" and run["site"] == "TEST-SITE"
    benchmarks = data["benchmarks"]
    assert isinstance(benchmarks, list) and len(benchmarks) == 4 * 2 * 2
    assert {(b["workload"], b["flavour"], b["concurrency"]) for b in benchmarks} == {
        (w, f, c) for w in WORKLOADS.split(",") for f in ("zeep", "python-icat") for c in (1, 2)
    }
    assert all(not b["problems"] for b in benchmarks)
    full = next(b for b in benchmarks if b["workload"] == "full-cycle" and b["concurrency"] == 2)
    assert full["checks"] == {"expected": 6, "found": 6}
    assert data["cleanup"] == {
        "deleted": data["cleanup"]["deleted"],
        "already_gone": 0,  # type: ignore[index]
        "left": 0,
        "journal": None,  # complete: the journal is removed
    }
    journal = Path(run["journal"])  # beside the result file, named at the start
    assert journal.parent == tmp_path and journal.name.endswith(".journal.jsonl")
    assert f"journal: {journal}" in result.stderr and not journal.exists()
    assert {s["phase"] for s in data["samples"]} >= {"full-cycle/zeep/1", "burst/python-icat/2"}  # type: ignore[union-attr]


def test_no_target_runs_every_part_against_the_built_in_catalogue(tmp_path: Path) -> None:
    """``sv7 run`` as a newcomer types it: the quick tour of every part, then the way on."""
    env = local_env()
    result = sv7("run", cwd=tmp_path, env=env)  # no options at all: reports/ below cwd
    assert result.returncode == 0, result.stderr
    out = tmp_path / "reports"
    data: dict[str, Any] = result_of(out)
    assert data["target"]["local"] is True and data["target"]["scheme"] == "https"
    assert data["target"]["name"] == "built-in"  # whatever port it had: sv7 merge's one target
    assert data["run"]["profile"] == "quick" and data["run"]["options"]["profile"] == "quick"
    checks = data["checks"]
    assert len(checks) > 20
    assert all(c["outcome"] == "passed" for c in checks), [
        c for c in checks if c["outcome"] != "passed"
    ]
    assert data["scores"]["content"]["level"] == "representative"
    # the built-in catalogue serves REST too: both interfaces are measured
    assert [(s["flavour"], s["interface"]) for s in data["sweeps"]] == [
        ("lean", "soap"), ("rest", "rest")]
    assert all(len(s["steps"]) == 3 for s in data["sweeps"])  # 10, 20, 40/s
    assert {(b["workload"], b["flavour"], b["concurrency"]) for b in data["benchmarks"]} == {
        (w, f, c) for w in WORKLOADS.split(",") for f in ("zeep", "rest") for c in (1, 2)} | {
        ("ids", "lean", 1), ("ids", "lean", 2)}  # the built-in IDS: ingestion with the bytes
    ids = [b for b in data["benchmarks"] if b["workload"] == "ids"]
    assert all(b["checks"]["identical"] == b["checks"]["downloaded"] > 0 for b in ids)
    assert data["cleanup"]["left"] == 0 and data["cleanup"]["files_left"] == []
    assert data["run"]["status"] == "complete"
    # the scale part at the quick profile's sizes, root and the built-in reader as member
    assert [z["size"] for z in data["scale"]["sizes"]] == [300, 1000]
    assert data["scale"]["roles"] == {"root": "simple/ingest", "member": "simple/reader"}
    # the end: the summary of the figures (the file's own rows), then where the file is, and
    # next commands that work as printed
    (path,) = out.glob("*.json")
    lines = result.stdout.splitlines()
    end = lines.index(f"result file: {path.relative_to(tmp_path)}")
    assert lines[end + 1] == "next:" and lines[0].startswith("summary (")
    summary = "\n".join(lines[:end])
    assert all(row["text"] in summary for row in data["summary"] if row["metric"] == "rate")
    assert "sweep SOAP · lean: sustained " in summary and "sweep REST · rest: sustained" in summary
    assert "None" not in summary
    merge_line = "  sv7 merge reports -o campaign.json && sv7 report campaign.json -o report.html"
    assert merge_line in lines and "  sv7 run --profile full" in lines
    assert "  python -m igestbench.example_campaign example-campaign" in lines
    merge, report = (c.split() for c in merge_line.strip().removeprefix("sv7 ").split(" && sv7 "))
    assert sv7(*merge, cwd=tmp_path, env=env).returncode == 0
    assert sv7(*report, cwd=tmp_path, env=env).returncode == 0
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert '<span class="quick"' in page and ">built-in<" in page


def test_thresholds_decide_the_exit_code(tmp_path: Path) -> None:
    result = sv7(
        "run",
        "--parts",
        "single-query",
        "--flavour",
        "zeep",
        "--concurrency",
        "1",
        "--queries",
        "10",
        "--out",
        str(tmp_path),
        "--fail-on",
        "single-query.p99<0.001ms",
        env=credentials_env(),
    )
    assert result.returncode == 3
    assert "threshold failed: single-query.p99<0.001ms" in result.stderr


def test_unreachable_target_is_diagnosed(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends
    result = sv7(
        "run",
        "--target",
        f"http://127.0.0.1:{port}",
        "--parts",
        "verify,single-query",
        "--out",
        str(tmp_path),
        "--timeout",
        "5",
        env=credentials_env(),
    )
    assert result.returncode == 4, result.stderr
    assert "cannot be reached" in result.stderr and "Traceback" not in result.stderr
    data: dict[str, Any] = result_of(tmp_path)
    assert data["run"]["status"] == "failed"
    # the checks ran first and say why: the port refused the connection
    causes = {c["cause"] for c in data["checks"] if c["outcome"] in ("failed", "error")}
    assert "refused" in causes


def test_a_refused_account_stops_the_run_with_a_reason(
    catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    result = sv7(
        "run",
        "--target",
        catalogue.service_url,
        "--parts",
        "verify,single-query",
        "--out",
        str(tmp_path),
        env=credentials_env(password="wrong"),
    )
    assert result.returncode == 1, result.stderr
    assert "the run stopped" in result.stderr and "Traceback" not in result.stderr
    data: dict[str, Any] = result_of(tmp_path)
    assert data["run"]["status"] == "failed"
    assert any("do not match" in note for note in data["notes"])
    assert "auth-refused" in {c["cause"] for c in data["checks"]}
    # the hints name the variable the run took the password from, not SV7_PASSWORD_<ROLE>
    hints = {c["hint"] for c in data["checks"] if c["cause"] == "auth-refused"}
    assert hints == {
        "check the authenticator, user name and password of simple/ingest "
        "(the password came from SV7_PASSWORD)"
    }
    assert "(the password came from SV7_PASSWORD)" in result.stderr


def test_bad_options_are_usage_errors_before_any_work(tmp_path: Path) -> None:
    """Each bad value: one line naming the option, exit 2, nothing started, no file written.

    (``--mix foo=1`` used to be noticed by the sweep, minutes into a run; ``--concurrency abc``
    printed Python's int() message.)"""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens: a run that started would exit 4, not 2
    target = ["--target", f"http://127.0.0.1:{port}", "--out", str(tmp_path)]
    cases = {
        ("--mix", "foo=1"): "sv7 run: --mix: unknown operation 'foo'",
        ("--concurrency", "abc"): "sv7 run: --concurrency: expected levels from 1 to 256",
        ("--concurrency", "0"): "sv7 run: --concurrency: expected levels from 1 to 256",
        ("--queries", "-5"): "sv7 run: --queries: expected a whole number of at least 1, not -5",
        ("--fail-on", "single-query.p99"): "sv7 run: --fail-on: 'single-query.p99': expected",
        ("--parts", "verify,lunch"): "sv7 run: --parts: unknown part 'lunch'",
        ("--flavour", "soap"): "sv7 run: --flavour: unknown flavour 'soap'",
        ("--max-rate", "0"): "sv7 run: --max-rate: expected a rate in requests per second "
        "(requests/s), a number greater than 0, not 0",
        ("--reference-queries", "/no/such.toml"): "sv7 run: /no/such.toml: cannot read",
    }
    for args, message in cases.items():
        result = sv7("run", *target, *args, env=credentials_env(), timeout=60)
        assert result.returncode == 2, (args, result.stderr)
        assert result.stderr.startswith(message), (args, result.stderr)
        assert result.stderr.count("\n") == 1 and "invalid literal" not in result.stderr
    env = {**credentials_env(), "SV7_CONCURRENCY": "abc"}
    result = sv7("run", *target, env=env, timeout=60)
    assert result.returncode == 2 and result.stderr.startswith("sv7 run: SV7_CONCURRENCY: ")
    assert not any(tmp_path.iterdir())


def test_failed_service_checks_make_the_exit_status_6(
    catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    refs = tmp_path / "refs.toml"
    refs.write_text('[[query]]\nname = "facilities"\nquery = "SELECT f FROM Facility f"\n'
                    "count = 12345\n")
    out = tmp_path / "out"
    result = sv7("run", "--target", catalogue.service_url, "--parts", "verify",
                 "--reference-queries", str(refs), "--out", str(out), env=credentials_env())
    assert result.returncode == 6, result.stderr
    assert "service check(s) failed or ended in an error" in result.stderr
    data: dict[str, Any] = result_of(out)
    assert data["run"]["status"] == "complete"
    assert "wrong-result" in {c["cause"] for c in data["checks"]}
    assert "6 a service check failed" in " ".join(sv7("run", "--help").stdout.split())


def test_ctrl_c_writes_a_valid_partial_file_and_leaves_nothing(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "igestbench",
                "run",
                "--target",
                cat.service_url,
                "--parts",
                "full-cycle,burst",
                "--flavour",
                "zeep",
                "--concurrency",
                "2",
                "--cycles",
                "40",
                "--files",
                "3000",
                "--out",
                str(tmp_path),
            ],
            env=credentials_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        for line in proc.stderr:
            if "burst/zeep/2" in line or time.monotonic() > deadline:
                break
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert left_on_server(cat) == 0
    data = result_of(tmp_path)
    assert data["run"]["status"] == "interrupted"  # type: ignore[index]
    assert data["cleanup"]["left"] == 0  # type: ignore[index]


def scheduled_ops(
    rate: float, duration_s: float, warmup_s: float, mix: dict[str, int]
) -> Counter[str]:
    """The calls of each operation a step of the sweep schedules after its warm-up."""
    cycle = weighted_cycle(mix)
    schedule = StepSchedule(rate, warmup_s + duration_s, [])
    first, end = schedule.slot_count(round(warmup_s * 1e9)), schedule.slot_count(schedule.total_ns)
    return Counter(cycle[i % len(cycle)] for i in range(first, end))


def test_sweep_with_a_mix_reports_each_operation_and_each_connection_mode(tmp_path: Path) -> None:
    env = local_env()
    mix = {"search": 3, "get": 1, "create": 1}
    result = sv7(
        "run",
        "--parts",
        "sweep",
        "--flavour",
        "lean",
        *FAST_SWEEP,
        # an objective no answer on loopback misses however busy the machine: every step is
        # sustained, so the sweep climbs to --max-rate and measures the connection modes at
        # half of it; how fast the local catalogue is belongs to the benchmarks
        "--slo-ms",
        "60000",
        "--mix",
        ",".join(f"{name}={weight}" for name, weight in mix.items()),
        "--interface",
        "soap",
        "--out",
        str(tmp_path),
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "correct answers: create 100.0%, get 100.0%, search 100.0%" in result.stderr
    data: dict[str, Any] = result_of(tmp_path)
    (sweep,) = data["sweeps"]
    assert sweep["sustained_rate"] == 40 and sweep["outages"] == []
    assert [step["demanded_rate"] for step in sweep["steps"]] == [10, 20, 40]
    asked: Counter[str] = Counter()
    for step in sweep["steps"]:
        ops = step["ops"]
        assert sum(op["count"] for op in ops.values()) == step["sent"] > 0
        # each operation by its weight, slot by slot: as scheduled, but for the slots a busy
        # machine did not send before the step ended (missed, and counted so)
        scheduled = scheduled_ops(step["demanded_rate"], 0.5, 0.1, mix)
        counted = Counter({name: op["count"] for name, op in ops.items()})
        assert not counted - scheduled, (counted, scheduled)
        assert sum((scheduled - counted).values()) <= step["missed_slots"], (counted, scheduled)
        asked += counted
        assert all(op["success_rate"] == 1.0 and op["errors"] == {} for op in ops.values())
        assert all(op["latency_ms"]["p99"] > 0 for op in ops.values())
    assert set(asked) == set(mix)
    modes = sweep["connection_modes"]
    assert [m["mode"] for m in modes] == ["persistent", "reopen", "new-client"]
    assert all(m["rate"] == 20 and m["sent"] > 0 and m["errors"] == {} for m in modes)
    assert all(m["latency_ms"]["corrected"]["mean"] > 0 for m in modes)
    assert data["cleanup"]["left"] == 0 and data["outages"] == []


@pytest.mark.parametrize("broken", ["test_read.py", "conftest.py"])
def test_service_checks_that_cannot_be_imported_fail_the_run(
    broken: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing dependency of sv_tests (a module, or its conftest) is no run with 0 checks
    and exit 0: it is a check in error, with the reason and a hint, and exit status 6."""
    checks = tmp_path / "sv_tests"
    shutil.copytree(Path(__file__).resolve().parents[1] / "sv_tests", checks,
                    ignore=shutil.ignore_patterns("__pycache__"))
    with (checks / broken).open("a", encoding="utf-8") as module:
        module.write("\nimport sv7_no_such_module  # noqa\n")
    monkeypatch.setattr(service_checks, "run_verification",
                        functools.partial(verify_runner.run_verification, sv_tests=checks))
    # the copy's modules have the real ones' names: pytest must import the copy's, and the
    # tests after this one the real ones again (monkeypatch puts back what it took away)
    for name in ["sv_tests", *(f"sv_tests.{f.stem}" for f in checks.glob("*.py"))]:
        monkeypatch.setitem(sys.modules, name, None)  # remembered: put back (or removed) after
        del sys.modules[name]
    stream = io.StringIO()
    config = RunConfig(parts=("verify",), out=tmp_path / "out")
    outcome = Runner(config, Progress(stream, live=False)).run()
    assert outcome.exit_code == 6, (outcome.summary, stream.getvalue())
    assert outcome.path is not None
    (check,) = json.loads(outcome.path.read_text())["checks"]
    assert (check["outcome"], check["cause"]) == ("error", "checks-not-run")
    assert "sv7_no_such_module" in check["explanation"] and "pip install" in check["hint"]
    assert "sv7_no_such_module" in stream.getvalue() and "pip install" in stream.getvalue()
