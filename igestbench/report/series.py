"""The data behind each chart, taken from the result documents of a campaign's runs.

Only figures the files hold are drawn: a mean latency per concurrency level is the mean of the
unit operations' calls pooled by their counts (exact, since each op's mean covers its calls), a
sweep step's band is the confidence interval the run computed, a phase's CPU is the mean of the
sampler's readings in that phase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from igestbench.results.campaign import CampaignRun
from igestbench.results.campaign_file import CampaignSite, CampaignTarget
from igestbench.results.figures import (
    MEAN,
    MEASURES,
    RATE,
    RowIndex,
    summary_rows,
)

#: The workloads in the order the runner runs them.
WORKLOADS = tuple(dict.fromkeys(m.workload for m in MEASURES))
#: The measure each workload's scaling panels draw: one per workload (burst: createMany, how
#: ingestion scales; its create rate is in the tables), so a chart keeps its eight panels.
CHARTED = tuple(m for m in MEASURES if m.name in ("", "createMany"))
#: CPU use above which the sampler counts a client as saturated.
SATURATED_PERCENT = 90.0

@dataclass(frozen=True)
class Series:
    label: str
    x: tuple[float, ...]
    y: tuple[float | None, ...]
    #: a band around ``y`` (e.g. a 95 % confidence interval), when there is one
    low: tuple[float | None, ...] | None = None
    high: tuple[float | None, ...] | None = None


@dataclass(frozen=True)
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    #: draw y = x (achieved against demanded)
    diagonal: bool = False
    #: a horizontal reference line (e.g. 90 % CPU)
    hline: float | None = None
    #: names of the x positions 0, 1, 2 … (phases), when x is categorical
    categories: tuple[str, ...] = ()
    #: x ticks at the measured x values only (concurrency levels: 1, 2, 4 … clients)
    ticks_at_data: bool = False
    #: y counts things (errors): whole-number ticks
    counts: bool = False
    #: what the reference line means, written beside it
    hline_label: str = ""
    #: said in the panel's place when no series has a value
    empty_note: str = "no data"
    #: both axes logarithmic (latency against catalogue size: a slope is a growth rate)
    log: bool = False


def _by_site(runs: Sequence[CampaignRun], sites: Sequence[CampaignSite]) -> list[CampaignRun]:
    rank = {s.name: i for i, s in enumerate(sites)}
    return sorted(runs, key=lambda r: rank.get(r.site, len(rank)))


def _label(run: CampaignRun, flavour: str) -> str:
    """A line's name in the key: site and flavour, and whether its figures are a quick tour's."""
    return f"{run.site} · {flavour}" + (" (quick tour)" if run.quick else "")


def scaling_panels(runs: Sequence[CampaignRun], sites: Sequence[CampaignSite]) -> tuple[Panel, ...]:
    """Two panels per workload (:data:`CHARTED`: burst by its createMany batches): its rate
    and mean latency against clients, as the registry of figures gives them
    (results/figures.py), never 0 for a level whose workers failed (that is no measurement)."""
    panels = []
    indexed = [(run, RowIndex(summary_rows(run.result))) for run in _by_site(runs, sites)]
    for measure in CHARTED:
        lines: dict[str, list[tuple[float, float | None, float | None]]] = {}
        for run, index in indexed:
            for entry in run.result.benchmarks:
                level = entry.get("concurrency")
                if entry["workload"] != measure.workload or not isinstance(level, int):
                    continue
                interface = str(entry.get("interface") or "soap")
                flavour = str(entry["flavour"])
                rate = index.get(measure.workload, interface, flavour, level,
                                 measure.metric(RATE))
                mean = index.get(measure.workload, interface, flavour, level,
                                 measure.metric(MEAN))
                lines.setdefault(_label(run, flavour), []).append(
                    (float(level), rate.value if rate else None, mean.value if mean else None))
        if not lines:
            continue
        ordered = {label: sorted(points) for label, points in lines.items()}
        rates = tuple(Series(label, tuple(p[0] for p in ps), tuple(p[1] for p in ps))
                      for label, ps in ordered.items())
        means = tuple(Series(label, tuple(p[0] for p in ps), tuple(p[2] for p in ps))
                      for label, ps in ordered.items())
        name = f"{measure.workload} {measure.name}" if measure.name else measure.workload
        note = "no data: every run of it failed"
        panels.append(Panel(f"{name}: rate", "clients", measure.unit, rates,
                            ticks_at_data=True, empty_note=note))
        panels.append(Panel(f"{name}: mean latency", "clients", "ms per call", means,
                            ticks_at_data=True, empty_note=note))
    return tuple(panels)


def _step_errors(step: Mapping[str, Any]) -> float:
    errors = step.get("errors") or {}
    return float(sum(n for n in errors.values() if isinstance(n, int | float)))


def sweep_panels(runs: Sequence[CampaignRun], sites: Sequence[CampaignSite]) -> tuple[Panel, ...]:
    """Achieved rate, latency with its 95 % band, and errors against the demanded rate."""
    achieved, latency, errors = [], [], []
    for run in _by_site(runs, sites):
        for sweep in run.result.sweeps:
            steps = sorted((s for s in sweep.get("steps", ())
                            if isinstance(s.get("demanded_rate"), int | float)),
                           key=lambda s: s["demanded_rate"])
            if not steps:
                continue
            label = _label(run, str(sweep.get("flavour", "?")))
            x = tuple(float(s["demanded_rate"]) for s in steps)
            corrected = [((s.get("latency_ms") or {}).get("corrected") or {}) for s in steps]
            ci: list[list[float | None]] = [
                c["ci95"] if isinstance(c.get("ci95"), list) else [None, None] for c in corrected]
            achieved.append(Series(label, x, tuple(s.get("response_rate") for s in steps)))
            latency.append(Series(label, x, tuple(c.get("mean") for c in corrected),
                                  low=tuple(b[0] for b in ci), high=tuple(b[1] for b in ci)))
            errors.append(Series(label, x, tuple(_step_errors(s) for s in steps)))
    if not achieved:
        return ()
    return (
        Panel("achieved vs demanded", "demanded requests/s", "answered requests/s",
              tuple(achieved), diagonal=True),
        Panel("latency (mean, 95 % CI)", "demanded requests/s", "ms, from intended send",
              tuple(latency)),
        Panel("errors per step", "demanded requests/s", "failed requests", tuple(errors),
              counts=True),
    )


def _mean(values: Any) -> float | None:
    numbers = [v for v in values or () if isinstance(v, int | float)]
    return sum(numbers) / len(numbers) if numbers else None


def history_panels(runs: Sequence[CampaignRun], targets: Sequence[CampaignTarget]
                   ) -> tuple[Panel, ...]:
    """Client CPU and network, mean per phase, one line per target the site ran against."""
    rank = {t.name: i for i, t in enumerate(targets)}
    ordered = sorted(runs, key=lambda r: rank.get(r.target, len(rank)))
    phases = list(dict.fromkeys(str(s["phase"]) for r in ordered for s in r.result.samples))
    if not phases:
        return ()
    position = {name: float(i) for i, name in enumerate(phases)}
    cpu, net = [], []
    for run in ordered:
        samples = [s for s in run.result.samples if s["phase"] in position]
        if not samples:
            continue
        x = tuple(position[s["phase"]] for s in samples)
        cpu.append(Series(run.target, x, tuple(_mean(s.get("cpu_percent")) for s in samples)))
        traffic = []
        for s in samples:
            parts = [_mean(s.get("net_in_mbit_s")), _mean(s.get("net_out_mbit_s"))]
            known = [p for p in parts if p is not None]
            traffic.append(sum(known) if known else None)
        net.append(Series(run.target, x, tuple(traffic)))
    return (
        Panel("client CPU per phase", "", "CPU % (mean)", tuple(cpu), hline=SATURATED_PERCENT,
              hline_label=f"{SATURATED_PERCENT:.0f} %: above it the client, not the server, "
                          "limits the figures", categories=tuple(phases)),
        Panel("client network per phase", "", "Mbit/s in + out (mean)", tuple(net),
              categories=tuple(phases)),
    )
