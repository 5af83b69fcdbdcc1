"""The result file says where the run's reading of the server's clock came from (the HTTP
``Date`` header, the createTime of the run's clock Facility, or nothing: this machine's clock
and the wide window it implies), and the report shows it: in the runs' details, and as a notice
for a run whose cleanup had no server clock to go by."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from igestbench.client.base import ClientConfig
from igestbench.config import ServeConfig
from igestbench.icat.credentials import Credentials
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.report import build_report, render_html, render_markdown
from igestbench.results.campaign import dump_campaign, load_campaign
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.merge import merge
from igestbench.results.server_clock import clock_text
from igestbench.run.cleanup import RunJournal
from igestbench.run.runner import Target
from igestbench.workloads import RunTag
from tests.campaign_helpers import check, write_result
from tests.test_run import credentials_env, left_on_server, sv7

INGEST = Credentials("simple", "ingest", "ingest")
READER = Credentials("simple", "reader", "reader")  # may not create a Facility


def started(cat: LocalCatalogue, tmp_path: Path, who: Credentials) -> RunJournal:
    run = RunJournal(tmp_path / "r.json", RunTag.new("clock"))
    target = Target(cat.service_url, who, ClientConfig(url=cat.service_url), local=False)
    run.start(target, "6.2.0")
    run.finish(target)
    return run


@pytest.mark.parametrize(("date_header", "who", "source", "allowance"), [
    (True, INGEST, "date-header", 60.0),
    (False, INGEST, "create-time", 60.0),
    (False, READER, "local", 900.0),
])
def test_the_journal_says_where_the_servers_clock_came_from(
        tmp_path: Path, date_header: bool, who: Credentials, source: str,
        allowance: float) -> None:  # fmt: skip
    with LocalCatalogue(ServeConfig(date_header=date_header)) as cat:
        record = started(cat, tmp_path, who).server_clock
        assert left_on_server(cat) == 0
    assert record is not None
    assert (record["source"], record["allowance_s"]) == (source, allowance)
    if source == "local":  # only this machine's clock: why, and no offset
        assert record["offset_s"] is None
        assert "no Date header" in record["problem"] and "INSUFFICIENT" in record["problem"]
        assert "±15 min" in clock_text(record)
    else:  # the same machine: the clocks agree to within a second (both to the second)
        assert abs(record["offset_s"]) <= 1.5 and record["problem"] is None


def test_sv7_run_writes_it_and_the_report_shows_it(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig(date_header=False)) as cat:  # as Payara
        result = sv7("run", "--target", cat.service_url, "--site", "S", "--parts", "verify",
                     "--verify-parts", "connectivity,soap", "--out", str(tmp_path / "out"),
                     env=credentials_env())  # fmt: skip
        assert result.returncode == 0, result.stderr
    (path,) = (tmp_path / "out").glob("*.json")
    record = json.loads(path.read_text())["run"]["server_clock"]
    assert record["source"] == "create-time" and record["allowance_s"] == 60.0
    # an older file (no record) and a run that read no server clock, beside it
    older = write_result(tmp_path / "out", "OLD", "https://old.example/ICATService/ICAT",
                         checks=[check("x")])  # fmt: skip
    blind = write_result(tmp_path / "out", "BLIND", "https://blind.example/ICATService/ICAT",
                         checks=[check("x")], run_extra={"server_clock": {
                             "source": "local", "offset_s": None, "allowance_s": 900.0,
                             "problem": "no Date header in the answer; the clock Facility: "
                                        "INSUFFICIENT_PRIVILEGES"}})  # fmt: skip
    config = CampaignConfig(
        name="clocks", parts=("verify",),
        sites=(CampaignSite("S"), CampaignSite("OLD"), CampaignSite("BLIND")),
        targets=(CampaignTarget("PAYARA", cat.service_url, None),
                 CampaignTarget("OLDT", "https://old.example/ICATService/ICAT", None),
                 CampaignTarget("BLINDT", "https://blind.example/ICATService/ICAT", None)))
    campaign = tmp_path / "c.json"
    dump_campaign(merge([path, older, blind], config).document, campaign)
    report = build_report(load_campaign(campaign), charts=False)
    clocks = {run.site: run.clock for run in report.runs}
    assert re.fullmatch(r"createTime of the run's clock Facility, server [+-][01]\.\d s from "
                        r"this machine; cleanup's window ±1 min", clocks["S"]), clocks["S"]
    assert clocks["OLD"].startswith("not recorded")
    assert clocks["BLIND"].startswith("none: this machine's clock")
    (notice,) = [n for n in report.notices if "read no clock of the server" in n]
    assert "BLIND → BLINDT" in notice and "±15 min" in notice and "S → " not in notice
    page = render_html(report)
    assert '<td class="clock">createTime' in page and "read no clock of the server" in page
    markdown = render_markdown(report)
    assert "read no clock of the server" in markdown
    # read as text: an apostrophe is an apostrophe, not HTML's "&#39;"
    assert "by the client's clock, not the server's" in markdown and "&#" not in markdown


def test_a_damaged_record_is_left_out_not_fatal(tmp_path: Path) -> None:
    bad = write_result(tmp_path, "S", "https://t.example/ICATService/ICAT", checks=[check("x")],
                       run_extra={"server_clock": {"source": "sundial", "allowance_s": -1}})
    config = CampaignConfig(name="bad", parts=("verify",), sites=(CampaignSite("S"),),
                            targets=(CampaignTarget("T", "https://t.example/ICATService/ICAT",
                                                    None),))  # fmt: skip
    dump_campaign(merge([bad], config).document, tmp_path / "c.json")
    report = build_report(load_campaign(tmp_path / "c.json"), charts=False)
    assert report.runs[0].clock.startswith("not recorded")
    assert any("run.server_clock.source" in n for n in report.notices)
    assert "sundial" not in render_html(report).split('id="runs"')[1]


@pytest.mark.parametrize("offset", [-0.313, 0.0, 312.5, None])
def test_a_clock_behind_or_ahead_passes_the_checks(offset: float | None) -> None:
    from igestbench.results.contents import checked
    from igestbench.results.server_clock import clock_record

    doc = {"run": {"server_clock": clock_record("date-header", offset, 60.0)}}
    assert checked(doc) == (doc, ())
