"""The driver side by side (tests/benchmarks/sqlite_drivers.py) keeps running: the README's
figures for the store's choice of apsw come from it. Small, and no timing asserted."""

from __future__ import annotations

import re

import pytest

from tests.benchmarks import sqlite_drivers


def test_the_driver_side_by_side_runs_and_prints_both_statements(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert sqlite_drivers.main(["--size", "1200", "--rounds", "2", "--calls", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1,200 Datafiles grown")
    for name in ("rows", "like"):
        line = next(line for line in out.splitlines() if line.split()[:1] == [name])
        assert re.search(r"sqlite3 3\.\S+: least \d", line), line
        assert re.search(r"apsw 3\.\S+: least \d", line), line
        assert re.search(r"sqlite3/apsw \d+\.\d\d$", line), line
