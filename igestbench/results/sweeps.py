"""A load sweep read back: the objective, each step's line, and why the sweep ended where it did.

Everything here reads a ``sweeps`` entry of a result file (a dict), so ``sv7 run`` (after each
sweep and at its end), ``sv7 swarm master`` (after each step and at its end) and the report say
the same. Use::

    from igestbench.results.sweeps import step_line, sweep_lines, sweep_verdict

    print(step_line(entry["steps"][-1], entry["slo_ms"]))    # after a step
    for line in sweep_lines(entry, label="SOAP · lean"):      # at the end
        print(line)
    verdict = sweep_verdict(entry)       # .value, .bound, .reason, .text, .line

**The objective** (:func:`meets_objective`): corrected mean and p99 under ``slo_ms`` with under
1 % errors — from the intended send time, since a rate kept only by making the schedule wait has
not been sustained. The sustained rate is the highest demanded rate that met it, as the run
decided (``sustained_rate``; ``sv7 swarm`` leaves out steps that lost a worker). Its verdict:

* a higher step broke the objective: the rate is a measurement; the verdict says which step and
  how (``objective broken at 80/s: p99 72.1 ms ≥ 50 ms``);
* no higher step ran and the sweep ran every rate: the cap (``--max-rate``) limited it, not the
  server — a lower bound, written ``≥ 40.0 requests/s``, marked ``capped``: "capped: reached
  --max-rate (40.0 requests/s) with the objective met — raise --max-rate";
* no higher step ran because the sweep ended early (time budget, a stop, the target gone): a
  lower bound too, with the reason;
* no step met the objective: an upper bound, ``< 10.0 requests/s`` (the lowest step), and how the
  lowest step broke it. A sustained rate is never shown as ``None``;
* the step that broke the objective was bounded by a limit of the suite — ``sv7 swarm``'s
  ``--users`` cap (``user_capped``): the rate is a lower bound, marked ``user-capped``, and the
  verdict says it is the suite's limit, not the catalogue's ("objective broken at 80.0
  requests/s: …; the --users cap bounded that step: a limit of the suite, not of the catalogue
  — raise --users").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from igestbench.results.formatting import format_value

__all__ = [
    "SUSTAINED_ERROR_FRACTION",
    "SweepVerdict",
    "interface_label",
    "meets_objective",
    "objective_problem",
    "objective_text",
    "rate_text",
    "step_line",
    "sweep_lines",
    "sweep_verdict",
]

#: The error fraction a sustained rate must stay under.
SUSTAINED_ERROR_FRACTION = 0.01
#: The unit of a sweep's rates: its calls are one request each.
RATE_UNIT = "requests/s"


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def rate_text(value: float | None) -> str:
    """``40.0 requests/s``: a sweep's rate as every printer writes it."""
    return format_value(value, RATE_UNIT)


_rate = rate_text


def _ms(value: float | None) -> str:
    return format_value(value, "ms")


def objective_text(slo_ms: float | None) -> str:
    """``corrected mean and p99 < 50 ms, < 1 % errors``."""
    slo = "?" if slo_ms is None else f"{slo_ms:g}"
    return f"corrected mean and p99 < {slo} ms, < {SUSTAINED_ERROR_FRACTION:.0%} errors"


def objective_problem(mean_ms: float | None, p99_ms: float | None, errors: int, sent: int,
                      slo_ms: float) -> str | None:
    """How a step broke the objective (None: it met it), from its corrected mean and p99 and
    its error count among the calls sent. :func:`measure.sweep.meets_slo` asks the same."""
    if sent <= 0:
        return "no call was sent"
    if errors / sent >= SUSTAINED_ERROR_FRACTION:
        return f"errors on {errors / sent:.1%} of the calls (≥ {SUSTAINED_ERROR_FRACTION:.0%})"
    if mean_ms is None:
        return "no call was answered"
    if p99_ms is not None and p99_ms >= slo_ms:
        return f"p99 {_ms(p99_ms)} ≥ {slo_ms:g} ms"
    if mean_ms >= slo_ms:
        return f"mean {_ms(mean_ms)} ≥ {slo_ms:g} ms"
    if p99_ms is None:
        return "no p99 recorded"
    return None


def meets_objective(mean_ms: float | None, p99_ms: float | None, errors: int, sent: int,
                    slo_ms: float) -> bool:
    return objective_problem(mean_ms, p99_ms, errors, sent, slo_ms) is None


def _corrected(step: Mapping[str, Any]) -> Mapping[str, Any]:
    latency = step.get("latency_ms")
    corrected = latency.get("corrected") if isinstance(latency, Mapping) else None
    return corrected if isinstance(corrected, Mapping) else {}


