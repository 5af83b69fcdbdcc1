"""What a run measured, piece by piece, and one site x target cell made of several runs' pieces.

Partners run in pieces: ``sv7 run --target X`` and then ``sv7 run --target X --parts scale``
(the scale part runs against a partner's catalogue only when named), or ``--interface rest``
and then ``--interface soap``. ``sv7 merge`` therefore counts, per site x target (kind ``run``),
each *piece* — one part of :data:`~igestbench.options.PARTS` on one interface — from the newest
run that measured it, and the campaign model shows the cell combined (:func:`combine`). This
module is the one place that says what a piece is and which entries of a file belong to it;
merge (:mod:`.merge`) and the campaign model (:mod:`.campaign`) both ask it.

The pieces, and the entries of a result file that are theirs:

* ``verify``: the service checks (``checks``, and ``scores`` made of them) — one piece, whatever
  the interfaces: the checks of every interface run together;
* ``full-cycle/soap``, ``burst/rest`` …: the ``benchmarks`` entries of that workload and
  interface, and the ``samples`` of their phases (``burst/rest/2``: flavour ``rest`` is REST);
* ``sweep/soap``, ``sweep/rest``: the ``sweeps`` entries of that interface (``sweep/lean`` and
  ``sweep/rest`` phases);
* ``scale/soap``, ``scale/rest``: the ``scale`` section's queries of that interface. The section
  is one tree measured at rising sizes, so a cell shows it whole, from the newest run that
  measured scale on any interface (:data:`WHOLE`); a scale piece an older run measured and that
  run does not is *hidden*, and merge says so (``replaced``);
* ``ids``: the Data Service's ``benchmarks`` (interface ``ids``) — one piece;
* the ``summary`` rows go with the piece of their workload and interface.

A run *measured* a piece when it completed and was asked for its part on that interface
(``run.parts`` x ``run.interfaces``; a file without ``run.interfaces`` measured SOAP), or — a
run that failed, was interrupted or is partial — when its file holds entries of that piece: a
part asked in a run that stopped before it ran was not measured. Everything else in a cell (the
run section, target, probe, environment, notes, cleanup) is its newest run's, the cell's *head*.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from igestbench.options import PARTS
from igestbench.results.format import DEFAULT_INTERFACE, JSONObject

#: Parts measured per interface (the others are one piece each: verify, ids).
PER_INTERFACE = frozenset({"full-cycle", "single-query", "burst", "multi-query", "sweep",
                           "scale"})
#: Parts held in one section of the file: a cell shows the section of one run, whole.
WHOLE = frozenset({"scale"})


@dataclass(frozen=True, order=True)
class Piece:
    """One part on one interface (``interface`` None: the part is one piece)."""

    part: str
    interface: str | None = None

    def __str__(self) -> str:
        return f"{self.part}/{self.interface}" if self.interface else self.part

    @classmethod
    def parse(cls, text: object) -> Piece | None:
        """The piece ``str(piece)`` wrote; None for anything else."""
        if not isinstance(text, str):
            return None
        part, _, interface = text.partition("/")
        if part not in PARTS or (part in PER_INTERFACE) != bool(interface):
            return None
        return cls(part, interface or None)

    @property
    def rank(self) -> tuple[int, str]:
        """Sort key: the parts in the order sv7 run runs them, SOAP before REST."""
        return PARTS.index(self.part), (self.interface or "").replace("soap", "")


def _piece(part: str, interface: object) -> Piece:
    if part not in PER_INTERFACE:
        return Piece(part)
    return Piece(part, interface if isinstance(interface, str) else DEFAULT_INTERFACE)


def benchmark_piece(entry: Mapping[str, Any]) -> Piece:
    """The piece of a ``benchmarks`` entry."""
    if entry.get("interface") == "ids" or entry.get("workload") == "ids":
        return Piece("ids")
    return _piece(str(entry.get("workload")), entry.get("interface"))


def sweep_piece(entry: Mapping[str, Any]) -> Piece:
    return _piece("sweep", entry.get("interface"))


def row_piece(row: Mapping[str, Any]) -> Piece:
    """The piece of a ``summary`` row (its workload and interface)."""
    workload = str(row.get("workload"))
    return _piece(workload, row.get("interface")) if workload in PARTS else Piece(workload)


def sample_piece(phase: object) -> Piece | None:
    """The piece of a ``samples`` phase (``burst/rest/2``, ``sweep/lean``, ``scale``), or None
    for a phase of no part."""
    if not isinstance(phase, str):
        return None
    part, _, rest = phase.partition("/")
    if part not in PARTS:
        return None
    flavour = rest.partition("/")[0]
    return _piece(part, "rest" if flavour == "rest" else DEFAULT_INTERFACE)


def _scale_pieces(section: object) -> set[Piece]:
    if not isinstance(section, Mapping) or not isinstance(section.get("sizes"), list):
        return set()
    # a section the file's checks let through may still hold odd values (contents.py checks
    # what the report draws): what is not a list of queries measured nothing
    return {_piece("scale", q.get("interface")) for size in section["sizes"]
            if isinstance(size, Mapping) and isinstance(size.get("queries"), list)
            for q in size["queries"] if isinstance(q, Mapping)}


def found(doc: Mapping[str, Any]) -> set[Piece]:
    """The pieces whose entries ``doc`` holds."""
    pieces = {benchmark_piece(b) for b in doc.get("benchmarks") or () if isinstance(b, Mapping)}
    pieces |= {sweep_piece(s) for s in doc.get("sweeps") or () if isinstance(s, Mapping)}
    if doc.get("checks"):
        pieces.add(Piece("verify"))
    return pieces | _scale_pieces(doc.get("scale"))


def measured(doc: Mapping[str, Any]) -> frozenset[Piece]:
    """The pieces a result document measured (see the module docstring)."""
    pieces = found(doc)
    run = doc.get("run")
    if not isinstance(run, Mapping) or run.get("status") != "complete":
        return frozenset(pieces)
    listed = run.get("interfaces")
    interfaces = [i for i in listed if isinstance(i, str)] if isinstance(listed, list) else [
        DEFAULT_INTERFACE]
    for part in run.get("parts") or ():
        if part in PER_INTERFACE:
            pieces.update(Piece(part, i) for i in interfaces)
        elif part in PARTS:
            pieces.add(Piece(part))
    return frozenset(pieces)


def assign(runs: Sequence[frozenset[Piece]]) -> list[tuple[frozenset[Piece], frozenset[Piece]]]:
    """For each run of a cell (newest first, each with what it :func:`measured`): the pieces
    the cell takes from it, and those it measured that the cell does not show (hidden: a
    :data:`WHOLE` part whose section a newer run gives). A piece is taken from the newest run
    that measured it; an older run's piece that a newer one measured too is history."""
    owned: dict[Piece, int] = {}
    whole: dict[str, int] = {}
    out = []
    for index, pieces in enumerate(runs):
        taken, hidden = set(), set()
        for piece in pieces:
            if piece in owned:
                continue  # a newer run measured it: history
            if piece.part in WHOLE and whole.setdefault(piece.part, index) != index:
                hidden.add(piece)
                continue
            owned[piece] = index
            taken.add(piece)
        out.append((frozenset(taken), frozenset(hidden)))
    return out


