"""The summary rows of a run's ``scale`` section (``sv7 run --parts scale``).

The part's headline figures, as the registry (:mod:`igestbench.results.figures`) defines and
writes them: per query x interface x role its p50 at the largest size measured and the growth
of its p50 with the tree (the fitted slope; its word in the note), and the rate at which the
tree grew to the largest size. Every size's figures stay in the section itself (and in the
report's ``scale.csv``); the summary holds what a reader compares across catalogues.

Metrics name what they are of: ``name member p50``, ``name member growth`` (query, role,
figure), ``population rate``; :func:`igestbench.results.figures.figure` gives the definition
of each. ``clients`` is 1 (each role asks with one client, the two taking turns).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from igestbench.results.figures import GROWTH, P50, POPULATION_RATE, SCALE, figure
from igestbench.results.formatting import format_value
from igestbench.results.rows import SummaryRow


def metric(query: str, role: str, stat: str) -> str:
    """The summary metric of ``stat`` of one query as one role: ``name member p50``."""
    return f"{query} {role} {stat}"


def query_of(name: str) -> tuple[str, str]:
    """A metric of :func:`metric` as (query, ``role stat``)."""
    query, _, rest = name.partition(" ")
    return query, rest


def _growth_note(word: str, meaning: str, measured: int) -> str:
    return f"{word}: {meaning} (over {measured} sizes)"


def growth_of(note: str) -> tuple[str, str]:
    """The (word, meaning) a growth row's note was written from (:func:`_growth_note`)."""
    word, _, rest = note.partition(": ")
    return word, rest.rsplit(" (over ", 1)[0]


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _row(interface: str, flavour: str, name: str, value: float | None, unit: str,
         samples: int, note: str, failed: bool = False) -> SummaryRow:
    kept = None if value is None else float(f"{value:.6g}")
    return SummaryRow(
        workload=SCALE, interface=interface, flavour=flavour, clients=1, metric=name,
        value=kept, unit=unit,
        text="failed" if failed and kept is None else format_value(kept, unit),
        samples=samples, marks=("failed",) if failed else (), note=note or None,
    )


def scale_rows(section: Mapping[str, Any]) -> list[SummaryRow]:
    """The summary rows of one ``scale`` section (see the module's docstring)."""
    sizes = [s for s in section.get("sizes") or () if isinstance(s, Mapping)
             and isinstance(s.get("size"), int)]
    flavours = section.get("flavours") if isinstance(section.get("flavours"), Mapping) else {}
    assert isinstance(flavours, Mapping)
    rows: list[SummaryRow] = []
    if sizes:
        last = sizes[-1]
        rate = _number(last.get("rate_per_s"))
        added = _count(last.get("datafiles_added"))
        note = f"growing the tree to {last['size']:,} Datafiles, {added:,} of them by createMany"
        rows.append(_row("soap", str(flavours.get("soap", "lean")), POPULATION_RATE, rate,
                         figure(SCALE, POPULATION_RATE).unit, added, note))
    rows += _latest_p50(sizes, flavours)
    for g in section.get("growth") or ():
        if not isinstance(g, Mapping):
            continue
        interface, role = _text(g.get("interface")), _text(g.get("role"))
        slope, word = _number(g.get("slope")), _text(g.get("growth"))
        measured = _count(g.get("sizes"))
        note = (_growth_note(word, _text(g.get("meaning")), measured) if slope is not None
                else f"measured at {measured} size{'s' if measured != 1 else ''}: no slope")
        rows.append(_row(interface, str(flavours.get(interface, "")),
                         metric(_text(g.get("query")), role, GROWTH), slope,
                         figure(SCALE, GROWTH).unit, measured, note))
    return rows


def _latest_p50(sizes: Sequence[Mapping[str, Any]],
                flavours: Mapping[str, Any]) -> list[SummaryRow]:
    """Per query x interface x role, its p50 at the largest size it was measured at."""
    latest: dict[tuple[str, str, str], tuple[int, Mapping[str, Any]]] = {}
    for entry in sizes:
        queries = entry.get("queries")
        for q in queries if isinstance(queries, list) else ():  # untyped in the format
            if isinstance(q, Mapping):
                key = (_text(q.get("query")), _text(q.get("interface")), _text(q.get("role")))
                latest[key] = (entry["size"], q)
    rows = []
    for (query, interface, role), (size, q) in latest.items():
        n = _count(q.get("n"))
        error = _text(q.get("error"))
        failed = n == 0 and bool(q.get("errors") or error)
        held = _count(q.get("rows"))
        note = (f"at {size:,} Datafiles, the largest size measured; {held:,} "
                f"row{'' if held == 1 else 's'}")
        if error:
            note += f"; {'failed' if failed else 'errors'}: {error}"
        rows.append(_row(interface, str(flavours.get(interface, "")), metric(query, role, P50),
                         _number(q.get("p50_ms")), figure(SCALE, P50).unit, n, note, failed))
    return rows


#: What :func:`scale_calls` counts, in words (the reliability score's evidence says it).
SCALE_CALLS = ("the scale part's query calls, successful timed ones and failed ones (its "
               "warm-up's included); the createMany calls that grow its tree are not counted")


@dataclass(frozen=True)
class ScaleCalls:
    """The scale part's query calls of one run, as the reliability score counts them."""

    calls: int = 0
    failed: int = 0
    #: each query x interface x role with a failed call, over every size: ``name (member,
    #: soap): 22 of 22 failed``
    failing: tuple[str, ...] = ()


def _failed_calls(q: Mapping[str, Any]) -> int:
    """A query entry's failed calls: its ``errors`` (timed) and ``warmup_errors`` (a file
    written before it recorded them: none); a timed call neither successful nor in ``errors``
    (never written so) counts as failed too."""
    def total(key: str) -> int:
        counts = q.get(key)
        return sum(_count(n) for n in counts.values()) if isinstance(counts, Mapping) else 0

    timed = max(total("errors"), _count(q.get("calls")) - _count(q.get("n")))
    return timed + total("warmup_errors")


def scale_calls(section: Any) -> ScaleCalls:
    """The calls of a run's ``scale`` section (any value: a run without one made none): per
    size, query, interface and role its successful timed calls (``n``) and its failed ones."""
    if not isinstance(section, Mapping):
        return ScaleCalls()
    tally: dict[tuple[str, str, str], list[int]] = {}
    for size in section.get("sizes") or ():
        for q in (size.get("queries") or ()) if isinstance(size, Mapping) else ():
            if isinstance(q, Mapping):
                key = (_text(q.get("query")), _text(q.get("interface")), _text(q.get("role")))
                counted = tally.setdefault(key, [0, 0])
                counted[0] += _count(q.get("n"))
                counted[1] += _failed_calls(q)
    failing = tuple(f"{query} ({role}, {interface}): {failed:,} of {ok + failed:,} failed"
                    for (query, interface, role), (ok, failed) in tally.items() if failed)
    return ScaleCalls(sum(ok + failed for ok, failed in tally.values()),
                      sum(failed for _, failed in tally.values()), failing)
