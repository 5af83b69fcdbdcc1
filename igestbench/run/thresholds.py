"""``--fail-on`` thresholds: conditions on a run's figures that decide its exit code.

A threshold reads ``WORKLOAD[/OP].STAT<VALUE`` (also ``<=``, ``>``, ``>=``), for example
``single-query.p99<50ms``, ``full-cycle.mean<2s``, ``burst/createMany.p50<400ms``,
``single-query.errors<1%``, ``sweep.sustained>=100/s``. Without ``/OP`` it applies to the
workload's own operation when there is one (``full-cycle``: the whole cycle), else to each of its
operations (``single-query``: jpql, concise and get). It must hold in every benchmark of the run
that has the operation (every flavour and concurrency level).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from igestbench.errors import UsageError
from igestbench.results.figures import entry_rate, measures_of
from igestbench.results.format import DEFAULT_INTERFACE
from igestbench.results.sweeps import sweep_verdict

_PATTERN = re.compile(
    r"^(?P<workload>[a-z-]+)(?:/(?P<op>[^.<>=]+))?\.(?P<stat>[a-z0-9]+)\s*"
    r"(?P<cmp><=|>=|<|>)\s*(?P<value>[0-9.]+)\s*(?P<unit>ms|s|us|%|/s)?$"
)
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_LATENCY = ("mean", "p50", "p90", "p99", "max")
_TO_MS = {"ms": 1.0, "s": 1000.0, "us": 0.001, None: 1.0}
_INTERFACE_NAMES = {"soap": "SOAP", "rest": "REST"}
#: What a threshold can name: the workloads and the load sweep (the parts that measure).
WORKLOADS = ("full-cycle", "single-query", "burst", "multi-query", "sweep")


@dataclass(frozen=True)
class Threshold:
    text: str
    workload: str
    op: str | None
    stat: str
    compare: str
    value: float
    #: the unit as the threshold was written (``ms``, ``s``, ``us``, ``%``, ``/s``): what its
    #: failures are said in
    unit: str = "ms"

    def holds(self, observed: float) -> bool:
        return _COMPARE[self.compare](observed, self.value)


def parse_threshold(text: str) -> Threshold:
    m = _PATTERN.match(text.strip())
    if not m:
        raise UsageError(
            f"--fail-on {text!r}: expected WORKLOAD[/OP].STAT<VALUE, e.g. 'single-query.p99<50ms'"
        )
    stat, unit = m["stat"], m["unit"]
    if m["workload"] not in WORKLOADS:
        raise UsageError(
            f"--fail-on {text!r}: unknown workload {m['workload']!r}; "
            f"choose from {', '.join(WORKLOADS)}"
        )
    if m["workload"] == "sweep" and stat != "sustained":
        raise UsageError(f"--fail-on {text!r}: the sweep has one figure: sweep.sustained>=N/s "
                         "(N requests per second)")
    try:
        value = float(m["value"])
    except ValueError:
        raise UsageError(f"--fail-on {text!r}: {m['value']!r} is not a number") from None
    if stat in _LATENCY:
        if unit not in _TO_MS:
            raise UsageError(f"--fail-on {text!r}: a latency takes ms, s or us")
        value *= _TO_MS[unit]
    elif stat == "errors":
        if unit != "%":
            raise UsageError(f"--fail-on {text!r}: errors are a percentage, e.g. errors<1%")
    elif stat in ("throughput", "sustained"):
        if unit not in ("/s", None):
            raise UsageError(f"--fail-on {text!r}: {stat} is a rate per second (/s) in the "
                             "figure's own unit (requests/s for sweep.sustained; cycles/s, "
                             "searches/s, Datafiles/s …)")
    else:
        raise UsageError(
            f"--fail-on {text!r}: unknown figure {stat!r}; use mean, p50, p90, p99, max, "
            "errors, throughput or sustained"
        )
    return Threshold(text, m["workload"], m["op"], stat, m["cmp"], value,
                     unit or ("ms" if stat in _LATENCY else "/s"))


def _observed(
    threshold: Threshold, bench: Mapping[str, Any]
) -> Iterable[tuple[str, float, str]]:
    """(what, the figure, its unit): latencies in ms, errors in %, rates in their own unit."""
    ops: Mapping[str, Mapping[str, Any]] = bench.get("ops", {})
    if threshold.stat == "throughput":
        # the registry's rate of each of the workload's measures (burst: create and
        # createMany; /OP picks one), as the terminal and the report show it
        for measure in measures_of(str(bench["workload"]), bench):
            if threshold.op in (None, measure.name) or f"{threshold.workload}/{threshold.op}" \
                    in measure.calls:
                rate, _ = entry_rate(bench, measure)
                yield (f"{measure.workload} {measure.name}".strip(),
                       rate if rate is not None else 0.0, measure.unit)
        return
    name = threshold.workload + (f"/{threshold.op}" if threshold.op else "")
    chosen = [name] if name in ops else [k for k in ops if k.startswith(name + "/")]
    for op in chosen:
        stats = ops[op]
        if threshold.stat == "errors":
            count = stats.get("count") or 0
            failed = count - (stats.get("ok") or 0)
            yield op, 100.0 * failed / count if count else 0.0, "%"
        elif stats.get(f"{threshold.stat}_ms") is not None:
            yield op, float(stats[f"{threshold.stat}_ms"]), "ms"


def _amount(value: float, unit: str) -> str:
    """``2.75 ms``, ``1,500 ms``, ``0.5 %``, ``412 searches/s``: three significant digits."""
    text = f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return f"{text} {unit.removeprefix('/')}" if unit != "%" else f"{text} %"


def _in_unit(threshold: Threshold, value: float, unit: str) -> tuple[float, str]:
    """A latency in ms said in the unit the threshold was written in (``p99<2s``: seconds)."""
    if unit == "ms" and threshold.unit in ("s", "us"):
        return value / _TO_MS[threshold.unit], threshold.unit
    return value, unit


def _series(bench: Mapping[str, Any]) -> str:
    """Where a figure was measured, as the run's summary names it: ``SOAP · zeep · 1 client``."""
    interface = str(bench.get("interface") or DEFAULT_INTERFACE)
    clients = bench.get("concurrency")
    return (f"{_INTERFACE_NAMES.get(interface, interface)} · {bench.get('flavour')} · "
            f"{clients} client{'' if clients == 1 else 's'}")


