"""The result file format as data: its name, its version history and the keys each version needs.

The layout itself is documented in ``layout.md`` beside this module (the contract between the
runner, the loader, ``sv7 merge`` and ``sv7 report``). This module holds what code must agree on:
the writer validates what it is about to write against :data:`FIELDS` and the loader validates
what it read against the same table, so the two can never disagree about what a valid file is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from igestbench.errors import UsageError
from igestbench.results.fastcheck import EXACT, clean_check

#: The ``format`` key of every result file; anything else is a foreign file.
FORMAT_NAME = "igestbench-result"

# Format version history (a version only goes up when a reader of the old version could
# misread a new file; added keys do not need one, since readers ignore unknown keys):
#
# 1 - (igestbench 0.1.0) first version: run, target, environment, probe, checks, scores,
#     benchmarks, sweeps, samples, outages, cleanup, notes (see layout.md)
# 2 - (igestbench 0.1.0, sv7 merge) run.id and run.status required (merge picks the newest run
#     by them and keeps the others as history); probe may be null (a run that could not probe);
#     the keys sv7 report reads inside list items are typed: checks[].id/outcome/cause,
#     benchmarks[].workload/flavour/concurrency, sweeps[].steps/stopped (why a sweep ended
#     early), samples[].phase. Version-1 files are upgraded on load (loader._UPGRADES[1]).
#     Added since, without a new version (readers ignore unknown keys): run.journal (typed, str),
#     cleanup.journal and cleanup.foreign (issue 10); run.profile ("quick" or "full"; absent
#     reads as "full") and target.name ("built-in" on the built-in catalogue) (issue 14); from
#     sv7 swarm (issue 13) run.mode, sweeps[].swarm (its own "version", 1: workers, hosts, lost
#     workers, per-worker steps; 2 (issue 19): users follow demand, users_cap_per_worker,
#     authenticated) and per step sweeps[].steps[].workers, lost_workers, lateness_ms,
#     histograms, ops (and with swarm version 2: users, user_capped, client_bound,
#     worker_cpu_percent); the interface of every figure (issue 12):
#     benchmarks[].interface and sweeps[].interface ("soap" | "rest", typed), run.interfaces
#     (what was measured) and target.interfaces (what the target serves, and why). A file
#     without them measured SOAP only: the loader reads a missing interface as "soap"
#     (loader.with_interfaces), so every figure says its interface. One registry of figures
#     (issue 19): summary, one row per headline figure (workload, interface, flavour, clients,
#     metric, value, unit, text — text as the figure is shown everywhere — and samples, bound,
#     marks, note; results/figures.py defines each figure). A file without it reads as rows
#     computed from its entries by the same registry (figures.summary_rows). With it:
#     benchmarks[].errors (failed calls, cold ones included, and clients that stopped without
#     one: {calls, clients, causes}), benchmarks[].client_cpu (the suite's own clients in the
#     phase: cpu/capacity/busiest/wait/others %, load average, bound and why, machine_busy and
#     why) and benchmarks[].client_bound decided from it — a file without client_cpu flagged a
#     busy machine, which the registry does not take for a saturated client —;
#     benchmarks[].throughput_per_s is the registry's rate of the workload's first measure (it
#     was ok units over wall_s); ops.*.failed_ms (time in failed warm calls); multi-query's
#     whole searches timed whole (ops "multi-query/whole", "multi-query/paged"); samples[]
#     client_cpu_percent, client_capacity_percent, others_cpu_percent, client_wait_percent,
#     load_avg; sweeps[].steps[].client_bound and client_cpu. From the scale part (issue 21):
#     scale (its own "version", 1: the tree's shape, per size the population and per query
#     x interface x role the latency; per query the fitted growth), typed where the report
#     reads it; its headline figures in summary (workload "scale": per query x interface x role
#     the p50 at the largest size and the growth, and the population rate; results/
#     scale_rows.py) — a file whose summary lacks them reads them computed from its section.
#     scale.sizes[].queries[].warmup_errors: the warm-up's failed calls, which the reliability
#     score counts with the timed ones (scale_rows.scale_calls); a file without it does not say.
#     cleanup.kept (issue 18): the run's own objects kept because something not the run's
#     hangs below them.
#     The ids part (issue 22): benchmarks[].interface "ids" with workload "ids", ops
#     ids/put/<size> and ids/getData/<size> and checks.file_sizes ({"1MiB": 1048576}: the
#     registry's measures of the entry), target.data_service (the /ids/ping probe: url,
#     served, version, problem), and cleanup.files_deleted / files_left (files removed
#     through the IDS, and those left).
#     sweeps[].warmup: the warm-up before the first step (rate, seconds, clients, calls), not
#     counted; a file without it ran the first step without one. sv7 swarm's too (with
#     workers: how many took part; clients: the sessions they logged in).
#     run.server_clock: where the run read the server's clock for its cleanup's window (source
#     date-header | create-time | local, offset_s, allowance_s, problem; results/
#     server_clock.py); a file without it does not say.
#     samples[].dt_s and samples[].busiest_process_percent: what the client-bound flag is
#     weighted by and decided from, so that the report charts the same figure
#     (results/client_use.py); a file without them charts an unweighted mean of the clients.
#     samples[].net_loopback_mbit_s: the loopback interfaces' bytes, once each (net_in and
#     net_out, every interface, hold each of them twice), so that the report charts the
#     machine's traffic with a loopback byte once (results/machine_net.py); a file without it
#     has no network bar.
FORMAT_VERSION = 2

#: ``target.name`` of a run against the built-in catalogue (``target.local``): its URL names a new
#: port every run, so sv7 merge keys that target by this name, not by its URL.
BUILT_IN_TARGET = "built-in"

#: The interfaces a figure may have measured (ICAT's SOAP and REST APIs, and its Data Service:
#: the ids part's uploads and downloads), and the one a file written before REST was measured
#: (no ``interface`` key) measured.
INTERFACES = ("soap", "rest", "ids")
DEFAULT_INTERFACE = "soap"

#: The values of ``run.status``. A file stays "partial" from its first write until the run
#: finishes, so a crash leaves a file that says it is incomplete.
STATUSES = ("complete", "partial", "interrupted", "failed")

#: The values of ``checks[].outcome`` (pytest's, with "error" for a broken fixture).
OUTCOMES = ("passed", "failed", "error", "skipped")

#: The roles the scale part measures as (keys of its per-query figures): ICAT's root user, and
#: an ordinary member of the run's Investigations.
SCALE_ROLES = ("root", "member")

#: A decoded JSON object, as the loader and writer pass it around.
JSONObject = dict[str, Any]


class ResultFileError(UsageError):
    """A result file that cannot be read or written as one; the message names the file."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = Path(path)
        self.reason = reason


