"""The contents of a result file checked deeply, and what is damaged left out with its reason.

The loader (:mod:`.loader`) checks a file's frame — the keys of :data:`format.FIELDS`, the ones
``sv7 merge`` needs to place a run. What the report and the figures read inside the entries
(every operation's counts, percentiles and HdrHistogram, every sweep step, every sampler series,
the scores, the probe) is checked here, so that one damaged entry costs that entry and never
the campaign page:

* an entry of a list section (``benchmarks``, ``sweeps``, ``samples``, ``outages``) that does
  not fit its :class:`Spec` is left out;
* a key of an object section (``scores``, ``probe``, ``run.options``, ``environment``,
  ``target.interfaces``, ``cleanup``, ``run.server_clock``) that does not fit is left out.

Each left-out part is a :class:`Damage` naming it ("benchmarks[3] (single-query, zeep,
1 client): ops.single-query/get.histogram is damaged …"). ``sv7 merge`` prints them and keeps
them in the campaign file; the campaign loader runs the same checks on the documents it holds
(a campaign file from an older merge, or one edited since), so the report only ever reads
contents that passed them. Numbers must be finite (JSON's ``1e400`` reads as infinity).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from igestbench.results.format import JSONObject, json_type_name, summary_row_problem
from igestbench.results.histograms import histogram_problem
from igestbench.results.server_clock import source_problem


@dataclass(frozen=True)
class Spec:
    """What a JSON value must be. ``kind`` int or float are JSON numbers (never true/false)."""

    kind: type
    nullable: bool = False
    #: numbers: the smallest value that makes sense (latencies, counts, rates: 0)
    minimum: float | None = None
    #: objects: the specs of known keys (others are ignored, as readers ignore unknown keys)
    keys: Mapping[str, Spec] = field(default_factory=dict)
    #: keys that must be present
    required: frozenset[str] = frozenset()
    #: objects: the spec of every value (a map such as ``ops`` or ``errors``)
    values: Spec | None = None
    #: lists: the spec of every item
    items: Spec | None = None
    #: lists: the number of items, when fixed (a confidence interval's two bounds)
    length: int | None = None
    #: a further check of the whole value, once its parts fit; returns what is wrong
    check: Callable[[Any], str | None] | None = None
    #: for scalars: a quick test that a value fits (True), else problem() says why; a
    #: campaign holds hundreds of thousands of these values, checked by merge and report
    fits: Callable[[Any], bool] | None = field(default=None, init=False, repr=False,
                                                compare=False)

    def __post_init__(self) -> None:
        if self.check is not None or self.kind not in (int, float, str, bool):
            return
        nullable, kind = self.nullable, self.kind
        low = -math.inf if self.minimum is None else self.minimum
        if kind is float:
            def fits(v: Any) -> bool:
                return (v is None and nullable) or (
                    (type(v) is float or type(v) is int) and low <= v < math.inf)
        elif kind is int:
            def fits(v: Any) -> bool:
                return (v is None and nullable) or (type(v) is int and v >= low)
        else:
            def fits(v: Any) -> bool:
                return (v is None and nullable) or type(v) is kind
        object.__setattr__(self, "fits", fits)


def _number(nullable: bool = False, minimum: float | None = 0.0) -> Spec:
    return Spec(float, nullable=nullable, minimum=minimum)


NUMBER = _number()
OPTIONAL_NUMBER = _number(nullable=True)
COUNT = Spec(int, minimum=0)
TEXT = Spec(str)
OPTIONAL_TEXT = Spec(str, nullable=True)
FLAG = Spec(bool)
NUMBERS = Spec(list, items=_number(nullable=True, minimum=None))
COUNTS_BY_CAUSE = Spec(dict, values=_number())


def _op_consistent(op: Mapping[str, Any]) -> str | None:
    """An operation's counts agree, and its histogram decodes to its successful calls."""
    count, ok = op.get("count"), op.get("ok")
    if isinstance(count, int) and isinstance(ok, int) and ok > count:
        return f"ok ({ok}) is more than count ({count})"
    text = op.get("histogram")
    if text is None:
        return None
    problem = histogram_problem(text, ok if isinstance(ok, int) else None)
    return f"histogram {problem}" if problem else None


def _histogram(text: Any) -> str | None:
    return histogram_problem(text)