def _errors(step: Mapping[str, Any]) -> int:
    errors = step.get("errors")
    if not isinstance(errors, Mapping):
        return 0
    return sum(int(n) for n in errors.values() if isinstance(n, int | float)
               and not isinstance(n, bool))


def _sent(step: Mapping[str, Any]) -> int:
    sent = step.get("sent")
    return int(sent) if isinstance(sent, int | float) and not isinstance(sent, bool) else 0


def _step_problem(step: Mapping[str, Any], slo_ms: float | None) -> str | None:
    if _number(step.get("lost_workers")):
        return f"{int(step['lost_workers'])} worker(s) lost: the step misses their calls"
    if slo_ms is None:
        return None
    corrected = _corrected(step)
    return objective_problem(_number(corrected.get("mean")), _number(corrected.get("p99")),
                             _errors(step), _sent(step), slo_ms)


def step_line(step: Mapping[str, Any], slo_ms: float | None) -> str:
    """One step in one line: demanded and answered rate, corrected latency, errors, missed
    slots, and whether it met the objective (and how it broke it)."""
    corrected = _corrected(step)
    sent, errors = _sent(step), _errors(step)
    missed = step.get("missed_slots")
    parts = [f"{_rate(_number(step.get('demanded_rate')))} demanded",
             f"{_rate(_number(step.get('response_rate')))} answered",
             f"mean {_ms(_number(corrected.get('mean')))}",
             f"p50 {_ms(_number(corrected.get('p50')))}",
             f"p99 {_ms(_number(corrected.get('p99')))}",
             f"{errors:,} of {sent:,} calls failed" if errors else f"{sent:,} calls, no error"]
    if isinstance(missed, int) and missed:
        parts.append(f"{missed:,} missed slot{'s' if missed != 1 else ''}")
    workers = step.get("workers")
    if isinstance(workers, int) and not isinstance(workers, bool):
        parts.append(f"{workers} worker{'s' if workers != 1 else ''}")
    users = step.get("users")  # sv7 swarm: the users its workers sized by demand
    used = users.get("used") if isinstance(users, Mapping) else None
    if isinstance(used, int) and not isinstance(used, bool):
        parts.append(f"{used} user{'s' if used != 1 else ''}")
    if step.get("user_capped") is True:
        parts.append("user-capped")
    if step.get("client_bound") is True:
        parts.append("client-bound")
    problem = _step_problem(step, slo_ms)
    verdict = "met the objective" if problem is None else f"broke the objective: {problem}"
    if slo_ms is None:
        verdict = "no objective recorded"
    return ", ".join(parts) + f" — {verdict}"


@dataclass(frozen=True)
class SweepVerdict:
    """What a sweep sustained and why it ended there."""

    #: the sustained rate, or the bound of it; None only when no step ran
    value: float | None
    #: None (measured), "lower" (≥: capped or ended early), "upper" (<: no step met it)
    bound: str | None
    #: calls sent in the step the value comes from
    samples: int
    marks: tuple[str, ...]
    #: why, in one line ("capped: reached --max-rate …", "objective broken at 80/s: …")
    reason: str
    slo_ms: float | None

    @property
    def text(self) -> str:
        """The sustained rate as written everywhere: ``250 requests/s``, ``≥ 40.0
        requests/s``, ``< 10.0 requests/s``, ``—`` when no step ran."""
        return format_value(self.value, RATE_UNIT, self.bound)

    @property
    def line(self) -> str:
        """``sustained 250 requests/s (corrected mean and p99 < 50 ms, < 1 % errors) —
        objective broken at 500 requests/s: p99 72.1 ms ≥ 50 ms``."""
        return f"sustained {self.text} ({objective_text(self.slo_ms)}) — {self.reason}"


#: What a verdict adds when ``sv7 swarm``'s --users cap bounded the step that decided it.
_USER_CAP = ("; the --users cap bounded that step: a limit of the suite, not of the catalogue — "
             "raise --users")


