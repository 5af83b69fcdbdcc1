"""A run whose terminal or pipe goes away goes on, cleans up and writes what happened; a run
stopped by Ctrl-C says so on the terminal, with its cleanup, in one line.

Each test runs ``sv7 run`` on the built-in catalogue (a few seconds); none depends on speed: a
pipe is closed after a line was read, a signal sent after a phase began.
"""

from __future__ import annotations

import datetime as dt
import errno
import io
import json
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from igestbench.config import RunConfig
from igestbench.run.cleanup_progress import cleanup_line
from igestbench.run.closed_streams import ClosedStreams, DroppedWhenClosed
from igestbench.run.progress import Progress
from igestbench.run.runner import Runner

RUN = [sys.executable, "-m", "igestbench", "run", "--parts", "burst", "--flavour", "zeep",
       "--concurrency", "1"]  # fmt: skip


def result_of(out: Path) -> dict[str, Any]:
    (path,) = out.glob("*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_stderr_closed_early_the_run_goes_on_and_cleans_up(tmp_path: Path) -> None:
    # sv7 run 2>&1 1>out.txt | head -2: the reader of stderr is gone after two lines
    out = tmp_path / "r"
    with (tmp_path / "out.txt").open("w") as stdout:
        proc = subprocess.Popen([*RUN, "--out", str(out)], stdout=stdout,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        assert proc.stderr is not None
        proc.stderr.readline()
        proc.stderr.readline()
        proc.stderr.close()
        assert proc.wait(timeout=300) == 0
    data = result_of(out)
    assert data["run"]["status"] == "complete"
    assert {b["workload"] for b in data["benchmarks"]} == {"burst"}  # measured, not cut short
    assert data["cleanup"]["deleted"] > 0 and data["cleanup"]["left"] == 0
    assert data["cleanup"]["journal"] is None
    assert "summary" in (tmp_path / "out.txt").read_text()
    # the file says that whoever ran it did not see the rest of the run, and from when
    (note,) = [n for n in data["notes"] if n.startswith("the terminal went away")]
    said = re.fullmatch(r"the terminal went away: stderr closed at (\S+) \(its reader closed "
                        r"the pipe\); the run went on, and the ([\d,]+) lines? it wrote there "
                        r"since were not shown, nor its output after this file was finished", note)
    assert said is not None, note
    assert data["run"]["started"] < said[1] < data["run"]["finished"]
    assert int(said[2].replace(",", "")) > 0


class _Closing(io.StringIO):
    """A stream whose reader goes away after ``shown`` writes."""

    def __init__(self, shown: int) -> None:
        super().__init__()
        self.shown = shown

    def write(self, text: str) -> int:
        if self.shown == 0:
            raise BrokenPipeError(errno.EPIPE, "Broken pipe")
        self.shown -= 1
        return super().write(text)


def test_a_stream_gone_counts_the_lines_nobody_saw() -> None:
    moment = dt.datetime(2026, 11, 26, 21, 40, 3, 120000, tzinfo=dt.UTC)
    err = DroppedWhenClosed(_Closing(1), "stderr", now=lambda: moment)
    out = DroppedWhenClosed(_Closing(5), "stdout")
    streams = ClosedStreams(out, err)
    err.write("sv7: probe …\n")
    assert streams.notes() == []
    err.write("sv7: burst/zeep/1 …\n")  # the reader is gone: this one was not shown
    err.write("\r\x1b[2K12 Datafiles/s")  # a live figure: no line
    err.write("\nsv7: cleanup …\n")
    assert err.gone and err.dropped_lines == 3
    assert streams.notes() == [
        "the terminal went away: stderr closed at 2026-11-26T21:40:03.120Z (its reader closed "
        "the pipe); the run went on, and the 3 lines it wrote there since were not shown, nor "
        "its output after this file was finished"]


def test_stdout_closed_early_no_traceback(tmp_path: Path) -> None:
    # sv7 run 2>err | true
    out = tmp_path / "r"
    with (tmp_path / "err.txt").open("w") as stderr:
        proc = subprocess.Popen([*RUN, "--out", str(out)], stdout=subprocess.PIPE,
                                stderr=stderr, text=True)  # fmt: skip
        assert proc.stdout is not None
        proc.stdout.close()
        code = proc.wait(timeout=300)
    err = (tmp_path / "err.txt").read_text()
    assert code == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert result_of(out)["run"]["status"] == "complete"
    assert "sv7 run: cleaned up: " in err  # the run's one cleanup line


def test_ctrl_c_says_interrupted_and_the_cleanup(tmp_path: Path) -> None:
    out = tmp_path / "r"
    proc = subprocess.Popen([*RUN, "--out", str(out), "--files", "100000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith("sv7: burst/"):  # the part has begun: it creates objects now
            break
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    data = result_of(out)
    assert data["run"]["status"] == "interrupted"
    said = [line for line in stderr.splitlines() if line.startswith("sv7 run: interrupted")]
    assert said == [f"sv7 run: interrupted by SIGINT; {cleanup_line(data['cleanup'])}"], stderr
    assert stdout.startswith("the run is interrupted: "), stdout


def test_the_cleanup_line() -> None:
    assert cleanup_line({"deleted": 1432, "left": 0, "journal": None}) == (
        "cleaned up: 1,432 object(s) deleted, nothing of the run left on the catalogue")
    assert cleanup_line({"deleted": 3, "left": 2, "journal": "r/x.journal.jsonl"}) == (
        "cleanup incomplete: 3 object(s) deleted, 2 left; journal kept: r/x.journal.jsonl "
        "(sv7 cleanup r/x.journal.jsonl finishes the job)")


def test_an_unforeseen_error_in_a_part_is_no_complete_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The status says what happened: an error of sv7's own (here a BrokenPipeError, as a
    closed stderr raised before) stops the run as "failed", with the cause in the notes, after
    the cleanup; it is raised on (a traceback: a fault to report), not swallowed."""
    real = Runner._workload

    def breaks_after_creating(self: Runner, *args: Any, **kwargs: Any) -> dict[str, Any]:
        real(self, *args, **kwargs)  # objects created and journaled: the cleanup must run
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(Runner, "_workload", breaks_after_creating)
    config = RunConfig(parts=("burst",), flavours=("zeep",), concurrency=(1,),
                       out=tmp_path / "out")  # fmt: skip
    with pytest.raises(BrokenPipeError):
        Runner(config, Progress(io.StringIO(), live=False)).run()
    data = result_of(tmp_path / "out")
    assert data["run"]["status"] == "failed"
    assert any("unexpected error" in n and "Broken pipe" in n for n in data["notes"])
    assert data["cleanup"]["deleted"] > 0 and data["cleanup"]["left"] == 0
