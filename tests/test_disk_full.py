"""A full disk, or an ``--out`` that cannot be written, never costs a partner's catalogue.

Issue 18.5: a failed write of the result file or the journal stops the run with its own exit
code (7) and its cause, and the run cleans up from what it holds in memory; the journal never
ends in half a line. Issue 18.6: an ``--out`` that cannot be written is a usage error (one line,
exit 2) before the first request.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.config import RunConfig, ServeConfig
from igestbench.icat.credentials import Credentials
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.results.format import ResultFileError
from igestbench.results.writer import ResultWriter
from igestbench.run.progress import Progress
from igestbench.run.runner import EXIT_WRITE, Runner
from igestbench.workloads import journal_io
from igestbench.workloads.journal import Journal
from igestbench.workloads.journal_io import JournalWriteError, append_lines, read_lines
from tests.test_run import credentials_env, left_on_server, sv7

INGEST = Credentials("simple", "ingest", "ingest")
ENOSPC = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def config(url: str, out: Path, **options: Any) -> RunConfig:
    options.setdefault("parts", ("full-cycle",))
    return RunConfig(target=url, site="DISK", credentials=INGEST, concurrency=(1,), out=out,
                     flavours=("zeep",), interfaces=("soap",), timeout=10.0,
                     **options)  # fmt: skip


# --- the journal: whole lines, or none -------------------------------------------------------


def test_a_write_cut_short_by_a_full_disk_is_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "j.journal.jsonl"
    append_lines(path, [{"facility": "sv7-x-20261126T000000-abcd"}])
    before = path.read_bytes()
    calls = []

    def full(fd: int, data: bytes) -> int:  # the disk takes ten bytes, then no more
        calls.append(len(data))
        if len(calls) == 1:
            return os.write(fd, data[:10])
        raise ENOSPC

    monkeypatch.setattr(journal_io, "_write", full)
    with pytest.raises(JournalWriteError, match="No space left on device"):
        append_lines(path, [{"entity": "Datafile", "ids": list(range(100))}])
    assert path.read_bytes() == before  # the ten bytes are gone again: a whole line at the end
    assert len(calls) == 2


def test_a_torn_line_is_skipped_and_said(tmp_path: Path) -> None:
    path = tmp_path / "j.journal.jsonl"
    path.write_text(
        '{"facility": "sv7-x-20261126T000000-abcd"}\n'
        '{"entity": "Datafile", "ids": [1, 2{"entity": "Dataset", "id": 7}\n'  # a torn write
        '{"entity": "Datafile", "id": 3}\n'
        '{"entity": "Datafile", "ids": [4, 5',  # the last write, cut by a kill -9
        encoding="utf-8",
    )
    entries, notes = read_lines(path)
    assert [e for _, e in entries][1:] == [{"entity": "Dataset", "id": 7},
                                          {"entity": "Datafile", "id": 3}]  # fmt: skip
    assert len(notes) == 2 and "j.journal.jsonl:2: a torn line" in notes[0]
    assert "j.journal.jsonl:4: the last line is cut short" in notes[1]
    journal = Journal.load(path)
    assert journal.entries == (("Dataset", 7), ("Datafile", 3)) and journal.skipped == notes


def test_a_worker_that_cannot_journal_stops_the_run(tmp_path: Path) -> None:
    from igestbench.run.cleanup import RunJournal
    from igestbench.workloads import RunTag

    journal = RunJournal(tmp_path / "r.json", RunTag.new("x"))
    journal.check_outcomes([None, "interrupted"])
    message = str(JournalWriteError(journal.path, "No space left on device"))
    with pytest.raises(JournalWriteError) as raised:
        journal.check_outcomes([None, message])
    assert str(raised.value) == message


# --- the run: a failed write stops it, and it cleans up all the same --------------------------


def test_a_journal_that_cannot_be_written_stops_the_run_which_cleans_up_from_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC on the run's own journal writes, in the middle of the sweep's preparation: the
    objects it made are not all journaled; the runner removes them all the same."""
    appends = []
    real = journal_io._write

    def filling(fd: int, data: bytes) -> int:
        appends.append(data)
        if b'"entity": "Investigation"' in data:  # the Facility and its types exist by now
            raise ENOSPC
        return real(fd, data)

    monkeypatch.setattr(journal_io, "_write", filling)
    stream = io.StringIO()
    with LocalCatalogue(ServeConfig()) as cat:
        cfg = config(cat.service_url, tmp_path / "out", parts=("sweep",), max_rate=10.0,
                     duration=0.5, warmup=0.1)  # fmt: skip
        outcome = Runner(cfg, Progress(stream, live=False)).run()
        assert outcome.exit_code == EXIT_WRITE, (outcome.summary, stream.getvalue())
        assert left_on_server(cat) == 0
    assert any(b'"entity": "Investigation"' in a for a in appends)
    assert "No space left on device" in " ".join(outcome.summary)
    assert outcome.path is not None
    data = json.loads(outcome.path.read_text())
    assert data["run"]["status"] == "failed" and data["cleanup"]["left"] == 0
    assert any("cannot write the journal" in note for note in data["notes"])


