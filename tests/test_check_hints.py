"""``sv7 check`` explains a failure as ``sv7 run`` does: the cause, and the same hint.

Run as a user runs it (a real ``sv7 check`` process, its password in the environment or in
sv7.toml) against ``sv7 serve`` and a closed port on 127.0.0.1. The hints are compared with the
one table ``sv7 run`` words its own from (:data:`igestbench.results.causes.MEANINGS`), so the two
commands cannot drift apart; a refused login's hint names where the password came from, and the
password itself shows nowhere.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from igestbench.results.causes import MEANINGS
from tests.test_cli_serve import SV7, start, stop

#: Distinctive, so that any echo of it in the output is found.
WRONG_PASSWORD = "not-the-Passw0rd-4711"


@pytest.fixture(scope="module")
def served() -> Iterator[str]:
    """``HOST:PORT`` of an ``sv7 serve`` (plain HTTP) in its own process."""
    proc, lines = start("--port", "0")
    try:
        (wsdl,) = [line.split(" ", 1)[1] for line in lines if line.startswith("WSDL: ")]
        yield wsdl.removeprefix("http://").split("/", 1)[0]
    finally:
        stop(proc)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens there any more


def check(
    target: str, cwd: Path, password: str | None = "root"
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SV7_")}
    env.update({"SV7_AUTH": "simple", "SV7_USER": "root"})
    if password is not None:
        env["SV7_PASSWORD"] = password
    return subprocess.run([*SV7, "check", "--target", target, "--timeout", "10"], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=300)  # fmt: skip


def assert_one_critical_line(result: subprocess.CompletedProcess[str], cause: str) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout.startswith(f"ICAT CRITICAL - {cause}: "), result.stdout
    assert result.stdout.count("\n") == 1 and "Traceback" not in result.stderr, result
    return result.stdout


def test_a_refused_port_is_explained_with_the_hint_of_sv7_run(tmp_path: Path) -> None:
    result = check(f"http://127.0.0.1:{closed_port()}/ICATService/ICAT", tmp_path)
    line = assert_one_critical_line(result, "refused")
    assert f"(hint: {MEANINGS['refused'][1]})" in line


def test_host_port_without_a_scheme_on_a_plain_http_port_says_use_http(
    served: str, tmp_path: Path
) -> None:
    """``HOST:PORT`` means https:// (as for every command); a port that answers plain HTTP gets
    the hint to say http://."""
    line = assert_one_critical_line(check(served, tmp_path), "tls-plain-http")
    assert f"(hint: {MEANINGS['tls-plain-http'][1]})" in line


def test_a_wrong_password_names_where_it_came_from_and_never_shows(
    served: str, tmp_path: Path
) -> None:
    result = check(f"http://{served}", tmp_path, WRONG_PASSWORD)
    line = assert_one_critical_line(result, "auth-refused")
    assert ("(hint: check the authenticator, user name and password of simple/root (the "
            "password came from SV7_PASSWORD))") in line  # fmt: skip
    # the account by its name: check never writes, so not as "writer account" (TRYOUT3 14)
    assert "the login: account simple/root: " in line and "writer" not in line
    assert WRONG_PASSWORD not in result.stdout + result.stderr

    toml = tmp_path / "sv7.toml"  # the same account, its password in sv7.toml this time
    toml.write_text(f'[credentials]\npassword = "{WRONG_PASSWORD}"\n', encoding="utf-8")
    result = check(f"http://{served}", tmp_path, password=None)
    line = assert_one_critical_line(result, "auth-refused")
    assert "(the password came from sv7.toml [credentials]))" in line
    assert WRONG_PASSWORD not in result.stdout + result.stderr


def test_a_probe_that_crashes_on_a_password_does_not_print_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever a failure echoes (an exception's text, a server's message), the status line that
    monitoring systems keep holds no password."""
    import igestbench.verify.check as probe
    from igestbench.verify import Account

    def crash(*args: object, **kwargs: object) -> None:
        raise RuntimeError(f"login map {{'username': 'root', 'secret': '{WRONG_PASSWORD}'}}")

    monkeypatch.setattr(probe, "run_verification", crash)
    account = Account("simple", "root", WRONG_PASSWORD, role="writer")
    code, line = probe.run_check("http://127.0.0.1:1", 2.0, None, False, [account])
    assert code == probe.UNKNOWN and line.startswith("ICAT UNKNOWN - probe failed: RuntimeError")
    assert WRONG_PASSWORD not in line
