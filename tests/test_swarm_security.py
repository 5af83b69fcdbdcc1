"""sv7 swarm at its port: every message checked before anyone acts on it, workers that prove
the shared secret (CURVE), and no port beyond loopback without one (issue 18, part 3).

In-process: the checks of :mod:`igestbench.swarm.wire` on messages of every shape, the secret's
sources. End to end (processes on loopback; the attacker is a plain ZeroMQ socket in this
process, which imports pyzmq but never gevent): garbage and forged messages to a master without
a secret, then a real worker and a complete run; garbage, a forged hello, a worker with another
secret and one without, then a real worker, against a master with a secret."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.config import ServeConfig, load_swarm_secret
from igestbench.errors import UsageError
from igestbench.measure.stats import LatencyStats
from igestbench.measure.sweep import StepResult
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.swarm import messages, wire
from tests.swarm_support import SECRET, Swarm, left_below, needs_locust, no_traceback
from tests.test_run import credentials_env

# --- what a message may look like ----------------------------------------------------------

HEARTBEAT = {"state": "running", "current_cpu_usage": 3.5, "current_memory_usage": 1024}
STATS_TOTAL = {
    "name": "Aggregated", "method": "", "last_request_timestamp": None, "start_time": 1.5,
    "num_requests": 0, "num_none_requests": 0, "num_failures": 0, "total_response_time": 0,
    "max_response_time": 0, "min_response_time": None, "total_content_length": 0,
    "response_times": {}, "num_reqs_per_sec": {}, "num_fail_per_sec": {},
}  # fmt: skip
STATS = {"stats": [], "errors": {}, "stats_total": STATS_TOTAL,
         "user_classes_count": {"SwarmUser": 4}, "user_count": 4}  # fmt: skip


def _report() -> dict[str, Any]:
    latency = LatencyStats.of([1_000_000, 2_000_000])
    step = StepResult(10.0, 1.0, 2, 2.0, 2.0, 0, 0, latency, latency, latency, {}, {})
    return messages.StepReport(0, step, 3.0, 2, 128, 0.0).to_wire()


@pytest.mark.parametrize(
    ("kind", "data"),
    [
        ("client_ready", "2.47.0"),
        ("heartbeat", HEARTBEAT),
        ("stats", STATS),
        ("spawning", None),
        ("spawning_complete", {"user_classes_count": {"SwarmUser": 4}, "user_count": 4}),
        ("quit", None),
        (messages.READY, {"ok": True, "host": "load-1", "pid": 4711}),
        (messages.CREATED, {"entries": [["Datafile", 12], ["Datafile", 13]]}),
        (messages.STEP_DONE, _report()),
    ],
)
def test_a_workers_messages_pass(kind: str, data: object) -> None:
    assert wire.from_worker([kind, data, "w-1"], "w-1") == (kind, data, "w-1")


@pytest.mark.parametrize(
    ("decoded", "why"),
    [
        (("x",), "not a (type, data, node) message"),
        ({"a": 1}, "not a (type, data, node) message"),
        (7, "not a (type, data, node) message"),
        ([["list"], None, "w-1"], "type or node is not text"),
        (["heartbeat", HEARTBEAT, "w-2"], "names node 'w-2', not the connection's own 'w-1'"),
        (["locustfile", {"version": "2"}, "w-1"], "unknown type 'locustfile'"),
        (["update_user_class", {}, "w-1"], "unknown type"),
        (["heartbeat", None, "w-1"], "heartbeat: its data is not a map"),
        (["heartbeat", {"state": "x"}, "w-1"], "lacks current_cpu_usage"),
        (["heartbeat", {**HEARTBEAT, "current_cpu_usage": "hot"}, "w-1"], "not a number"),
        (["client_ready", 5, "w-1"], "no Locust version"),
        (["stats", {**STATS, "stats": [{"name": "x"}]}, "w-1"], "not empty"),
        (["stats", {**STATS, "stats_total": {"name": "x"}}, "w-1"], "stats_total"),
        (["spawning", {"x": 1}, "w-1"], "carries data"),
        ([messages.CREATED, {"entries": [["Facility", 1]]}, "w-1"], "is not [Datafile, id]"),
        ([messages.CREATED, {"entries": [["Datafile", -3]]}, "w-1"], "is not [Datafile, id]"),
        ([messages.STEP_DONE, {"index": 0}, "w-1"], "unreadable"),
        ([messages.STEP_DONE,
          {**_report(), "step": {**_report()["step"], "corrected": {"count": 9}}}, "w-1"],
         "unreadable"),
        ([messages.READY, {"ok": "yes", "host": None, "pid": 1}, "w-1"], "true or false"),
        ([messages.SETUP, {}, "w-1"], "unknown type"),  # a master's message from a worker
    ],
)
def test_anything_else_from_a_worker_is_refused_with_one_reason(decoded: Any, why: str) -> None:
    with pytest.raises(wire.BadMessage, match=None) as refused:
        wire.from_worker(decoded, "w-1")
    assert why in str(refused.value) and "\n" not in str(refused.value)


def test_a_worker_takes_only_a_masters_messages_to_itself() -> None:
    setup = {"tag": "sv7-x", "target": "http://h/ICATService/ICAT", "workload": "mix",
             "mix": {"search": 1}, "batch_size": 1, "drain_s": 5.0, "users": 8,
             "targets": [{"id": 1, "name": "f.nxs", "dataset": 2}]}  # fmt: skip
    assert wire.from_master([messages.SETUP, setup, "me"], "me")[0] == messages.SETUP
    order = messages.StepOrder(0, 5.0, 1.0, 0.5).to_wire()
    assert wire.from_master([messages.STEP, order, "me"], "me")[0] == messages.STEP
    for bad, why in [
        ([messages.SETUP, setup, "someone"], "names node"),
        ([messages.SETUP, {**setup, "workload": "drop-tables"}, "me"], "unknown workload"),
        ([messages.SETUP, {**setup, "users": 0}, "me"], "users"),
        ([messages.STEP, {**order, "rate": -1}, "me"], "unreadable"),
        (["spawn", {"timestamp": 1, "user_classes_count": {"Evil": 1}, "host": None,
                    "stop_timeout": None, "parsed_options": {}}, "me"], "other than SwarmUser"),
        ([messages.STEP_DONE, _report(), "me"], "unknown type"),
    ]:  # fmt: skip
        with pytest.raises(wire.BadMessage) as refused:
            wire.from_master(bad, "me")
        assert why in str(refused.value)


# --- the secret ------------------------------------------------------------------------------


def test_the_secret_comes_from_the_environment_or_sv7_toml_never_too_short(tmp_path: Path) -> None:
    toml = tmp_path / "sv7.toml"
    toml.write_text('[swarm]\nsecret = "from-the-file-0123456789"\n')
    assert load_swarm_secret(toml, {}) is not None
    found = load_swarm_secret(toml, {})
    assert found is not None and found.value == "from-the-file-0123456789"
    assert found.source == f"{toml} [swarm] secret" and "from-the-file" not in repr(found)
    env = load_swarm_secret(toml, {"SV7_SWARM_SECRET": "from-the-environment-0123"})
    assert env is not None and env.source == "SV7_SWARM_SECRET"  # the environment wins
    assert load_swarm_secret(None, {}) is None or Path("sv7.toml").is_file()
    with pytest.raises(UsageError, match="SV7_SWARM_SECRET: the swarm's secret must be text of at"):
        load_swarm_secret(None, {"SV7_SWARM_SECRET": "short"})
    toml.write_text("[swarm]\nsecret = 12345678901234567890\n")
    with pytest.raises(UsageError, match=r"sv7.toml \[swarm\] secret: the swarm's secret"):
        load_swarm_secret(toml, {})


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["master", "--bind", "0.0.0.0:5557"], "--bind 0.0.0.0: not a loopback address"),
        (["master", "--bind", "[::]:5557"], "--bind ::: not a loopback address"),
        (["worker", "--master", "10.1.2.3"], "--master 10.1.2.3: not a loopback address"),
    ],
)
def test_beyond_loopback_only_with_a_secret(args: list[str], message: str) -> None:
    env = {k: v for k, v in credentials_env().items() if k != "SV7_SWARM_SECRET"}
    target = ["--target", "http://127.0.0.1:9/ICATService/ICAT"]
    done = subprocess.run([sys.executable, "-m", "igestbench", "swarm", *args, *target], env=env,
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "SV7_SWARM_SECRET" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    # and the secret is never an option of the command line
    flag = subprocess.run([sys.executable, "-m", "igestbench", "swarm", args[0], "--secret", "x"],
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert flag.returncode == 2 and "unrecognized arguments: --secret" in flag.stderr


# --- at the port, end to end ---------------------------------------------------------------


@pytest.fixture()
def catalogue() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig()) as cat:
        yield cat


def _send(port: int, identity: str, *payloads: bytes, secret: bool = False) -> None:
    """What a stranger can do: connect and send frames (plain ZeroMQ, no secret)."""
    import zmq

    context = zmq.Context()
    sock = context.socket(zmq.DEALER)
    try:
        sock.setsockopt(zmq.IDENTITY, identity.encode())
        sock.setsockopt(zmq.LINGER, 1000)
        sock.connect(f"tcp://127.0.0.1:{port}")
        for payload in payloads:
            sock.send(payload)
        sock.send_multipart([b"two", b"frames"])
        time.sleep(0.3)
    finally:
        sock.close(linger=1000)
        context.term()


def _garbage(me: str, other: str) -> list[bytes]:
    import msgpack

    return [
        msgpack.dumps(("x",)),  # what once ended the master's listener
        b"\xff\x00 not msgpack at all",
        msgpack.dumps(["heartbeat", None, me]),
        msgpack.dumps(["locustfile", {"version": "2.47.0"}, me]),
        msgpack.dumps([["type"], {}, me]),
        msgpack.dumps([messages.STEP_DONE, {"index": 0}, me]),
        msgpack.dumps([messages.CREATED, {"entries": [["Facility", 1]]}, me]),
        msgpack.dumps(["client_ready", "2.47.0", other]),  # speaking for another node
        msgpack.dumps({"__ObjectId__": True, "as_str": "x"}),
    ]


@needs_locust
@pytest.mark.slow
def test_garbage_at_a_master_is_dropped_and_a_worker_still_joins(
    catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    with Swarm(catalogue.service_url, tmp_path, "--rates", "10", "--duration", "1",
              workers=1, start_workers=False) as swarm:  # fmt: skip
        swarm.wait_for("waiting for 1 worker(s)")
        _send(swarm.port, "stranger", *_garbage("stranger", "someone-else"))
        swarm.add_worker()
        result = swarm.finish()
    assert result["run"]["status"] == "complete"
    (sweep,) = result["sweeps"]
    assert sweep["steps"][0]["sent"] > 0 and sweep["swarm"]["workers"] == 1
    log = swarm.log()
    assert "dropped a message from 'stranger': not a (type, data, node) message" in log
    assert "dropped a message from 'stranger': unknown type 'locustfile'" in log
    (note,) = [n for n in result["notes"] if n.startswith("dropped ")]
    assert note.startswith("dropped 10 message(s) that were not a worker's")
    assert no_traceback(swarm.logs()), swarm.logs()
    assert left_below(catalogue.service_url, result["run"]["tag"]) == 0


@needs_locust
@pytest.mark.slow
def test_only_workers_with_the_secret_join(catalogue: LocalCatalogue, tmp_path: Path) -> None:
    """Garbage, a forged hello, a worker with another secret and one without are refused at the
    handshake (the master's listener never sees them); a worker with the secret joins and the
    run completes."""
    with Swarm(catalogue.service_url, tmp_path, "--rates", "10", "--duration", "1",
              workers=1, secret=SECRET, start_workers=False) as swarm:  # fmt: skip
        swarm.wait_for("workers must prove the swarm's secret: CURVE")
        import msgpack

        _send(swarm.port, "forger", msgpack.dumps(["client_ready", "2.47.0", "forger"]),
              *_garbage("forger", "x"))  # fmt: skip
        wrong = swarm.add_worker({"SV7_SWARM_SECRET": "another-secret-0123456789"})
        none = swarm.add_worker({"SV7_SWARM_SECRET": ""})
        for refused in (wrong, none):
            assert refused.wait(60) == 1
        swarm.add_worker()
        result = swarm.finish()
    assert result["run"]["status"] == "complete"
    assert result["run"]["options"]["authenticated"] is True
    (sweep,) = result["sweeps"]
    assert sweep["swarm"]["workers"] == 1 and sweep["swarm"]["authenticated"] is True
    assert sweep["steps"][0]["sent"] > 0
    log = swarm.log()
    assert "refused a connection: the ZeroMQ handshake failed" in log
    assert "dropped a message" not in log  # nothing of theirs reached the listener
    (note,) = [n for n in result["notes"] if n.startswith("refused ")]
    assert "failed the handshake (no or another SV7_SWARM_SECRET)" in note
    for log_file in ("worker0.log", "worker1.log"):
        said = (tmp_path / log_file).read_text()
        assert "refused the connection" in said and "SV7_SWARM_SECRET must be the same" in said
    text = swarm.logs()
    assert no_traceback(text), text
    assert SECRET not in text and SECRET not in json.dumps(result)