OP = Spec(dict, keys={
    "count": COUNT, "ok": COUNT, "errors": COUNTS_BY_CAUSE, "mean_ms": OPTIONAL_NUMBER,
    "p50_ms": OPTIONAL_NUMBER, "p90_ms": OPTIONAL_NUMBER, "p99_ms": OPTIONAL_NUMBER,
    "max_ms": OPTIONAL_NUMBER, "histogram": Spec(str, nullable=True), "cold_ms": NUMBERS,
    "failed_ms": OPTIONAL_NUMBER, "after_outage_ms": NUMBERS,
}, check=_op_consistent)
#: the suite's own clients in a phase (measure/sampler.py), whose verdict is client_bound
CLIENT_CPU = Spec(dict, keys={
    **{name: _number(nullable=True) for name in (
        "cpu_percent", "capacity_percent", "busiest_percent", "wait_percent", "others_percent",
        "load_avg")},
    "cores": Spec(int, nullable=True, minimum=1), "bound": FLAG, "why": OPTIONAL_TEXT,
    "machine_busy": Spec(bool, nullable=True), "busy_why": OPTIONAL_TEXT,
})

BENCHMARK = Spec(dict, keys={
    "workload": TEXT, "flavour": TEXT, "interface": TEXT, "concurrency": Spec(int, minimum=1),
    "wall_s": OPTIONAL_NUMBER, "throughput_per_s": OPTIONAL_NUMBER, "client_bound": FLAG,
    "ops": Spec(dict, values=OP),
    "checks": Spec(dict, keys={"batch_size": Spec(int, minimum=1), "expected": COUNT,
                               "found": Spec(int, nullable=True, minimum=0)}),
    "problems": Spec(list, items=TEXT),
    "errors": Spec(dict, keys={"calls": COUNT, "clients": COUNT, "causes": COUNTS_BY_CAUSE}),
    "client_cpu": CLIENT_CPU,
})

LATENCY = Spec(dict, keys={
    "mean": OPTIONAL_NUMBER, "p50": OPTIONAL_NUMBER, "p90": OPTIONAL_NUMBER,
    "p99": OPTIONAL_NUMBER, "p999": OPTIONAL_NUMBER,
    # a confidence interval of few, spread calls can reach below 0: any finite bounds
    "ci95": Spec(list, nullable=True, items=_number(nullable=True, minimum=None), length=2),
})
STEP = Spec(dict, keys={
    "demanded_rate": NUMBER, "duration_s": OPTIONAL_NUMBER, "sent": COUNT,
    "request_rate": OPTIONAL_NUMBER, "response_rate": OPTIONAL_NUMBER, "missed_slots": COUNT,
    "latency_ms": Spec(dict, keys={"corrected": LATENCY, "uncorrected": LATENCY}),
    "errors": COUNTS_BY_CAUSE, "workers": COUNT, "lost_workers": COUNT,
    # how late the scheduler sent (a latency summary; early sends are below 0)
    "lateness_ms": Spec(dict, keys={
        **{k: _number(nullable=True, minimum=None) for k in ("mean", "p50", "p90", "p99",
                                                             "p999", "max")},
        "ci95": Spec(list, nullable=True, items=_number(nullable=True, minimum=None), length=2)}),
    "histograms": Spec(dict, values=Spec(str, check=_histogram)),
    "ops": Spec(dict, values=Spec(dict, keys={
        "count": COUNT, "ok": COUNT, "errors": COUNTS_BY_CAUSE, "latency_ms": LATENCY})),
}, required=frozenset({"demanded_rate"}))
SWARM = Spec(dict, keys={
    "workers": COUNT, "hosts": COUNT, "users_per_worker": COUNT, "workload": TEXT,
    "created": COUNT, "lost": Spec(list, items=Spec(dict)),
    "per_worker": Spec(list, items=Spec(dict, keys={
        "steps": Spec(list, items=Spec(dict, keys={
            "rate": NUMBER, "sent": COUNT, "cpu_percent": OPTIONAL_NUMBER, "users": COUNT,
            "histogram": Spec(str, check=_histogram)}))})),
})
SWEEP = Spec(dict, keys={
    "flavour": TEXT, "interface": TEXT, "slo_ms": OPTIONAL_NUMBER, "connection_mode": TEXT,
    "steps": Spec(list, items=STEP), "sustained_rate": OPTIONAL_NUMBER,
    "stopped": OPTIONAL_TEXT, "swarm": SWARM,
})
#: a sampler series: the keys something reads (the report's per-phase charts; the rest of a
#: phase's series — per core, per second — is kept in the file and read by nobody)
SAMPLE = Spec(dict, keys={
    "phase": TEXT, "cpu_percent": NUMBERS, "net_in_mbit_s": NUMBERS, "net_out_mbit_s": NUMBERS,
    "client_cpu_percent": NUMBERS, "client_bound": FLAG,
    # the client's own CPU the report charts (results/client_use.py)
    "client_capacity_percent": NUMBERS, "busiest_process_percent": NUMBERS, "dt_s": NUMBERS,
    # the machine's network the report charts, a loopback byte once (results/machine_net.py)
    "net_loopback_mbit_s": NUMBERS,
})
#: a row of the registry of figures (results/figures.py): its keys typed here, so that one bad
#: row is left out, never the file (checked against the measurements in :func:`checked`)
SUMMARY_ROW = Spec(dict, keys={
    "value": _number(nullable=True, minimum=None), "samples": COUNT,
    "clients": Spec(int, nullable=True, minimum=1),
}, check=summary_row_problem)
OUTAGE = Spec(dict, keys={"start": TEXT, "end": OPTIONAL_TEXT, "errors": COUNTS_BY_CAUSE})

