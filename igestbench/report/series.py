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

from igestbench.report.colours import DASH_ORDER, NEUTRAL, SOLID, colour_of, dash_for
from igestbench.results.campaign import CampaignRun
from igestbench.results.campaign_file import CampaignSite, CampaignTarget
from igestbench.results.format import DEFAULT_INTERFACE
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
    #: a band around ``y`` (e.g. a 95 % confidence interval), when there is one; in a bar
    #: panel, the range a bar spans (``y`` is then marked inside it)
    low: tuple[float | None, ...] | None = None
    high: tuple[float | None, ...] | None = None
    #: the page-wide colour of the site (colours.py) and the dash of the interface
    colour: str = NEUTRAL
    dash: str = SOLID


@dataclass(frozen=True)
class Marker:
    """A point marked on a panel: a sweep's sustained rate (hollow when it is only the cap)."""

    x: float
    y: float
    colour: str
    hollow: bool = False


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
    #: points marked on top of the lines (sustained rates)
    markers: tuple[Marker, ...] = ()
    #: horizontal bars, one group per category (listed top to bottom), one bar per series
    bars: bool = False

    @property
    def drawing_order(self) -> tuple[Series, ...]:
        """Solid lines first: a dashed line on the same values then leaves them visible."""
        return tuple(sorted(self.series, key=lambda s: DASH_ORDER.get(s.dash, 0)))


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


#: How the page names an interface.
INTERFACE_NAMES = {"soap": "SOAP", "rest": "REST"}


def interface_name(interface: str) -> str:
    return INTERFACE_NAMES.get(interface, interface)


def _interface(item: Mapping[str, Any]) -> str:
    return str(item.get("interface") or DEFAULT_INTERFACE)


def line_label(run: CampaignRun, interface: str, flavour: str | None = None) -> str:
    """A line's name in a key: site, interface and client ("ELETTRA · SOAP zeep",
    "ELETTRA · REST"), the swarm and whether its figures are a quick tour's."""
    client = "" if flavour in (None, "rest", "lean") or interface == "rest" else f" {flavour}"
    label = f"{run.site} · {interface_name(interface)}{client}"
    if run.kind == "swarm":
        label += " · swarm"
    return label + (" (quick tour)" if run.quick else "")


