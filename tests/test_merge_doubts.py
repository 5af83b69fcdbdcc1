"""sv7 merge and the page say what they did with files that cannot simply be believed: the same
run in two files (a copy under another name, an edited copy, a copy taken mid-run) and a run
dated after the merge (a partner machine's wrong clock). TRYOUT4 #14 and #10."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from igestbench.cli import main
from igestbench.report.notices import notices, period
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.future import FUTURE_TOLERANCE
from igestbench.results.merge import merge
from tests.campaign_helpers import T0, check, write_result

T1 = "https://icat.one.example:8181/ICATService/ICAT"
#: the merge's clock in these tests: a day after the files' runs (T0 + minutes)
NOW = T0 + dt.timedelta(days=1)


def _edit(path: Path, into: Path, change: dict[str, object]) -> Path:
    doc = json.loads(path.read_text())
    doc["run"].update(change)
    into.write_text(json.dumps(doc))
    return into


def test_an_identical_copy_is_counted_once_and_named(tmp_path: Path) -> None:
    real = write_result(tmp_path, "ELETTRA", T1, run_id="r1", checks=[check("a")])
    copy = tmp_path / "dup.json"
    shutil.copy(real, copy)
    outcome = merge([copy, real], now=NOW)
    (run,) = outcome.document["runs"]
    assert run["file"] == real.name and outcome.document["history"] == []
    (line,) = outcome.copies
    assert line.startswith(f"dup.json is the same run as {real.name}")
    assert line.endswith("counted once")
    assert outcome.document["copies"] == [{"file": "dup.json", "same_as": real.name,
                                           "site": "ELETTRA", "run_id": "r1",
                                           "how": "identical"}]
    assert merge([real, copy], now=NOW).document == outcome.document  # order independent
    # the same file given twice is one file, not a copy
    assert merge([real, real], now=NOW).copies == ()


def test_an_edited_copy_of_a_run_is_a_conflict_and_neither_is_counted(tmp_path: Path) -> None:
    real = write_result(tmp_path, "ELETTRA", T1, run_id="r1", checks=[check("a")])
    doc = json.loads(real.read_text())
    doc["checks"][0]["outcome"] = "failed"  # the same run id, other figures
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    outcome = merge([real, edited], now=NOW)
    assert outcome.document["runs"] == []
    reasons = {s.file: s.reason for s in outcome.skipped}
    assert set(reasons) == {real.name, "edited.json"}
    assert reasons["edited.json"].startswith(f"conflicts with {real.name}: the same run")
    assert "none of them is counted" in reasons[real.name]
    assert main(["merge", str(real), str(edited), "-o", str(tmp_path / "c.json")]) == 1


def test_a_copy_taken_before_the_run_finished_gives_way_to_the_finished_file(
        tmp_path: Path) -> None:
    real = write_result(tmp_path, "ELETTRA", T1, run_id="r1", checks=[check("a"), check("b")])
    doc = json.loads(real.read_text())
    doc["run"].update(status="partial", finished=None)
    doc["checks"] = doc["checks"][:1]
    early = tmp_path / "early.json"
    early.write_text(json.dumps(doc))
    outcome = merge([early, real], now=NOW)
    (run,) = outcome.document["runs"]
    assert run["file"] == real.name and outcome.document["history"] == []
    assert outcome.skipped == ()
    (line,) = outcome.copies
    assert line.startswith(f"early.json is a copy of the same run as {real.name} taken before")


def test_a_run_dated_in_the_future_does_not_hide_the_real_newest_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    older = write_result(tmp_path, "ELETTRA", T1, run_id="old", minutes=0, checks=[check("a")])
    newest = write_result(tmp_path, "ELETTRA", T1, run_id="new", minutes=60,
                          checks=[check("a"), check("b")])
    future = _edit(newest, tmp_path / "future.json",
                   {"id": "2030", "started": "2030-01-01T00:00:00Z",
                    "finished": "2030-01-01T00:01:00Z"})
    outcome = merge([older, newest, future], now=NOW)
    (run,) = outcome.document["runs"]
    assert run["file"] == newest.name
    # ordered as older than every believable run: last in the history (newest first)
    assert [h["file"] for h in outcome.document["history"]] == [older.name, "future.json"]
    assert outcome.document["future"] == [{"file": "future.json", "site": "ELETTRA",
                                           "target": "icat.one.example:8181",
                                           "started": "2030-01-01T00:00:00Z"}]
    (line,) = outcome.future
    assert "future.json (ELETTRA → icat.one.example:8181) started in the future" in line
    assert "its machine's clock?" in line
    # the page says it, and the campaign's dates are the believable runs'
    dump_campaign(outcome.document, tmp_path / "c.json")
    campaign = load_campaign(tmp_path / "c.json")
    assert line in notices(campaign)
    assert period(campaign) == (T0.date(), T0.date())
    # and the command prints it
    assert main(["merge", str(older), str(newest), str(future), "-o",
                 str(tmp_path / "c2.json")]) == 0
    err = capsys.readouterr()
    assert "future.json (ELETTRA → icat.one.example:8181) started in the future" in err.err
    assert "1 started in the future" in err.out


def test_a_start_within_the_tolerance_is_believed(tmp_path: Path) -> None:
    """A clock a little ahead (an unsynchronised machine, merged right after its run) orders
    its runs as they are: its error moves them all alike."""
    older = write_result(tmp_path, "ELETTRA", T1, run_id="old", minutes=0)
    ahead = write_result(tmp_path, "ELETTRA", T1, run_id="ahead", minutes=3)
    outcome = merge([older, ahead], now=T0 + FUTURE_TOLERANCE - dt.timedelta(minutes=1))
    assert outcome.document["runs"][0]["file"] == ahead.name
    assert outcome.future == () and "future" not in outcome.document


def test_a_future_run_still_gives_what_no_believable_run_measured(tmp_path: Path) -> None:
    """Its data is not lost: a part only it measured is shown, from it, and said."""
    real = write_result(tmp_path, "ELETTRA", T1, run_id="real", minutes=0, checks=[check("a")])
    only = write_result(tmp_path, "ELETTRA", T1, run_id="x", minutes=5, parts=("sweep",))
    future = _edit(only, tmp_path / "future.json",
                   {"id": "2030", "started": "2030-01-01T00:00:00Z",
                    "finished": "2030-01-01T00:01:00Z"})
    only.unlink()
    outcome = merge([real, future], now=NOW)
    (run,) = outcome.document["runs"]
    assert run["file"] == real.name
    assert [c["file"] for c in outcome.document["contributions"]] == ["future.json"]
    assert len(outcome.future) == 1
