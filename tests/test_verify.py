"""Service verification: sv_tests pass on the local catalogue, and every cause is diagnosed.

Each cause of the diagnosis list is provoked for real on loopback (certificates the client must
refuse, a closed port, a listener that never answers, a web server that is not ICAT, a wrong
password, a read-only writer, a wrong expectation) and the recorded check must name it. All
traffic stays on 127.0.0.1; the DNS case uses a name under ``.invalid``, which never resolves.
"""

from __future__ import annotations

import argparse
import dataclasses
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.accounts import load_logins
from igestbench.client import ClientConfig, connect
from igestbench.config import FaultKnobs, ServeConfig
from igestbench.errors import UsageError
from igestbench.icat.beans import Bean
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.results.causes import tls_cause
from igestbench.verify import (
    CAUSES,
    Account,
    CheckRecord,
    VerificationResult,
    VerifyOptions,
    add_check_arguments,
    cmd_check,
    run_check,
    run_verification,
)
from igestbench.verify.options import ReferenceQuery, options_from

READER = Account("simple", "reader", "reader", role="reader")
WRITER = Account("simple", "ingest", "ingest", role="writer")
#: What ``seed`` creates, as the reader sees it.
REFERENCE = (
    ReferenceQuery("facilities", "SELECT COUNT(f) FROM Facility f", 1),
    ReferenceQuery("datafiles", "SELECT df FROM Datafile df", 3),
)
CHECK_KEYS = {"id", "part", "outcome", "duration_s", "cause", "explanation", "hint"}


def ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


def seed(cat: LocalCatalogue) -> None:
    """A small representative hierarchy: 1 Facility, Investigation, Dataset, 3 Datafiles.

    And what a deployment's administrator adds to a fresh ICAT so that users see it: a rule
    letting every logged-in user read everything.
    """
    client = connect(ClientConfig(cat.service_url, ca_file=cat.tls.ca if cat.tls else None))
    client.login("simple", {"username": "root", "password": "root"})
    client.create_many(
        [Bean("Rule", {"what": name, "crudFlags": "R"}) for name in client.entity_names()]
    )
    facility = ref("Facility", client.create(Bean("Facility", {"name": "ESRF"})))
    inv_type, ds_type = client.create_many(
        [
            Bean(e, {"name": "raw", "facility": facility})
            for e in ("InvestigationType", "DatasetType")
        ]
    )
    investigation = {"name": "MX-1", "visitId": "1", "title": "crystals", "facility": facility}
    investigation["type"] = ref("InvestigationType", inv_type)
    inv = ref("Investigation", client.create(Bean("Investigation", investigation)))
    dataset = {"name": "run-1", "investigation": inv, "type": ref("DatasetType", ds_type)}
    ds = ref("Dataset", client.create(Bean("Dataset", dataset)))
    client.create_many([Bean("Datafile", {"name": f"f{i}.nxs", "dataset": ds}) for i in range(3)])
    client.logout()
    client.close()


@pytest.fixture(scope="module")
def local_ca() -> Iterator[LocalCatalogue]:
    """A seeded catalogue behind a certificate of a trustme CA (given to the client or not)."""
    with LocalCatalogue(ServeConfig(tls="ca")) as cat:
        seed(cat)
        yield cat


def verify(target: str, **options: Any) -> VerificationResult:
    return run_verification(VerifyOptions(target=target, timeout=2.0, **options), quiet=True)


def check(result: VerificationResult, name: str) -> CheckRecord:
    found = [c for c in result.checks if c.id.split("::")[-1] == name]
    assert len(found) == 1, f"{name}: {[c.id for c in result.checks]}"
    return found[0]


def assert_cause(
    result: VerificationResult, name: str, cause: str, outcome: str = "failed"
) -> None:
    record = check(result, name)
    assert (record.outcome, record.cause) == (outcome, cause), record
    assert record.explanation and record.hint, record
    assert "Traceback" not in record.explanation


# --- everything passes where all is well ------------------------------------------------------


