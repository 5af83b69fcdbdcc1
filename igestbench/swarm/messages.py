"""What master and workers of ``sv7 swarm`` say to each other, and the merge of their steps.

Locust carries the messages (``runner.send_message`` / ``register_message``, msgpack over ZeroMQ);
this module only says what is in them, as plain dicts, and imports neither Locust nor gevent (the
master's merge is tested in-process). Nothing in a message is a secret: the master never sends
credentials, each worker reads its own (``SV7_*``, ``sv7.toml``).

Master → worker: ``sv7-setup`` (the run tag, the target's service URL, the Datafiles to look up,
the workload, the cap of users per worker), ``sv7-warm`` (before the first step: log in the
users this worker's share of the first rate needs, one after another), ``sv7-step``
(:class:`StepOrder`; index :data:`WARMUP_INDEX` is the warm-up's schedule, never counted),
``sv7-halt`` (stop the running step now).
Worker → master: ``sv7-ready`` (set up, or why not), ``sv7-warm-done`` (its users logged in: how
many sessions it holds, and how long a warm-up schedule gives each of them a call),
``sv7-created`` (ids of objects it created, journaled by the master as they come),
``sv7-step-done`` (:class:`StepReport`: the step's histograms, corrected and uncorrected,
counts and errors by cause).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from igestbench.measure.stats import LatencyStats, OpStats, merge_ops
from igestbench.measure.sweep import StepResult

__all__ = [
    "CREATED",
    "HALT",
    "READY",
    "SETUP",
    "STEP",
    "STEP_DONE",
    "WARM",
    "WARMUP_INDEX",
    "WARM_DONE",
    "StepOrder",
    "StepReport",
    "merge_parallel",
    "step_from_wire",
    "step_to_wire",
]

SETUP = "sv7-setup"
READY = "sv7-ready"
STEP = "sv7-step"
HALT = "sv7-halt"
CREATED = "sv7-created"
STEP_DONE = "sv7-step-done"
WARM = "sv7-warm"
WARM_DONE = "sv7-warm-done"
#: The index of the warm-up's step: run like a step, reported like one, counted in no figure.
WARMUP_INDEX = -1


@dataclass(frozen=True)
class StepOrder:
    """One step as one worker runs it: its share of the total demanded rate."""

    index: int
    #: This worker's demanded rate (the step's total divided by the workers that run it).
    rate: float
    duration_s: float
    warmup_s: float
    #: How long after the order arrives the schedule begins (users wake, clocks are local).
    lead_s: float = 0.1

    def to_wire(self) -> dict[str, Any]:
        return {"index": self.index, "rate": self.rate, "duration_s": self.duration_s,
                "warmup_s": self.warmup_s, "lead_s": self.lead_s}  # fmt: skip

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> StepOrder:
        return cls(int(data["index"]), float(data["rate"]), float(data["duration_s"]),
                   float(data["warmup_s"]), float(data["lead_s"]))  # fmt: skip


def _op_to_wire(op: OpStats) -> dict[str, Any]:
    return {"count": op.count, "ok": op.ok, "errors": dict(op.errors),
            "latency": op.latency.to_wire()}  # fmt: skip


def _op_from_wire(name: str, data: Mapping[str, Any]) -> OpStats:
    errors = {str(k): int(v) for k, v in data["errors"].items()}
    return OpStats(name, int(data["count"]), int(data["ok"]), errors,
                   LatencyStats.from_wire(data["latency"]))  # fmt: skip


def step_to_wire(step: StepResult) -> dict[str, Any]:
    """Everything of ``step`` a master needs to merge it with other workers' without loss."""
    return {
        "demanded_rate": step.demanded_rate,
        "duration_s": step.duration_s,
        "sent": step.sent,
        "request_rate": step.request_rate,
        "response_rate": step.response_rate,
        "late": step.late,
        "unsent": step.unsent,
        "corrected": step.corrected.to_wire(),
        "uncorrected": step.uncorrected.to_wire(),
        "lateness": step.lateness.to_wire(),
        "errors": dict(step.errors),
        "ops": {name: _op_to_wire(op) for name, op in step.ops.items()},
    }


def step_from_wire(data: Mapping[str, Any]) -> StepResult:
    return StepResult(
        demanded_rate=float(data["demanded_rate"]),
        duration_s=float(data["duration_s"]),
        sent=int(data["sent"]),
        request_rate=float(data["request_rate"]),
        response_rate=float(data["response_rate"]),
        late=int(data["late"]),
        unsent=int(data["unsent"]),
        corrected=LatencyStats.from_wire(data["corrected"]),
        uncorrected=LatencyStats.from_wire(data["uncorrected"]),
        lateness=LatencyStats.from_wire(data["lateness"]),
        errors={str(k): int(v) for k, v in data["errors"].items()},
        ops={str(n): _op_from_wire(str(n), op) for n, op in data["ops"].items()},
    )


@dataclass(frozen=True)
class StepReport:
    """One worker's step, as it sends it to the master."""

    index: int
    step: StepResult
    #: CPU of the worker process over the step, % of one core (over 90: the worker was the
    #: bottleneck, not the catalogue).
    cpu_percent: float
    #: Users (each one client, one connection, one session) that took slots by the step's end,
    #: as the worker sized them (igestbench.swarm.sizing), and the most it may use (--users).
    users: int
    cap: int
    #: Seconds of the measured step in which slots waited because every user the cap allows
    #: was busy: the suite's limit, not the catalogue's (0: the cap did not bound the step).
    capped_s: float = 0.0

    def to_wire(self) -> dict[str, Any]:
        return {"index": self.index, "step": step_to_wire(self.step),
                "cpu_percent": self.cpu_percent, "users": self.users, "cap": self.cap,
                "capped_s": self.capped_s}  # fmt: skip

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> StepReport:
        return cls(int(data["index"]), step_from_wire(data["step"]), float(data["cpu_percent"]),
                   int(data["users"]), int(data["cap"]), float(data["capped_s"]))  # fmt: skip


def merge_parallel(parts: Sequence[StepResult], demanded_rate: float) -> StepResult:
    """One step from the same step run side by side by several workers: histograms and sums
    added (the merged series is exactly the pooled calls'), rates added (the workers ran over
    the same interval), slots missed anywhere counted. ``demanded_rate``: the step's total."""
    if not parts:
        raise ValueError("no worker reported this step")
    errors: dict[str, int] = {}
    for part in parts:
        for cause, n in part.errors.items():
            errors[cause] = errors.get(cause, 0) + n
    return StepResult(
        demanded_rate=demanded_rate,
        duration_s=max(p.duration_s for p in parts),
        sent=sum(p.sent for p in parts),
        request_rate=sum(p.request_rate for p in parts),
        response_rate=sum(p.response_rate for p in parts),
        late=sum(p.late for p in parts),
        unsent=sum(p.unsent for p in parts),
        corrected=LatencyStats.merged(p.corrected for p in parts),
        uncorrected=LatencyStats.merged(p.uncorrected for p in parts),
        lateness=LatencyStats.merged(p.lateness for p in parts),
        errors=errors,
        ops=merge_ops(p.ops for p in parts),
    )
