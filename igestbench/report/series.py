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

from igestbench.options import PARTS
from igestbench.report.colours import DASH_ORDER, NEUTRAL, SOLID, colour_of, dash_for
from igestbench.results.campaign import CampaignRun
from igestbench.results.campaign_file import CampaignSite, CampaignTarget
from igestbench.results.client_use import (
    CLIENT_BOUND_PERCENT,
    CLIENT_USE_LABEL,
    START_PHASE,
    phase_client_use,
)
from igestbench.results.figures import (
    MEAN,
    MEASURES,
    RATE,
    RowIndex,
)
from igestbench.results.format import DEFAULT_INTERFACE
from igestbench.results.machine_net import (
    MACHINE_NET_LABEL,
    MACHINE_NET_MISSING,
    MACHINE_NET_TITLE,
    phase_machine_net,
)
from igestbench.results.sweeps import sweep_verdict

#: The workloads in the order the runner runs them.
WORKLOADS = tuple(dict.fromkeys(m.workload for m in MEASURES))
#: The measure each workload's scaling panels draw: one per workload (burst: createMany, how
#: ingestion scales; its create rate is in the tables), so a chart keeps its eight panels.
CHARTED = tuple(m for m in MEASURES if m.name in ("", "createMany"))


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
    #: both axes logarithmic (latency against catalogue size: a slope is a growth rate)
    log: bool = False


def _by_site(runs: Sequence[CampaignRun], sites: Sequence[CampaignSite]) -> list[CampaignRun]:
    rank = {s.name: i for i, s in enumerate(sites)}
    return sorted(runs, key=lambda r: rank.get(r.site, len(rank)))


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
    """Per workload (:data:`CHARTED`: burst by its createMany batches) its rate and its mean
    latency against clients, as the registry of figures gives them (results/figures.py), never
    0 for a level whose workers failed (that is no measurement): the rates first, then the
    latencies, so that in a grid of one row each a column is one workload."""
    colours = colours or {}
    rates_panels, mean_panels = [], []
    indexed = [(run, RowIndex(run.figures)) for run in _by_site(runs, sites)]
    for measure in CHARTED:
        lines: dict[str, list[tuple[float, float | None, float | None]]] = {}
        looks: dict[str, tuple[str, str]] = {}
        for run, index in indexed:
            soap = list(dict.fromkeys(str(e["flavour"]) for e in run.result.benchmarks
                                      if _interface(e) == DEFAULT_INTERFACE))
            for entry in run.result.benchmarks:
                level = entry.get("concurrency")
                if entry["workload"] != measure.workload or not isinstance(level, int):
                    continue
                interface, flavour = _interface(entry), str(entry["flavour"])
                rate = index.get(measure.workload, interface, flavour, level,
                                 measure.metric(RATE))
                mean = index.get(measure.workload, interface, flavour, level,
                                 measure.metric(MEAN))
                label = line_label(run, interface, flavour)
                lines.setdefault(label, []).append(
                    (float(level), rate.value if rate else None, mean.value if mean else None))
                rank = soap.index(flavour) if flavour in soap else 0
                looks[label] = (colour_of(colours, run.site), dash_for(interface, rank))
        if not lines:
            continue
        ordered = {label: sorted(points) for label, points in lines.items()}
        rates = tuple(Series(label, tuple(p[0] for p in ps), tuple(p[1] for p in ps),
                             None, None, *looks[label]) for label, ps in ordered.items())
        means = tuple(Series(label, tuple(p[0] for p in ps), tuple(p[2] for p in ps),
                             None, None, *looks[label]) for label, ps in ordered.items())
        name = f"{measure.workload} {measure.name}" if measure.name else measure.workload
        note = "no data: every run of it failed"
        rates_panels.append(Panel(f"{name}: rate", "clients", measure.unit, rates,
                                  ticks_at_data=True, empty_note=note))
        mean_panels.append(Panel(f"{name}: mean latency", "clients", "ms per call", means,
                                 ticks_at_data=True, empty_note=note))
    return (*rates_panels, *mean_panels)


def _step_errors(step: Mapping[str, Any]) -> float:
    errors = step.get("errors") or {}
    return float(sum(n for n in errors.values() if isinstance(n, int | float)))


