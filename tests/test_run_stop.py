"""Every way ``sv7 run`` can be stopped leaves nothing behind on the catalogue.

SIGTERM (timeout, CI runners, systemd, kill) and SIGHUP (a closed terminal) stop a run with
cleanup as Ctrl-C does; kill -9 cannot be caught, so the workers die with the runner and the
journal beside the result file lets ``sv7 cleanup reports/`` finish the job.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from tests.test_run import credentials_env, left_on_server, sv7

#: tries per signal, each at a random moment after the run has started (bounded: ~15 s each)
TRIES = 3
#: seconds after the run printed its journal within which the signal comes
WINDOW_S = 4.0


def start_run(cat: LocalCatalogue, out: Path) -> subprocess.Popen[str]:
    """A run long enough to be stopped in any of its phases (full cycle, then burst)."""
    return subprocess.Popen(
        [
            sys.executable, "-m", "igestbench", "run", "--target", cat.service_url,
            "--parts", "full-cycle,burst", "--flavour", "zeep", "--concurrency", "2",
            "--cycles", "15", "--files", "2000", "--batch-size", "50", "--out", str(out),
        ],
        env=credentials_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def wait_for(proc: subprocess.Popen[str], text: str, timeout: float = 90) -> list[str]:
    """The run's stderr lines up to the first that contains ``text``."""
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    for line in proc.stderr:
        seen.append(line)
        if text in line:
            return seen
        assert time.monotonic() < deadline, "".join(seen)
    raise AssertionError(f"the run ended before {text!r}: {''.join(seen)}")


def result_of(out: Path) -> dict[str, Any]:
    (path,) = out.glob("*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def journal_line(lines: list[str]) -> Path:
    (line,) = [x for x in lines if x.startswith("sv7: journal: ")]
    return Path(line.removeprefix("sv7: journal: ").strip())


def created_since_cleanup(journal: Path) -> int:
    """Objects journaled since the last group's cleanup (what a kill -9 would leave)."""
    lines = journal.read_text(encoding="utf-8").splitlines()
    marks = [n for n, line in enumerate(lines) if '"cleaned"' in line]
    return sum(1 for line in lines[(marks[-1] if marks else 0) :] if '"entity"' in line)


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_at_any_moment_stops_the_run_with_cleanup(
    signum: signal.Signals, code: int, tmp_path: Path
) -> None:
    moments = random.Random(signum).sample(range(int(WINDOW_S * 10)), TRIES)
    with LocalCatalogue(ServeConfig()) as cat:
        for attempt, tenths in enumerate(sorted(moments)):
            out = tmp_path / f"try{attempt}"
            proc = start_run(cat, out)
            journal = journal_line(wait_for(proc, "sv7: journal: "))
            time.sleep(tenths / 10)
            proc.send_signal(signum)
            _, err = proc.communicate(timeout=120)
            context = f"{signum.name} {tenths / 10} s after the start: {err}"
            assert proc.returncode == code, context
            assert left_on_server(cat) == 0, context
            data = result_of(out)
            assert data["run"]["status"] == "interrupted", context
            assert data["cleanup"]["left"] == 0 and data["cleanup"]["journal"] is None, context
            assert f"interrupted ({signum.name})" in " ".join(data["notes"]), context
            assert not journal.exists(), context


def test_kill_9_leaves_no_worker_and_a_journal_that_sv7_cleanup_finishes(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        proc = start_run(cat, tmp_path)
        lines = wait_for(proc, "burst/zeep/2")
        journal = journal_line(lines)
        assert journal.parent == tmp_path and journal.name.endswith(".journal.jsonl")
        deadline = time.monotonic() + 60
        while created_since_cleanup(journal) < 50:  # the workers are creating Datafiles
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.05)
        runner = psutil.Process(proc.pid)
        workers = runner.children(recursive=True)
        assert len(workers) >= 2
        proc.kill()
        proc.wait(timeout=30)  # not communicate(): orphaned workers would hold the pipes open
        time.sleep(2.0)
        alive = [p for p in workers if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert alive == [], [p.cmdline() for p in alive]
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        proc.stderr.close()

        data = result_of(tmp_path)
        assert data["run"]["status"] == "partial"
        assert data["run"]["journal"] == str(journal) and journal.exists()
        assert left_on_server(cat) > 0  # the burst's objects: the run could not clean up

        result = sv7("cleanup", str(tmp_path), env=credentials_env())
        assert result.returncode == 0, result.stderr
        assert left_on_server(cat) == 0
        assert not journal.exists() and "journal removed" in result.stdout
