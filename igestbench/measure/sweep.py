"""Rate sweeps: open-loop steps at rising demanded rates, and the sustained throughput.

A sweep runs :meth:`OpenLoop.run <igestbench.measure.schedule.OpenLoop.run>` at each rate of
:func:`sweep_rates` (a given list, or doubling from ``start_rate``, always ending at
``max_rate``), each step preceded by its warm-up (excluded from statistics) and repeated
``repeat`` times; repetitions are combined by addition (histograms, counts) and their means give
the confidence interval. The sweep ends early, and says why, when

* a step clearly fails: errors on half the calls or more, or a corrected *median* beyond
  10 x ``slo_ms`` (the median rather than p99, so a single stall does not end a sweep: the
  typical call is then ten times over the objective and higher rates can only be worse);
* the next step would not fit in ``max_total_s``;
* the load generator was stopped (Ctrl-C).

The **sustained rate** is the highest demanded rate whose corrected mean and p99 stay under
``slo_ms`` with under 1 % errors. Corrected, because a rate the catalogue only keeps up with by
making the schedule wait has not been sustained.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from igestbench.measure.stats import LatencyStats, OpStats, mean_ci95, merge_ops
from igestbench.results.sweeps import meets_objective, rate_text

if TYPE_CHECKING:
    from igestbench.measure.sampler import Sampler
    from igestbench.measure.schedule import OpenLoop

__all__ = [
    "StepResult",
    "SweepConfig",
    "SweepResult",
    "combine",
    "meets_slo",
    "run_sweep",
    "step_failure",
    "sustained_rate",
    "sweep_rates",
]

#: A step with at least this fraction of errors has clearly failed.
FAILED_ERROR_FRACTION = 0.5
#: ... or with a corrected median beyond this many times the objective.
FAILED_SLO_FACTOR = 10.0


@dataclass(frozen=True)
class StepResult:
    """One step at one demanded rate (possibly several repetitions combined)."""

    demanded_rate: float
    duration_s: float
    sent: int
    request_rate: float
    response_rate: float
    #: Slots sent later than the tolerance, and slots never sent; missed = late + unsent.
    late: int
    unsent: int
    corrected: LatencyStats
    uncorrected: LatencyStats
    #: How late sends were against their slots (the scheduler's own accuracy).
    lateness: LatencyStats
    errors: dict[str, int]
    ops: dict[str, OpStats]
    #: Per repetition mean latency (corrected, uncorrected) in ms; their CI replaces the
    #: per-call one when there are two or more (calls within one run are not independent).
    repetition_means_ms: tuple[tuple[float, float], ...] = field(default_factory=tuple)
    #: The sampler's view of the load generator during the step (PhaseSeries.client_summary),
    #: when a sampler watched it.
    client_cpu: Mapping[str, Any] | None = None

    @property
    def missed_slots(self) -> int:
        return self.late + self.unsent

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    @property
    def error_fraction(self) -> float:
        return self.error_count / self.sent if self.sent else 1.0

    def _latency(self, stats: LatencyStats, which: int) -> dict[str, Any]:
        figures = stats.summary()
        if len(self.repetition_means_ms) >= 2:
            _, low, high = mean_ci95([m[which] for m in self.repetition_means_ms])
            figures["ci95"] = [low, high]
        return figures

    def to_dict(self) -> dict[str, Any]:
        """A ``steps`` entry of a sweep in the result file (layout.md)."""
        return {
            "demanded_rate": self.demanded_rate,
            "duration_s": self.duration_s,
            "sent": self.sent,
            "request_rate": self.request_rate,
            "response_rate": self.response_rate,
            "missed_slots": self.missed_slots,
            "latency_ms": {
                "corrected": self._latency(self.corrected, 0),
                "uncorrected": self._latency(self.uncorrected, 1),
            },
            "errors": dict(self.errors),
            **({"client_bound": bool(self.client_cpu["bound"]),
                "client_cpu": dict(self.client_cpu)} if self.client_cpu is not None else {}),
        }


def combine(repetitions: Sequence[StepResult]) -> StepResult:
    """One step from repetitions at the same rate: counts and histograms added, rates over the
    summed durations, and each repetition's mean kept for the confidence interval."""
    if not repetitions:
        raise ValueError("nothing to combine")
    if len(repetitions) == 1:
        return repetitions[0]
    duration = sum(r.duration_s for r in repetitions)
    errors: dict[str, int] = {}
    for rep in repetitions:
        for cause, n in rep.errors.items():
            errors[cause] = errors.get(cause, 0) + n
    return StepResult(
        demanded_rate=repetitions[0].demanded_rate,
        duration_s=duration,
        sent=sum(r.sent for r in repetitions),
        request_rate=sum(r.request_rate * r.duration_s for r in repetitions) / duration,
        response_rate=sum(r.response_rate * r.duration_s for r in repetitions) / duration,
        late=sum(r.late for r in repetitions),
        unsent=sum(r.unsent for r in repetitions),
        corrected=LatencyStats.merged(r.corrected for r in repetitions),
        uncorrected=LatencyStats.merged(r.uncorrected for r in repetitions),
        lateness=LatencyStats.merged(r.lateness for r in repetitions),
        errors=errors,
        ops=merge_ops(r.ops for r in repetitions),
        repetition_means_ms=tuple(
            (r.corrected.mean_ms, r.uncorrected.mean_ms) for r in repetitions
        ),
    )