def _worst_first(threshold: Threshold, items: list[tuple[float, str]]) -> list[tuple[float, str]]:
    """Farthest from holding first: the highest figure of a ``<`` threshold, the lowest of ``>``."""
    return sorted(items, key=lambda item: item[0], reverse=threshold.compare.startswith("<"))


def _line(threshold: Threshold, broken: list[tuple[float, str]], seen: int, what: str) -> str:
    """One line per threshold: how many series broke it and the worst of them, then the next."""
    ordered = [text for _, text in _worst_first(threshold, broken)]
    shown = "; ".join(ordered[:2]) + (f"; {len(ordered) - 2} more" if len(ordered) > 2 else "")
    plural = what if what.endswith("s") else what + "s"
    if seen == 1:
        count = f"the only {what}"
    elif len(broken) == seen:
        count = f"all {seen} {plural}"
    else:
        count = f"{len(broken)} of {seen} {plural}"
    order = ", worst first" if len(ordered) > 1 else ""
    return f"{threshold.text}: {count} broke it{order}: {shown}"


def evaluate(
    thresholds: Iterable[Threshold],
    benchmarks: Iterable[Mapping[str, Any]],
    sweeps: Iterable[Mapping[str, Any]] = (),
) -> list[str]:
    """One line per violated threshold (empty: all hold; a threshold with no data fails)."""
    benchmarks, sweeps = list(benchmarks), list(sweeps)
    failures = []
    for t in thresholds:
        broken: list[tuple[float, str]] = []
        seen = 0
        if t.workload == "sweep" and t.stat == "sustained":
            for sweep in sweeps:
                seen += 1
                rate = sweep.get("sustained_rate")
                if rate is None or not t.holds(float(rate)):
                    verdict = sweep_verdict(sweep)
                    where = _series({**sweep, "concurrency": None}).rsplit(" · ", 1)[0]
                    broken.append((float(rate) if rate is not None else 0.0,
                                   f"sustained {verdict.text} ({where}: {verdict.reason})"))
            if not seen:
                failures.append(f"{t.text}: the run has no load sweep")
            elif broken:
                failures.append(_line(t, broken, seen, "sweep"))
            continue
        for bench in benchmarks:
            if bench.get("workload") != t.workload:
                continue
            for op, value, unit in _observed(t, bench):
                seen += 1
                if not t.holds(value):
                    shown = _amount(*_in_unit(t, value, unit))
                    broken.append((value, f"{op} {shown} ({_series(bench)})"))
        if not seen:
            failures.append(f"{t.text}: the run measured no {t.workload} figures to check")
        elif broken:
            failures.append(_line(t, broken, seen, "series"))
    return failures
