"""``sv7 check --deadline``: the whole probe ends in time, logs out, and says what it checked.

TRYOUT4 #5: against a catalogue answering each call in 2.5 s, ``sv7 check`` said OK after 110 s,
long after Nagios's 60 s service check timeout. The catalogue here answers each call in 1 s, so
that the checks would need well over 30 s; the deadline of 2 s must end them long before.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pytest

from igestbench.client import ClientConfig
from igestbench.client.deadline import ExchangeTimeout, budget, grace, remaining
from igestbench.config import FaultKnobs, ServeConfig, load_check_config
from igestbench.errors import UsageError
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.verify import Account, CheckRecord, VerificationResult, cmd_check, run_check
from igestbench.verify.check import Limits, add_check_arguments, evaluate
from sv_tests.conftest import logged_in

READER = Account("simple", "reader", "reader", role="reader")


def test_a_slow_catalogue_is_critical_within_the_deadline_and_left_logged_out() -> None:
    with LocalCatalogue(ServeConfig(knobs=FaultKnobs(latency_ms=1000))) as cat:
        start = time.monotonic()
        code, line = run_check(cat.service_url, 10.0, None, False, [READER], deadline=2.0)
        took = time.monotonic() - start
        open_sessions = len(cat.service.sessions)
    assert code == 2, line
    assert line.startswith("ICAT CRITICAL - timeout: the checks took longer than --deadline 2 s")
    assert "; not checked " in line and "ids" in line.split("; not checked ")[1]
    assert "(hint: the catalogue answers too slowly" in line
    assert " time=" in line and line.endswith("s;;2;")
    # the call in flight is ended, what was opened is logged out (within its grace)
    assert open_sessions == 0
    assert took < 2 + 5 + 20, f"{took:.0f} s"  # without the deadline: over 30 s


def _record(check_id: str, part: str, outcome: str) -> CheckRecord:
    return CheckRecord(check_id, part, outcome, 0.1, None, None, None)


def test_the_line_names_what_was_checked_and_what_not() -> None:
    result = VerificationResult(
        checks=(
            _record("c1", "connectivity", "passed"),
            _record("s1", "soap", "passed"),
            _record("l1", "session", "passed"),
            _record("l2", "session", "skipped"),
            _record("r1", "rest", "skipped"),
        ),
        scores=None,
        api_version="6.2.0",
        facts={"login_ms": 2517.2, "rtt_ms": 0.1},
        out_of_time=("l2", "r1"),
        elapsed_s=40.3,
    )
    code, line = evaluate(result, deadline=40.0)
    assert code == 2
    assert ("ICAT CRITICAL - timeout: the checks took longer than --deadline 40 s: checked "
            "connectivity, soap; not checked session, rest (hint: the catalogue answers too "
            "slowly") in line  # fmt: skip
    assert line.endswith("| rtt=0.1ms;;; login=2517.2ms;;; time=40.3s;;40;")
    # a check that failed for its own reason first keeps its failure; the line adds the rest
    failed = CheckRecord("c2", "connectivity", "failed", 0.1, "refused", "nothing there", "h")
    code, line = evaluate(
        VerificationResult(checks=(failed, *result.checks), scores=None, api_version=None,
                           out_of_time=("r1",), elapsed_s=40.3),
        deadline=40.0,
    )  # fmt: skip
    assert code == 2
    assert line.startswith("ICAT CRITICAL - refused: nothing there (hint: h); then the deadline "
                           "ran out (rest not checked)")  # fmt: skip


def test_a_logout_after_the_deadline_still_happens() -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        config = ClientConfig(cat.service_url, connect_timeout=10, read_timeout=10)
        session = logged_in(config, "zeep", READER)
        session.__enter__()
        assert len(cat.service.sessions) == 1
        with budget(0.0):  # the deadline has run out when the check's block ends
            session.__exit__(None, None, None)
        assert len(cat.service.sessions) == 0


def test_grace_gives_a_cleanup_time_after_a_spent_budget() -> None:
    with budget(0.0):
        with pytest.raises(ExchangeTimeout):
            remaining()
        with grace(5.0):
            left = remaining()
            assert left is not None and 4.0 < left <= 5.0
            with budget(1.0):  # a call inside keeps its own, shorter budget
                inner = remaining()
                assert inner is not None and inner <= 1.0
        with pytest.raises(ExchangeTimeout):  # and after the cleanup the budget is spent again
            remaining()
    with grace(5.0):  # without a budget: nothing changes
        assert remaining() is None


def test_the_deadline_comes_from_the_command_line_environment_or_sv7_toml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")  # no ./sv7.toml
    assert load_check_config({}, None, {}).deadline == 40.0
    toml = tmp_path / "sv7.toml"
    toml.write_text("[check]\ndeadline = 30\n")
    monkeypatch.chdir(tmp_path)  # ./sv7.toml is read as by every command
    assert load_check_config({}, None, {}).deadline == 30.0
    assert load_check_config({"deadline": None}, toml, {}).deadline == 30.0
    assert load_check_config({}, toml, {"SV7_DEADLINE": "20"}).deadline == 20.0
    assert load_check_config({"deadline": "10"}, toml, {"SV7_DEADLINE": "20"}).deadline == 10.0
    with pytest.raises(UsageError, match=r"^--deadline: expected a number greater than 0"):
        load_check_config({"deadline": "0"}, toml, {})
    toml.write_text("[check]\ndeadline = -1\n")
    with pytest.raises(UsageError, match=r"sv7.toml \[check\] deadline: expected a number"):
        load_check_config({}, toml, {})
    toml.write_text("[check]\ndedline = 5\n")
    with pytest.raises(UsageError, match=r"unknown option\(s\) in \[check\]: dedline \(did you "
                       r"mean deadline\?\)"):  # fmt: skip
        load_check_config({}, toml, {})


def test_a_bad_deadline_is_unknown_naming_the_option(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser()
    add_check_arguments(parser)
    args = parser.parse_args(["--target", "http://127.0.0.1:9", "--no-login", "--deadline", "x"])
    assert cmd_check(args) == 3
    assert capsys.readouterr().out.startswith("ICAT UNKNOWN - --deadline: expected a number")


def test_a_slow_but_working_catalogue_is_warning_or_critical_by_the_thresholds() -> None:
    ok = VerificationResult(
        checks=(_record("l1", "session", "passed"),), scores=None, api_version="6.2.0",
        facts={"rtt_ms": 0.4, "login_ms": 2517.2}, elapsed_s=12.0,
    )  # fmt: skip
    assert evaluate(ok, deadline=40.0)[0] == 0  # no thresholds: its times are only perfdata
    code, line = evaluate(ok, deadline=40.0, limits=Limits(warning_ms=1000))
    assert code == 1
    assert line == ("ICAT WARNING - 6.2.0, login ok; slow: login 2517 ms (over --warning-ms "
                    "1000) | rtt=0.4ms;1000;; login=2517.2ms;1000;; time=12.0s;;40;")
    code, line = evaluate(ok, deadline=40.0, limits=Limits(1000, 2000))
    assert code == 2 and "slow: login 2517 ms (over --critical-ms 2000)" in line
    assert "login=2517.2ms;1000;2000;" in line
    assert evaluate(ok, deadline=40.0, limits=Limits(3000, 5000))[0] == 0


def test_the_thresholds_reach_the_probe_from_the_command_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, value in (("SV7_AUTH", "simple"), ("SV7_USER", "reader"), ("SV7_PASSWORD", "reader")):
        monkeypatch.setenv(name, value)
    parser = argparse.ArgumentParser()
    add_check_arguments(parser)
    with LocalCatalogue(ServeConfig()) as cat:
        # every call takes longer than a microsecond: WARNING, whatever the machine
        args = parser.parse_args(["--target", cat.service_url, "--warning-ms", "0.001"])
        assert cmd_check(args) == 1
    out = capsys.readouterr().out
    assert out.startswith("ICAT WARNING - 6.2.0, login ok, REST ok, IDS ok; slow: ")
    assert ";0.001;;" in out
    with pytest.raises(UsageError, match="--warning-ms 5 is above --critical-ms 2"):
        load_check_config({"warning_ms": "5", "critical_ms": "2"}, None, {})
