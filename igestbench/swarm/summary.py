"""What ``sv7 swarm master`` prints: the registry's sweep lines, and the swarm's own limits.

Each step's line and the sweep's outcome (the sustained rate, with its unit and bound, and why
the sweep ended there: the objective broken at which step, or "capped: reached --rates/--max-rate
with the objective met") are :mod:`igestbench.results.sweeps`'s — the same words ``sv7 run``
prints and the file's summary and the report hold, read from the sweep entry as written. The
swarm adds, under a step a limit of the suite bounded, which limit and what to change (the
``--users`` cap, a worker's CPU): said as the suite's, never as the catalogue's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from igestbench.results.figures import cap_option
from igestbench.results.formatting import format_value
from igestbench.results.sweeps import (
    RATE_UNIT,
    interface_label,
    objective_problem,
    step_line,
    sweep_lines,
)
from igestbench.swarm.record import suite_limit

__all__ = ["bounded_text", "outcome_lines", "problem", "rate", "step_lines"]


def rate(value: float) -> str:
    """``320 requests/s``: a sweep's rate as the registry writes it."""
    return format_value(value, RATE_UNIT)


def problem(step: Mapping[str, Any], slo_ms: float) -> str | None:
    """How a step (its entry) broke the objective; None when it met it."""
    corrected = (step.get("latency_ms") or {}).get("corrected") or {}
    errors = sum((step.get("errors") or {}).values())
    return objective_problem(corrected.get("mean"), corrected.get("p99"), errors,
                             int(step.get("sent") or 0), slo_ms)  # fmt: skip


def bounded_text(demanded: float) -> str:
    """Why a sweep ended at a step a limit of the suite bounded (the step's line says which)."""
    return (f"a limit of the suite bounded the step at {rate(demanded)}, and would bound higher "
            "rates the more")  # fmt: skip


def step_lines(index: int, step: Mapping[str, Any], slo_ms: float) -> list[str]:
    """A step as it ends: the registry's line, and the suite's limit when one bounded it."""
    lines = [f"step {index + 1}: {step_line(step, slo_ms)}"]
    limit = suite_limit(step)
    if limit is not None:
        lines.append(f"  bounded by the suite (not a measure of the catalogue): {limit}")
    return lines


def outcome_lines(sweep: Mapping[str, Any], run: Mapping[str, Any]) -> list[str]:
    """The sweep's outcome, as the file's summary row and ``sv7 run`` say it."""
    return sweep_lines(sweep, interface_label(sweep), cap_option(run), steps=False)
