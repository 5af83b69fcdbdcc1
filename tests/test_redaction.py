"""No password and no session id in any output: the redaction of every logger, ``--debug`` too."""

from __future__ import annotations

import logging
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from igestbench import redaction
from igestbench.config import ServeConfig
from igestbench.mock.auth import Account
from igestbench.mock.catalogue import LocalCatalogue
from tests.soap_helpers import issued_sessions
from tests.test_run import FAST_SWEEP, credentials_env, sv7

LOGIN_ENVELOPE = (
    '<soap-env:Envelope xmlns:soap-env="http://schemas.xmlsoap.org/soap/envelope/">'
    '<soap-env:Body><ns0:login xmlns:ns0="http://icatproject.org"><plugin>simple</plugin>'
    "<credentials><entry><key>username</key><value>alice-7q</value></entry>"
    "<entry><key>password</key><value>{password}</value></entry></credentials>"
    "</ns0:login></soap-env:Body></soap-env:Envelope>"
)
LOGIN_ANSWER = (
    '<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body>'
    '<ns2:loginResponse xmlns:ns2="http://icatproject.org"><return>{sid}</return>'
    "</ns2:loginResponse></S:Body></S:Envelope>"
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (LOGIN_ENVELOPE.format(password="pw-unknown-1"), "pw-unknown-1"),
        (LOGIN_ANSWER.format(sid="5e55-1d-unknown"), "5e55-1d-unknown"),
        ("<ns0:search><sessionId>5e55-1d-unknown</sessionId>", "5e55-1d-unknown"),
        ("GET /icat/entityManager?sessionId=5e55-1d-unknown&query=x", "5e55-1d-unknown"),
        ('{"sessionId": "5e55-1d-unknown"}', "5e55-1d-unknown"),
        ("{'username': 'me', 'password': 'pw-unknown-1'}", "pw-unknown-1"),
        ("username=me&password=pw-unknown-1", "pw-unknown-1"),
        ("{'Authorization': 'Basic cHctdW5rbm93bi0x'}", "cHctdW5rbm93bi0x"),
        ("Authorization: Bearer cHctdW5rbm93bi0x", "cHctdW5rbm93bi0x"),
        ("Unable to find user by sessionid: 5e55-1d-unknown", "5e55-1d-unknown"),
        ('(Content){\n   tag = "sessionId"\n   value = "5e55-1d-unknown"', "5e55-1d-unknown"),
    ],
)
def test_secrets_are_found_by_pattern(text: str, secret: str) -> None:
    scrubbed = redaction.scrub(text)
    assert secret not in scrubbed
    assert redaction.SESSION in scrubbed or redaction.SECRET in scrubbed


def test_the_user_name_stays_and_known_secrets_go_anywhere() -> None:
    password, sid = secrets.token_hex(8), secrets.token_hex(8)
    redaction.remember(password)
    redaction.remember_session(sid)
    text = redaction.scrub(f"https://host/x?q={password} ({sid}) {LOGIN_ENVELOPE}")
    assert password not in text and sid not in text
    assert "<value>alice-7q</value>" in text  # the user name is no secret
    assert redaction.scrub("a short one: pw7") == "a short one: pw7"
    redaction.remember("pw7")
    # a short secret goes as a whole word only, not out of innocent longer words
    assert redaction.scrub("pw7 and pw77") == f"{redaction.SECRET} and pw77"


def test_every_logger_is_scrubbed_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    redaction.install_record_redaction()
    sid = secrets.token_hex(10)
    redaction.remember_session(sid)
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("zeep.transports").debug("HTTP Post to %s:\n%s", "url", sid)
        try:
            raise ValueError(f"session {sid}")
        except ValueError:
            logging.getLogger("suds.client").exception("failed")
    assert caplog.records and sid not in caplog.text


def test_a_traceback_nobody_caught_is_scrubbed_too() -> None:
    code = (
        "from igestbench import redaction\n"
        "redaction.install(30)\n"
        "redaction.remember('pw-uncaught-123')\n"
        "raise RuntimeError('pw-uncaught-123 <sessionId>5e55-1d</sessionId>')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=credentials_env()
    )
    assert "RuntimeError" in done.stderr and "Traceback" in done.stderr
    assert "pw-uncaught-123" not in done.stderr and "5e55-1d" not in done.stderr


def test_debug_run_leaks_no_password_and_no_session_id(tmp_path: Path) -> None:
    """``sv7 --debug run`` with all three flavours, worker processes and the sweep: stderr and
    the result file hold neither the password nor any session id the server issued."""
    password = "pw-" + secrets.token_hex(12)
    accounts = (
        Account("simple", "ingest", password, root=True),
        Account("simple", "root", "root", root=True),
    )
    with LocalCatalogue(ServeConfig(accounts=accounts)) as cat:
        issued = issued_sessions(cat)
        result = sv7(
            "--debug",
            "run",
            "--target",
            cat.service_url,
            "--parts",
            "verify,single-query,sweep",
            "--flavour",
            "zeep,python-icat,lean",
            "--concurrency",
            "1",
            "--queries",
            "3",
            *FAST_SWEEP,
            "--out",
            str(tmp_path),
            env=credentials_env(password=password),
        )
    assert result.returncode == 0, result.stderr[-3000:]
    logged = result.stdout + result.stderr
    written = "".join(p.read_text() for p in tmp_path.glob("*.json"))
    assert len(issued) > 5
    for text in (logged, written):
        assert password not in text
        leaked = [sid for sid in issued if sid in text]
        assert not leaked, f"{len(leaked)} of {len(issued)} session ids leaked"
    # and the debug logs were there to leak them: zeep's envelopes in the runner, suds' in a
    # worker process (which sets up its logging itself)
    assert "HTTP Post to" in logged and "sending to (" in logged
    assert "single-query-python-icat-c1-w0</name>" in logged  # suds, in the worker
    assert "<key>password</key><value><secret></value>" in logged