def test_a_result_file_that_cannot_be_written_stops_the_run_which_cleans_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The result file's write fails once the first group's figures are in: what the group
    created is still on the catalogue (its cleanup comes after the write)."""
    real = ResultWriter.flush

    def flush(self: ResultWriter) -> None:
        if self._doc["benchmarks"]:
            raise ResultFileError(self.path, f"cannot write ({ENOSPC})")
        real(self)

    monkeypatch.setattr(ResultWriter, "flush", flush)
    stream = io.StringIO()
    with LocalCatalogue(ServeConfig()) as cat:
        outcome = Runner(config(cat.service_url, tmp_path / "out", cycles=4),
                         Progress(stream, live=False)).run()  # fmt: skip
        assert outcome.exit_code == EXIT_WRITE, (outcome.summary, stream.getvalue())
        assert left_on_server(cat) == 0
    assert "No space left on device" in " ".join(outcome.summary)
    assert outcome.path is not None and outcome.path.exists()  # as of its last complete write
    assert json.loads(outcome.path.read_text())["run"]["status"] == "partial"


@contextlib.contextmanager
def tmpfs(where: Path, *options: str) -> Iterator[Path]:
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", ",".join(options), "tmpfs", str(where)],
                   check=True)  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


needs_mount = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None,
    reason="mounting a tmpfs needs root (the tests and CI run as root)",
)


@needs_mount
def test_a_run_on_a_full_64_kib_file_system_stops_and_leaves_nothing(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig()) as cat, tmpfs(tmp_path / "out", "size=64k") as out:
        result = sv7("run", "--target", cat.service_url, "--site", "DISK", "--out", str(out),
                     "--parts", "full-cycle,burst", "--flavour", "zeep", "--concurrency", "2",
                     "--interface", "soap", "--cycles", "5", "--files", "2000",
                     "--batch-size", "50", env=credentials_env())  # fmt: skip
        assert result.returncode == EXIT_WRITE, result.stdout + result.stderr
        assert "No space left on device" in result.stdout + result.stderr
        assert "Traceback" not in result.stderr
        assert left_on_server(cat) == 0
        for journal in out.glob("*.journal.jsonl"):  # kept only if something was left
            assert journal.read_bytes().endswith(b"\n")
        (path,) = out.glob("*.json")
        assert json.loads(path.read_text())["run"]["id"]  # a valid file, as of its last write


# --- --out that cannot be written: a usage error before anything starts ----------------------


@pytest.mark.parametrize("kind", ["read-only", "a file"])
def test_an_unwritable_out_is_a_usage_error_before_the_first_request(
    kind: str, tmp_path: Path
) -> None:
    if kind == "a file":
        out = tmp_path / "out"
        out.write_text("not a directory\n")
        stack: contextlib.AbstractContextManager[Path] = contextlib.nullcontext(out)
    elif os.geteuid() == 0:
        stack = tmpfs(tmp_path / "out", "size=64k", "ro")
    else:
        out = tmp_path / "out"
        out.mkdir(mode=0o500)
        stack = contextlib.nullcontext(out)
    with stack as out:
        # nothing listens at the target: had the run asked it anything, it would exit 4
        result = sv7("run", "--target", "http://127.0.0.1:9/ICATService/ICAT", "--out",
                     str(out), env=credentials_env())  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("sv7 run: --out") and str(out) in line
    assert ("Read-only file system" in line or "Permission denied" in line
            or "not a directory" in line)  # fmt: skip


# --- sv7 report: its page and CSV whole or not at all ----------------------------------------


@needs_mount
def test_a_report_on_a_full_disk_is_one_line_and_leaves_no_cut_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Tryout 4, finding 2: a traceback, and a page cut at 64 KiB left for a browser to show."""
    from igestbench.cli import main
    from tests.test_report import build_campaign

    campaign = build_campaign(tmp_path)
    with tmpfs(tmp_path / "out", "size=16k") as out:
        page = out / "report.html"
        assert main(["report", str(campaign.path), "-o", str(page)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "No space left on device" in err, err
        # the name, not the whole path: the scrubbing of known secrets may mask a part of it
        # (a password "root" in /tmp/pytest-of-root/, after another test's login as root)
        assert err.startswith("sv7 report: ") and f"/{page.name}: cannot write (" in err
        assert list(out.iterdir()) == []  # neither the cut page nor its temporary file
    # the page it could not write is bigger than the disk (else the test proves nothing)
    assert main(["report", str(campaign.path), "-o", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").stat().st_size > 16 * 1024


def test_a_report_where_no_folder_can_be_made_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from igestbench.cli import main
    from tests.test_report import build_campaign

    campaign = build_campaign(tmp_path)
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    page = tmp_path / "a-file" / "report.html"
    assert main(["report", str(campaign.path), "-o", str(page), "--csv",
                 str(tmp_path / "csv")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("sv7 report: ") and err.count("\n") == 1, err
    assert f"/a-file/{page.name}: cannot write (" in err
    assert not (tmp_path / "csv").exists()
