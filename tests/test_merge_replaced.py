"""What merge still cannot show, and says: a campaign takes each part x interface from the
newest run that measured it (results/pieces.py, tests/test_merge_combined.py), but a cell shows
one run's scale section whole, so an older run's scale on an interface the newer scale run did
not measure is hidden. ``sv7 merge`` says so, and the campaign file carries it to the page.
A piece an older run measured that a newer run measured again is history, not hidden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from igestbench.cli import main
from igestbench.report.notices import notices
from igestbench.results.campaign import load_campaign, replaced_text
from igestbench.results.merge import merge
from tests.campaign_helpers import write_result
from tests.test_merge_combined import scale_run

URL = "https://icat.example.org:443/ICATService/ICAT"
FULL = ("verify", "burst", "sweep", "scale", "ids")


def test_an_older_scale_of_another_interface_is_said_by_merge_and_on_the_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = scale_run(tmp_path / "r", run_id="rest", minutes=0, interface="rest")
    new = scale_run(tmp_path / "r", run_id="soap", minutes=60, interface="soap")
    out = tmp_path / "campaign.json"
    assert main(["merge", str(tmp_path / "r"), "-o", str(out)]) == 0
    said = (f"ESRF → icat.example.org: the page shows scale (SOAP) of the newer run ({new.name}); "
            f"the older run ({old.name}) measured scale (REST), which the page does not show (a "
            "cell shows one run's scale section): measure them in one run (sv7 run --parts "
            f"scale --interface soap,rest), or merge without {new.name}")
    captured = capsys.readouterr()
    assert f"sv7 merge: {said}" in captured.err.splitlines(), captured.err
    assert captured.out == (f"campaign file: {out} (1 run, 1 older, 0 skipped, 1 older not "
                            "shown: see above)\n")
    assert said in notices(load_campaign(out))  # the page's notices
    assert "contributions" not in json.loads(out.read_text())


def test_a_failed_newer_run_hides_nothing(tmp_path: Path) -> None:
    old = write_result(tmp_path, "ESRF", URL, run_id="full", parts=FULL)
    new = write_result(tmp_path, "ESRF", URL, run_id="empty", minutes=60, parts=FULL,
                       status="failed")
    outcome = merge([old, new])
    assert outcome.replaced == ()
    (line,) = outcome.combined
    assert f"nothing from {new.name} (started 2026-11-21 10:00:00 UTC, failed)" in line
    assert f"verify, burst (SOAP), sweep (SOAP), scale (SOAP), ids from {old.name}" in line


def test_a_newer_run_that_measured_as_much_hides_nothing(tmp_path: Path) -> None:
    write_result(tmp_path, "ESRF", URL, run_id="a", parts=("verify", "burst"))
    write_result(tmp_path, "ESRF", URL, run_id="b", minutes=60, parts=FULL)
    write_result(tmp_path, "ESRF", URL, run_id="c", minutes=30, parts=("verify",),
                 status="interrupted")
    outcome = merge(sorted(tmp_path.glob("*.json")))
    assert outcome.replaced == () and "replaced" not in outcome.document
    assert outcome.combined == () and "contributions" not in outcome.document


def test_an_older_campaign_files_notice_still_reads_as_it_did() -> None:
    # a campaign file merged before cells were combined names whole runs in "replaced"
    entry = {"site": "ESRF", "target": "T", "file": "old.json", "parts": ["verify", "burst"],
             "newer_file": "new.json", "newer_status": "complete", "newer_parts": ["scale"],
             "missing": ["verify", "burst"]}
    assert replaced_text(entry) == (
        "ESRF → T: the newer run (new.json) measured only scale; the older complete run "
        "(old.json) measured verify, burst, which the page does not show (merge keeps the "
        "newest run per site x target): measure them in one run again (sv7 run --parts "
        "verify,burst,scale), or merge without new.json")