def piece_names(pieces: Iterable[Piece]) -> list[str]:
    """The pieces as the campaign file lists them, in the order sv7 run runs them."""
    return [str(p) for p in sorted(pieces, key=lambda p: p.rank)]


def pieces_text(pieces: Iterable[Piece]) -> str:
    """``verify, burst (SOAP, REST), scale (SOAP)``: the pieces of one run, briefly."""
    by_part: dict[str, list[str]] = {}
    for piece in sorted(pieces, key=lambda p: p.rank):
        names = by_part.setdefault(piece.part, [])
        if piece.interface:
            names.append(piece.interface.upper())
    return ", ".join(f"{part} ({', '.join(names)})" if names else part
                     for part, names in by_part.items())


def combine(head: JSONObject, others: Sequence[tuple[JSONObject, Iterable[Piece]]]
            ) -> JSONObject:
    """The document of a cell: ``head`` (its newest run) with each piece of ``others`` (older
    runs, newest first, each with the pieces the cell takes from it) taken from that run. The inputs
    are not changed; every entry is the file's own object."""
    from igestbench.results.figures import summary_rows  # figures imports the campaign model

    owner: dict[Piece, JSONObject] = {}
    for doc, pieces in others:
        owner.update(dict.fromkeys(pieces, doc))
    # entries in the order the runs made them: the oldest run's first (others: newest first)
    docs = [*(doc for doc, _ in reversed(others)), head]

    def mine(doc: JSONObject, piece: Piece | None) -> bool:
        if piece is not None and piece.part in WHOLE:  # its section is one run's
            return doc is next((owner[p] for p in owner if p.part == piece.part), head)
        return owner.get(piece, head) is doc if piece is not None else doc is head

    def pick(section: str, piece_of: Any) -> list[Any]:
        return [item for doc in docs for item in doc.get(section) or ()
                if isinstance(item, Mapping) and mine(doc, piece_of(item))]

    verify = owner.get(Piece("verify"), head)
    scale = next((owner[p] for p in owner if p.part == "scale"), head)
    combined: JSONObject = {
        **head,
        "checks": list(verify.get("checks") or ()),
        "scores": verify.get("scores"),
        "benchmarks": pick("benchmarks", benchmark_piece),
        "sweeps": pick("sweeps", sweep_piece),
        "samples": pick("samples", lambda s: sample_piece(s.get("phase"))),
        "summary": [row.to_dict() for doc in docs for row in summary_rows(doc)
                    if mine(doc, row_piece(row.to_dict()))],
        "scale": scale.get("scale"),
    }
    run = dict(head["run"])
    parts = set(run.get("parts") or ()) | {p.part for p in owner}
    run["parts"] = [p for p in PARTS if p in parts]
    interfaces = [i for doc in docs for i in doc["run"].get("interfaces") or ()]
    if interfaces:
        run["interfaces"] = list(dict.fromkeys(sorted(interfaces, key=lambda i: i != "soap")))
    # the cell's figures are a quick tour's when any run that gave figures was one (marked on
    # them); a quick tour that gave only the checks does not make another run's figures so
    givers = {id(doc): doc for doc in docs for p in found(combined) - {Piece("verify")}
              if mine(doc, p)}
    if any(doc["run"].get("profile") == "quick" for doc in givers.values()):
        run["profile"] = "quick"
    elif givers:
        run["profile"] = "full"
    combined["run"] = run
    ids = owner.get(Piece("ids"))
    if ids is not None and isinstance(ids.get("target"), Mapping):
        combined["target"] = {**head["target"],
                              "data_service": ids["target"].get("data_service")}
    return {k: v for k, v in combined.items() if v is not None or k in head}
