"""A newer run that measured less than the one before it (``--parts scale`` after a full run,
one interface after the other, a run that failed) hides the older one's figures: merge keeps one
run per site x target. ``sv7 merge`` says so, and the campaign file carries it to the page."""

from __future__ import annotations

from pathlib import Path

import pytest

from igestbench.cli import main
from igestbench.report.notices import notices
from igestbench.results.campaign import load_campaign
from igestbench.results.merge import merge
from tests.campaign_helpers import write_result

URL = "https://icat.example.org:443/ICATService/ICAT"
FULL = ("verify", "burst", "sweep", "scale", "ids")


def test_a_partial_newer_run_is_said_by_merge_and_on_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = write_result(tmp_path / "r", "ESRF", URL, run_id="full", parts=FULL,
                       run_extra={"interfaces": ["soap", "rest"]})
    new = write_result(tmp_path / "r", "ESRF", URL, run_id="scale", minutes=60,
                       parts=("scale",), run_extra={"interfaces": ["soap", "rest"]})
    out = tmp_path / "campaign.json"
    assert main(["merge", str(tmp_path / "r"), "-o", str(out)]) == 0
    said = (f"ESRF → icat.example.org: the newer run ({new.name}) measured only scale; the older "
            f"complete run ({old.name}) measured verify, burst, sweep, ids, which the page does "
            "not show (merge keeps the newest run per site x target): measure them in one run "
            "again (sv7 run --parts verify,burst,sweep,scale,ids), or merge without "
            f"{new.name}")
    captured = capsys.readouterr()
    assert f"sv7 merge: {said}" in captured.err.splitlines(), captured.err
    assert captured.out == (f"campaign file: {out} (1 run, 1 older, 0 skipped, 1 older not "
                            "shown: see above)\n")
    assert said in notices(load_campaign(out))  # the page's notices


def test_a_failed_newer_run_never_hides_a_complete_one_silently(tmp_path: Path) -> None:
    old = write_result(tmp_path, "ESRF", URL, run_id="full", parts=FULL)
    new = write_result(tmp_path, "ESRF", URL, run_id="empty", minutes=60, parts=FULL,
                       status="failed")
    (line,) = merge([old, new]).replaced
    assert line.startswith(f"ESRF → icat.example.org: the newer run ({new.name}) is failed (it "
                           "was to measure verify, burst, sweep, scale, ids); the older complete "
                           f"run ({old.name}) measured verify, burst, sweep, scale, ids, ")


def test_one_interface_after_the_other(tmp_path: Path) -> None:
    write_result(tmp_path, "ESRF", URL, run_id="rest", parts=("burst",),
                 run_extra={"interfaces": ["rest"]})
    write_result(tmp_path, "ESRF", URL, run_id="soap", minutes=60, parts=("burst",),
                 run_extra={"interfaces": ["soap"]})
    (line,) = merge(sorted(tmp_path.glob("*.json"))).replaced
    assert "measured only burst; the older complete run" in line and "measured rest," in line


def test_a_newer_run_that_measured_as_much_hides_nothing(tmp_path: Path) -> None:
    write_result(tmp_path, "ESRF", URL, run_id="a", parts=("verify", "burst"))
    write_result(tmp_path, "ESRF", URL, run_id="b", minutes=60, parts=FULL)
    write_result(tmp_path, "ESRF", URL, run_id="c", minutes=30, parts=("verify",),
                 status="interrupted")
    outcome = merge(sorted(tmp_path.glob("*.json")))
    assert outcome.replaced == () and "replaced" not in outcome.document


def test_the_run_suggested_measures_both(tmp_path: Path) -> None:
    write_result(tmp_path, "ESRF", URL, run_id="a", parts=("verify", "burst"))
    write_result(tmp_path, "ESRF", URL, run_id="b", minutes=60, parts=("scale",))
    (line,) = merge(sorted(tmp_path.glob("*.json"))).replaced
    assert "(sv7 run --parts verify,burst,scale)" in line
