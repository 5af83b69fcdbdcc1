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
from igestbench.results.workloads import UNIT_OPS

#: The workloads in the order the runner runs them.
WORKLOADS = tuple(UNIT_OPS)
#: CPU use above which the sampler counts a client as saturated.
SATURATED_PERCENT = 90.0
#: What each workload's throughput counts and its latency is per: (things, one thing).
COUNTED = {
    "full-cycle": ("NeXus files ingested", "file"),
    "single-query": ("queries", "query"),
    "burst": ("Datafiles", "create call"),
    "multi-query": ("result sets", "result set"),
}


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


def _mean_latency(entry: Mapping[str, Any], workload: str) -> float | None:
    ops = [op for name, op in entry.get("ops", {}).items() if name in UNIT_OPS[workload]
           and isinstance(op.get("mean_ms"), int | float) and op.get("ok")]
    calls = sum(op["ok"] for op in ops)
    return sum(op["mean_ms"] * op["ok"] for op in ops) / calls if calls else None


def failed(entry: Mapping[str, Any], workload: str) -> bool:
    """The entry measured nothing: no call of its unit of work succeeded (the run stopped)."""
    return not any(isinstance(op, dict) and op.get("ok") for name, op
                   in entry.get("ops", {}).items() if name in UNIT_OPS[workload])


def _throughput(entry: Mapping[str, Any], workload: str) -> float | None:
    """Things per second; never 0 for a level whose workers failed: that is no measurement."""
    if failed(entry, workload):
        return None
    if workload == "burst":  # a createMany call makes a batch of Datafiles, not one
        ops, wall = entry.get("ops", {}), entry.get("wall_s")
        batch = (entry.get("checks") or {}).get("batch_size")
        batch = batch if isinstance(batch, int) else 1
        if isinstance(wall, int | float) and wall > 0:
            made = sum((ops.get(name) or {}).get("ok", 0) * size
                       for name, size in (("burst/create", 1), ("burst/createMany", batch)))
            return float(made) / wall
    value = entry.get("throughput_per_s")
    return float(value) if isinstance(value, int | float) else None


def _label(run: CampaignRun, flavour: str) -> str:
    """A line's name in the key: site and flavour, and whether its figures are a quick tour's."""
    return f"{run.site} · {flavour}" + (" (quick tour)" if run.quick else "")


def scaling_panels(runs: Sequence[CampaignRun], sites: Sequence[CampaignSite]) -> tuple[Panel, ...]:
    """Two panels per workload: throughput and mean latency against clients."""
    panels = []
    for workload in WORKLOADS:
        lines: dict[str, list[Mapping[str, Any]]] = {}
        for run in _by_site(runs, sites):
            for entry in run.result.benchmarks:
                if entry["workload"] == workload and isinstance(entry.get("concurrency"), int):
                    lines.setdefault(_label(run, str(entry["flavour"])), []).append(entry)
        if not lines:
            continue
        ordered = {label: sorted(es, key=lambda e: e["concurrency"]) for label, es in lines.items()}
        throughput = tuple(Series(label, tuple(float(e["concurrency"]) for e in es),
                                  tuple(_throughput(e, workload) for e in es))
                           for label, es in ordered.items())
        latency = tuple(Series(label, tuple(float(e["concurrency"]) for e in es),
                               tuple(_mean_latency(e, workload) for e in es))
                        for label, es in ordered.items())
        things, one = COUNTED[workload]
        note = "no data: every run of it failed"
        panels.append(Panel(f"{workload}: throughput", "clients", f"{things}/s", throughput,
                            ticks_at_data=True, empty_note=note))
        panels.append(Panel(f"{workload}: mean latency", "clients", f"ms per {one}", latency,
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
        Panel("achieved vs demanded", "demanded req/s", "responses/s", tuple(achieved),
              diagonal=True),
        Panel("latency (mean, 95 % CI)", "demanded req/s", "ms, from intended send",
              tuple(latency)),
        Panel("errors per step", "demanded req/s", "failed requests", tuple(errors),
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
