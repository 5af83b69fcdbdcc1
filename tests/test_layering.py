"""The report is built from files only: importing it (and the merge) loads no run, client or check.

A coordinator renders a campaign on a machine that never ran the suite, from the files partners
sent; anything the report needs to know (causes and their hints, units of throughput, deployment
scores) is vocabulary of the result file and lives in ``igestbench.results``. Checked in a fresh
interpreter, so that what other tests imported cannot hide an import.
"""

from __future__ import annotations

import json
import subprocess
import sys

#: Packages that run or verify against a catalogue: the report must not need any of them.
FORBIDDEN = ("run", "client", "verify", "workloads", "measure", "nexus", "mock")
#: config's defaults of the local catalogue's accounts (``sv7 serve`` options are typed there
#: too) name mock.auth; it is data, not a server.
TOLERATED = {"igestbench.mock", "igestbench.mock.auth"}

_SCRIPT = """
import json, sys
import igestbench.report, igestbench.results.campaign, igestbench.results.merge
print(json.dumps(sorted(m for m in sys.modules if m.startswith("igestbench."))))
"""


def test_the_report_and_the_merge_import_nothing_that_runs_or_verifies() -> None:
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True,
                         check=True, timeout=120).stdout
    loaded = set(json.loads(out)) - TOLERATED
    wrong = sorted(m for m in loaded if m.split(".")[1] in FORBIDDEN)
    assert not wrong, f"the report imports {wrong}: move what it needs into igestbench.results"
