"""A rate that sv7 run or sv7 swarm takes or prints says its unit in words: requests per second.

The options that take one (--max-rate of both, --rates of sv7 swarm master) say so in their help
and in their errors; the lines that say why a sweep ended name the rate with its unit, as the
step lines and the verdict do (results/sweeps.py, RATE_UNIT).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from igestbench.measure.schedule import OpenLoop
from igestbench.measure.sweep import SweepConfig, run_sweep
from igestbench.workloads.base import WrongResult
from tests.test_run import credentials_env


def sv7(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "igestbench", *args], capture_output=True,
                          text=True, timeout=60, env=credentials_env())  # fmt: skip


def option_help(text: str, option: str) -> str:
    """The help of ``option`` in ``--help`` output, its lines joined."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith(option + " "))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if line.strip().startswith("-"):
            break
        block.append(line)
    return " ".join(" ".join(block).split())


@pytest.mark.parametrize(("command", "option"), [
    (("run",), "--max-rate"), (("swarm", "master"), "--max-rate"),
    (("swarm", "master"), "--rates"),
])  # fmt: skip
def test_the_help_of_every_rate_option_says_requests_per_second(
    command: tuple[str, ...], option: str
) -> None:
    shown = sv7(*command, "--help")
    assert shown.returncode == 0, shown.stderr
    assert "in requests per second (requests/s" in option_help(shown.stdout, option)


@pytest.mark.parametrize("args", [
    ("run", "--max-rate", "0"), ("run", "--max-rate", "fast"),
    ("swarm", "master", "--rates", "50,x"), ("swarm", "master", "--rates", ","),
])  # fmt: skip
def test_a_bad_rate_is_refused_with_its_unit(args: tuple[str, ...]) -> None:
    result = sv7(*args)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert "requests per second (requests/s)" in line, line


class FakeClient:
    def close(self) -> None:
        pass


def test_why_a_sweep_ended_names_the_rate_with_its_unit() -> None:
    def wrong(client: object) -> object:
        raise WrongResult("never right")

    config = SweepConfig(slo_ms=50, max_rate=20, rates=[10, 20], step_s=0.3, warmup_s=0)
    with OpenLoop(FakeClient, {"search": wrong}, workers=2) as load:  # type: ignore[arg-type]
        result = run_sweep(load, config)
    assert result.stopped is not None
    assert result.stopped.startswith("10.0 requests/s: errors on 100% of the calls")
