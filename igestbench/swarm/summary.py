"""What ``sv7 swarm master`` prints: a line per step as it ends, and the sweep's outcome.

Read from the sweep entry as the result file holds it, so that the terminal and the file can
never disagree: per step the rate achieved, latency from the intended send (p50, p99, mean),
errors, missed slots, the users the workers used, whether the objective was met — and a limit of
the suite that bounded the step, said as the suite's (never as the catalogue's); at the end the
sustained rate with its unit and why the sweep stopped: the objective broken at which step, or
"capped: reached --max-rate with the objective met — raise --max-rate". Never ``None``.

This is the swarm's own small printer until the one registry of figures (issue 19) gives
``sv7 run`` and ``sv7 swarm`` the same sweep summary: :func:`step_lines` and
:func:`outcome_lines` are the two functions it replaces.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from igestbench.measure.sweep import SUSTAINED_ERROR_FRACTION
from igestbench.swarm.record import suite_limit

__all__ = ["UNITS", "bounded_text", "objective_problem", "outcome_lines", "rate", "step_lines"]

#: What one call of each workload is, as its rates are counted.
UNITS = {"single-query": "lookups/s", "mix": "calls/s", "burst": "createMany calls/s"}


def rate(value: float, workload: str) -> str:
    """``320 lookups/s``, ``19.2 lookups/s``: a rate with what it counts."""
    shown = f"{value:,.0f}" if value >= 100 or value == int(value) else f"{value:.1f}"
    return f"{shown} {UNITS.get(workload, 'calls/s')}"


def _ms(value: Any) -> str:
    return f"{value:.1f} ms" if isinstance(value, int | float) else "n/a"


def _error_fraction(step: Mapping[str, Any]) -> float:
    sent = step.get("sent") or 0
    errors = sum((step.get("errors") or {}).values())
    return errors / sent if sent else 1.0


def objective_problem(step: Mapping[str, Any], slo_ms: float) -> str | None:
    """Why a step (its entry) did not meet the objective (corrected mean and p99 under the
    objective, fewer than 1 % errors), as sustained_rate decides; None when it did."""
    corrected = (step.get("latency_ms") or {}).get("corrected") or {}
    fraction = _error_fraction(step)
    if not step.get("sent"):
        return "no call was made"
    if fraction >= SUSTAINED_ERROR_FRACTION:
        return f"errors on {fraction:.1%} of the calls (objective < {SUSTAINED_ERROR_FRACTION:.0%})"
    for name in ("p99", "mean"):
        value = corrected.get(name)
        if not isinstance(value, int | float) or value >= slo_ms:
            return f"{name} {_ms(value)} ≥ {slo_ms:g} ms"
    return None


def step_lines(index: int, step: Mapping[str, Any], workload: str, slo_ms: float,
               batch_size: int | None = None) -> list[str]:  # fmt: skip
    """A step as it ends: one line, and one more when a limit of the suite bounded it."""
    corrected = (step.get("latency_ms") or {}).get("corrected") or {}
    users = step.get("users") or {}
    answered = rate(step.get("response_rate") or 0.0, workload)
    if workload == "burst" and batch_size:
        answered += f" ({(step.get('response_rate') or 0.0) * batch_size:,.0f} Datafiles/s)"
    problem = objective_problem(step, slo_ms)
    verdict = "objective met" if problem is None else f"objective broken: {problem}"
    lines = [
        f"step {index + 1} at {rate(step['demanded_rate'], workload)}: answered {answered}; "
        f"latency from the intended send p50 {_ms(corrected.get('p50'))}, p99 "
        f"{_ms(corrected.get('p99'))}, mean {_ms(corrected.get('mean'))}; errors "
        f"{_error_fraction(step) if step.get('sent') else 0:.1%}; missed slots "
        f"{step.get('missed_slots', 0):,}; users {users.get('used', '?')} on "
        f"{step.get('workers', '?')} worker(s) — {verdict}"
    ]
    limit = suite_limit(step)
    if limit is not None:
        lines.append(f"  bounded by the suite (not a measure of the catalogue): {limit}")
    if step.get("lost_workers"):
        lines.append(f"  {step['lost_workers']} worker(s) lost during this step: their calls "
                     "are missing from it, so it cannot be the sustained rate")  # fmt: skip
    return lines


def outcome_lines(entry: Mapping[str, Any], workload: str, last_rate: float,
                  rate_flag: str) -> list[str]:  # fmt: skip
    """The sweep's outcome: the sustained rate and why the sweep stopped. ``last_rate``: the
    highest rate it was to reach; ``rate_flag``: the option that set it (--max-rate, --rates)."""
    slo = float(entry["slo_ms"])
    steps = list(entry.get("steps") or [])
    sustained = entry.get("sustained_rate")
    objective = (f"corrected mean and p99 < {slo:g} ms, errors < "
                 f"{SUSTAINED_ERROR_FRACTION:.0%}")  # fmt: skip
    if sustained is not None:
        lines = [f"sustained: {rate(sustained, workload)} ({objective})"]
    else:
        lines = [f"sustained: none — no step met the objective ({objective})"]
    lines.append(f"why the sweep stopped: {_why(entry, steps, workload, last_rate, rate_flag)}")
    return lines


def bounded_text(demanded: float, workload: str, limit: str) -> str:
    """A step bounded by a limit of the suite: said as the suite's, not a measure of the
    catalogue."""
    return (f"bounded by the suite at {rate(demanded, workload)} (a limit of the suite, not a "
            f"measure of the catalogue): {limit}")  # fmt: skip


def _why(entry: Mapping[str, Any], steps: list[Mapping[str, Any]], workload: str,
         last_rate: float, rate_flag: str) -> str:  # fmt: skip
    slo = float(entry["slo_ms"])
    stopped = entry.get("stopped")
    if stopped:  # a stop, lost workers, a clear failure, the suite's own limit
        return str(stopped)
    if not steps:
        return "no step ran"
    problems = [objective_problem(s, slo) for s in steps]
    if problems[-1] is not None:  # the sweep ended on a broken objective
        limit = suite_limit(steps[-1])
        if limit is not None:  # the suite's own limit must not read as the catalogue's
            return bounded_text(steps[-1]["demanded_rate"], workload, limit)
        first = len(steps) - 1
        while first > 0 and problems[first - 1] is not None:
            first -= 1
        above = " and every step above it" if first < len(steps) - 1 else ""
        return (f"objective broken at {rate(steps[first]['demanded_rate'], workload)}{above} "
                f"({problems[first]})")  # fmt: skip
    earlier = [rate(s["demanded_rate"], workload) for s, p in zip(steps, problems, strict=True)
               if p is not None]  # fmt: skip
    also = f" (it was broken at {', '.join(earlier)})" if earlier else ""
    if steps[-1]["demanded_rate"] < last_rate:
        return f"ended at {rate(steps[-1]['demanded_rate'], workload)}{also}"
    if rate_flag == "--rates":
        return (f"capped: reached the highest of --rates ({rate(last_rate, workload)}) with the "
                f"objective met — add higher rates{also}")  # fmt: skip
    return (f"capped: reached {rate_flag} ({rate(last_rate, workload)}) with the objective met "
            f"— raise {rate_flag}{also}")  # fmt: skip
