"""A lost call is not a lost target (tryout 4 #17).

``sv7 serve --drop-rate 0.02`` (2 % of connections closed without an answer) stopped every run
after seconds as "the target cannot be reached": one lost call in the cleanup after a workload
reached the runner. Now the suite's own calls that are safe to repeat are repeated
(client/repeats.py), and the runner waits out a target that stops answering during its own
steps as the workers do (--outage-wait, run/own_calls.py): a flaky target's run completes, counts
its errors and cleans up; one that goes away still stops the run as unreachable; a measured call
is never repeated.
"""

from __future__ import annotations

import http.client
import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from igestbench.client.base import ClientConfig
from igestbench.client.deadline import BoundedHTTPConnection
from igestbench.client.lean import KeepAliveConnection, LeanCatalogue
from igestbench.config import FaultKnobs, RunConfig, ServeConfig
from igestbench.icat.credentials import Credentials
from igestbench.icat.schema import get_profile
from igestbench.measure.timing import Recorder
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.nexus import generate_run
from igestbench.run.outage import guard
from igestbench.run.progress import Progress
from igestbench.run.runner import Runner
from igestbench.run.workers import WorkerSpec, _prepare_dataset
from igestbench.workloads import Journal, RunTag, WorkloadContext, run_full_cycle
from tests.test_outage import free_port
from tests.test_run import left_on_server

INGEST = Credentials("simple", "ingest", "ingest")


def run_config(url: str, out: Path, **options: Any) -> RunConfig:
    return RunConfig(
        target=url, site="FLAKY", credentials=INGEST, concurrency=(1,), out=out, timeout=10.0,
        interfaces=("soap",), flavours=("zeep",), **options,
    )  # fmt: skip


class Lines(Progress):
    """Progress into a string; ``on_finish(phase)`` is called as each phase ends."""

    def __init__(self, on_finish: Any = None) -> None:
        super().__init__(io.StringIO(), live=False)
        self.on_finish = on_finish
        self.phase = ""

    def start(self, phase: str, total: int | None = None, figures: Any = None) -> None:
        super().start(phase, total, figures)
        self.phase = phase

    def finish(self, summary: str) -> None:
        super().finish(summary)
        if self.on_finish is not None:
            self.on_finish(self.phase)

    @property
    def text(self) -> str:
        assert isinstance(self.stream, io.StringIO)
        return self.stream.getvalue()


def test_a_run_against_a_target_dropping_2_percent_completes_counts_and_cleans_up(
    tmp_path: Path,
) -> None:
    """The tryout's command, smaller: before, it stopped after the first workload (exit 4)."""
    knobs = FaultKnobs(drop_rate=0.02, seed=5)
    with LocalCatalogue(ServeConfig(knobs=knobs)) as cat:
        config = run_config(cat.service_url, tmp_path, parts=("single-query", "burst",
                            "full-cycle"), cycles=5, files=20, queries=30)  # fmt: skip
        progress = Lines()
        outcome = Runner(config, progress).run()
        assert outcome.completed, (outcome.summary, progress.text)
        assert left_on_server(cat) == 0
    assert outcome.path is not None
    data = json.loads(outcome.path.read_text())
    assert data["run"]["status"] == "complete"
    assert data["cleanup"]["left"] == 0 and data["cleanup"]["journal"] is None
    assert not list(tmp_path.glob("*.journal.jsonl"))
    assert [e["workload"] for e in data["benchmarks"]] == ["full-cycle", "single-query", "burst"]
    # what was lost of the measured calls is counted as lost connections, nothing else
    for entry in data["benchmarks"]:
        assert set(entry["errors"]["causes"]) <= {"TransportFailure"}, entry["errors"]


class _Dropping:
    """The lean clients' HTTP connections lose the calls whose body holds a marker (the first
    ``times[marker]`` of them), as a dropped connection does, below every layer that could
    repeat a call; ``sent`` counts the calls sent with each marker."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, times: dict[bytes, int],
                 done: bool = False) -> None:  # fmt: skip
        """``done``: the call reaches the server before its connection is lost (it was made,
        its answer went missing)."""
        self.times = dict(times)
        self.sent = dict.fromkeys(times, 0)
        me = self

        class Dropping(BoundedHTTPConnection):
            def request(self, method: str, url: str, body: Any = None, headers: Any = None,
                        **kwargs: Any) -> None:  # fmt: skip
                marker = next((m for m in me.times if isinstance(body, bytes) and m in body), None)
                if marker is not None:
                    me.sent[marker] += 1
                    if me.times[marker] > 0:
                        me.times[marker] -= 1
                        if done:
                            super().request(method, url, body, headers or {}, **kwargs)
                            self.getresponse().read()
                        self.close()
                        raise http.client.RemoteDisconnected(
                            "Remote end closed connection without response")
                super().request(method, url, body, headers or {}, **kwargs)

        monkeypatch.setattr(KeepAliveConnection, "http_class", Dropping)


def test_a_measured_create_is_not_repeated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's create whose connection is lost is an error of its cycle, sent once."""
    dropping = _Dropping(monkeypatch, {b":create>": 1})
    with LocalCatalogue(ServeConfig()) as cat:
        client = guard(LeanCatalogue(ClientConfig(cat.service_url)), max_wait_s=5.0)
        client.login("simple", {"username": "ingest", "password": "ingest"})
        tag = RunTag.new("measured")
        recorder = Recorder()
        ctx = WorkloadContext(client, get_profile("6.2"), tag, Journal(tmp_path / "j.jsonl"),
                              recorder=recorder)  # fmt: skip
        files = generate_run(tmp_path / "files", tag.name, 2)
        result = run_full_cycle(ctx, files)
        client.close()
    cycles = [r for r in result.records if r.op == "full-cycle"]
    assert [r.ok for r in cycles] == [False, True], cycles
    assert cycles[0].error == "TransportFailure"
    # the second cycle creates what the first did not: each create was sent once (the lost
    # one too), none of them again
    created = len(Journal.load(tmp_path / "j.jsonl"))
    assert dropping.sent[b":create>"] == created + 1