def sustained_point(sweep: Mapping[str, Any], cap_option: str = "--max-rate"
                    ) -> tuple[float, float, bool] | None:
    """(demanded, answered rate, capped) of a sweep's sustained step, as the registry judges
    it (results/sweeps.py); capped (a lower bound) when the sweep never broke the objective:
    the rate is the cap it was given, not the server's limit. None when no step sustained."""
    verdict = sweep_verdict(sweep, cap_option)
    if verdict.value is None or verdict.bound == "upper":
        return None
    step = next((s for s in sweep.get("steps", ())
                 if isinstance(s.get("demanded_rate"), int | float)
                 and float(s["demanded_rate"]) == verdict.value), None)
    answered = step.get("response_rate") if step else None
    return (verdict.value, float(answered if isinstance(answered, int | float)
                                 else verdict.value), verdict.bound == "lower")


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
            point = sustained_point(sweep, "--rates" if run.kind == "swarm" else "--max-rate")
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
              "answered requests/s", tuple(achieved), diagonal=True, markers=tuple(markers)),
        Panel("latency (mean, 95 % CI)", "demanded requests/s", "ms, from intended send",
              tuple(latency), hline=slo,
              hline_label=f"objective {slo:g} ms (mean and p99)" if slo else ""),
        Panel("errors per step", "demanded requests/s", "failed requests", tuple(errors),
              counts=True),
    )


#: Up to this many targets, a site's resource chart has a bar per target; beyond, one bar per
#: phase spans the targets' range with their median marked (30 bars a phase are unreadable).
BARS_PER_TARGET_UP_TO = 8


def _operator(run: CampaignRun, targets: Mapping[str, CampaignTarget]) -> str:
    """Whose colour a run's bar takes: the site operating its target — for the built-in
    catalogue, the site that ran it (its colour everywhere else on the page)."""
    target = targets.get(run.target)
    if target is None:
        return run.target
    return target.operator or (run.site if target.is_local_to(run.site) else target.name)


def history_panels(runs: Sequence[CampaignRun], targets: Sequence[CampaignTarget],
                   colours: Mapping[str, str] | None = None) -> tuple[Panel, ...]:
    """Client CPU and the machine's network of one site, mean per phase, as horizontal bars: a
    group per phase (its name on its own line, never written over another), a bar per target
    in the colour of the site operating it."""
    colours = colours or {}
    rank = {t.name: i for i, t in enumerate(targets)}
    by_name = {t.name: t for t in targets}
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
            # the clients' own CPU, the figure the client-bound flag is decided from — never
            # the machine's (other jobs, a catalogue on the same host)
            cpu.setdefault(at, phase_client_use(s))
            # the machine's traffic, a loopback byte once: the OS does not count per process
            net.setdefault(at, phase_machine_net(s))
        if cpu:
            label = run.target + (" · swarm" if run.kind == "swarm" else "")
            per_run.append((label, colour_of(colours, _operator(run, by_name)), cpu, net))
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
    unread = {at for at in x if all(c.get(at) is None for _, _, c, _ in per_run)}
    return (
        Panel("client CPU per phase", CLIENT_USE_LABEL, "", cpu_bars,
              hline=CLIENT_BOUND_PERCENT,
              hline_label=f"client-bound above {CLIENT_BOUND_PERCENT:.0f} %",
              categories=tuple(_cpu_category(p, position[p] in unread) for p in phases),
              bars=True),
        Panel(MACHINE_NET_TITLE, MACHINE_NET_LABEL, "", net_bars,
              categories=tuple(phases), bars=True, empty_note=MACHINE_NET_MISSING),
    )


#: The phases whose clients are the suite's worker processes or load threads (``burst/rest/1``,
#: ``sweep/lean``): every part's but verify's and scale's (whose calls the runner makes), and
#: idle has none.
_CLIENT_PHASES = frozenset(PARTS) - {"verify", "scale"}
TOO_SHORT = "too short to sample"
#: what the chart says of the workers' start-ups (measure/sampler.py's START_PHASE)
START_NOTE = "the workers' start-ups: never client-bound"


def _cpu_category(phase: str, unread: bool) -> str:
    """A phase as the client CPU panel names it: a phase of clients without a reading of
    them (no bar) ended before any — a phase shorter than the sampling interval (a sweep step,
    a workload phase) in a file written before the runner read its clients at a phase's end
    (TRYOUT4 #7) — and says so, for the help's "no client" is not its reason."""
    if unread and phase.partition("/")[0] in _CLIENT_PHASES:
        return f"{phase} ({TOO_SHORT})"
    if phase == START_PHASE:  # above the client-bound line it would look like a flagged phase
        return f"{phase} ({START_NOTE})"
    return phase


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
