"""What a swarm's result file records beyond a sweep: its own options, its workers, its limits.

A swarm file is an ``sv7 run`` result file (``run.mode: "swarm"``, ``parts: ["sweep"]``) that
``sv7 merge`` and ``sv7 report`` read like any other, but it records what the swarm was asked
and did — not the quick tour's options of ``sv7 run``: ``run.options`` holds the swarm's rates,
step length, objective, workload, workers, users cap and interface; ``target.interfaces`` what
the target serves and that the swarm measured SOAP; each step its workers, the users they used
and whether a limit of the suite bounded it (``user_capped``: slots waited at the ``--users``
cap; ``client_bound``: a worker above 90 % of a core); ``swarm`` (version 2) the workers, hosts,
users per worker (the cap, and each worker's most), lost workers and each worker's steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from igestbench.config import RunConfig
from igestbench.measure.sweep import StepResult
from igestbench.results.formatting import format_value
from igestbench.results.sweeps import RATE_UNIT
from igestbench.run import interfaces
from igestbench.swarm.command import SwarmConfig
from igestbench.swarm.messages import StepReport
from igestbench.workloads import RunTag

__all__ = [
    "CLIENT_BOUND_CPU",
    "SWARM_VERSION",
    "interface_choice",
    "lost_note",
    "run_section",
    "step_extras",
    "swarm_options",
]

#: The version of the ``sweeps[].swarm`` section (an additive key of result format 2). 2: the
#: users of each worker follow demand (``users_cap_per_worker``; per step ``users``,
#: ``user_capped``, ``client_bound``; per worker step ``cap``, ``capped_s``).
SWARM_VERSION = 2
#: A worker above this share of one core (its gevent process uses one) was bounded by its CPU.
CLIENT_BOUND_CPU = 90.0
#: The interface and client the swarm's workers measure with.
INTERFACE, FLAVOUR = interfaces.SOAP, "lean"


def swarm_options(config: RunConfig, swarm: SwarmConfig) -> dict[str, Any]:
    """``run.options`` of a swarm file: the options that shaped its measurement."""
    options: dict[str, Any] = {
        "target": config.target,
        "site": config.site,
        **swarm.options(),
        "max_rate": config.max_rate,
        "duration": config.duration,
        "warmup": config.warmup,
        "slo_ms": config.slo_ms,
        "interface": INTERFACE,
        "flavour": FLAVOUR,
        "timeout": config.timeout,
        "ca_file": str(config.ca_file) if config.ca_file is not None else None,
        "insecure": config.insecure,
        "out": str(config.out),
        "gzip": config.gzip,
    }
    if swarm.workload == "mix":
        options["mix"] = dict(config.mix)
    if swarm.workload == "burst":
        options["batch_size"] = config.batch_size
    if config.credentials is not None:
        options["user"] = config.credentials.user_name  # who ran it; never the password
    return options


def run_section(tag: RunTag, config: RunConfig, swarm: SwarmConfig) -> dict[str, Any]:
    """The ``run`` section a swarm's writer starts with (no profile: the swarm has none, and a
    missing one is never read as a quick tour; no concurrency levels: the users follow demand,
    each step says how many it used)."""
    return {
        "id": tag.run_id,
        "tag": tag.name,
        "site": config.site,
        "mode": "swarm",
        "parts": ["sweep"],
        "flavours": [FLAVOUR],
        "interfaces": [INTERFACE],
        "options": swarm_options(config, swarm),
    }


def interface_choice(api_version: str | None, rest: interfaces.RestProbe) -> (
        interfaces.InterfaceChoice):  # fmt: skip
    """``target.interfaces``: what the target serves (as ``sv7 run`` finds it) and that the
    swarm measured SOAP."""
    served, why = interfaces.served(api_version, rest)
    return interfaces.InterfaceChoice(
        (INTERFACE,), served, f"sv7 swarm measures SOAP (its workers' lean client); {why}", rest
    )


def step_extras(step: StepResult, reports: Sequence[StepReport]) -> dict[str, Any]:
    """What a swarm step adds to a sweep step: its workers, their users and limits, per-op
    figures, the scheduler's lateness and the merged histograms themselves (so that another
    tool can merge them again)."""
    capped = [r for r in reports if r.capped_s > 0]
    return {
        "workers": len(reports),
        "users": {
            "used": sum(r.users for r in reports),
            "cap_per_worker": max((r.cap for r in reports), default=0),
            "workers_at_cap": len(capped),
            "capped_s": max((r.capped_s for r in capped), default=0.0),
        },
        "user_capped": bool(capped),
        "client_bound": any(r.cpu_percent > CLIENT_BOUND_CPU for r in reports),
        "worker_cpu_percent": max((r.cpu_percent for r in reports), default=0.0),
        "lateness_ms": step.lateness.summary(),
        "histograms": {"corrected": step.corrected.encode(),
                       "uncorrected": step.uncorrected.encode()},
        "ops": {name: {"count": op.count, "ok": op.ok, "success_rate": op.success_rate,
                       "errors": dict(op.errors), "latency_ms": op.latency.summary()}
                for name, op in sorted(step.ops.items())},
    }  # fmt: skip


def suite_limit(step: Mapping[str, Any]) -> str | None:
    """Which limit of the suite bounded a step (its entry), in words; None when none did."""
    said = []
    if step.get("user_capped"):
        users = step.get("users") or {}
        sent = ((step.get("latency_ms") or {}).get("uncorrected") or {}).get("mean")
        answered = f"; calls took {sent:.1f} ms from their actual send" if isinstance(
            sent, int | float) else ""  # fmt: skip
        said.append(
            f"the --users cap ({users.get('cap_per_worker')} per worker) was reached with "
            f"slots waiting for {users.get('capped_s', 0):.1f} s of the step on "
            f"{users.get('workers_at_cap')} worker(s){answered} — raise --users to see what "
            "the catalogue holds"
        )
    if step.get("client_bound"):
        said.append(
            f"a worker used {step.get('worker_cpu_percent', 0):.0f} % of a core (over "
            f"{CLIENT_BOUND_CPU:.0f} %: the worker, not the catalogue, may be the limit) — add "
            "worker processes or hosts"
        )
    return "; ".join(said) if said else None


def lost_note(lost: dict[str, Any]) -> str:
    """The note of a lost worker."""
    where = f" on {lost['host']}" if lost.get("host") else ""
    if lost["when"] == "setup":
        return f"worker {lost['worker']}{where} did not set up: {lost['reason']}"
    if lost["when"] == "warm-up":
        return (f"worker {lost['worker']}{where} was lost during the warm-up before the first "
                f"step ({lost['reason']}); it measured nothing")  # fmt: skip
    return (f"worker {lost['worker']}{where} was lost during the step at "
            f"{format_value(lost['rate'], RATE_UNIT)} ({lost['reason']}); its calls of that step "
            "are not in the figures")  # fmt: skip