# --- a short password: masked where a password can stand, not out of paths and names -----------


def test_a_short_password_stays_out_of_paths_host_names_and_user_names() -> None:
    """TRYOUT4 #18: after a login as simple/root with password root, a full disk's message read
    ``/tmp/pytest-of-<secret>/…``. A short, word-like password is also a folder, a host, a
    user: it is masked where it stands on its own, not inside a name."""
    known = redaction.Redactor()  # this test's own: the process's stays as it was
    known.remember("root")
    for text in (
        "sv7 report: /tmp/pytest-of-root/pytest-1404/c/report.html: cannot write (No space "
        "left on device)",
        "<createId>simple/root</createId>",  # mechanism/user: a user name
        "https://root.example.org:8181/ICATService/ICAT",
        "/root/.config/sv7.toml",
        "root = <part name=\"parameters\" element=\"tns:login\"/>",  # suds' repr: a key
        "rootless, uproot, root_ca.pem, root-ca",
    ):
        assert known.scrub(text) == text


@pytest.mark.parametrize(
    "text",
    [
        LOGIN_ENVELOPE.format(password="root"),
        '{"plugin":"simple","credentials":[{"username":"alice-7q"},{"password":"root"}]}',
        # the same REST login as its form sends it, URL-encoded
        "json=%7B%22plugin%22%3A%22simple%22%2C%22credentials%22%3A%5B%7B%22username%22%3A%22"
        "alice-7q%22%7D%2C%7B%22password%22%3A%22root%22%7D%5D%7D",
        "https://alice-7q:root@icat.example.org/ICATService/ICAT",
        "GET /login?user=alice-7q&password=root HTTP/1.1",
        'password = "root"',
        "{'username': 'alice-7q', 'password': 'root'}",
        '   key = "password"\n   value = "root"',  # suds' repr of the credentials
        "simple/alice-7q:root",
        "login refused for 'root'",
        "root",
    ],
)
def test_a_short_password_goes_where_a_password_can_stand(text: str) -> None:
    known = redaction.Redactor()
    known.remember("root")
    scrubbed = known.scrub(text)
    assert "root" not in scrubbed.replace("<secret>", ""), scrubbed
    assert redaction.SECRET in scrubbed


def test_a_short_password_goes_by_pattern_before_anyone_knows_it() -> None:
    """Where a password can stand it goes even if no login told the process about it."""
    unknown = "Zq3"
    for text in (
        LOGIN_ENVELOPE.format(password=unknown),
        f'{{"credentials":[{{"username":"alice-7q"}},{{"password":"{unknown}"}}]}}',
        f"json=%7B%22password%22%3A%22{unknown}%22%7D",
        f"https://alice-7q:{unknown}@icat.example.org/",
        f"password={unknown}",
    ):
        assert unknown not in redaction.Redactor().scrub(text), text


def test_a_long_or_mixed_password_goes_everywhere_a_word_like_one_does_not() -> None:
    assert redaction.distinctive("Icat-2024") and redaction.distinctive("3f2a9c1d0b7e4455")
    assert not redaction.distinctive("password") and not redaction.distinctive("12345678")
    assert not redaction.distinctive("root") and not redaction.distinctive("x7#Q")
    known = redaction.Redactor()
    known.remember("Icat-2024")
    assert "Icat-2024" not in known.scrub("/home/u/Icat-2024x/y and a.Icat-2024.b")


def test_debug_run_with_a_short_password_masks_it_in_every_login(tmp_path: Path) -> None:
    """``sv7 --debug run`` as simple/root with password root (SOAP through zeep and suds, and
    REST): every login dumped has its password masked, and the user name simple/root, suds'
    ``root`` attribute and the paths stay as they are."""
    accounts = (Account("simple", "root", "root", root=True),)
    with LocalCatalogue(ServeConfig(accounts=accounts)) as cat:
        result = sv7(
            "--debug", "run", "--target", cat.service_url, "--parts", "verify,single-query",
            "--flavour", "zeep,python-icat,rest", "--concurrency", "1", "--queries", "2",
            "--out", str(tmp_path), env=credentials_env(user="root", password="root"),
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    logged = result.stdout + result.stderr
    written = "".join(p.read_text() for p in tmp_path.glob("*.json"))
    for text in (logged, written):
        assert "<value>root</value>" not in text
        assert 'value = "root"' not in text  # suds' repr of the credentials map
        assert '"password": "root"' not in text and "password=root" not in text
    # the logins were there to leak: zeep's envelope, suds' repr of the credentials
    assert "<key>password</key><value><secret></value>" in logged
    assert 'key = "password"\n' in logged and 'value = "<secret>"' in logged
    # and nothing that only looks like the password was masked
    assert "<createId>simple/root</createId>" in logged
    assert "root = <part name=" in logged
    assert "simple/<secret>" not in logged and "<secret> = <part" not in logged
