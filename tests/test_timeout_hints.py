"""A ``--timeout`` spent connecting and one spent waiting for a slow answer are told apart.

A connection that never comes (a firewall drops the packets, no route) is ``connect-timeout``,
with a hint at the firewall and the route; a server that accepted the connection and answers too
slowly is ``timeout``, with a hint to raise ``--timeout``. Every client flavour, both ways a
connect can run out (its own connect timeout, or the budget of the whole call), and what
``sv7 run`` prints.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from igestbench.client import FLAVOURS, ClientConfig, TransportCause, TransportFailure, connect
from igestbench.verify.diagnosis import diagnose
from tests.slow_servers import DroppingPort, SlowServer
from tests.test_run import credentials_env, result_of

TIMEOUT_S = 1.5


def failure_of(config: ClientConfig, flavour: str) -> TransportFailure:
    with pytest.raises(TransportFailure) as raised:
        connect(config, flavour).close()
    return raised.value


@pytest.mark.parametrize("connect_timeout", [TIMEOUT_S, 30.0], ids=["socket", "budget"])
@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_a_connection_that_never_comes_is_a_connect_timeout(
    flavour: str, connect_timeout: float, tmp_path: Path
) -> None:
    with DroppingPort() as port:
        config = ClientConfig(port.url, connect_timeout=connect_timeout, read_timeout=TIMEOUT_S,
                              cache_dir=tmp_path)  # fmt: skip
        exc = failure_of(config, flavour)
    assert exc.cause is TransportCause.CONNECT_TIMEOUT, exc
    diagnosis = diagnose(exc)
    assert diagnosis.cause == "connect-timeout" and diagnosis.hint is not None
    assert "firewall" in diagnosis.hint and "--timeout" not in diagnosis.hint


@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
def test_a_slow_answer_is_a_timeout_with_another_hint(flavour: str, tmp_path: Path) -> None:
    with SlowServer("stall") as server:
        config = ClientConfig(server.url, connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S,
                              cache_dir=tmp_path)  # fmt: skip
        exc = failure_of(config, flavour)
    assert exc.cause is TransportCause.TIMEOUT, exc
    diagnosis = diagnose(exc)
    assert diagnosis.cause == "timeout" and diagnosis.hint is not None
    assert "raise --timeout" in diagnosis.hint and "firewall" not in diagnosis.hint


def run(url: str, out: Path) -> tuple[str, str]:
    result = subprocess.run(
        [sys.executable, "-m", "igestbench", "run", "--target", url, "--timeout", "2",
         "--parts", "verify", "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=credentials_env(),
    )  # fmt: skip
    assert result.returncode == 4, result.stderr
    return result.stdout, result.stderr


def test_sv7_run_gives_each_its_own_one_line_hint(tmp_path: Path) -> None:
    with DroppingPort() as port:
        _, dropped = run(port.url, tmp_path / "dropped")
    with SlowServer("stall") as server:
        _, slow = run(server.url, tmp_path / "slow")
    assert "connect-timeout: " in dropped and "firewall" in dropped, dropped
    assert "raise --timeout" not in dropped
    assert "timeout: " in slow and "raise --timeout" in slow, slow
    assert "connect-timeout" not in slow
    assert result_of(tmp_path / "dropped")["probe"]["http"]["error"] == "connect-timeout"  # type: ignore[index]
    assert result_of(tmp_path / "slow")["probe"]["http"]["error"] == "timeout"  # type: ignore[index]


def test_sv7_check_names_the_connect_timeout(tmp_path: Path) -> None:
    with DroppingPort() as port:
        result = subprocess.run(
            [sys.executable, "-m", "igestbench", "check", "--target", port.url, "--timeout", "2"],
            capture_output=True, text=True, timeout=120, env=credentials_env(),
        )  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout.startswith("ICAT CRITICAL - connect-timeout: "), result.stdout