def test_every_check_passes_on_the_local_catalogue(local_ca: LocalCatalogue) -> None:
    assert local_ca.tls is not None
    result = verify(
        local_ca.service_url,
        site="TEST",
        ca_file=local_ca.tls.ca,
        accounts=(READER, WRITER),
        reference_queries=REFERENCE,
    )
    assert [c.id for c in result.checks if c.outcome != "passed"] == []
    assert {c.part for c in result.checks} == {
        "connectivity", "tls", "soap", "session", "read", "write", "cleanup", "rest", "ids",
    }  # fmt: skip
    assert result.api_version == "6.2.0"
    data = result.to_dict()
    assert all(set(c) == CHECK_KEYS for c in data["checks"])
    assert data["checks"][0]["id"] == "sv_tests/test_connectivity.py::test_dns_resolves"
    scores = data["scores"]
    assert {k: v["level"] for k, v in scores.items()} == {
        "deployment": "other-port",
        "certificate": "local-ca",
        "authentication": "local",
        "content": "representative",
    }
    assert all(v["evidence"] for v in scores.values())
    # the write checks cleaned up after themselves: only the seeded Facility is left
    assert result.facts["cleanup"]["left"] == 0


def test_version_gate_and_plain_http_on_an_icat_4_3() -> None:
    with LocalCatalogue(ServeConfig(profile="4.3")) as cat:
        result = verify(cat.service_url, accounts=(READER, WRITER))
    authenticators = check(result, "test_authenticators_listed")
    assert authenticators.outcome == "skipped" and authenticators.cause is None
    assert authenticators.explanation == "needs ICAT >=4.9, the server runs 4.3.3"
    assert check(result, "test_certificate_chain").outcome == "skipped"
    failed = [c.id for c in result.checks if c.outcome in ("failed", "error")]
    assert failed == []
    assert result.scores is not None and result.scores.deployment.level == "other-port"
    assert result.scores.certificate.level == "none"


# --- one provoked failure per cause -----------------------------------------------------------


def test_tls_unknown_ca(local_ca: LocalCatalogue) -> None:
    result = verify(local_ca.service_url, parts=("tls", "soap"))
    assert_cause(result, "test_certificate_chain", "tls-unknown-ca")
    assert_cause(result, "test_api_version", "tls-unknown-ca")
    assert check(result, "test_certificate_not_self_signed").outcome == "passed"


def test_tls_self_signed() -> None:
    with LocalCatalogue(ServeConfig(tls="self-signed")) as cat:
        result = verify(cat.service_url, parts=("tls",))
    assert_cause(result, "test_certificate_chain", "tls-self-signed")
    assert_cause(result, "test_certificate_not_self_signed", "tls-self-signed")
    assert check(result, "test_certificate_names_host").outcome == "passed"
    assert result.scores is not None and result.scores.certificate.level == "self-signed"


def test_tls_expired() -> None:
    with LocalCatalogue(ServeConfig(tls="expired")) as cat:
        assert cat.tls is not None
        result = verify(cat.service_url, parts=("tls",), ca_file=cat.tls.ca)
    assert_cause(result, "test_certificate_chain", "tls-expired")
    assert_cause(result, "test_certificate_in_date", "tls-expired")


def test_tls_hostname() -> None:
    with LocalCatalogue(ServeConfig(tls="wrong-host")) as cat:
        assert cat.tls is not None
        result = verify(cat.service_url, parts=("tls", "soap"), ca_file=cat.tls.ca)
    assert_cause(result, "test_certificate_names_host", "tls-hostname")
    assert check(result, "test_certificate_chain").outcome == "passed"
    assert_cause(result, "test_wsdl_served_and_parses", "tls-hostname")


def test_tls_to_a_plain_http_port() -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        url = cat.service_url.replace("http://", "https://")
        result = verify(url, parts=("tls", "soap"))
    # the certificate fixture cannot fetch one: an error of the check, with the cause
    assert_cause(result, "test_certificate_chain", "tls-plain-http", outcome="error")
    assert_cause(result, "test_api_version", "tls-plain-http")
    assert "http://" in (check(result, "test_certificate_chain").hint or "")


def test_dns() -> None:
    result = verify("https://sv7-check.invalid/ICATService/ICAT", parts=("connectivity",))
    assert_cause(result, "test_dns_resolves", "dns")
    assert_cause(result, "test_tcp_connects", "dns")


@pytest.fixture()
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens there any more


def test_refused(closed_port: int) -> None:
    result = verify(f"http://127.0.0.1:{closed_port}", parts=("connectivity", "soap"))
    assert check(result, "test_dns_resolves").outcome == "passed"
    assert_cause(result, "test_tcp_connects", "refused")
    assert_cause(result, "test_wsdl_served_and_parses", "refused")