SCORE = Spec(dict, keys={
    "level": TEXT, "score": Spec(int, nullable=True, minimum=0),
    "max": Spec(int, nullable=True, minimum=0), "evidence": OPTIONAL_TEXT,
})
PROBE_PARTS: Mapping[str, Spec] = {
    "rtt": Spec(dict, nullable=True, keys={"method": OPTIONAL_TEXT, "samples_ms": NUMBERS,
                                           "median_ms": OPTIONAL_NUMBER}),
    "http": Spec(dict, nullable=True, keys={"status": Spec(int, nullable=True),
                                            "wsdl_ok": Spec(bool, nullable=True),
                                            "error": OPTIONAL_TEXT}),
    "tls": Spec(dict, nullable=True, keys={"verify_error": OPTIONAL_TEXT,
                                           "error": OPTIONAL_TEXT, "issuer": OPTIONAL_TEXT,
                                           "self_signed": Spec(bool, nullable=True),
                                           "verified": Spec(bool, nullable=True)}),
}
OPTIONS: Mapping[str, Spec] = {
    name: OPTIONAL_NUMBER for name in ("max_rate", "slo_ms", "duration", "warmup", "timeout")
} | {name: Spec(int, nullable=True, minimum=0)
     for name in ("cycles", "files", "queries", "batch_size", "repeat")}
ENVIRONMENT: Mapping[str, Spec] = {
    "cores": Spec(int, nullable=True, minimum=1), "memory_bytes": Spec(int, nullable=True),
    "os": OPTIONAL_TEXT, "python": OPTIONAL_TEXT, "cpu_model": OPTIONAL_TEXT,
    "hostname": OPTIONAL_TEXT, "load_average": Spec(list, nullable=True, items=NUMBER),
}
INTERFACES: Mapping[str, Spec] = {
    "served": Spec(list, items=TEXT), "measured": Spec(list, items=TEXT), "why": OPTIONAL_TEXT,
    "rest": Spec(dict, nullable=True),
}
#: null where the cleanup could not count (its error says why)
OPTIONAL_COUNT = Spec(int, nullable=True, minimum=0)
CLEANUP: Mapping[str, Spec] = {
    "deleted": OPTIONAL_COUNT, "already_gone": OPTIONAL_COUNT, "left": OPTIONAL_COUNT,
    "journal": OPTIONAL_TEXT, "error": OPTIONAL_TEXT, "foreign": Spec(list, items=TEXT),
}

#: run.server_clock (results/server_clock.py): where the run's reading of the server's clock
#: came from
SERVER_CLOCK: Mapping[str, Spec] = {
    # the offset may be either way: the server's clock behind this machine's is negative
    "source": Spec(str, check=source_problem), "offset_s": Spec(float, nullable=True),
    "allowance_s": Spec(float, nullable=True, minimum=0), "problem": OPTIONAL_TEXT,
}

#: List sections: a bad entry is left out.
LIST_SECTIONS: Mapping[str, Spec] = {
    "benchmarks": BENCHMARK, "sweeps": SWEEP, "samples": SAMPLE, "outages": OUTAGE,
    "summary": SUMMARY_ROW,
}
#: Object sections (dotted paths): a bad key is left out.
OBJECT_SECTIONS: Mapping[str, Mapping[str, Spec]] = {
    # the aspects of results/scoring.py (a file from before them has other keys: ignored)
    "scores": {aspect: SCORE for aspect in ("deployment", "certificate", "authentication",
                                            "content")},
    "probe": PROBE_PARTS,
    "run.options": OPTIONS,
    "environment": ENVIRONMENT,
    "target.interfaces": INTERFACES,
    "cleanup": CLEANUP,
    "run.server_clock": SERVER_CLOCK,
}