@pytest.mark.parametrize("done", [False, True], ids=["lost before", "answer lost"])
def test_a_workers_preparation_that_loses_a_call_is_done_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, done: bool
) -> None:
    """The untimed ingest before single-query or burst: one lost call cost the whole workload
    of that worker (``single-query cut short by an outage``)."""
    dropping = _Dropping(monkeypatch, {b":create>": 3}, done=done)
    with LocalCatalogue(ServeConfig()) as cat:
        client = guard(LeanCatalogue(ClientConfig(cat.service_url)), max_wait_s=5.0)
        client.login("simple", {"username": "ingest", "password": "ingest"})
        tag = RunTag.new("prepare")
        ctx = WorkloadContext(client, get_profile("6.2"), tag, Journal(tmp_path / "j.jsonl"))
        files = generate_run(tmp_path / "files", tag.name, 3)
        spec = WorkerSpec(index=0, workload="single-query", flavour="lean",
                          client=ClientConfig(cat.service_url), credentials=INGEST, tag=tag,
                          journal_path=tmp_path / "j.jsonl", profile="6.2", files=tuple(files),
                          count=10, batch_size=10, page_size=100)  # fmt: skip
        dataset_id, targets = _prepare_dataset(ctx, spec)
        (datasets,) = client.search(
            f"SELECT COUNT(ds) FROM Dataset ds WHERE ds.investigation.facility.name = '{tag.name}'"
        )
        client.close()
    assert not any(dropping.times.values())  # each of them was lost
    assert len(targets) == 3 and len({t.id for t in targets}) == 3  # one Datafile a file
    assert datasets == len({t["dataset"].id for t in targets})  # nothing made twice
    assert dataset_id in {t["dataset"].id for t in targets}


def _stopper(cat: LocalCatalogue, after: str, down_s: float | None) -> Any:
    """Stops ``cat`` when the phase ``after`` ends (its cleanup comes next); starts it again on
    the same port and database ``down_s`` later (never, with None)."""
    state: dict[str, Any] = {"catalogue": cat, "restarted": False}

    def restart() -> None:
        assert down_s is not None
        time.sleep(down_s)
        state["catalogue"] = LocalCatalogue(cat.config).start()
        state["restarted"] = True

    def on_finish(phase: str) -> None:
        if phase == after and state["catalogue"] is cat:
            cat.stop()
            state["catalogue"] = None
            if down_s is not None:
                threading.Thread(target=restart, daemon=True).start()

    return on_finish, state


@pytest.fixture()
def file_catalogue(tmp_path: Path) -> ServeConfig:
    return ServeConfig(port=free_port(), db=str(tmp_path / "catalogue.db"))


def test_a_target_back_within_the_outage_wait_does_not_stop_the_run(
    tmp_path: Path, file_catalogue: ServeConfig
) -> None:
    cat = LocalCatalogue(file_catalogue).start()
    on_finish, state = _stopper(cat, "full-cycle/zeep/1", down_s=1.0)
    try:
        config = run_config(cat.service_url, tmp_path / "out", parts=("full-cycle",),
                            cycles=2, outage_wait=30.0)  # fmt: skip
        progress = Lines(on_finish)
        outcome = Runner(config, progress).run()
        assert state["restarted"], progress.text
        assert outcome.exit_code == 0, (outcome.summary, progress.text)
        assert left_on_server(state["catalogue"]) == 0
    finally:
        if state["catalogue"] is not None:
            state["catalogue"].stop()
    assert outcome.path is not None
    data = json.loads(outcome.path.read_text())
    (outage,) = data["outages"]
    assert outage["phase"] == "the cleanup after full-cycle/zeep/1"
    assert outage["end"] is not None and outage["errors"]["refused"] >= 1
    assert "target stopped answering during the cleanup after full-cycle/zeep/1" in progress.text
    assert "target back after" in progress.text
    assert data["cleanup"]["left"] == 0 and data["run"]["status"] == "complete"


def test_a_target_that_goes_away_stops_the_run_as_unreachable_after_the_outage_wait(
    tmp_path: Path, file_catalogue: ServeConfig
) -> None:
    cat = LocalCatalogue(file_catalogue).start()
    on_finish, _ = _stopper(cat, "full-cycle/zeep/1", down_s=None)
    try:
        config = run_config(cat.service_url, tmp_path / "out", parts=("full-cycle",),
                            cycles=2, outage_wait=1.0)  # fmt: skip
        progress = Lines(on_finish)
        outcome = Runner(config, progress).run()
    finally:
        cat.stop()
    assert outcome.exit_code == 4, (outcome.summary, progress.text)
    unreachable = [s for s in outcome.summary if s.startswith("the target cannot be reached")]
    assert unreachable and "did not answer again within 1 s (--outage-wait)" in unreachable[0]
    assert "(hint: " in unreachable[0]
    assert outcome.path is not None
    data = json.loads(outcome.path.read_text())
    (outage,) = data["outages"]
    assert outage["phase"] == "the cleanup after full-cycle/zeep/1" and outage["end"] is None
    assert data["run"]["status"] == "failed"
    assert data["cleanup"]["journal"] is not None  # kept for sv7 cleanup
