"""The light-call side by side (tests/benchmarks/light_calls.py) keeps running: the README's
in-process CPU figures come from it. Small, both sides this checkout, no timing asserted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.benchmarks import light_calls


def test_the_light_call_side_by_side_runs_both_sides_and_prints_each_query(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = Path(light_calls.__file__).resolve().parents[2]
    argv = ["--size", "1200", "--rounds", "2", "--calls", "5", "--queries", "get,include",
            "--before", str(root)]  # fmt: skip
    assert light_calls.main(argv) == 0
    out = capsys.readouterr().out
    figures = re.compile(r"this +\d+\.\d \( *\d+\.\d\) +before +\d+\.\d .*change +[+-]\d")
    for key in ("SOAP get", "SOAP include", "REST get", "REST include"):
        line = next(line for line in out.splitlines() if line.strip().startswith(key))
        assert figures.search(line), line
