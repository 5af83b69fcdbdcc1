"""A target that stops answering mid-run: recorded as an outage, waited for, resumed, cleaned up.

The catalogue is a local one with a file database on a fixed port: stopped while workers run,
started again on the same port and file (its data kept, its sessions lost, as in a restart).
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.client import ClientConfig, TransportCause, TransportFailure, connect
from igestbench.config import FaultKnobs, RunConfig, ServeConfig
from igestbench.icat.credentials import Credentials
from igestbench.measure.timing import TimingRecord
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.nexus import generate_run
from igestbench.run.benchmarks import benchmark_entry
from igestbench.run.outage import (
    Outage,
    OutageGuard,
    OutageWatch,
    TargetGone,
    merge_outages,
    not_answering,
)
from igestbench.run.progress import Progress
from igestbench.run.runner import Runner
from igestbench.run.workers import WorkerSpec, run_workers
from igestbench.workloads import Journal, RunTag, cleanup

INGEST = Credentials("simple", "ingest", "ingest")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Restarter(threading.Thread):
    """Stops the catalogue ``after_s`` after ``begun`` is set; starts it again ``down_s`` later
    (never, with ``down_s=None``)."""

    def __init__(self, config: ServeConfig, after_s: float, down_s: float | None) -> None:
        super().__init__(daemon=True)
        self.config, self.after_s, self.down_s = config, after_s, down_s
        self.catalogue = LocalCatalogue(config).start()
        self.begun = threading.Event()
        self.stopped_ns = 0
        self.restarted_ns = 0

    def run(self) -> None:
        if not self.begun.wait(30):
            return
        time.sleep(self.after_s)
        self.catalogue.stop()
        self.stopped_ns = time.perf_counter_ns()
        if self.down_s is None:
            return
        time.sleep(self.down_s)
        self.catalogue = LocalCatalogue(self.config).start()
        self.restarted_ns = time.perf_counter_ns()

    def finish(self) -> None:
        self.begun.set()
        self.join(30)
        self.catalogue.stop()


@pytest.fixture()
def serve_config(tmp_path: Path) -> ServeConfig:
    # a little latency per answer, so that the workloads outlast the restart
    return ServeConfig(
        port=free_port(), db=str(tmp_path / "catalogue.db"), knobs=FaultKnobs(latency_ms=1.0)
    )


@pytest.fixture()
def restarter(serve_config: ServeConfig) -> Iterator[Restarter]:
    restart = Restarter(serve_config, after_s=0.5, down_s=1.5)
    restart.start()
    try:
        yield restart
    finally:
        restart.finish()


def left_under(url: str, tag: str) -> tuple[int, int]:
    """(Facilities, Datafiles) whose Facility name starts with ``tag``."""
    client = connect(ClientConfig(url), "lean")
    try:
        client.login("simple", {"username": "root", "password": "root"})
        (facilities,) = client.search(f"SELECT COUNT(f) FROM Facility f WHERE f.name LIKE '{tag}%'")
        (datafiles,) = client.search(
            "SELECT COUNT(df) FROM Datafile df JOIN df.dataset ds JOIN ds.investigation i "
            f"JOIN i.facility f WHERE f.name LIKE '{tag}%'"
        )
        return int(facilities), int(datafiles)
    finally:
        client.close()


def test_single_query_workers_wait_out_a_restart_and_resume(
    restarter: Restarter, tmp_path: Path
) -> None:
    url = restarter.catalogue.service_url
    tag = RunTag.new("outage")
    specs = []
    for i in range(2):
        t = RunTag(tag.site, f"{tag.run_id}-w{i}")
        specs.append(
            WorkerSpec(
                i, "single-query", "lean", ClientConfig(url), INGEST, t, tmp_path / f"j{i}.jsonl",
                "6.2", tuple(generate_run(tmp_path / f"f{i}", t.name, 3)), 2500, 10, 10,
                outage_wait=15.0,
            )
        )  # fmt: skip
    seen: list[tuple[int, Outage]] = []

    def on_records(index: int, chunk: list[TimingRecord]) -> None:
        restarter.begun.set()

    run = run_workers(specs, on_records=on_records, on_outage=lambda i, o: seen.append((i, o)))
    assert restarter.restarted_ns, "the catalogue was not restarted while the workers ran"
    assert [o.error for o in sorted(run.outcomes, key=lambda o: o.index)] == [None, None]

    # each worker reported its outage as it began and as it ended
    reports = {(i, o.end_ns is None) for i, o in seen}
    assert reports == {(0, True), (0, False), (1, True), (1, False)}
    ended = [o for _, o in run.outages]
    assert len(ended) == 2 and all(o.end_ns is not None for o in ended)
    for outage in ended:
        assert outage.end_ns is not None
        assert outage.start_ns < restarter.stopped_ns + 200_000_000
        assert restarter.restarted_ns <= outage.end_ns
        assert outage.errors.get("refused", 0) >= 1
    (merged,) = merge_outages(run.outages, phase="single-query/lean/2")
    assert merged["workers"] == [0, 1] and merged["phase"] == "single-query/lean/2"
    assert merged["start"] < merged["end"] and 1.0 < merged["duration_s"] < 10
    assert merged["errors"]["refused"] >= 2

    for index, outage in run.outages:  # each worker went on after the target came back
        assert outage.end_ns is not None
        after = [r for r in run.by_worker[index] if r.start_ns > outage.end_ns]
        assert len(after) > 50 and all(r.ok for r in after)
    records = [r for r in run.records if r.op.startswith("single-query/")]
    failed = [r for r in records if not r.ok]
    assert 1 <= len(failed) <= 4  # the calls that met the outage (one per worker, maybe a poll's)
    assert len(records) == 2 * 2500  # resumed: every lookup was made, none twice

    entry = benchmark_entry("single-query", "lean", 2, run, client_bound=False)
    assert sum(len(op["after_outage_ms"]) for op in entry["ops"].values()) == 2 * 3
    assert not [p for p in entry["problems"] if "worker" in p]

    client = connect(ClientConfig(restarter.catalogue.service_url), "lean")
    try:
        client.login("simple", {"username": "ingest", "password": "ingest"})
        for spec in specs:
            cleanup(client, Journal.load(spec.journal_path))
    finally:
        client.close()
    assert left_under(restarter.catalogue.service_url, tag.name) == (0, 0)


class _Watching(Progress):
    """Progress that tells the restarter when records begin to arrive."""

    def __init__(self, begun: threading.Event) -> None:
        super().__init__(io.StringIO(), live=False)
        self.begun = begun

    def records(self, records: Any, counts: str | None = None, worker: int = 0) -> None:
        super().records(records, counts, worker)
        self.begun.set()

    def start(self, phase: str, total: int | None = None, figures: Any = None) -> None:
        super().start(phase, total, figures)
        if phase == "sweep":  # the sweep streams no records: its load begins here
            self.begun.set()

    @property
    def text(self) -> str:
        assert isinstance(self.stream, io.StringIO)
        return self.stream.getvalue()


def run_config(url: str, out: Path, **options: Any) -> RunConfig:
    options.setdefault("interfaces", ("soap",))  # one outage per run: over SOAP
    return RunConfig(
        target=url, site="OUTAGE", credentials=INGEST, concurrency=(1,), out=out, timeout=5.0,
        **options,
    )  # fmt: skip


def test_a_full_cycle_run_records_the_outage_and_cleans_up(
    restarter: Restarter, tmp_path: Path
) -> None:
    config = run_config(
        restarter.catalogue.service_url, tmp_path, parts=("full-cycle",), flavours=("zeep",),
        cycles=60, outage_wait=15.0,
    )  # fmt: skip
    progress = _Watching(restarter.begun)
    outcome = Runner(config, progress).run()
    assert restarter.restarted_ns, "the catalogue was not restarted while the workers ran"
    assert outcome.exit_code == 0, (outcome.summary, progress.text)
    assert outcome.path is not None
    data = json.loads(outcome.path.read_text())
    (outage,) = data["outages"]
    assert outage["phase"] == "full-cycle/zeep/1" and outage["workers"] == [0]
    assert outage["start"] < outage["end"] and outage["errors"]["refused"] >= 1
    assert "target stopped answering at" in progress.text and "target back after" in progress.text
    assert any(n.startswith("the target stopped answering for ") for n in data["notes"])

    (bench,) = data["benchmarks"]
    cycles = bench["ops"]["full-cycle"]
    assert cycles["errors"] and cycles["ok"] >= 50  # the cycle cut by the outage failed
    # the cut cycle's file was skipped, as after an ICAT fault; the others all arrived
    failed = cycles["count"] - cycles["ok"]
    assert bench["checks"]["expected"] == 60
    assert 60 - failed <= bench["checks"]["found"] <= 60
    assert any(op["after_outage_ms"] for op in bench["ops"].values())
    assert data["cleanup"]["left"] == 0 and data["run"]["status"] == "complete"
    assert left_under(restarter.catalogue.service_url, "sv7-outage-") == (0, 0)


def test_a_target_that_stays_away_stops_the_worker_and_the_file_is_still_written(
    serve_config: ServeConfig, tmp_path: Path
) -> None:
    restart = Restarter(serve_config, after_s=0.3, down_s=None)
    restart.start()
    try:
        config = run_config(
            restart.catalogue.service_url, tmp_path, parts=("single-query",),
            flavours=("lean",), queries=100_000, outage_wait=1.0,
        )  # fmt: skip
        started = time.monotonic()
        outcome = Runner(config, _Watching(restart.begun)).run()
        assert time.monotonic() - started < 20
    finally:
        restart.finish()
    assert outcome.exit_code == 4 and outcome.path is not None
    data = json.loads(outcome.path.read_text())
    assert data["run"]["status"] == "failed"
    (outage,) = data["outages"]
    assert outage["end"] is None and outage["errors"]["refused"] >= 1
    assert any("did not come back" in n for n in data["notes"])
    (bench,) = data["benchmarks"]
    assert any("did not come back within 1 s" in p for p in bench["problems"]), bench["problems"]


def test_a_sweep_step_hit_by_a_restart_is_recorded_and_run_again(
    restarter: Restarter, tmp_path: Path
) -> None:
    config = run_config(
        restarter.catalogue.service_url, tmp_path, parts=("sweep",), flavours=("lean",),
        max_rate=40.0, duration=1.0, warmup=0.2, outage_wait=15.0,
    )  # fmt: skip
    outcome = Runner(config, _Watching(restarter.begun)).run()
    assert restarter.restarted_ns, "the catalogue was not restarted while the sweep ran"
    assert outcome.exit_code == 0 and outcome.path is not None, outcome.summary
    data = json.loads(outcome.path.read_text())
    (sweep,) = data["sweeps"]
    assert [s["demanded_rate"] for s in sweep["steps"]] == [10, 20, 40] and "stopped" not in sweep
    hit = sweep["outages"][0]
    assert hit["phase"] == "sweep/lean" and hit["repeated"] and hit["errors"]["refused"] >= 1
    assert hit["start"] < hit["end"] and hit in data["outages"]
    step = next(s for s in sweep["steps"] if s["demanded_rate"] == hit["rate"])
    assert step["errors"] == {}  # the step as run again, with the target back
    assert data["cleanup"]["left"] == 0


def test_only_silence_counts_as_an_outage() -> None:
    def failure(cause: TransportCause, status: int | None = None) -> TransportFailure:
        return TransportFailure(cause, "http://x", "test", status)

    assert not_answering(failure(TransportCause.REFUSED))
    assert not_answering(failure(TransportCause.CONNECTION))
    assert not_answering(failure(TransportCause.HTTP_STATUS, 503))
    assert not not_answering(failure(TransportCause.HTTP_STATUS, 404))
    assert not not_answering(failure(TransportCause.TLS))
    assert not not_answering(failure(TransportCause.NOT_ICAT))


def test_the_guard_waits_relogs_in_and_gives_up_after_the_bound() -> None:
    calls: list[str] = []
    answers = iter(["refused", "refused", "ok", "ok", "ok"])

    class Flaky:
        flavour = "fake"

        def login(self, authenticator: str, credentials: Any) -> None:
            calls.append("login")

        def entity_names(self) -> list[str]:
            calls.append("poll")
            if next(answers) != "ok":
                raise TransportFailure(TransportCause.REFUSED, "http://x", "down")
            return []

        def search(self, query: str) -> list[Any]:
            calls.append("search")
            if len(calls) == 2:
                raise TransportFailure(TransportCause.TIMEOUT, "http://x", "slow")
            return [1]

    reports: list[Outage] = []
    client = OutageGuard(Flaky(), max_wait_s=5.0, on_outage=reports.append)  # type: ignore[arg-type]
    client.login("simple", {"username": "u", "password": "p"})
    with pytest.raises(TransportFailure):
        client.search("x")
    assert client.outage is not None and reports == []  # reported once a poll fails too
    assert client.search("x") == [1]
    assert reports[0].end_ns is None  # when the first poll failed
    assert calls == ["login", "search", "poll", "poll", "poll", "login", "search"]
    assert reports[-1].end_ns is not None and dict(reports[-1].errors) == {
        "timeout": 1,
        "refused": 2,
    }

    class Gone(Flaky):
        def entity_names(self) -> list[str]:
            calls.append("poll")
            raise TransportFailure(TransportCause.REFUSED, "http://x", "down")

    calls.clear()
    client = OutageGuard(Gone(), max_wait_s=0.05, on_outage=reports.append)
    calls.append("start")  # the second call of search() times out
    with pytest.raises(TransportFailure):
        client.search("x")
    with pytest.raises(TargetGone, match=r"did not come back within 0\.05 s"):
        client.search("x")
    polls = calls.count("poll")
    with pytest.raises(TargetGone):  # at once, without polling again
        client.search("x")
    assert calls.count("poll") == polls and reports[-1].end_ns is None


class _DropOnce(threading.Thread):
    """A TCP proxy on loopback in front of ``upstream`` (host, port) that closes, once, the
    connection of the ``nth`` request whose bytes match ``marker`` — without forwarding it and
    without an answer, as a dropped connection does — and passes everything else through."""

    def __init__(self, upstream: tuple[str, int], marker: bytes, nth: int) -> None:
        super().__init__(daemon=True)
        self.upstream, self.pattern, self.nth = upstream, re.compile(marker), nth
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.dropped = 0
        self._lock = threading.Lock()

    def run(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            server = socket.create_connection(self.upstream)
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, requests: bool) -> None:
        try:
            while data := src.recv(65536):
                if requests and self.pattern.search(data):
                    with self._lock:
                        self.dropped += 1
                        drop = self.dropped == self.nth
                    if drop:
                        break
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self.listener.close()
        self.join(5)


def test_one_call_lost_while_the_target_answers_is_an_error_not_an_outage(tmp_path: Path) -> None:
    """A connection dropped once, the first poll answered: the lookup it cut is counted failed
    with its cause (benchmarks[].errors, ops[…].errors), and there is no outage: no entry, no
    note, no terminal line (tryout: an "outage" of 0.0 s and two lines for one lost call)."""
    with LocalCatalogue(ServeConfig()) as cat:
        # the third get: the first is a cold call, apart from the statistics (cold_ms)
        proxy = _DropOnce(("127.0.0.1", cat.port), rb"<(\w+:)?get[ >]", nth=3)
        proxy.start()
        try:
            url = f"http://127.0.0.1:{proxy.port}/ICATService/ICAT"
            config = run_config(url, tmp_path, parts=("single-query",), flavours=("zeep",),
                                queries=30, outage_wait=15.0)  # fmt: skip
            progress = _Watching(threading.Event())
            outcome = Runner(config, progress).run()
        finally:
            proxy.close()
    assert proxy.dropped > 3, "no get call was dropped"
    assert outcome.exit_code == 0, (outcome.summary, progress.text)
    assert outcome.path is not None
    data = json.loads(outcome.path.read_text())
    assert data["outages"] == [] and not any("stopped answering" in n for n in data["notes"])
    assert "stopped answering" not in progress.text and "target back" not in progress.text
    (bench,) = data["benchmarks"]
    assert bench["errors"]["calls"] == 1 and bench["errors"]["causes"] == {"TransportFailure": 1}
    failed = {op: e["errors"] for op, e in bench["ops"].items() if e["errors"]}
    assert failed == {"single-query/get": {"TransportFailure": 1}}, failed
    assert data["cleanup"]["left"] == 0 and data["run"]["status"] == "complete"


class _Answers:
    """A fake client whose polls (``entity_names``) answer as ``polls`` says, in turn."""

    flavour = "fake"

    def __init__(self, polls: list[str], calls: list[str]) -> None:
        self.polls, self.calls = iter(polls), calls

    def login(self, authenticator: str, credentials: Any) -> None:
        self.calls.append("login")

    def entity_names(self) -> list[str]:
        self.calls.append("poll")
        if next(self.polls) != "ok":
            raise TransportFailure(TransportCause.REFUSED, "http://x", "down")
        return []

    def search(self, query: str) -> list[Any]:
        self.calls.append("search")
        if self.calls.count("search") == 1:
            raise TransportFailure(TransportCause.CONNECTION, "http://x", "connection lost")
        return [1]


def test_the_guard_counts_a_call_lost_once_as_no_outage() -> None:
    calls: list[str] = []
    reports: list[Outage] = []
    client = OutageGuard(_Answers(["ok"], calls), max_wait_s=5.0,  # type: ignore[arg-type]
                         on_outage=reports.append)  # fmt: skip
    client.login("simple", {"username": "u", "password": "p"})
    with pytest.raises(TransportFailure):  # the operation fails, with its cause
        client.search("x")
    assert client.search("x") == [1]  # the first poll answered: a lost call
    # the same session goes on: a new login would leave the old one open on the target
    assert calls == ["login", "search", "poll", "search"]
    assert reports == [] and client.outage is None and client.recover() is None


def test_the_guard_reports_an_outage_when_the_first_poll_fails_too() -> None:
    calls: list[str] = []
    reports: list[Outage] = []
    client = OutageGuard(_Answers(["refused", "ok"], calls), max_wait_s=5.0,  # type: ignore[arg-type]
                         on_outage=reports.append)  # fmt: skip
    sent_ns = time.perf_counter_ns()
    with pytest.raises(TransportFailure):
        client.search("x")
    assert client.search("x") == [1]
    begun, ended = reports
    assert begun.end_ns is None and ended.end_ns is not None
    assert begun.start_ns == ended.start_ns and sent_ns <= ended.start_ns < ended.end_ns
    assert dict(ended.errors) == {"connection": 1, "refused": 1}


def test_the_sweeps_watch_counts_a_call_lost_once_as_no_outage() -> None:
    def failure(cause: TransportCause) -> TransportFailure:
        return TransportFailure(cause, "http://x", "test")

    watch = OutageWatch()
    watch.failed(failure(TransportCause.REFUSED), time.perf_counter_ns())
    watch.answered()  # the next call answered: one lost call
    assert watch.take() == []
    sent_ns = time.perf_counter_ns()
    watch.failed(failure(TransportCause.REFUSED), sent_ns)
    watch.failed(failure(TransportCause.REFUSED), time.perf_counter_ns())
    watch.answered()
    (outage,) = watch.take()
    assert outage.start_ns == sent_ns and outage.end_ns is not None
    assert dict(outage.errors) == {"refused": 2}


def test_the_sweeps_watch_takes_no_answer_to_a_call_sent_before_the_outage_for_its_end() -> None:
    # threads of the open loop have calls in flight: one answered after another's call failed,
    # but sent before it, was on its way already and says nothing of the target now
    def failure() -> TransportFailure:
        return TransportFailure(TransportCause.REFUSED, "http://x", "test")

    watch = OutageWatch()
    before_ns = time.perf_counter_ns()
    sent_ns = time.perf_counter_ns()
    watch.failed(failure(), sent_ns)
    watch.answered(before_ns)  # sent before: neither an end nor a lost call
    watch.failed(failure(), time.perf_counter_ns())
    assert watch.current is not None and watch.current.start_ns == sent_ns
    watch.answered(time.perf_counter_ns())  # sent since: the target answers again
    (outage,) = watch.take()
    assert outage.start_ns == sent_ns and outage.end_ns is not None
    assert dict(outage.errors) == {"refused": 2}

