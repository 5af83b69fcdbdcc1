"""Small wordings of the CLI (TRYOUT3 finding 14): a misspelt key of sv7.toml gets the likely
one, and "1 more line alike" is singular."""

from __future__ import annotations

from pathlib import Path

import pytest

from igestbench.config import load_run_config
from igestbench.errors import UsageError
from igestbench.results.rows import SummaryRow
from igestbench.run.summary import _mark_notes


def test_a_misspelt_run_key_of_sv7_toml_gets_the_likely_one(tmp_path: Path) -> None:
    toml = tmp_path / "sv7.toml"
    toml.write_text("[run]\nmaxrate = 3\ncolour = 'blue'\n")
    with pytest.raises(UsageError) as caught:
        load_run_config({}, config_file=toml, environ={})
    assert str(caught.value).endswith(
        "unknown option(s) in [run]: colour, maxrate (did you mean max-rate?)"
    )


def _bound(clients: int) -> SummaryRow:
    return SummaryRow("single-query", "soap", "zeep", clients, "rate", 500.0, "searches/s",
                      "500 searches/s", 50, marks=("client-bound",),
                      note="client-bound: the clients used 97 % of their cores")  # fmt: skip


@pytest.mark.parametrize(("rows", "tail"), [(2, "; 1 more line alike"),
                                            (3, "; 2 more lines alike"), (1, "cores")])
def test_more_lines_alike_is_counted_in_words(rows: int, tail: str) -> None:
    (line,) = _mark_notes({"client-bound": [_bound(c) for c in range(1, rows + 1)]})
    assert line.endswith(tail), line


def test_sv7_cleanup_groups_every_count_in_thousands() -> None:
    """Tryout 4: `deleted 116,775 objects … 24250 of them not listed in the journal`."""
    from igestbench.run.leftovers import _describe
    from igestbench.workloads.ownership import CleanupReport

    report = CleanupReport(deleted=116_775, already_gone=1_200, by_name=24_250,
                           foreign=(("Datafile", 1),), kept=2_000, facilities=1,
                           reasons=(("created by another account", 1),))
    text = "\n".join(_describe(Path("j.jsonl"), "http://x/ICATService/ICAT", report, 3_000))
    assert "deleted 116,775 objects" in text and "24,250 of them not listed" in text
    assert "1,200 journaled objects" in text and "2,000 of the run's own" in text
    assert "3,000 object(s) named after the run" in text
