"""What a message between master and workers may look like: anything else is dropped.

Locust's rpc layer unpacks whatever arrives on its port and hands it on: a msgpack of
``("x",)`` raised in its receiving greenlet and ended the master's listener (no worker could
join afterwards), a heartbeat without data raised in its handler, a message naming another
worker was taken as that worker's. Here every message is checked before anyone acts on it: the
envelope (type, data, sender), the sender (the ZeroMQ routing identity of the connection it came
on, so one worker cannot speak for another), the type (Locust's own of a master/worker run, and
sv7's), and the data of each type. A message that fails is refused with one reason, which the
receiving side logs on one line and counts; the run goes on.

Checked here, without Locust, gevent or ZeroMQ (so the checks are tested in-process); the
sockets that call them are in :mod:`igestbench.swarm.secure`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from igestbench.swarm import messages
from igestbench.swarm.workload import WORKLOAD_NAMES

__all__ = ["BadMessage", "from_master", "from_worker"]

#: Entities a worker creates (and reports for the run's journal): Datafiles only.
CREATED_ENTITIES = frozenset({"Datafile"})
#: The Locust user class both sides define (Locust dispatches users by class name).
USER_CLASS = "SwarmUser"


class BadMessage(ValueError):
    """A message that is not one a master or worker of sv7 swarm sends; the text says why."""


Check = Callable[[Any], None]


def _fail(why: str) -> None:
    raise BadMessage(why)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _none(data: Any) -> None:
    if data is not None:
        _fail("carries data it should not")


def _fields(
    data: Any, required: Mapping[str, Check], optional: Mapping[str, Check] | None = None
) -> None:
    if not isinstance(data, dict):
        _fail("its data is not a map")
    missing = [k for k in required if k not in data]
    if missing:
        _fail(f"its data lacks {', '.join(missing)}")
    for key, check in {**required, **(optional or {})}.items():
        if key in data:
            try:
                check(data[key])
            except BadMessage as exc:
                raise BadMessage(f"{key}: {exc}") from None


def _kind(test: Callable[[Any], bool], name: str, nullable: bool = False) -> Check:
    def check(value: Any) -> None:
        if not (test(value) or (nullable and value is None)):
            _fail(f"not {name}")

    return check


_str = _kind(lambda v: isinstance(v, str), "a string")
_int = _kind(_is_int, "an integer")
_number = _kind(_is_number, "a number")
_number_or_none = _kind(_is_number, "a number", nullable=True)
_str_or_none = _kind(lambda v: isinstance(v, str), "a string", nullable=True)
_bool = _kind(lambda v: isinstance(v, bool), "true or false")
_map = _kind(lambda v: isinstance(v, dict), "a map")


def _counts(value: Any) -> None:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and _is_int(v) and v >= 0 for k, v in value.items()
    ):
        _fail("not a map of names to counts")


def _number_map(value: Any) -> None:
    if not isinstance(value, dict) or not all(
        _is_number(k) and _is_number(v) for k, v in value.items()
    ):
        _fail("not a map of numbers")


def _empty(kind: type) -> Check:
    def check(value: Any) -> None:
        if not isinstance(value, kind) or value:
            _fail("not empty (sv7's users report no Locust requests)")

    return check


# --- Locust's own messages of a master/worker run -------------------------------------------


def _client_ready(data: Any) -> None:
    if data != -1 and not (isinstance(data, str) and data):
        _fail("no Locust version")


def _stats_total(value: Any) -> None:
    _fields(value, {
        "name": _str, "method": _str, "start_time": _number, "num_requests": _int,
        "num_none_requests": _int, "num_failures": _int, "total_response_time": _number,
        "max_response_time": _number, "total_content_length": _int,
        "last_request_timestamp": _number_or_none, "min_response_time": _number_or_none,
        "response_times": _number_map, "num_reqs_per_sec": _number_map,
        "num_fail_per_sec": _number_map,
    })  # fmt: skip


def _user_count(data: Any) -> None:
    _fields(data, {"user_count": _int})


def _heartbeat(data: Any) -> None:
    _fields(data, {"state": _str, "current_cpu_usage": _number}, {"current_memory_usage": _number})


def _stats(data: Any) -> None:
    _fields(data, {"stats": _empty(list), "errors": _empty(dict), "stats_total": _stats_total,
                   "user_classes_count": _counts, "user_count": _int})  # fmt: skip


def _spawning_complete(data: Any) -> None:
    _fields(data, {"user_classes_count": _counts, "user_count": _int})


def _exception(data: Any) -> None:
    _fields(data, {"msg": _str, "traceback": _str})


def _lines(value: Any) -> None:
    if not (isinstance(value, list) and all(isinstance(x, str) for x in value)):
        _fail("not lines of text")


def _logs(data: Any) -> None:
    _fields(data, {"worker_id": _str, "logs": _lines})


def _ack(data: Any) -> None:
    if data is not None:
        _fields(data, {"index": _int})


def _spawn(data: Any) -> None:
    _fields(data, {"timestamp": _number, "user_classes_count": _user_classes,
                   "host": _str_or_none, "stop_timeout": _number_or_none,
                   "parsed_options": _map})  # fmt: skip


#: Locust's messages from a worker, and what their data must be for Locust's master to read
#: them without failing (its handlers index into the data without looking). Not "locustfile":
#: the master serves none (Locust's handler would fail an assertion).
LOCUST_FROM_WORKER: dict[str, Check] = {
    "client_ready": _client_ready,
    "heartbeat": _heartbeat,
    "stats": _stats,
    "spawning": _none,
    "spawning_complete": _spawning_complete,
    "client_stopped": _none,
    "quit": _none,
    "exception": _exception,
    "logs": _logs,
}
#: ... and from the master (not "update_user_class": sv7 never sends it).
LOCUST_FROM_MASTER: dict[str, Check] = {
    "ack": _ack,
    "spawn": _spawn,
    "spawning_complete": _user_count,
    "stop": _none,
    "quit": _none,
    "reconnect": _none,
    "heartbeat": _none,
}


def _user_classes(value: Any) -> None:
    _counts(value)
    if set(value) - {USER_CLASS}:
        _fail(f"names users other than {USER_CLASS}")


# --- sv7's own messages ------------------------------------------------------------------------


def _parsed(parse: Callable[[Any], object]) -> Check:
    """A check that ``parse`` reads the data (the reader the handler will use)."""

    def check(data: Any) -> None:
        if not isinstance(data, dict):
            _fail("its data is not a map")
        try:
            parse(data)
        except Exception as exc:  # anything the parser raises: the data is not ours
            raise BadMessage(f"unreadable ({type(exc).__name__}: {exc})") from None

    return check


def _created(data: Any) -> None:
    _fields(data, {"entries": _kind(lambda v: isinstance(v, list), "a list")})
    for entry in data["entries"]:
        if not (isinstance(entry, list) and len(entry) == 2 and entry[0] in CREATED_ENTITIES
                and _is_int(entry[1]) and entry[1] > 0):  # fmt: skip
            _fail(f"entries: {str(entry)[:40]} is not [Datafile, id]")


def _ready(data: Any) -> None:
    _fields(data, {"ok": _bool, "host": _str_or_none, "pid": _int}, {"error": _str})


def _step_done(data: Any) -> None:
    report = messages.StepReport.from_wire(data)
    if report.index < messages.WARMUP_INDEX or report.users < 0:  # -1: the warm-up's
        raise ValueError("a negative step or user count")


def _setup(data: Any) -> None:
    _fields(data, {
        "tag": _str, "target": _str, "workload": _str, "mix": _counts, "batch_size": _int,
        "drain_s": _number, "users": _int,
        "targets": _kind(lambda v: isinstance(v, list) and all(
            isinstance(t, dict) and isinstance(t.get("name"), str) and _is_int(t.get("id"))
            and _is_int(t.get("dataset")) for t in v), "a list of Datafiles"),
    })  # fmt: skip
    if data["workload"] not in WORKLOAD_NAMES:
        _fail(f"unknown workload {str(data['workload'])[:40]!r}")
    if data["users"] < 1:
        _fail("users: not at least 1")


def _warm(data: Any) -> None:
    _fields(data, {"rate": _number})
    if data["rate"] <= 0:
        _fail("rate: not positive")


def _warm_done(data: Any) -> None:
    _fields(data, {"users": _int, "clients": _int, "min_s": _number})
    if data["users"] < 0 or data["clients"] < 0 or data["min_s"] < 0:
        _fail("a negative count or time")


def _step(data: Any) -> None:
    order = messages.StepOrder.from_wire(data)
    if order.rate <= 0 or order.duration_s <= 0 or order.warmup_s < 0 or order.lead_s < 0:
        raise ValueError("a step needs a positive rate and duration")


SV7_FROM_WORKER: dict[str, Check] = {
    messages.READY: _ready,
    messages.CREATED: _created,
    messages.STEP_DONE: _parsed(_step_done),
    messages.WARM_DONE: _warm_done,
}
SV7_FROM_MASTER: dict[str, Check] = {
    messages.SETUP: _setup,
    messages.STEP: _parsed(_step),
    messages.HALT: _none,
    messages.WARM: _warm,
}

FROM_WORKER = {**LOCUST_FROM_WORKER, **SV7_FROM_WORKER}
FROM_MASTER = {**LOCUST_FROM_MASTER, **SV7_FROM_MASTER}


def _check(decoded: Any, allowed: Mapping[str, Check], sender: str) -> tuple[str, Any, str]:
    if not isinstance(decoded, list | tuple) or len(decoded) != 3:
        _fail("not a (type, data, node) message")
    kind, data, node = decoded
    if not isinstance(kind, str) or not isinstance(node, str):
        _fail("its type or node is not text")
    if node != sender:
        _fail(f"it names node {node[:60]!r}, not the connection's own {sender[:60]!r}")
    if kind not in allowed:
        _fail(f"unknown type {kind[:40]!r}")
    try:
        allowed[kind](data)
    except BadMessage as exc:
        raise BadMessage(f"{kind}: {exc}") from None
    return kind, data, node


def from_worker(decoded: Any, sender: str) -> tuple[str, Any, str]:
    """(type, data, node) of a message a master received on the connection ``sender`` (its
    routing identity); :class:`BadMessage` when it is not a worker's message."""
    return _check(decoded, FROM_WORKER, sender)


def from_master(decoded: Any, me: str) -> tuple[str, Any, str]:
    """(type, data, node) of a message worker ``me`` received; :class:`BadMessage` when it is
    not a master's message to this worker (Locust addresses each message to its worker)."""
    return _check(decoded, FROM_MASTER, me)