def utc_timestamp(moment: dt.datetime) -> str:
    """``2026-11-21T22:30:00.123Z``: the one spelling of a time in a result file."""
    if moment.tzinfo is None:
        raise ValueError("a result file time must be timezone-aware (naive times are ambiguous)")
    utc = moment.astimezone(dt.UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def parse_timestamp(text: str) -> dt.datetime:
    """The aware UTC time of an ISO 8601 string; ValueError if it is not one or has no zone."""
    moment = dt.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("has no time zone")
    return moment.astimezone(dt.UTC)


def _check_timestamp(value: Any) -> str | None:
    try:
        parse_timestamp(value)
    except ValueError:
        return "is not an ISO 8601 time with a zone (like 2026-11-21T22:30:00.123Z)"
    return None


def _check_status(value: Any) -> str | None:
    return None if value in STATUSES else f"is {value!r}, not one of {', '.join(STATUSES)}"


def _check_outcome(value: Any) -> str | None:
    return None if value in OUTCOMES else f"is {value!r}, not one of {', '.join(OUTCOMES)}"


def _check_interface(value: Any) -> str | None:
    return None if value in INTERFACES else f"is {value!r}, not one of {', '.join(INTERFACES)}"


#: The keys of a ``summary`` row (results/figures.py: SummaryRow): kind, required, nullable.
#: Checked by one pass per row (a campaign holds 10,000s of rows; the generic per-field check
#: cost merges a second).
SUMMARY_KEYS: Mapping[str, tuple[type, bool, bool]] = {
    "workload": (str, True, False), "interface": (str, True, False),
    "flavour": (str, True, False), "clients": (int, False, True), "metric": (str, True, False),
    "value": (float, False, True), "unit": (str, True, False), "text": (str, True, False),
    "samples": (int, False, False), "bound": (str, False, True), "marks": (list, False, False),
    "note": (str, False, True),
}


_SUMMARY_RULES = tuple((key, kind, EXACT[kind], required, nullable)
                       for key, (kind, required, nullable) in SUMMARY_KEYS.items())


def summary_row_problem(row: Any) -> str | None:
    """What is wrong with one ``summary`` row (a message naming the key, to read after the
    row's own path), or None. The loader leaves a bad row out (results/contents.py), never the
    file: a row is a copy of what the file's measurements give (results/figures.py)."""
    if not isinstance(row, dict):
        return f"is {json_type_name(row)}, expected an object"
    for key, kind, exact, required, nullable in _SUMMARY_RULES:
        if key not in row:
            if required:
                return f"missing required key {key}"
            continue
        value = row[key]
        if (value is None and nullable) or type(value) in exact:  # exact: the common case
            continue
        if not is_kind(value, kind):
            return f"{key} is {json_type_name(value)}, expected {_JSON_NAMES[kind]}"
    if row.get("interface") not in INTERFACES:
        choices = ", ".join(INTERFACES)
        return f"interface is {row.get('interface')!r}, not one of {choices}"
    if row.get("bound") not in (None, "lower", "upper"):
        return f"bound is {row.get('bound')!r}, not lower or upper"
    return None


def summary_problem(rows: list[Any]) -> str | None:
    """What is wrong with the first bad row of ``summary``, after the list's own path: what
    the writer must never write (the loader only leaves such a row out)."""
    for i, row in enumerate(rows):
        reason = summary_row_problem(row)
        if reason is not None:
            return f"[{i}]: {reason}"
    return None


@dataclass(frozen=True)
class Field:
    """One key of the format: where it is, what it holds, whether a file must have it."""

    #: Dotted path from the document root, e.g. ``run.started``; ``checks[].outcome`` is a key
    #: of every object in the list ``checks``.
    path: str
    kind: type
    required: bool = False
    #: JSON null is allowed (the layout's ``| null``).
    nullable: bool = False
    #: For lists: the type of every item.
    items: type | None = None
    #: A further check of the value; returns why it is wrong, or None.
    check: Callable[[Any], str | None] | None = None


# Format version 1 (layout.md). Parents come before their children: a child is checked only
# when its parent is present and an object. Keys that layout.md marks required are the only
# required ones; the others are checked when present, so that a file with a wrong type fails
# here, naming the key, instead of deep inside the report.
_V1 = (
    Field("format", str, required=True),
    Field("version", int, required=True),
    Field("tool", dict, required=True),
    Field("tool.name", str),
    Field("tool.version", str),
    Field("run", dict, required=True),
    Field("run.id", str),
    Field("run.tag", str),
    Field("run.site", str, required=True),
    Field("run.started", str, required=True, check=_check_timestamp),
    Field("run.finished", str, nullable=True, check=_check_timestamp),
    Field("run.status", str, check=_check_status),
    Field("run.parts", list, items=str),
    Field("run.flavours", list, items=str),
    Field("run.concurrency", list, items=int),
    Field("run.options", dict),
    Field("run.journal", str),
    Field("run.profile", str),
    Field("run.interfaces", list, items=str),
    Field("run.mode", str),
    Field("target", dict, required=True),
    Field("target.url", str, required=True),
    Field("target.host", str),
    Field("target.port", int),
    Field("target.scheme", str),
    Field("target.local", bool),
    Field("target.name", str),
    Field("target.api_version", str, nullable=True),
    Field("target.interfaces", dict),
    Field("environment", dict),
    Field("probe", dict),
    Field("checks", list, items=dict),
    Field("scores", dict, nullable=True),
    Field("summary", list),
    Field("benchmarks", list, items=dict),
    Field("sweeps", list, items=dict),
    Field("samples", list, items=dict),
    Field("outages", list, items=dict),
    Field("cleanup", dict, nullable=True),
    Field("notes", list, items=str),
)
#: Sections added to version 2 without a new version (readers ignore unknown keys), in the
#: file's order: after cleanup, before notes.
_V2_ADDED = (Field("scale", dict, nullable=True),)


def _v2() -> tuple[Field, ...]:
    """Version 2: version 1 with the changes listed beside FORMAT_VERSION."""
    changed = {
        "run.id": Field("run.id", str, required=True),
        "run.status": Field("run.status", str, required=True, check=_check_status),
        "probe": Field("probe", dict, nullable=True),
    }
    items = {  # inserted after their list, so that the list's own type is checked first
        "checks": (
            Field("checks[].id", str, required=True),
            Field("checks[].outcome", str, required=True, check=_check_outcome),
            Field("checks[].part", str),
            Field("checks[].cause", str, nullable=True),
            Field("checks[].explanation", str, nullable=True),
            Field("checks[].hint", str, nullable=True),
        ),
        "benchmarks": (
            Field("benchmarks[].workload", str, required=True),
            Field("benchmarks[].flavour", str, required=True),
            Field("benchmarks[].concurrency", int),
            Field("benchmarks[].throughput_per_s", float, nullable=True),
            Field("benchmarks[].ops", dict),
            Field("benchmarks[].errors", dict),
            Field("benchmarks[].client_cpu", dict),
            Field("benchmarks[].interface", str, check=_check_interface),
        ),
        "sweeps": (
            Field("sweeps[].flavour", str),
            Field("sweeps[].interface", str, check=_check_interface),
            Field("sweeps[].steps", list, items=dict),
            Field("sweeps[].sustained_rate", float, nullable=True),
            Field("sweeps[].stopped", str, nullable=True),
        ),
        "samples": (Field("samples[].phase", str, required=True),),
        "scale": (
            Field("scale.version", int, required=True),
            Field("scale.sizes", list, required=True, items=dict),
            Field("scale.sizes[].queries", list, items=dict),  # each size's, read by the page
            Field("scale.growth", list, items=dict),
            Field("scale.queries", dict),
            Field("scale.roles", dict),
        ),
    }
    fields: list[Field] = []
    for f in _V1:
        if f.path == "notes":
            for added in _V2_ADDED:
                fields.append(added)
                fields.extend(items.get(added.path, ()))
        fields.append(changed.get(f.path, f))
        fields.extend(items.get(f.path, ()))
    return tuple(fields)


#: The keys of every supported version. A new version adds its own tuple here.
FIELDS: Mapping[int, tuple[Field, ...]] = {1: _V1, 2: _v2()}

#: The top-level sections of the current version, as the writer may set them.
SECTIONS: Mapping[str, Field] = {f.path: f for f in FIELDS[FORMAT_VERSION] if "." not in f.path}

# Metadata that must agree before two runs of one site x target are compared (history, trend),
# as pyperf's _CHECKED_METADATA: with another catalogue version or another client machine, a
# change in latency is a change of setup, not of service. Runs of different sites differ in
# these by nature; the report shows them beside the figures instead.
CHECKED_METADATA = (
    "target.api_version",
    "environment.hostname",
    "environment.os",
    "environment.python",
    "environment.cpu_model",
    "environment.cores",
    "environment.memory_bytes",
)

_JSON_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer",
               float: "a number", bool: "true or false", type(None): "null"}