@dataclass(frozen=True)
class Damage:
    """A part of a result file left out: where (``benchmarks[3]``), what it was, and why."""

    where: str
    what: str
    reason: str

    def __str__(self) -> str:
        what = f" ({self.what})" if self.what else ""
        return f"{self.where}{what} left out: {self.reason}"

    def to_dict(self) -> dict[str, str]:
        return {"where": self.where, "what": self.what, "reason": self.reason}


def problem(spec: Spec, value: Any, path: str = "") -> str | None:
    """What is wrong with ``value`` as ``spec`` says it must be (the first thing), or None."""
    at = path or "the value"
    if value is None:
        return None if spec.nullable else f"{at} is null, expected {_kind(spec.kind)}"
    if not _is(value, spec.kind):
        return f"{at} is {json_type_name(value)}, expected {_kind(spec.kind)}"
    if spec.kind in (int, float):
        if not math.isfinite(value):
            return f"{at} is not a finite number"
        if spec.minimum is not None and value < spec.minimum:
            return f"{at} is {value}, below {spec.minimum:g}"
    elif spec.kind is dict:
        missing = sorted(spec.required - value.keys())
        if missing:
            return f"{_join(path, missing[0])} is missing"
        for key, sub in spec.keys.items():
            if key not in value or (sub.fits is not None and sub.fits(value[key])):
                continue
            if (found := problem(sub, value[key], _join(path, key))) is not None:
                return found
        if spec.values is not None:
            fits = spec.values.fits
            for key, item in value.items():
                if fits is not None and fits(item):
                    continue
                if (found := problem(spec.values, item, _join(path, str(key)))) is not None:
                    return found
    elif spec.kind is list:
        if spec.length is not None and len(value) != spec.length:
            return f"{at} has {len(value)} items, expected {spec.length}"
        if spec.items is NUMBERS.items and _all_numbers(value):
            pass  # the common case of long sampler series, checked in one pass
        elif spec.items is not None:
            for i, item in enumerate(value):
                if (found := problem(spec.items, item, f"{path}[{i}]")) is not None:
                    return found
    if spec.check is not None and (reason := spec.check(value)) is not None:
        return f"{at} {reason}" if path else reason
    return None


def _all_numbers(values: list[Any]) -> bool:
    """Every item a finite number or null (what NUMBERS allows), without a call per item."""
    finite = math.isfinite
    return all(v is None or (type(v) in (int, float) and finite(v)) for v in values)


def checked(doc: JSONObject) -> tuple[JSONObject, tuple[Damage, ...]]:
    """``doc`` (a result document the loader accepted) without its damaged parts, and those
    parts named. The document given is not changed; an undamaged one is returned as it is."""
    damages: list[Damage] = []
    changes: dict[str, Any] = {}
    #: (workload, interface, flavour, clients) of the entries left out: their rows go with them
    left_out: set[tuple[Any, ...]] = set()
    for section, spec in LIST_SECTIONS.items():
        items = doc.get(section)
        if not isinstance(items, list):
            continue
        kept = []
        for i, item in enumerate(items):
            reason = problem(spec, item)
            if reason is None:
                kept.append(item)
            else:
                damages.append(Damage(f"{section}[{i}]", _describe(section, item), reason))
                if section in ("benchmarks", "sweeps") and isinstance(item, Mapping):
                    left_out.add(_entry_of(section, item))
        if len(kept) != len(items):
            changes[section] = kept
    out = {**doc, **changes} if changes else doc
    kept_rows, disagreeing = _summary_against_measurements(out, left_out)
    if kept_rows is not out.get("summary"):
        damages += disagreeing
        out = {**out, "summary": kept_rows}
    for path, specs in OBJECT_SECTIONS.items():
        parent, _, name = path.rpartition(".")
        holder = out.get(parent) if parent else out
        found = holder.get(name) if isinstance(holder, dict) else None
        if not isinstance(found, dict):
            continue
        bad = dict(_bad_keys(found, specs))
        if not bad:
            continue
        damages += [Damage(f"{path}.{key}", "", reason) for key, reason in bad.items()]
        repaired = {k: v for k, v in found.items() if k not in bad}
        if parent:
            out = {**out, parent: {**out[parent], name: repaired}}
        else:
            out = {**out, name: repaired}
    return out, tuple(damages)


#: Documents whose ``summary`` rows were checked against their measurements by merge, as a
#: sealed campaign file holds them (results/seal.py), by id (the document kept with it).
_VOUCHED: dict[int, Mapping[str, Any]] = {}
_VOUCHED_LIMIT = 4096


