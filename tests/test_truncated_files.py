"""A file cut short (a partner's interrupted copy) says so in one line naming it, with what to
do, whether ``sv7 report`` or ``sv7 merge`` reads it; merge goes on with the other files
(results/loader.py, results/campaign.py; found by a new user's tryout)."""

from __future__ import annotations

from pathlib import Path

import pytest

from igestbench.cli import main
from igestbench.results import ResultFileError
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.merge import merge
from tests.campaign_helpers import check, write_result

URL = "https://icat.two.example/ICATService/ICAT"
CUT = "looks truncated: it is cut off before its end (an interrupted copy?)"
CAMPAIGN_REMEDY = "copy it again, or write it again with sv7 merge"
RESULT_REMEDY = "copy it again from its site"


def _files(tmp_path: Path) -> tuple[Path, Path]:
    """Two result files with text beyond ASCII (a cut may fall inside a character), and the
    campaign file merged from them."""
    results = [write_result(tmp_path / "r", site, URL, checks=[check("a")],
                            notes=["Zürich — 3 € · naïve"]) for site in ("HZB", "ELETTRA")]
    campaign = tmp_path / "campaign.json"
    dump_campaign(merge(results).document, campaign, sealed=True)
    return results[0], campaign


def _cuts(data: bytes) -> list[int]:
    """Where to cut: a hundred places through the file, and inside each multi-byte character
    of its last kilobytes."""
    body = len(data.rstrip())
    places = {body * i // 100 for i in range(1, 100)} | {body - 1}
    places |= {i for i in range(max(1, body - 4000), body) if data[i] & 0xC0 == 0x80}
    return sorted(p for p in places if p > 0)


def test_every_cut_of_a_campaign_file_reads_as_truncated(tmp_path: Path) -> None:
    _, campaign = _files(tmp_path)
    data = campaign.read_bytes()
    cut = tmp_path / "cut.json"
    mid_character = 0
    for end in _cuts(data):
        cut.write_bytes(data[:end])
        mid_character += data[end] & 0xC0 == 0x80
        with pytest.raises(ResultFileError) as caught:
            load_campaign(cut)
        assert str(caught.value) == f"{cut}: {CUT}; {CAMPAIGN_REMEDY}", end
    assert mid_character > 3  # cuts inside "ü", "—", "€" and "·" were among them


def test_every_cut_of_a_result_file_reads_as_truncated_mid_character_too(
        tmp_path: Path) -> None:
    result, _ = _files(tmp_path)
    data = result.read_bytes()
    cut = tmp_path / "cut.json"
    for end in _cuts(data):
        cut.write_bytes(data[:end])
        outcome = merge([cut])
        (skipped,) = outcome.skipped
        assert skipped.reason == f"{CUT}; {RESULT_REMEDY}", end


def test_sv7_report_names_a_cut_campaign_file_and_what_to_do(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, campaign = _files(tmp_path)
    data = campaign.read_bytes()
    cut = tmp_path / "partner-copy.json"
    cut.write_bytes(data[: len(data) // 2])
    page = tmp_path / "report.html"
    assert main(["report", str(cut), "-o", str(page)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == f"sv7 report: {cut}: {CUT}; {CAMPAIGN_REMEDY}"
    assert not page.exists()
    # a partner's result file, cut, given to the report: truncated, and which file it wants
    cut.write_bytes(result.read_bytes()[: result.stat().st_size // 2])
    assert main(["report", str(cut), "-o", str(page)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"sv7 report: {cut}: {CUT}; {RESULT_REMEDY}; and it is a result file")
    assert "campaign file sv7 merge makes" in line


def test_sv7_merge_skips_a_cut_file_with_what_to_do_and_merges_the_rest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result, _ = _files(tmp_path)
    good = write_result(tmp_path / "g", "DESY", URL, checks=[check("a")])
    cut = tmp_path / "cut.json"
    cut.write_bytes(result.read_bytes()[:-40])
    out = tmp_path / "merged.json"
    assert main(["merge", str(good), str(cut), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"sv7 merge: skipped cut.json: {CUT}; {RESULT_REMEDY}\n" in err
    assert [r.site for r in load_campaign(out).runs] == ["DESY"]
