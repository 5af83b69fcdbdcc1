"""The README's Python examples run as written and leave nothing behind (TRYOUT3 finding 15).

Each ```python block that needs no server of the reader's own (no ``PORT`` to fill in, no
``example.org``) is run as a user would copy it: a file of its own, run from an empty folder
with this Python. The Data Service example used ``config``, ``Path`` and ``dataset_id`` without
defining them; the workload example left ``nexus-files/`` in the folder.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"),
                    re.DOTALL)  # fmt: skip
#: Examples that need the reader's own catalogue: shown, not run here.
NEEDS_A_SERVER = ("PORT", "example.org")
RUNNABLE = [b for b in BLOCKS if not any(word in b for word in NEEDS_A_SERVER)]


def test_the_examples_are_found() -> None:
    assert len(RUNNABLE) >= 3 and any("connect_data_service" in b for b in RUNNABLE)


@pytest.mark.parametrize("code", RUNNABLE, ids=[f"block{BLOCKS.index(b) + 1}" for b in RUNNABLE])
def test_a_readme_example_runs_as_written_and_leaves_nothing(code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    folder = tmp_path / "cwd"
    folder.mkdir()
    result = subprocess.run([sys.executable, str(script)], cwd=folder, capture_output=True,
                            text=True, timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in folder.iterdir()) == []