def json_type_name(value: Any) -> str:
    """How a JSON reader would name the type of ``value`` ("a string", "an object" …)."""
    if isinstance(value, bool):  # bool before int: JSON keeps them apart, Python does not
        return _JSON_NAMES[bool]
    return _JSON_NAMES.get(type(value), type(value).__name__)


def is_kind(value: Any, kind: type) -> bool:
    """JSON's notion of a type: true is not an integer, and an integer is a fine number."""
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, kind)


def _lookup(doc: JSONObject, path: str) -> tuple[bool, Any] | None:
    """(present, value) of ``path``; None when a parent is absent or not an object."""
    *parents, last = path.split(".")
    node: Any = doc
    for name in parents:
        node = node.get(name) if isinstance(node, dict) else None
    return (last in node, node.get(last)) if isinstance(node, dict) else None


def problems(doc: JSONObject, version: int) -> Iterator[str]:
    """What is wrong with ``doc`` as a file of ``version``, one line each, in field order."""
    if _CLEAN[version](doc):  # most files: nothing, seen in one quick pass (fastcheck.py)
        return
    for field in FIELDS[version]:
        section, marker, key = field.path.partition("[].")
        if marker:
            found = _lookup(doc, section)
            if found is not None and isinstance(found[1], list):
                yield from _items_problems(field, section, key, found[1], 0)
        elif (found := _lookup(doc, field.path)) is not None \
                and (problem := _field_problem(field, *found)) is not None:
            yield problem