@pytest.fixture()
def silent_port() -> Iterator[int]:
    """A port whose listener completes TCP handshakes but never reads or answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def test_timeout(silent_port: int) -> None:
    options = VerifyOptions(
        target=f"http://127.0.0.1:{silent_port}", timeout=0.3, parts=("connectivity", "soap")
    )
    result = run_verification(options, quiet=True)
    assert check(result, "test_tcp_connects").outcome == "passed"
    assert_cause(result, "test_wsdl_served_and_parses", "timeout")


def test_not_icat(web_server: str) -> None:
    result = verify(web_server + "/index.html", parts=("soap",))
    assert_cause(result, "test_wsdl_served_and_parses", "not-icat")
    assert_cause(result, "test_api_version", "not-icat")


def test_http_status(web_server: str) -> None:
    result = verify(web_server + "/missing/ICATService/ICAT", parts=("soap",))
    assert_cause(result, "test_wsdl_served_and_parses", "http-status")
    assert "HTTP 404" in (check(result, "test_wsdl_served_and_parses").explanation or "")


def test_auth_refused(local_ca: LocalCatalogue) -> None:
    assert local_ca.tls is not None
    wrong = dataclasses.replace(READER, password="not-the-password")
    result = verify(
        local_ca.service_url, ca_file=local_ca.tls.ca, accounts=(wrong,), parts=("session",)
    )
    assert_cause(result, "test_login[reader]", "auth-refused")
    assert_cause(result, "test_refresh", "auth-refused")


def test_insufficient_privileges(local_ca: LocalCatalogue) -> None:
    """The read-only account given as the writer."""
    assert local_ca.tls is not None
    read_only = dataclasses.replace(READER, role="writer")
    result = verify(
        local_ca.service_url, ca_file=local_ca.tls.ca, accounts=(read_only,), parts=("write",)
    )
    assert_cause(result, "test_create_hierarchy", "insufficient-privileges", outcome="error")


def test_wrong_result_and_icat_fault(local_ca: LocalCatalogue) -> None:
    assert local_ca.tls is not None
    queries = (
        ReferenceQuery("wrong", "SELECT COUNT(f) FROM Facility f", 7),
        ReferenceQuery("broken", "SELECT f FROM Facility f WHERE", 1),
    )
    result = verify(
        local_ca.service_url,
        ca_file=local_ca.tls.ca,
        accounts=(READER,),
        reference_queries=queries,
        parts=("read",),
    )
    assert_cause(result, "test_reference_query[wrong]", "wrong-result")
    assert "1 found where 7 are expected" in (
        check(result, "test_reference_query[wrong]").explanation or ""
    )
    assert_cause(result, "test_reference_query[broken]", "icat-fault-BAD_PARAMETER")
    assert check(result, "test_get_by_id").outcome == "passed"


def test_connection_dropped() -> None:
    with LocalCatalogue(ServeConfig(knobs=FaultKnobs(drop_rate=1.0))) as cat:
        result = verify(cat.service_url, parts=("soap",))
    assert check(result, "test_wsdl_served_and_parses").outcome == "passed"  # GETs are served
    assert_cause(result, "test_api_version", "connection")


def test_every_cause_is_provoked_above() -> None:
    provoked = {
        "dns", "refused", "timeout", "connection", "tls-self-signed", "tls-unknown-ca",
        "tls-plain-http",
        "tls-expired", "tls-hostname", "http-status", "not-icat", "auth-refused",
        "insufficient-privileges", "wrong-result", "icat-fault-BAD_PARAMETER",
        "rest-missing",  # tests/test_verify_rest.py: a proxy that forwards SOAP only
        "ids-fault",  # tests/test_verify_ids.py: an IDS that answers ping but fails its version
        "connect-timeout",  # tests/test_timeout_hints.py: a port that drops the connection
    }  # fmt: skip
    assert provoked <= set(CAUSES)
    # not provoked for real: a TLS protocol mismatch, bad options, and bugs in the suite
    assert set(CAUSES) - provoked == {"tls-handshake", "usage", "unexpected"} | {
        c for c in CAUSES if c.startswith("icat-fault-") and c != "icat-fault-BAD_PARAMETER"
    }


# --- diagnosis details, options, sv7 check ------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        ("certificate verify failed: self signed certificate", "tls-self-signed"),
        ("verify failed: self signed certificate in certificate chain", "tls-unknown-ca"),
        ("certificate verify failed: certificate is not yet valid", "tls-expired"),
        ("verify failed: Hostname mismatch, certificate is not valid for 'x'.", "tls-hostname"),
        ("[SSL: WRONG_VERSION_NUMBER] wrong version number", "tls-plain-http"),
        ("[SSL: RECORD_LAYER_FAILURE] record layer failure", "tls-plain-http"),
        ("[SSL: UNSUPPORTED_PROTOCOL] unsupported protocol", "tls-handshake"),
    ],
)  # fmt: skip
def test_tls_messages_of_both_openssl_generations(message: str, cause: str) -> None:
    assert tls_cause(message) == cause


def test_passwords_come_from_the_environment_or_the_credentials_file(tmp_path: Path) -> None:
    creds = tmp_path / "credentials.toml"
    creds.write_text('[writer]\naccount = "simple/ingest"\npassword = "from-file"\n')
    values = {"target": "https://x", "account": ["reader=simple/reader"], "credentials": creds}
    logins = load_logins(values["account"], creds, environ={"SV7_PASSWORD_READER": "from-env"})
    options = options_from(values, logins)
    assert {a.role: a.password for a in options.accounts} == {
        "reader": "from-env",
        "writer": "from-file",
    }
    assert "from-env" not in repr(options) and "from-file" not in repr(options)
    with pytest.raises(UsageError, match="SV7_PASSWORD_READER"):
        load_logins(["reader=simple/reader"], environ={})
    with pytest.raises(UsageError, match="ROLE=MECHANISM/NAME"):
        load_logins(["reader=simple/reader:secret"], environ={})


def test_an_unknown_verify_part_reads_as_a_sentence_with_the_likely_one() -> None:
    from igestbench.icat.credentials import Logins

    with pytest.raises(UsageError) as caught:
        options_from({"verify_parts": "connectivity,sesion"}, Logins())
    assert str(caught.value) == (
        "--verify-parts: unknown part 'sesion' (did you mean 'session'?); choose from "
        "connectivity, tls, soap, session, read, write, cleanup, rest, ids")


def _check_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_check_arguments(parser)
    return parser.parse_args(list(argv))


def test_check_logs_in_with_the_default_account_of_the_environment(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, local_ca: LocalCatalogue
) -> None:
    """The README sets SV7_AUTH/SV7_USER/SV7_PASSWORD right above ``sv7 check``: it uses them."""
    assert local_ca.tls is not None
    for name, value in (("SV7_AUTH", "simple"), ("SV7_USER", "reader"), ("SV7_PASSWORD", "reader")):
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(local_ca.tls.ca.parent)  # no sv7.toml here
    args = _check_args("--target", local_ca.service_url, "--ca-file", str(local_ca.tls.ca))
    assert cmd_check(args) == 0
    assert capsys.readouterr().out.startswith("ICAT OK - 6.2.0, login ok, REST ok, IDS ok |")
    monkeypatch.setenv("SV7_PASSWORD", "wrong")
    assert cmd_check(args) == 2
    assert capsys.readouterr().out.startswith("ICAT CRITICAL - auth-refused: ")


def test_check_ok_with_perfdata(local_ca: LocalCatalogue) -> None:
    assert local_ca.tls is not None
    code, line = run_check(local_ca.service_url, 2.0, local_ca.tls.ca, False, [READER])
    assert code == 0, line
    assert line.startswith("ICAT OK - 6.2.0, login ok, REST ok, IDS ok | rtt=")
    assert all(f" {label}=" in line for label in ("wsdl", "login"))
    # the probe's own time, with the default deadline as its critical threshold
    assert " time=" in line and line.endswith("s;;40;") and "\n" not in line


def test_check_warning_for_a_trusted_self_signed_certificate() -> None:
    with LocalCatalogue(ServeConfig(tls="self-signed")) as cat:
        assert cat.tls is not None
        code, line = run_check(cat.service_url, 2.0, cat.tls.ca, False, [READER])
    assert code == 1, line
    assert line.startswith("ICAT WARNING - tls-self-signed: ")


def test_check_critical_when_refused(closed_port: int) -> None:
    code, line = run_check(f"http://127.0.0.1:{closed_port}", 2.0, None, False, [READER])
    assert code == 2, line
    assert line.startswith("ICAT CRITICAL - refused: ")
    # a connectivity-only probe is just as critical about it
    code, line = run_check(f"http://127.0.0.1:{closed_port}", 2.0, None, False, [],
                           no_login=True)
    assert code == 2 and line.startswith("ICAT CRITICAL - refused: ")


def test_check_without_a_login_is_unknown_unless_asked_for(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, local_ca: LocalCatalogue
) -> None:
    """The issue: "ICAT OK - 6.2.0, no login configured, REST ok", exit 0 — a probe that
    never logged in has not checked the service."""
    assert local_ca.tls is not None
    for name in ("SV7_AUTH", "SV7_USER", "SV7_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(local_ca.tls.ca.parent)  # no sv7.toml here
    target = ("--target", local_ca.service_url, "--ca-file", str(local_ca.tls.ca))
    assert cmd_check(_check_args(*target)) == 3
    line = capsys.readouterr().out
    assert line.startswith("ICAT UNKNOWN - no login configured: set SV7_USER") \
        and "--no-login" in line and line.count("\n") == 1
    assert cmd_check(_check_args(*target, "--no-login")) == 0
    line = capsys.readouterr().out
    assert line.startswith("ICAT OK - 6.2.0, no login (--no-login), REST ok, IDS ok | rtt=")
    assert "login=" not in line  # nothing logged in, nothing timed as a login
    # --no-login asks for no account, even where one is configured
    for name, value in (("SV7_AUTH", "simple"), ("SV7_USER", "reader"), ("SV7_PASSWORD", "x")):
        monkeypatch.setenv(name, value)
    assert cmd_check(_check_args(*target, "--no-login")) == 0
    assert "no login (--no-login)" in capsys.readouterr().out


def test_check_unknown_without_a_target_or_a_password(
    capsys: pytest.CaptureFixture[str], local_ca: LocalCatalogue
) -> None:
    assert run_check("", 2.0, None, False, [])[0] == 3
    parser = argparse.ArgumentParser()
    add_check_arguments(parser)
    args = parser.parse_args(["--target", local_ca.service_url, "--account", "reader=simple/x"])
    assert cmd_check(args) == 3
    out = capsys.readouterr().out
    assert (
        out.startswith("ICAT UNKNOWN - no password for the reader account") and out.count("\n") == 1
    )


def test_hand_run_output_has_diagnoses_not_tracebacks(
    capsys: pytest.CaptureFixture[str], local_ca: LocalCatalogue
) -> None:
    run_verification(VerifyOptions(target=local_ca.service_url, parts=("tls",)))
    out = capsys.readouterr().out
    assert "tls-unknown-ca: the certificate is issued by a CA" in out
    assert "Traceback" not in out and "raise " not in out


FINALISED_STOP = '''
import pathlib

class Client:
    def __del__(self):
        # a signal's stop raised while the collector closes a client, as stopping.py raises it
        raise KeyboardInterrupt("SIGHUP")

def test_a_check_whose_client_is_collected():
    Client()

def test_a_check_after_it():
    pathlib.Path(__file__).with_name("ran-after").touch()
'''


def test_a_stop_raised_in_a_finaliser_stops_the_checks_at_once(tmp_path: Path) -> None:
    """A signal whose stop lands in a ``__del__`` (Python drops it there) still stops the checks
    at the next one and reaches the caller; under ``filterwarnings = error`` (the project's own
    pytest settings, which a checkout's checks pick up) it once failed the whole session
    instead — ``sv7 run`` exited 1 with a traceback (CI, 2026-11-26)."""
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_finaliser.py").write_text(FINALISED_STOP)
    (tmp_path / "pytest.ini").write_text("[pytest]\nfilterwarnings =\n    error\n")
    with pytest.raises(KeyboardInterrupt):
        run_verification(VerifyOptions(target="http://127.0.0.1:9"), quiet=True, sv_tests=checks)
    assert not (checks / "ran-after").exists()


def test_the_checks_leave_no_folder_in_the_users_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest-benchmark, installed beside the suite, made an empty .benchmarks folder wherever
    sv7 run or sv7 check ran."""
    checks = tmp_path / "checks"
    checks.mkdir()
    (checks / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    run_verification(VerifyOptions(target="http://127.0.0.1:9"), quiet=True, sv_tests=checks)
    assert list(here.iterdir()) == []
