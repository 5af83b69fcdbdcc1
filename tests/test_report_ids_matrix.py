"""The IDS success matrix: the ICAT Data Service's checks apart from the catalogue's (issue 22,
point 4), with "no IDS" reading differently from "IDS failed", on the page, in Markdown and CSV."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from igestbench.report import build_report, render_html, render_markdown, write_csv
from igestbench.results.campaign import Campaign, dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.causes import NO_IDS
from igestbench.results.merge import merge
from tests.campaign_helpers import REFUSED_PROBE, check, write_result

WITH_IDS = "https://with-ids.example/ICATService/ICAT"
NO_IDS_URL = "https://no-ids.example/ICATService/ICAT"
BROKEN_IDS = "https://broken-ids.example/ICATService/ICAT"
OLD = "https://old.example/ICATService/ICAT"


def ids_check(name: str, outcome: str = "passed", cause: str | None = None,
              explanation: str | None = None) -> dict[str, Any]:
    return {**check(name, outcome, cause), "id": f"sv_tests/test_ids.py::{name}",
            "part": "ids", **({"explanation": explanation} if explanation else {})}


def campaign_with_ids(tmp_path: Path) -> Campaign:
    """Site A against a target with a working IDS, one without an IDS, one whose IDS fails a
    check and one whose run predates the IDS checks; site B cannot reach the first target."""
    catalogue = [check("login"), check("search")]
    skipped = [ids_check(n, "skipped", explanation=f"{NO_IDS} https://no-ids.example/ids: "
                                                    "GET https://no-ids.example/ids/ping gave "
                                                    "HTTP 404")
               for n in ("ping", "round_trip")]
    files = [
        write_result(tmp_path, "A", WITH_IDS,
                     checks=[*catalogue, ids_check("ping"), ids_check("round_trip")]),
        write_result(tmp_path, "A", NO_IDS_URL, checks=[*catalogue, *skipped]),
        write_result(tmp_path, "A", BROKEN_IDS,
                     checks=[*catalogue, ids_check("ping"),
                             ids_check("round_trip", "failed", "ids-fault",
                                       "ids-fault: InternalException: disk full")]),
        write_result(tmp_path, "A", OLD, checks=catalogue),
        write_result(tmp_path, "B", WITH_IDS, status="failed", probe=REFUSED_PROBE,
                     notes=["target unreachable: refused: [Errno 111] Connection refused"]),
    ]
    config = CampaignConfig(
        name="ids", parts=("verify",), sites=(CampaignSite("A"), CampaignSite("B")),
        targets=(CampaignTarget("WITH", WITH_IDS, None), CampaignTarget("NONE", NO_IDS_URL, None),
                 CampaignTarget("BROKEN", BROKEN_IDS, None), CampaignTarget("OLD", OLD, None)))
    path = tmp_path / "ids.json"
    dump_campaign(merge(files, config).document, path)
    return load_campaign(path)


def test_the_catalogue_and_the_ids_are_counted_apart(tmp_path: Path) -> None:
    report = build_report(campaign_with_ids(tmp_path), charts=False)
    # the success matrix counts the catalogue's checks: a failing IDS does not make it partial
    assert [(c.state, c.text) for c in report.success.rows[0].cells] == [
        ("ok", "2/2"), ("ok", "2/2"), ("ok", "2/2"), ("ok", "2/2")]
    ids = report.ids_success
    assert ids is not None
    assert [(c.state, c.text) for c in ids.rows[0].cells] == [
        ("ok", "2/2"), ("no-ids", "no IDS"), ("partial", "1/2"), ("not-run", "\u2013")]
    # B never reached the host: no count, and no second footnote for the same cause
    first = ids.rows[1].cells[0]
    assert (first.state, first.text, first.connected) == ("failed", "✗", False)
    # "no IDS" is neither run nor failed: counted apart
    a = ids.rows[0].summary
    assert (a.count, a.ok, a.fail, a.absent, a.coverage) == (2, 1, 1, 1, 50.0)
    assert (ids.total.count, ids.total.ok, ids.total.fail, ids.total.absent) == (3, 1, 2, 1)
    assert "HTTP 404" in (ids.rows[0].cells[1].reason or "")
    # the IDS's failure is footnoted, lettered on from the success matrix's footnotes
    letters = [f.letter for f in report.footnotes]
    assert [(f.letter, f.target, f.cause) for f in report.ids_footnotes] == [
        (chr(ord("A") + len(letters)), "BROKEN", "ids-fault")]
    assert report.ids_marks == {("A", "BROKEN"): (report.ids_footnotes[0].letter,)}


def test_the_page_markdown_and_csv_show_the_ids_matrix(tmp_path: Path) -> None:
    report = build_report(campaign_with_ids(tmp_path), charts=False)
    page = render_html(report)
    section = page[page.index('<section id="ids_success">'):]
    assert 'class="cell no-ids"' in section and ">no IDS<" in section
    assert 'class="cell partial"' in section and "InternalException" in section
    assert '<a href="#ids_success">IDS success</a>' in page
    markdown = render_markdown(report)
    table = markdown[markdown.index("## IDS success matrix"):]
    assert "*no IDS*" in table and "1/2" in table
    write_csv(report, tmp_path / "csv")
    rows = list(csv.DictReader(
        (tmp_path / "csv" / "ids-success.csv").read_text(encoding="utf-8").splitlines()))
    assert [(r["site"], r["target"], r["state"], r["passed"], r["total"]) for r in rows] == [
        ("A", "WITH", "ok", "2", "2"), ("A", "NONE", "no-ids", "0", "0"),
        ("A", "BROKEN", "partial", "1", "2"), ("A", "OLD", "not-run", "0", "0"),
        ("B", "WITH", "failed", "0", "0"), ("B", "NONE", "not-run", "0", "0"),
        ("B", "BROKEN", "not-run", "0", "0"), ("B", "OLD", "not-run", "0", "0")]
    assert rows[1]["reason"].startswith(NO_IDS)
    sums = list(csv.DictReader(
        (tmp_path / "csv" / "ids-success-summary.csv").read_text(encoding="utf-8").splitlines()))
    assert sums[-1] == {"kind": "total", "name": "", "count": "3", "ok": "1", "fail": "2",
                        "no_ids": "1", "success_percent": str(100 / 3),
                        "coverage_percent": str(300 / 8)}
    notes = (tmp_path / "csv" / "footnotes.csv").read_text(encoding="utf-8")
    assert "ids-fault" in notes


def test_a_campaign_without_ids_checks_has_no_ids_matrix(tmp_path: Path) -> None:
    files = [write_result(tmp_path, "A", OLD, checks=[check("login")]),
             write_result(tmp_path, "B", OLD, status="failed", probe=REFUSED_PROBE,
                          notes=["target unreachable: refused: [Errno 111] Connection refused"])]
    config = CampaignConfig(name="old", parts=("verify",),
                            sites=(CampaignSite("A"), CampaignSite("B")),
                            targets=(CampaignTarget("OLD", OLD, None),))
    path = tmp_path / "old.json"
    dump_campaign(merge(files, config).document, path)
    report = build_report(load_campaign(path), charts=False)
    assert report.ids_success is None
    assert 'id="ids_success"' not in render_html(report)
    assert "IDS success" not in render_markdown(report)
