"""``sv7 serve`` as a user runs it: a real process, its output, Ctrl-C, and bad options."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from tests.soap_helpers import call, returns

SV7 = [sys.executable, "-m", "igestbench"]


def start(*args: str) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen(
        [*SV7, "serve", *args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 120  # a busy machine took over 30 s to start it
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if line.startswith("Ctrl-C"):
            return proc, lines
    proc.kill()
    proc.wait()
    proc.stdout.close()
    raise AssertionError("\n".join(lines))


def test_serve_prints_its_wsdl_and_accounts_and_stops_on_ctrl_c() -> None:
    proc, lines = start("--port", "0")
    try:
        (wsdl,) = [line.split(" ", 1)[1] for line in lines if line.startswith("WSDL: ")]
        assert any("simple/root:root" in line for line in lines)
        r = requests.get(wsdl, timeout=5)
        assert r.status_code == 200 and b"ICATService" in r.content
        (rest,) = [line.split(" ", 1)[1] for line in lines if line.startswith("REST: ")]
        assert requests.get(rest + "/version", timeout=5).json() == {"version": "6.2.0"}
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGINT)
    try:
        assert proc.wait(timeout=60) == 0  # a busy machine took 10-15 s to stop sv7 serve
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def test_serve_with_a_users_file_and_profile(tmp_path: Path) -> None:
    users = tmp_path / "users.toml"
    users.write_text('[[user]]\nmechanism = "db"\nname = "alice"\npassword = "pw"\nroot = true\n')
    proc, lines = start("--profile", "4.3", "--users", str(users), "--db", str(tmp_path / "c.db"))
    try:
        assert any("4.3.3" in line for line in lines)
        assert any("db/alice (root)" in line for line in lines)
        assert any(line.startswith("no rules:") for line in lines)
    finally:
        stop(proc)


def test_serve_with_example_data_that_everyone_may_read(tmp_path: Path) -> None:
    db = str(tmp_path / "example.db")
    args = ("--example-data", "--friendly", "db=Database", "--user", "db/ann:pw", "--db", db)
    proc, lines = start(*args)
    try:
        assert any(line.startswith("example data: Facility EXAMPLE") for line in lines)
        (wsdl,) = [line.split(" ", 1)[1] for line in lines if line.startswith("WSDL: ")]
        url = wsdl.removesuffix("?wsdl")
        (info,) = returns(call(url, "getAuthenticatorInfo"))
        assert (info.findtext("mnemonic"), info.findtext("friendly")) == ("db", "Database")
        sid = returns(
            call(
                url,
                "login",
                "<plugin>db</plugin><credentials><entry><key>username"
                "</key><value>ann</value></entry><entry><key>password</key><value>pw"
                "</value></entry></credentials>",
            )
        )[0].text
        found = returns(
            call(url, "search", f"<sessionId>{sid}</sessionId><query>Facility.name</query>")
        )
        assert [f.text for f in found] == ["EXAMPLE"]
    finally:
        stop(proc)
    proc, lines = start("--example-data", "--db", db)  # a database that exists stays as it was
    try:
        assert any(line.startswith("database: as it was left") for line in lines)
    finally:
        stop(proc)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SV7, *args], capture_output=True, text=True, timeout=60)


def test_bad_options_get_one_clear_line_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    cases = {
        # a folder that cannot be made (below a file; /proc, /sys): was a traceback (tryout 4)
        ("serve", "--ids-storage", str(tmp_path / "a-file" / "ids")):
            "--ids-storage " + str(tmp_path / "a-file" / "ids") + ": cannot make the IDS's",
        ("serve", "--host", "192.0.2.1"): "binds to loopback only",
        ("serve", "--user", "alice"): "expected MECHANISM/NAME:PASSWORD",
        ("serve", "--users", str(tmp_path / "none.toml")): "cannot read the users file",
        ("serve", "--error-rate", "2"): "error-rate must be between 0 and 1",
        ("serve", "--tls", "bogus"): "unknown TLS mode",
        ("serve", "--port", "abc"): "sv7 serve: argument --port: expected a whole number from 0",
        ("serve", "--db", str(tmp_path / "no" / "x.db")): "not a file in an existing directory",
        ("serve", "--stall-seconds", "nan"): "expected a number of at least 0, not nan",
        ("serve", "--session-minutes", "0"): "expected a number greater than 0, not 0",
        ("report", str(tmp_path / "gone.json"), "-o", str(tmp_path / "r.html")): "not found",
        ("report", str(tmp_path / "gone.json"), "-o", str(tmp_path)): "is a directory",
        ("merge", str(tmp_path), "-o", str(tmp_path)): "is a directory",
        ("serve", "--friendly", "Simple"): "expected MECHANISM=NAME",
    }
    for args, message in cases.items():
        result = run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_bad_options_of_the_monitoring_probe_are_unknown_not_critical() -> None:
    for args in (("--bogus",), ("--target",), ("--target", "http://127.0.0.1:9", "--timeout", "x")):
        result = run("check", *args)
        assert result.returncode == 3, (args, result.stdout, result.stderr)
        assert result.stdout.startswith("ICAT UNKNOWN - ") and result.stdout.count("\n") == 1


def test_no_command_prints_help() -> None:
    result = run()
    assert result.returncode == 2 and "serve" in result.stdout
