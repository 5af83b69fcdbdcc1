"""A flaky server (a dropped connection, an INTERNAL fault now and then) must not stop a run nor
leave its objects: the run's cleanups try again, a second apart (tryout 4: at
``sv7 serve --drop-rate 0.02`` one dropped connection in the cleanup after the first workload
stopped the whole run as "the target cannot be reached", and its last cleanup left the journal).
A target that refuses connections, or a refused login, still fails at once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from igestbench.client.base import ClientConfig
from igestbench.client.transport import TransportCause, TransportFailure
from igestbench.config import ServeConfig
from igestbench.icat.credentials import Credentials
from igestbench.icat.faults import IcatInternal
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.run import cleanup as run_cleanup
from igestbench.run.cleanup import RunJournal
from igestbench.run.runner import Target
from igestbench.workloads import RunTag
from tests.test_run import left_on_server

INGEST = Credentials("simple", "ingest", "ingest")


def failing_first(monkeypatch: pytest.MonkeyPatch, failures: list[BaseException]) -> list[int]:
    """ownership's cleanup raises each of ``failures`` in turn, then does its work."""
    real, calls = run_cleanup.cleanup, []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_cleanup, "cleanup", flaky)
    monkeypatch.setattr(run_cleanup, "RETRY_PAUSE_S", 0.0)
    return calls


def lost(url: str) -> TransportFailure:
    return TransportFailure(TransportCause.CONNECTION, url,
                            "Remote end closed connection without response")


def test_a_lost_connection_or_an_internal_fault_is_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalCatalogue(ServeConfig(date_header=False)) as cat:  # a clock Facility
        target = Target(cat.service_url, INGEST, ClientConfig(url=cat.service_url), local=False)
        run = RunJournal(tmp_path / "r.json", RunTag.new("flaky"))
        run.start(target, "6.2.0")  # makes its clock Facility: something to clean up
        assert left_on_server(cat) > 0
        calls = failing_first(monkeypatch, [lost(cat.service_url)])
        run.clean_group(target)  # raised TransportFailure: the run stopped
        assert len(calls) == 2 and left_on_server(cat) == 0
        failing_first(monkeypatch, [IcatInternal("injected"), lost(cat.service_url)])
        section = run.finish(target)
        assert section["left"] == 0 and "error" not in section
        assert not run.path.exists()  # the journal removed: nothing was left


def test_a_refused_connection_is_not_tried_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalCatalogue(ServeConfig(date_header=False)) as cat:  # a clock Facility
        target = Target(cat.service_url, INGEST, ClientConfig(url=cat.service_url), local=False)
        run = RunJournal(tmp_path / "r.json", RunTag.new("flaky"))
        run.start(target, "6.2.0")
        refused = TransportFailure(TransportCause.REFUSED, cat.service_url, "refused")
        calls = failing_first(monkeypatch, [refused])
        with pytest.raises(TransportFailure):
            run.clean_group(target)
        assert len(calls) == 1
        failing_first(monkeypatch, [lost(cat.service_url)] * 3)  # lost every time: given up
        section = run.finish(target)
        assert section["left"] is None and "connection lost" in section["error"]
        assert run.path.exists()  # kept for sv7 cleanup