def vouch(doc: Mapping[str, Any]) -> None:
    """``doc``'s summary rows are what its measurements give: merge checked them (:func:`checked`
    left out any other) and the seal shows nothing changed since."""
    if len(_VOUCHED) >= _VOUCHED_LIMIT:
        _VOUCHED.clear()
    _VOUCHED[id(doc)] = doc


def vouched(doc: Mapping[str, Any]) -> bool:
    """Whether :func:`vouch` was said of this very document."""
    return _VOUCHED.get(id(doc)) is doc


def _entry_of(section: str, item: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a benchmarks or sweeps entry's summary rows share: (workload, interface, flavour,
    clients), as :class:`~igestbench.results.rows.SummaryRow` spells them."""
    interface = item.get("interface") if isinstance(item.get("interface"), str) else "soap"
    if section == "sweeps":
        return ("sweep", interface, item.get("flavour"), None)
    return (item.get("workload"), interface, item.get("flavour"), item.get("concurrency"))


def _summary_against_measurements(
    doc: JSONObject, left_out: set[tuple[Any, ...]]
) -> tuple[Any, list[Damage]]:
    """The file's ``summary`` rows that its measurements give, and a Damage for each other one:
    a row whose entry is missing, or whose value differs from what its entry gives (a file
    edited by hand, or damaged). A row of an entry ``left_out`` above goes with it, without a
    second notice. The report shows the figures the measurements give
    (:func:`igestbench.results.figures.summary_rows`); a row that only differs in how it is
    written (a later version's words or marks) is not damage. The list itself when all stay."""
    rows = doc.get("summary")
    if not isinstance(rows, list) or not rows:
        return rows, []
    from igestbench.results.figures import compute_summary  # it reads loaded files: no cycle
    from igestbench.results.rows import SummaryRow

    given = {row.key: row for row in compute_summary(doc)}
    kept: list[Any] = []
    damages: list[Damage] = []
    for i, item in enumerate(rows):
        row = SummaryRow.from_dict(item) if isinstance(item, Mapping) else None
        measured = given.get(row.key) if row is not None else None
        if row is None:
            kept.append(item)
            continue
        if measured is None and row.key[:4] in left_out:
            continue  # its entry was left out, and said so
        if measured is None:
            reason = "no measurement in the file gives this figure: left out"
        elif not _same_value(row.value, measured.value):
            reason = (f"says {row.text}, its measurement gives {measured.text}: the "
                      "measurement is shown")
        else:
            kept.append(item)
            continue
        damages.append(Damage(f"summary[{i}]", _describe("summary", item), reason))
    return (rows if len(kept) == len(rows) else kept), damages


def _same_value(written: float | None, measured: float | None) -> bool:
    """Whether a summary row's value is its measurement's, within the rounding of a figure
    written to 3 significant digits (a file's value may be rounded where the entry is not)."""
    if written is None or measured is None:
        return written is None and measured is None
    return math.isclose(written, measured, rel_tol=5e-3, abs_tol=1e-9)


def _bad_keys(section: Mapping[str, Any], specs: Mapping[str, Spec]
              ) -> Iterator[tuple[str, str]]:
    for key, value in section.items():
        spec = specs.get(key)
        if spec is not None and (reason := problem(spec, value, key)) is not None:
            yield key, reason


def _describe(section: str, item: Any) -> str:
    """A few words naming a list entry, from whatever of it is readable."""
    if not isinstance(item, dict):
        return ""
    if section == "benchmarks":
        parts = [item.get("workload"), item.get("flavour"), _interface(item)]
        clients = item.get("concurrency")
        words = [str(p) for p in parts if isinstance(p, str)]
        if isinstance(clients, int) and not isinstance(clients, bool):
            words.append(f"{clients} client" + ("" if clients == 1 else "s"))
        return ", ".join(words)
    if section == "sweeps":
        words = [str(p) for p in (item.get("flavour"), _interface(item))
                 if isinstance(p, str)]
        return "load sweep" + (f", {', '.join(words)}" if words else "")
    if section == "samples":
        phase = item.get("phase")
        return f"phase {phase}" if isinstance(phase, str) else ""
    if section == "summary":
        words = [str(item.get(k)) for k in ("workload", "metric") if isinstance(item.get(k), str)]
        return " ".join(words)
    return ""


def _interface(item: Mapping[str, Any]) -> str | None:
    interface = item.get("interface")
    return interface.upper() if isinstance(interface, str) else None


def _is(value: Any, kind: type) -> bool:
    if isinstance(value, bool):
        return kind is bool
    if kind is float:
        return isinstance(value, int | float)
    return isinstance(value, kind)


def _kind(kind: type) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false",
            dict: "an object", list: "a list"}.get(kind, kind.__name__)


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key
