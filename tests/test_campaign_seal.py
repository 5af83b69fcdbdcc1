"""The campaign file's seal (results/seal.py): a file as merge wrote it is not checked again by
the report, and any change to it — or to the checks — has every run checked as before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.cli import main
from igestbench.results import campaign as campaign_module
from igestbench.results import seal
from igestbench.results.campaign import Campaign, dump_campaign, load_campaign
from igestbench.results.campaign_file import load_campaign_config
from igestbench.results.merge import merge

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "fixtures" / "campaign"


@pytest.fixture
def merged(tmp_path: Path) -> Path:
    """The example campaign (an old-format file, a truncated one …) merged, with one
    histogram that does not decode (a damaged part, left out and named)."""
    config = load_campaign_config(EXAMPLE / "campaign.toml")
    files = []
    for source in sorted((EXAMPLE / "results").glob("*.json")):
        files.append(tmp_path / source.name)
        files[-1].write_bytes(source.read_bytes())
    damaged = next(f for f in files if f.name.startswith("ELETTRA")
                   and '"histogram":"' in f.read_text(encoding="utf-8").replace(" ", ""))
    doc = json.loads(damaged.read_text(encoding="utf-8"))
    op = next(op for b in doc["benchmarks"] for op in b["ops"].values() if op.get("histogram"))
    op["histogram"] = "not base64!"
    damaged.write_text(json.dumps(doc), encoding="utf-8")
    outcome = merge(files, config)
    path = tmp_path / "campaign.json"
    dump_campaign(outcome.document, path, sealed=True)
    return path


@pytest.fixture
def full_checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The files of the runs that the loader checked in full."""
    checked: list[str] = []
    real = campaign_module.result_from_document

    def counting(doc: Any, path: Any) -> Any:
        checked.append(str(path))
        return real(doc, path)

    monkeypatch.setattr(campaign_module, "result_from_document", counting)
    yield checked


def _same(a: Campaign, b: Campaign) -> None:
    assert [(r.site, r.target, r.kind, r.file) for r in a.runs] == [
        (r.site, r.target, r.kind, r.file) for r in b.runs]
    for x, y in zip(a.runs, b.runs, strict=True):
        assert x.result.raw == y.result.raw
        assert (x.result.version, x.result.status, x.result.checks, x.result.damages) == (
            y.result.version, y.result.status, y.result.checks, y.result.damages)
    assert (a.damaged, a.skipped, a.history) == (b.damaged, b.skipped, b.history)


def test_a_sealed_file_loads_as_the_fully_checked_one(merged: Path, tmp_path: Path,
                                                      full_checks: list[str]) -> None:
    text = merged.read_text(encoding="utf-8")
    assert text.startswith('{"checked":"') and json.loads(text)["format"] == (
        "igestbench-campaign")
    sealed = load_campaign(merged)
    assert full_checks == []  # trusted: merge checked the runs with this code
    assert sealed.runs and sealed.damaged  # the example has damaged parts, left out
    unsealed = tmp_path / "unsealed.json"
    unsealed.write_text(text.replace('"checked":"', '"checked":"0', 1), encoding="utf-8")
    checked = load_campaign(unsealed)
    assert len(full_checks) == len(checked.runs)  # a broken seal: every run checked again
    _same(sealed, checked)


def test_an_edited_file_has_every_run_checked(merged: Path, full_checks: list[str]) -> None:
    doc = json.loads(merged.read_text(encoding="utf-8"))
    # an edit a tool or a hand could make: one operation's count made negative
    run = next(r for r in doc["runs"] if r["result"].get("benchmarks"))
    op = next(iter(run["result"]["benchmarks"][0]["ops"].values()))
    op["count"] = -1
    merged.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n",
                      encoding="utf-8")
    campaign = load_campaign(merged)
    assert len(full_checks) == len(doc["runs"])
    assert any("count is -1, below 0" in d.reason and d.file == run["file"]
               for d in campaign.damaged)


def test_a_file_sealed_by_other_checks_is_checked(merged: Path, full_checks: list[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # another igestbench (or this one changed): its checks' source differs, so does its seal
    monkeypatch.setattr(seal, "checks_digest", lambda: b"other checks")
    campaign = load_campaign(merged)
    assert len(full_checks) == len(campaign.runs) > 0


def test_without_the_checks_source_nothing_is_sealed(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(seal, "checks_digest", lambda: None)
    assert seal.with_seal('{"a":1}') == '{"a":1}' and not seal.is_sealed('{"a":1}')
    assert not seal.is_sealed('{"checked":"' + "0" * 64 + '","a":1}')


def test_sv7_merge_seals_the_file_it_writes_and_a_plain_dump_does_not(
        tmp_path: Path, full_checks: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "campaign.json"
    assert main(["merge", str(EXAMPLE / "results"), "--campaign",
                 str(EXAMPLE / "campaign.toml"), "-o", str(out)]) == 1  # one file truncated
    assert out.read_text(encoding="utf-8").startswith('{"checked":"')
    assert load_campaign(out).runs and full_checks == []
    # a document that did not come straight from merge (edited, built by a tool) is not sealed
    doc = json.loads(out.read_text(encoding="utf-8"))
    dump_campaign(doc, out)
    assert not out.read_text(encoding="utf-8").startswith('{"checked"')
    loaded = load_campaign(out)
    assert len(full_checks) == len(loaded.runs) > 0
