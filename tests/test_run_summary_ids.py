"""The end-of-run summary gives the ids part's MB/s beside its files/s, as the phase's line does
and as the README says ("the same numbers … in the summary at the end of the run")."""

from __future__ import annotations

from igestbench.results.figures import entry_figures
from igestbench.run.summary import phase_line, summary_table
from tests.campaign_helpers import bench
from tests.test_report_transfers import ids_entry


def test_the_summary_table_gives_each_ids_rate_with_its_mb_per_s() -> None:
    rows = entry_figures(ids_entry(2))
    table = summary_table(rows)
    put_1mib = next(line for line in table if line.startswith("ids put 1MiB"))
    # 2 clients back to back at 20 ms a call: 100 files/s of 1 MiB = 105 MB/s
    assert "100 files/s = 105 MB/s" in put_1mib
    assert "100 files/s = 105 MB/s" in phase_line(rows)  # the same words as the phase's line
    get_1kib = next(line for line in table if line.startswith("ids getData 1KiB"))
    assert " MB/s" in get_1kib
    # named as SOAP and REST are, in capitals (tryout, 2026-11-26)
    assert put_1mib.split()[3] == "IDS"


def test_other_workloads_rates_stand_alone() -> None:
    table = summary_table(entry_figures(bench("full-cycle", "full-cycle", 1, [5.0, 5.0])))
    row = next(line for line in table if line.startswith("full-cycle"))
    assert "cycles/s" in row and "MB/s" not in row


def test_the_calls_behind_a_figure_are_written_as_its_rate_is() -> None:
    # "1576" beside "1,576 searches/s" (tryout, 2026-11-26)
    table = summary_table(entry_figures(bench("full-cycle", "full-cycle", 1, [5.0] * 1576)))
    row = next(line for line in table if line.startswith("full-cycle"))
    assert " 1,576 " in row and " 1576 " not in row
