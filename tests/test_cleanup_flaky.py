"""A flaky server (a dropped connection, an INTERNAL fault now and then) must not stop a run nor
leave its objects: each call of the run's cleanups that is safe to repeat is repeated when lost
(client/repeats.py; tryout 4: at ``sv7 serve --drop-rate 0.02`` one dropped connection in the
cleanup after the first workload stopped the whole run as "the target cannot be reached", and
its last cleanup left the journal). A target that refuses connections fails at once: whether it
is gone is the runner's to find out (run/own_calls.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from igestbench.client.base import ClientConfig
from igestbench.client.repeats import RepeatPolicy
from igestbench.client.transport import TransportCause, TransportFailure
from igestbench.config import ServeConfig
from igestbench.icat.credentials import Credentials
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.run import cleanup as run_cleanup
from igestbench.run.cleanup import RunJournal
from igestbench.run.runner import Target
from igestbench.workloads import RunTag
from tests.test_run import left_on_server
from tests.test_run_flaky import _Dropping

INGEST = Credentials("simple", "ingest", "ingest")


def _journal(cat: LocalCatalogue, tmp_path: Path) -> tuple[Target, RunJournal]:
    """A remote-looking target of ``cat`` and a run journal whose repeats do not sleep."""
    target = Target(cat.service_url, INGEST, ClientConfig(url=cat.service_url), local=False)
    return target, RunJournal(tmp_path / "r.json", RunTag.new("flaky"),
                              repeats=RepeatPolicy(sleep=lambda s: None))


def test_each_lost_call_of_a_cleanup_is_repeated_and_the_cleanup_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalCatalogue(ServeConfig(date_header=False)) as cat:  # a clock Facility
        target, run = _journal(cat, tmp_path)
        run.start(target, "6.2.0")  # makes its clock Facility: something to clean up
        assert left_on_server(cat) > 0
        # three searches of the survey, the login and the deleteMany each lose a connection
        dropping = _Dropping(monkeypatch, {b":search>": 3, b":login>": 1, b":deleteMany>": 1})
        run.clean_group(target)  # raised TransportFailure: the run stopped
        assert left_on_server(cat) == 0 and run.repeats.repeated == 5
        assert not any(dropping.times.values())  # every one was lost, and repeated
        _Dropping(monkeypatch, {b":search>": 2})
        section = run.finish(target)
        assert section["left"] == 0 and "error" not in section
        assert not run.path.exists()  # the journal removed: nothing was left


def test_a_refused_connection_is_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalCatalogue(ServeConfig(date_header=False)) as cat:  # a clock Facility
        target, run = _journal(cat, tmp_path)
        run.start(target, "6.2.0")
        calls = []

        def refused(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            raise TransportFailure(TransportCause.REFUSED, cat.service_url, "refused")

        monkeypatch.setattr(run_cleanup, "cleanup", refused)
        with pytest.raises(TransportFailure):
            run.clean_group(target)
        assert len(calls) == 1 and run.repeats.repeated == 0
        section = run.finish(target)
        assert section["left"] is None and "connection refused" in section["error"]
        assert run.path.exists()  # kept for sv7 cleanup