def step_failure(step: StepResult, slo_ms: float) -> str | None:
    """Why ``step`` clearly failed (a sweep stops there), or None."""
    if step.error_fraction >= FAILED_ERROR_FRACTION:
        return f"{rate_text(step.demanded_rate)}: errors on {step.error_fraction:.0%} of the calls"
    median = step.corrected.percentile_ms(50.0)
    if median > FAILED_SLO_FACTOR * slo_ms:
        return (f"{rate_text(step.demanded_rate)}: median latency {median:.1f} ms > 10 x "
                f"{slo_ms:g} ms")  # fmt: skip
    return None


def meets_slo(step: StepResult, slo_ms: float) -> bool:
    """Corrected mean and p99 under ``slo_ms``, fewer than 1 % errors: the objective as
    :func:`igestbench.results.sweeps.objective_problem` defines it for the file's steps."""
    if not step.corrected.count:
        return False
    return meets_objective(step.corrected.mean_ms, step.corrected.percentile_ms(99.0),
                           step.error_count, step.sent, slo_ms)


def sustained_rate(steps: Sequence[StepResult], slo_ms: float) -> float | None:
    """The highest demanded rate among ``steps`` that meets the objective; None if none does."""
    passing = [s.demanded_rate for s in steps if meets_slo(s, slo_ms)]
    return max(passing) if passing else None


@dataclass(frozen=True)
class SweepConfig:
    """What a sweep runs: rates, step length, objective and bounds."""

    slo_ms: float
    max_rate: float
    #: Explicit demanded rates (those above ``max_rate`` are left out); None: doubling.
    rates: Sequence[float] | None = None
    start_rate: float = 10.0
    step_s: float = 5.0
    warmup_s: float = 1.0
    repeat: int = 1
    #: No step starts that could not end within this many seconds of the sweep's start.
    max_total_s: float = 300.0
    #: Client flavour the sweep's calls use (for the result file).
    flavour: str = "lean"

    def __post_init__(self) -> None:
        if self.slo_ms <= 0 or self.max_rate <= 0 or self.start_rate <= 0:
            raise ValueError("slo_ms, max_rate and start_rate must be positive")
        if self.step_s <= 0 or self.warmup_s < 0 or self.repeat < 1 or self.max_total_s <= 0:
            raise ValueError("step_s and max_total_s positive, warmup_s >= 0, repeat >= 1")


def sweep_rates(config: SweepConfig) -> list[float]:
    """The demanded rates of a sweep, ascending, the last one ``max_rate``."""
    if config.rates is not None:
        return sorted({r for r in config.rates if 0 < r <= config.max_rate})
    rates: list[float] = []
    rate = min(config.start_rate, config.max_rate)
    while rate < config.max_rate:
        rates.append(rate)
        rate *= 2
    return [*rates, config.max_rate]


@dataclass(frozen=True)
class SweepResult:
    """The steps of one sweep and the rate it sustained; a ``sweeps`` entry of the result file."""

    flavour: str
    slo_ms: float
    connection_mode: str
    steps: tuple[StepResult, ...]
    sustained_rate: float | None
    #: Why the sweep ended before ``max_rate`` (None when it ran every step).
    stopped: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    #: The warm-up before the first step, not counted (:meth:`OpenLoop.warm_up`): its rate,
    #: seconds, clients made and calls; None: none ran.
    warmup: Mapping[str, float | int] | None = None

    def to_dict(self) -> dict[str, Any]:
        entry = {
            "flavour": self.flavour,
            "slo_ms": self.slo_ms,
            "connection_mode": self.connection_mode,
            "steps": [s.to_dict() for s in self.steps],
            "sustained_rate": self.sustained_rate,
        }
        if self.warmup is not None:
            entry["warmup"] = dict(self.warmup)
        return entry


def run_sweep(
    load: OpenLoop, config: SweepConfig, sampler: Sampler | None = None, phase: str = "sweep"
) -> SweepResult:
    """Steps ``load`` through the rates of ``config``; bounded by ``max_total_s``.

    With a ``sampler``, each step is its own phase ``"<phase>/<rate>"``, so a step whose client
    was saturated is flagged by itself rather than averaged away over the sweep.
    """
    started = time.monotonic()
    step_total = config.repeat * (config.warmup_s + config.step_s)
    steps: list[StepResult] = []
    stopped: str | None = None
    rates = sweep_rates(config)
    # the first step must not pay for connections, logins and cold server caches
    warmup = load.warm_up(rates[0], config.warmup_s) if rates and not load.stopped else None
    for rate in rates:
        if time.monotonic() - started + step_total > config.max_total_s:
            stopped = (f"time budget of {config.max_total_s:g} s reached before "
                       f"{rate_text(rate)}")  # fmt: skip
            break
        in_phase = sampler.phase(f"{phase}/{rate:g}") if sampler else contextlib.nullcontext()
        with in_phase as series:
            # the load threads' CPU is read before they exit (OpenLoop.run): a step shorter
            # than one sampling interval has a reading of its client too
            on_end = sampler.sample if sampler else None
            repetitions = [
                load.run(rate, config.step_s, config.warmup_s, on_end=on_end)
                for _ in range(config.repeat)
            ]
        step = combine(repetitions)
        if series is not None:
            step = dataclasses.replace(step, client_cpu=series.client_summary())
        steps.append(step)
        if load.stopped:
            stopped = f"stopped during the step at {rate_text(rate)}"
            break
        stopped = step_failure(step, config.slo_ms)
        if stopped is not None:
            break
    return SweepResult(
        flavour=config.flavour,
        slo_ms=config.slo_ms,
        connection_mode=load.connection_mode,
        steps=tuple(steps),
        sustained_rate=sustained_rate(steps, config.slo_ms),
        stopped=stopped,
        warmup=warmup,
    )
