"""``sv7 swarm`` on a disk that fills up mid-run: cleanup still done, exit 7, a clear message.

As ``sv7 run`` (tests/test_disk_full.py): a result file or journal that can no longer be written
stops the run with exit code 7 and its cause; the run cleans up by what it holds in memory and
what the server shows, and the result file keeps its last complete version.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from pathlib import Path

import pytest

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.run.runner import EXIT_WRITE
from tests.swarm_support import Swarm, needs_locust
from tests.test_disk_full import needs_mount, tmpfs
from tests.test_run import left_on_server


def fill(where: Path) -> None:
    """Write into ``where`` until its file system is full."""
    with (where / "filler").open("wb") as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 65536)
            out.flush()
    # and the last few bytes, past the buffer
    with contextlib.suppress(OSError), (where / "filler-2").open("wb", buffering=0) as rest:
        while rest.write(b"\0" * 512):
            pass


@needs_locust
@needs_mount
@pytest.mark.slow
def test_a_disk_that_fills_up_mid_sweep_stops_the_swarm_with_7_after_its_cleanup(
    tmp_path: Path,
) -> None:
    with LocalCatalogue(ServeConfig()) as cat, tmpfs(tmp_path / "out", "size=4m") as out:
        swarm = Swarm(cat.service_url, tmp_path, "--rates", "10,20,40", "--duration", "1.5",
                      "--mix", "search=3,create=1")  # fmt: skip
        with swarm:
            swarm.wait_for("step 1 of")
            fill(out)
            try:
                code = swarm.master.wait(120)
            except subprocess.TimeoutExpired:
                pytest.fail(swarm.logs())
            log = swarm.log()
            assert code == EXIT_WRITE, log
            assert "No space left on device" in log and "Traceback" not in log, log
            assert "cleans up by what it holds in memory" in log, log
            time.sleep(0.2)
            assert left_on_server(cat) == 0, log
        (path,) = out.glob("*.json")
        data = json.loads(path.read_text())  # a valid file, as of its last complete write
        assert data["run"]["tag"] and data["run"]["status"] == "partial"