def _steps(sweep: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    steps = [s for s in sweep.get("steps") or () if isinstance(s, Mapping)
             and _number(s.get("demanded_rate")) is not None]
    return sorted(steps, key=lambda s: float(s["demanded_rate"]))


def sweep_verdict(sweep: Mapping[str, Any], cap_option: str = "--max-rate") -> SweepVerdict:
    """The sustained rate of a ``sweeps`` entry and why the sweep ended there (module
    docstring); ``cap_option`` names the option that set the highest rate (``sv7 swarm``:
    ``--rates``)."""
    slo = _number(sweep.get("slo_ms"))
    steps = _steps(sweep)
    stopped = sweep.get("stopped") if isinstance(sweep.get("stopped"), str) else None
    sustained = _number(sweep.get("sustained_rate"))
    if not steps:
        return SweepVerdict(None, None, 0, ("failed",),
                            f"no step ran: {stopped}" if stopped else "no step ran", slo)
    if sustained is None:
        lowest = steps[0]
        problem = _step_problem(lowest, slo)
        how = f": {problem}" if problem else ""
        ended = f"; the sweep ended: {stopped}" if stopped else ""
        capped = lowest.get("user_capped") is True
        return SweepVerdict(
            _number(lowest["demanded_rate"]), "upper", _sent(lowest),
            ("user-capped",) if capped else (),
            f"no step met the objective; at the lowest, "
            f"{_rate(_number(lowest['demanded_rate']))}{how}{_USER_CAP if capped else ''}"
            f"{ended}", slo)
    at = next((s for s in steps if float(s["demanded_rate"]) == sustained), None)
    samples = _sent(at) if at is not None else 0
    verdict = _verdict(sustained, samples, steps, stopped, slo, cap_option)
    if at is not None and at.get("client_bound") is True:
        # the load generator, not the catalogue, may have limited the step that sustained
        verdict = replace(
            verdict, marks=(*verdict.marks, "client-bound"),
            reason=f"{verdict.reason}; the load generator was client-bound at {_rate(sustained)}")
    return _with_lower_breaks(verdict, steps, sustained, slo)


def _with_lower_breaks(verdict: SweepVerdict, steps: list[Mapping[str, Any]],
                       sustained: float, slo: float | None) -> SweepVerdict:
    """The verdict, saying so where a step below the sustained rate broke the objective: the
    sustained rate is the highest that met it, and a reader must not take it for "every rate up
    to it met it"."""
    below = [(s, problem) for s in steps if float(s["demanded_rate"]) < sustained
             and (problem := _step_problem(s, slo)) is not None]  # fmt: skip
    if not below:
        return verdict
    listed = ", ".join(f"{_rate(_number(s['demanded_rate']))} ({problem})"
                       for s, problem in below[:3])  # fmt: skip
    more = f" and {len(below) - 3} more" if len(below) > 3 else ""
    return replace(
        verdict, reason=f"{verdict.reason}; yet a lower step broke it: {listed}{more}")


def _verdict(sustained: float, samples: int, steps: list[Mapping[str, Any]],
             stopped: str | None, slo: float | None, cap_option: str) -> SweepVerdict:
    above = [s for s in steps if float(s["demanded_rate"]) > sustained]
    if above:
        broken = above[0]
        problem = _step_problem(broken, slo)
        how = f": {problem}" if problem else ""
        ended = f"; the sweep ended: {stopped}" if stopped else ""
        if broken.get("user_capped") is True:  # the suite's limit, not the catalogue's
            return SweepVerdict(
                sustained, "lower", samples, ("user-capped",),
                f"objective broken at {_rate(_number(broken['demanded_rate']))}{how}"
                f"{_USER_CAP}{ended}", slo)
        return SweepVerdict(
            sustained, None, samples, (),
            f"objective broken at {_rate(_number(broken['demanded_rate']))}{how}{ended}", slo)
    if stopped:
        return SweepVerdict(
            sustained, "lower", samples, (),
            f"the sweep ended before a step broke the objective ({stopped}): a lower bound", slo)
    return SweepVerdict(
        sustained, "lower", samples, ("capped",),
        f"capped: reached {cap_option} ({_rate(sustained)}) with the objective met — raise "
        f"{cap_option}", slo)


def sweep_lines(sweep: Mapping[str, Any], label: str | None = None,
                cap_option: str = "--max-rate", steps: bool = True) -> list[str]:
    """The end of a sweep in lines: the verdict (``sweep SOAP · lean: sustained …``), then one
    indented line per step (``steps=False`` leaves them out)."""
    verdict = sweep_verdict(sweep, cap_option)
    head = f"sweep {label}: " if label else "sweep: "
    lines = [head + verdict.line]
    if steps:
        slo = verdict.slo_ms
        lines += [f"  {step_line(s, slo)}" for s in _steps(sweep)]
    return lines


def interface_label(sweep: Mapping[str, Any]) -> str:
    """``SOAP · lean``: the interface and the client of a sweep, as the summaries name them."""
    interface = str(sweep.get("interface") or "soap").upper()
    return f"{interface} · {sweep.get('flavour') or 'lean'}"