def scaling_panels(runs: Sequence[CampaignRun], sites: Sequence[CampaignSite],
                   colours: Mapping[str, str] | None = None) -> tuple[Panel, ...]:
    """Two panels per workload: throughput and mean latency against clients."""
    colours = colours or {}
    panels = []
    for workload in WORKLOADS:
        lines: dict[str, list[Mapping[str, Any]]] = {}
        looks: dict[str, tuple[str, str]] = {}
        for run in _by_site(runs, sites):
            flavours = list(dict.fromkeys(str(e["flavour"]) for e in run.result.benchmarks
                                          if _interface(e) == DEFAULT_INTERFACE))
            for entry in run.result.benchmarks:
                if entry["workload"] == workload and isinstance(entry.get("concurrency"), int):
                    interface, flavour = _interface(entry), str(entry["flavour"])
                    label = line_label(run, interface, flavour)
                    lines.setdefault(label, []).append(entry)
                    rank = flavours.index(flavour) if flavour in flavours else 0
                    looks[label] = (colour_of(colours, run.site), dash_for(interface, rank))
        if not lines:
            continue
        ordered = {label: sorted(es, key=lambda e: e["concurrency"]) for label, es in lines.items()}
        throughput = tuple(Series(label, tuple(float(e["concurrency"]) for e in es),
                                  tuple(_throughput(e, workload) for e in es), *(None, None),
                                  *looks[label])
                           for label, es in ordered.items())
        latency = tuple(Series(label, tuple(float(e["concurrency"]) for e in es),
                               tuple(_mean_latency(e, workload) for e in es), *(None, None),
                               *looks[label])
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


def sustained_point(sweep: Mapping[str, Any]) -> tuple[float, float, bool] | None:
    """(demanded, achieved rate, capped) of a sweep's sustained step; capped when it is the
    sweep's highest step: the objective was still met there, so the rate is the sweep's cap
    (--max-rate), not the server's limit."""
    rate = sweep.get("sustained_rate")
    steps = [s for s in sweep.get("steps", ()) if isinstance(s.get("demanded_rate"), int | float)]
    if not isinstance(rate, int | float) or not steps:
        return None
    step = next((s for s in steps if s["demanded_rate"] == rate), None)
    achieved = step.get("response_rate") if step else None
    capped = rate >= max(s["demanded_rate"] for s in steps)
    return float(rate), float(achieved if isinstance(achieved, int | float) else rate), capped


def sweep_panels(runs: Sequence[CampaignRun], sites: Sequence[CampaignSite],
                 colours: Mapping[str, str] | None = None) -> tuple[Panel, ...]:
    """Achieved rate with the sustained rate marked, latency with its 95 % band and the
    objective, and errors, against the demanded rate; one line per site and interface."""
    colours = colours or {}
    achieved, latency, errors, markers, objectives = [], [], [], [], []
    for run in _by_site(runs, sites):
        for sweep in run.result.sweeps:
            steps = sorted((s for s in sweep.get("steps", ())
                            if isinstance(s.get("demanded_rate"), int | float)),
                           key=lambda s: s["demanded_rate"])
            if not steps:
                continue
            interface = _interface(sweep)
            label = line_label(run, interface)
            look = (colour_of(colours, run.site), dash_for(interface, swarm=run.kind == "swarm"))
            x = tuple(float(s["demanded_rate"]) for s in steps)
            corrected = [((s.get("latency_ms") or {}).get("corrected") or {}) for s in steps]
            ci: list[list[float | None]] = [
                c["ci95"] if isinstance(c.get("ci95"), list) else [None, None] for c in corrected]
            achieved.append(Series(label, x, tuple(s.get("response_rate") for s in steps),
                                   None, None, *look))
            latency.append(Series(label, x, tuple(c.get("mean") for c in corrected),
                                  tuple(b[0] for b in ci), tuple(b[1] for b in ci), *look))
            errors.append(Series(label, x, tuple(_step_errors(s) for s in steps), None, None,
                                 *look))
            point = sustained_point(sweep)
            if point is not None:
                markers.append(Marker(point[0], point[1], look[0], hollow=point[2]))
            if isinstance(sweep.get("slo_ms"), int | float):
                objectives.append(float(sweep["slo_ms"]))
    if not achieved:
        return ()
    # the objective most sweeps had (campaign runs share their options)
    slo = max(set(objectives), key=objectives.count) if objectives else None
    return (
        Panel("achieved vs demanded (★ sustained, ☆ the cap)", "demanded requests/s",
              "responses/s", tuple(achieved), diagonal=True, markers=tuple(markers)),
        Panel("latency (mean, 95 % CI)", "demanded requests/s", "ms, from intended send",
              tuple(latency), hline=slo,
              hline_label=f"objective {slo:g} ms (mean and p99)" if slo else ""),
        Panel("errors per step", "demanded requests/s", "failed requests", tuple(errors),
              counts=True),
    )


def _mean(values: Any) -> float | None:
    numbers = [v for v in values or () if isinstance(v, int | float)]
    return sum(numbers) / len(numbers) if numbers else None


#: Up to this many targets, a site's resource chart has a bar per target; beyond, one bar per
#: phase spans the targets' range with their median marked (30 bars a phase are unreadable).
BARS_PER_TARGET_UP_TO = 8


def _traffic(sample: Mapping[str, Any]) -> float | None:
    parts = [_mean(sample.get("net_in_mbit_s")), _mean(sample.get("net_out_mbit_s"))]
    known = [p for p in parts if p is not None]
    return sum(known) if known else None


def history_panels(runs: Sequence[CampaignRun], targets: Sequence[CampaignTarget],
                   colours: Mapping[str, str] | None = None) -> tuple[Panel, ...]:
    """Client CPU and network of one site, mean per phase, as horizontal bars: a group per
    phase (its name on its own line, never written over another), a bar per target in the
    colour of the site operating it."""
    colours = colours or {}
    rank = {t.name: i for i, t in enumerate(targets)}
    operators = {t.name: t.operator or t.name for t in targets}
    ordered = sorted(runs, key=lambda r: (rank.get(r.target, len(rank)), r.kind))
    phases = list(dict.fromkeys(str(s["phase"]) for r in ordered for s in r.result.samples))
    if not phases:
        return ()
    position = {name: float(i) for i, name in enumerate(phases)}
    per_run: list[tuple[str, str, dict[float, float | None], dict[float, float | None]]] = []
    for run in ordered:
        cpu: dict[float, float | None] = {}
        net: dict[float, float | None] = {}
        for s in run.result.samples:
            # a phase sampled twice (a repeat) shows its mean once, never a line doubling back
            at = position[str(s["phase"])]
            cpu.setdefault(at, _mean(s.get("cpu_percent")))
            net.setdefault(at, _traffic(s))
        if cpu:
            label = run.target + (" · swarm" if run.kind == "swarm" else "")
            per_run.append((label, colour_of(colours, operators.get(run.target)), cpu, net))
    x = tuple(sorted(position.values()))
    if len(per_run) <= BARS_PER_TARGET_UP_TO:
        cpu_bars = tuple(Series(label, x, tuple(c.get(i) for i in x), colour=colour)
                         for label, colour, c, _ in per_run)
        net_bars = tuple(Series(label, x, tuple(n.get(i) for i in x), colour=colour)
                         for label, colour, _, n in per_run)
    else:
        cpu_bars = (_spread(f"{len(per_run)} targets: range, median marked", x,
                            [c for _, _, c, _ in per_run]),)
        net_bars = (_spread(f"{len(per_run)} targets: range, median marked", x,
                            [n for _, _, _, n in per_run]),)
    return (
        Panel("client CPU per phase", "CPU % (mean)", "", cpu_bars, hline=SATURATED_PERCENT,
              hline_label=f"{SATURATED_PERCENT:.0f} %", categories=tuple(phases), bars=True),
        Panel("client network per phase", "Mbit/s in + out (mean)", "", net_bars,
              categories=tuple(phases), bars=True),
    )


def _spread(label: str, x: tuple[float, ...], values: Sequence[Mapping[float, float | None]]
            ) -> Series:
    """One bar per phase from the lowest to the highest value of the runs, median marked."""
    low, high, middle = [], [], []
    for i in x:
        found = sorted(v for run in values if (v := run.get(i)) is not None)
        low.append(found[0] if found else None)
        high.append(found[-1] if found else None)
        middle.append(found[len(found) // 2] if found else None)
    return Series(label, x, tuple(middle), tuple(low), tuple(high), colour=NEUTRAL)
