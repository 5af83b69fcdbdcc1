"""The duration a run announces against a slow target (TRYOUT4 #8): its calls, times one answer.

The answer time is faked here; what is real is the count of the checks' calls, counted on the
built-in catalogue, which the estimate must keep close to.
"""

from __future__ import annotations

import http.client
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.config import FaultKnobs, RunConfig, ServeConfig, load_run_config
from igestbench.icat.credentials import Credentials
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.run import estimate
from igestbench.run.progress import Progress
from igestbench.run.runner import Runner, Target
from igestbench.verify import Account, VerifyOptions, run_verification

ENV = {"SV7_AUTH": "simple", "SV7_USER": "ingest", "SV7_PASSWORD": "ingest"}


def config(tmp_path: Path, **cli: Any) -> RunConfig:
    values = {"target": "http://127.0.0.1:9", "site": "SLOW", "out": str(tmp_path), **cli}
    return load_run_config(values, None, ENV)


@pytest.fixture(autouse=True)
def _no_sv7_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


def test_a_quick_tour_of_a_300_ms_target_says_it_takes_minutes(tmp_path: Path) -> None:
    tour = config(tmp_path, parts="verify,single-query,burst")
    line = estimate.estimate_line(tour, 300.0)
    # TRYOUT4 #8: this tour took 5 min 27 s against sv7 serve --latency-ms 300
    assert line is not None and line.startswith(
        "the target answers a call in ~300 ms: this run will take about 5 minutes (an estimate: ")
    assert line.endswith("calls one after another); --parts to shorten it")
    assert "--profile quick" in (estimate.estimate_line(
        config(tmp_path, profile="full", parts="single-query"), 300.0) or "")
    # a target near by: nothing to say
    assert estimate.estimate_line(tour, 2.0) is None


def test_the_estimate_grows_with_the_parts_and_counts_asked(tmp_path: Path) -> None:
    small = estimate.plan(config(tmp_path, parts="single-query"), 300.0)
    more = estimate.plan(config(tmp_path, parts="single-query", queries="500"), 300.0)
    both = estimate.plan(config(tmp_path, parts="single-query,burst"), 300.0)
    soap = estimate.plan(config(tmp_path, parts="single-query", interfaces="soap"), 300.0)
    # 450 more queries for each of two interfaces and two levels
    assert small.calls < both.calls and more.calls - small.calls == 450 * 2 * 2
    assert soap.calls < small.calls
    # the sweep is time: at a target slower than the objective it ends after its first step
    sweep = config(tmp_path, parts="sweep")
    assert estimate.plan(sweep, 300.0).fixed_s < estimate.plan(sweep, 1.0).fixed_s


@pytest.fixture
def requests_sent(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every HTTP request this process sends (every client goes through http.client)."""
    sent: list[str] = []
    original = http.client.HTTPConnection.putrequest

    def counting(self: http.client.HTTPConnection, method: str, url: str, *a: Any,
                 **k: Any) -> None:  # fmt: skip
        sent.append(f"{method} {url}")
        original(self, method, url, *a, **k)

    monkeypatch.setattr(http.client.HTTPConnection, "putrequest", counting)
    yield sent


def test_the_checks_make_about_as_many_calls_as_the_estimate_counts(
    requests_sent: list[str],
) -> None:
    writer = Account("simple", "ingest", "ingest", role="writer")
    with LocalCatalogue(ServeConfig()) as cat:
        result = run_verification(VerifyOptions(target=cat.service_url, timeout=10,
                                                accounts=(writer,)), quiet=True)  # fmt: skip
    assert not result.failed
    assert 0.8 * estimate.VERIFY_CALLS <= len(requests_sent) <= 1.2 * estimate.VERIFY_CALLS


def test_the_run_says_it_after_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = io.StringIO()
    with LocalCatalogue(ServeConfig(knobs=FaultKnobs(latency_ms=1))) as cat:
        run = Runner(config(tmp_path, parts="verify,single-query,burst"), Progress(stream, False))
        target = Target(cat.service_url, Credentials("simple", "ingest", "ingest"),
                        _client(cat.service_url), False)  # fmt: skip
        run._say_estimate(target)  # about a millisecond a call: nothing to say
        assert stream.getvalue() == ""
        monkeypatch.setattr(estimate, "answer_ms", lambda client: 300.0)  # a partner far away
        run._say_estimate(target)
    assert stream.getvalue().startswith("sv7: the target answers a call in ~300 ms: this run "
                                        "will take about 5 minutes")  # fmt: skip


def _client(url: str) -> Any:
    from igestbench.client import ClientConfig

    return ClientConfig(url, connect_timeout=10, read_timeout=10)


def test_a_run_says_it_before_the_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(estimate, "answer_ms", lambda client: 300.0)
    stream = io.StringIO()
    cfg = load_run_config({"parts": "verify", "out": str(tmp_path / "out")}, None, ENV)
    outcome = Runner(cfg, Progress(stream, live=False)).run()
    said = stream.getvalue()
    assert outcome.completed, said
    line = "sv7: the target answers a call in ~300 ms: this run will take about"
    assert line in said and said.index(line) < said.index("verify")