def _field_clean(doc: JSONObject, field: Field) -> bool:
    found = _lookup(doc, field.path)
    return found is None or _field_problem(field, *found) is None


_CLEAN = {version: clean_check(fields, _field_clean) for version, fields in FIELDS.items()}


def item_problems(section: str, index: int, item: Any) -> Iterator[str]:
    """What is wrong with ``item`` as the ``index``-th entry of the list ``section`` (the
    writer checks each appended item so, without revalidating the whole document)."""
    for field in FIELDS[FORMAT_VERSION]:
        where, marker, key = field.path.partition("[].")
        if marker and where == section:
            yield from _items_problems(field, section, key, [item], index)


def _items_problems(
    field: Field, section: str, key: str, items: list[Any], start: int
) -> Iterator[str]:
    for i, item in enumerate(items, start):
        if isinstance(item, dict):  # a non-object item is the list's own problem
            # the path is spelt out only for a message: a campaign checks 100,000s of items
            problem = _field_problem(field, key in item, item.get(key), (section, i, key))
            if problem is not None:
                yield problem
                return  # as for list items: the first bad entry says enough


def _field_problem(field: Field, present: bool, value: Any,
                   item: tuple[str, int, str] | None = None) -> str | None:
    """What is wrong with ``value`` (None: nothing); ``item`` places it in a list's entry."""
    kind = _JSON_NAMES[field.kind]
    if present and value is not None and is_kind(value, field.kind) and field.items is None \
            and field.check is None:
        return None  # the common case, first
    path = field.path if item is None else "{}[{}].{}".format(*item)
    if not present:
        return f"missing required key {path}" if field.required else None
    if value is None:
        return None if field.nullable else f"{path} is null, expected {kind}"
    if not is_kind(value, field.kind):
        return f"{path} is {json_type_name(value)}, expected {kind}"
    if field.items is not None:
        for i, entry in enumerate(value):
            if not is_kind(entry, field.items):
                items = _JSON_NAMES[field.items]
                # one bad item says enough; a list of thousands would flood the message
                return f"{path}[{i}] is {json_type_name(entry)}, expected {items}"
        return None
    if field.check is not None and (reason := field.check(value)) is not None:
        return f"{path}{'' if reason.startswith('[') else ' '}{reason}"  # "summary[3].unit …"
    return None
