"""The campaign file: what ``sv7 merge`` writes and the only thing ``sv7 report`` reads.

One JSON object, versioned like the result files::

    {"format": "igestbench-campaign", "version": 1,
     "tool": {"name": "igestbench", "version": "0.1.0"},
     "campaign": {"name": ..., "title": ..., "declared": true,   # false: no campaign.toml
                  "parts": [...], "sites": [{"name", "country"}],
                  "targets": [{"name", "url", "operator"}]},      # url canonical (merge.py)
     "checked": "<sha256>",                       # the seal, first (seal.py)
     "runs": [{"site", "target", "kind", "file", "file_version", "sha256",
               "result": {... the whole result document, current result version ...}}],
     "history": [{"site", "target", "kind", "file", "sha256", "run_id", "started", "status",
                  "passed", "total"}],           # older runs of a cell, newest first
     "skipped": [{"file", "reason"}],            # unreadable result files
     "unexpected": [{"file", "site", "target", "reason"}],   # not in campaign.toml
     "damaged": [{"file", "site", "where", "what", "reason"}],   # parts of files left out
     "replaced": [{"site", "target", "file", "parts", "newer_file", "newer_status",
                   "newer_parts", "missing",     # what an older run measured that no cell
                   "shown"}],                    # shows (shown: the pieces shown instead)
     "contributions": [{"site", "target", "kind", "file", "file_version", "sha256",
                        "pieces": ["scale/soap", ...], "result": {...}}],
                                 # older runs that give a cell pieces its newest run lacks
     "copies": [{"file", "same_as", "site", "run_id", "how"}],   # a run in two files (copies.py)
     "future": [{"file", "site", "target", "started"}]}   # started after the merge (future.py)

``runs`` holds one entry per site x target x kind (the newest run of each kind: ``run`` for
``sv7 run``, ``swarm`` for ``sv7 swarm``) with the result document itself, so that a report
needs nothing but this file. A cell of kind ``run`` takes each piece (a part on an interface,
:mod:`.pieces`) from the newest run that measured it: an older run that gives the cell a piece
is in ``contributions`` with the pieces it gives, and its cell's ``runs`` entry says which
pieces are the newest run's (``pieces``; absent in a cell of one run). The documents are the
files' own, unchanged (their ``sha256`` still holds); :class:`Campaign` combines them in memory
(:func:`.pieces.combine`), so the report reads a combined cell as one run.
Sites and targets are named as the campaign names them; ``file``
is the result file's base name (paths differ between machines and would make two merges of the
same files differ). ``kind`` and ``damaged`` were added within version 1: a file without them
has runs of kind ``run`` and nothing left out; so was ``checked``, the seal (:mod:`.seal`), and
``replaced`` (a file without it names no hidden run: :func:`replaced_text`) and
``contributions`` (a file without it has cells of one run each, as merge made them before),
``copies`` and ``future`` (a file without them names no copy and no run dated in the future).

A report must never fail on a campaign file: :func:`load_campaign` checks every embedded result
as ``sv7 merge`` checked the files (:mod:`.loader`, :mod:`.contents`), so one edited or damaged
run is left out with its reason (in ``skipped`` or ``damaged``) and the others are shown; only
a file that is no campaign at all, or whose head (name, sites, targets) is damaged, is refused.
A file whose seal shows it is as merge wrote it, checked by the same code, is not checked again.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import os
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from secrets import token_hex
from typing import TYPE_CHECKING, Any

from igestbench.errors import UsageError
from igestbench.icat.endpoint import endpoint_of
from igestbench.results.campaign_file import CampaignSite, CampaignTarget
from igestbench.results.contents import Damage
from igestbench.results.copies import is_copy
from igestbench.results.format import (
    FORMAT_NAME,
    JSONObject,
    ResultFileError,
    json_type_name,
    parse_timestamp,
)
from igestbench.results.future import is_future_entry
from igestbench.results.loader import (
    RESULT_REMEDY,
    ResultFile,
    checked_result,
    ends_mid_character,
    not_json,
    result_from_document,
    truncated,
)
from igestbench.results.pieces import Piece, combine, measured, piece_names, pieces_text
from igestbench.results.seal import is_sealed, with_seal

_GZIP_MAGIC = b"\x1f\x8b"

if TYPE_CHECKING:
    from igestbench.results.rows import SummaryRow

CAMPAIGN_FORMAT = "igestbench-campaign"

# Campaign format version history (the result documents inside carry their own version):
#
# 1 - (igestbench 0.1.0) first version: campaign, runs, history, skipped, unexpected
CAMPAIGN_VERSION = 1

#: what to do about a campaign file cut short: its own copy again, or the merge that wrote it
_REMEDY = "copy it again, or write it again with sv7 merge"
#: how a result file begins (as writer.py writes it, and as others write JSON)
_RESULT_HEAD = re.compile(r'\s*\{\s*"format"\s*:\s*"' + re.escape(FORMAT_NAME) + '"')

_SECTIONS: Mapping[str, type] = {"campaign": dict, "runs": list, "history": list,
                                 "skipped": list, "unexpected": list}


@dataclass(frozen=True)
class Source:
    """A run that gives a site x target cell pieces (:mod:`.pieces`): its file, when it
    started (``run.started``), how it ended, and the pieces (``burst/soap``, ``verify``)."""

    file: str
    started: str
    status: str
    pieces: tuple[str, ...]


@dataclass(frozen=True)
class CampaignRun:
    """The counted run of one site x target, and the result file it came from; or, for a cell
    combined from several runs, their pieces in one view (``result``) with the runs behind it
    (``origins``, newest first: the file, version and run details are the newest's)."""

    site: str
    target: str
    file: str
    #: The format version the result file was written in (old ones are upgraded on merge).
    file_version: int
    result: ResultFile
    #: ``run`` (sv7 run) or ``swarm`` (sv7 swarm): see ResultFile.kind
    kind: str = "run"
    #: a combined cell: each run behind it as it is (newest first), and what each gives
    origins: tuple[CampaignRun, ...] = ()
    sources: tuple[Source, ...] = ()

    @property
    def behind(self) -> tuple[CampaignRun, ...]:
        """The runs as they are in their files: those of a combined cell, else this one."""
        return self.origins or (self,)

    def origin(self, piece: str) -> CampaignRun:
        """The run (as it is) that gave the cell ``piece`` (``burst/soap``): one of
        :attr:`behind`; the newest for a piece no run gave."""
        for run, source in zip(self.origins, self.sources, strict=False):
            if piece in source.pieces:
                return run
        return self.behind[0]

    @cached_property
    def figures(self) -> tuple[SummaryRow, ...]:
        """The run's figures, as the registry gives them (results/figures.py): read once, asked
        by every table, chart and summary of the report."""
        from igestbench.results.figures import summary_rows  # figures' rows name CampaignRun

        return tuple(summary_rows(self.result))

    @property
    def quick(self) -> bool:
        """A quick tour (``sv7 run``'s default profile): small counts, not campaign figures.
        A file without ``run.profile`` was written before profiles, by a full run."""
        return bool(self.result.raw["run"].get("profile") == "quick")


@dataclass(frozen=True)
class HistoryEntry:
    """An older run of a cell: kept so that a report can say what changed."""

    site: str
    target: str
    file: str
    run_id: str
    started: str
    status: str
    passed: int
    total: int
    kind: str = "run"


@dataclass(frozen=True)
class Skipped:
    file: str
    reason: str


@dataclass(frozen=True)
class Damaged(Damage):
    """A part of a counted run's file that was left out (see :mod:`.contents`), and whose."""

    file: str = ""
    site: str = ""


@dataclass(frozen=True)
class Campaign:
    """A loaded campaign file (see the module docstring)."""

    path: Path
    name: str
    title: str
    #: Whether a campaign.toml listed what was expected (else: what the files showed).
    declared: bool
    parts: tuple[str, ...]
    sites: tuple[CampaignSite, ...]
    targets: tuple[CampaignTarget, ...]
    runs: tuple[CampaignRun, ...]
    history: tuple[HistoryEntry, ...]
    skipped: tuple[Skipped, ...]
    unexpected: tuple[Mapping[str, str], ...]
    damaged: tuple[Damaged, ...] = ()
    #: older complete runs whose figures the counted run of their cell does not cover
    replaced: tuple[Mapping[str, Any], ...] = ()
    #: files that hold a run another file holds too, counted once (copies.py)
    copies: tuple[Mapping[str, Any], ...] = ()
    #: runs that started after the merge's clock (future.py)
    future: tuple[Mapping[str, Any], ...] = ()

    def run(self, site: str, target: str, kind: str = "run") -> CampaignRun | None:
        """The counted run of ``kind`` of a site against a target (sv7 run's by default)."""
        return next((r for r in self.runs if r.site == site and r.target == target
                     and r.kind == kind), None)


def dump_campaign(doc: JSONObject, path: Path, *, sealed: bool = False) -> None:
    """Write ``doc`` to ``path`` atomically: the same document always gives the same bytes,
    gzip-compressed when the name ends ``.gz`` (:func:`load_campaign` reads either).

    ``sealed``: ``doc`` is a merge's document as :func:`.merge.merge` made it (every run
    checked by this code, nothing changed since): the file gets a seal (:mod:`.seal`), and the
    report does not check its runs again while the file and the checks stay as they are."""
    # compact: json's C encoder writes it (with indent= the pure-Python one runs, 4x slower:
    # 1.4 of the 2.4 s a 30 x 30 campaign's merge took), and a third smaller
    # a seal belongs to the file it was made for, never to a document read back from one
    doc = {k: v for k, v in doc.items() if k != "checked"} if "checked" in doc else doc
    data = json.dumps(doc, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
    if sealed:
        data = with_seal(data)
    encoded = data.encode("utf-8")
    if path.name.endswith(".gz"):  # a campaign of many partners is big; mtime 0: same bytes
        encoded = gzip.compress(encoded, mtime=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{token_hex(4)}.tmp")
    try:
        tmp.write_bytes(encoded)
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise ResultFileError(path, f"cannot write ({exc})") from exc


def load_campaign(path: str | os.PathLike[str]) -> Campaign:
    """The campaign file at ``path``; :class:`ResultFileError` naming it when it is not one."""
    path = Path(path)
    text = ""
    try:
        data = path.read_bytes()
        if data.startswith(_GZIP_MAGIC):  # by content, as the result files: whatever its name
            data = gzip.decompress(data)
        text = data.decode("utf-8")
        doc = json.loads(text)
    except FileNotFoundError:
        raise ResultFileError(path, "not found") from None
    except EOFError:
        raise ResultFileError(path, f"gzip data {truncated(_REMEDY)}") from None
    except (gzip.BadGzipFile, zlib.error) as exc:
        raise ResultFileError(path, f"damaged gzip data ({exc})") from None
    except UnicodeDecodeError as exc:
        if ends_mid_character(exc):
            raise ResultFileError(path, truncated(_REMEDY)) from None
        raise ResultFileError(path, f"cannot read ({exc})") from None
    except OSError as exc:
        raise ResultFileError(path, f"cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        if _RESULT_HEAD.match(text):  # a partner's result file, cut short, given to the report
            reason = not_json(text, exc, f"{RESULT_REMEDY}; and it is a result file: sv7 "
                                         "report reads the campaign file sv7 merge makes of them")
            raise ResultFileError(path, reason) from None
        raise ResultFileError(path, not_json(text, exc, _REMEDY)) from None
    if not isinstance(doc, dict) or doc.get("format") != CAMPAIGN_FORMAT:
        raise ResultFileError(path, f'not a campaign file (no "format": "{CAMPAIGN_FORMAT}"; '
                                    "sv7 merge writes one)")
    version = doc.get("version")
    if version != CAMPAIGN_VERSION:
        raise ResultFileError(path, f"unknown campaign format version {version!r}; this "
                                    f"igestbench reads version {CAMPAIGN_VERSION}")
    for key, kind in _SECTIONS.items():
        if not isinstance(doc.get(key), kind):
            raise ResultFileError(path, f"{key} is {json_type_name(doc.get(key))}, "
                                        f"expected {json_type_name(kind())}")
    try:
        return _view(path, doc, trusted=is_sealed(text))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # a hand-edited campaign file: one line naming the file, not a traceback
        reason = f"damaged campaign file ({type(exc).__name__}: {exc})"
        raise ResultFileError(path, reason) from None


def _run(index: int, entry: Any, trusted: bool = False, section: str = "runs") -> CampaignRun:
    """``runs[index]`` of a campaign file; ResultFileError saying what is wrong with it.
    ``trusted``: the file is sealed (seal.py): its result passed the checks at merge."""
    where = f"{section}[{index}]"
    if not isinstance(entry, dict):
        raise ResultFileError(where, f"is {json_type_name(entry)}, expected an object")
    for key, kind in (("site", str), ("target", str), ("file", str), ("file_version", int),
                      ("result", dict)):
        value = entry.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise ResultFileError(where, f"{key} is {json_type_name(value)}, "
                                         f"expected {json_type_name(kind())}")
    kind = entry.get("kind", "run")
    # embedded results pass the result loader's checks and upgrades like files do, unless
    # merge did that and the seal shows that nothing changed since
    result = (checked_result(entry["result"], entry["file"]) if trusted
              else result_from_document(entry["result"], entry["file"]))
    if kind not in ("run", "swarm") or kind != result.kind:
        raise ResultFileError(where, f"kind is {kind!r}, the run is of kind {result.kind!r}")
    return CampaignRun(entry["site"], entry["target"], entry["file"], entry["file_version"],
                       result, kind)


def _damaged(entry: Any) -> Damaged:
    where, what, reason, file, site = (str(entry.get(k) or "") for k in (
        "where", "what", "reason", "file", "site"))
    return Damaged(where, what, reason, file, site)


def _view(path: Path, doc: JSONObject, trusted: bool = False) -> Campaign:
    head: dict[str, Any] = doc["campaign"]
    runs: list[CampaignRun] = []
    skipped: list[Skipped] = []
    listed = doc.get("damaged")
    damaged = [_damaged(d) for d in listed if isinstance(d, dict)] \
        if isinstance(listed, list) else []
    for i, entry in enumerate(doc["runs"]):
        try:
            run = _run(i, entry, trusted)
        except ResultFileError as exc:
            # one damaged run costs that run, not the campaign: shown as skipped, with why
            name = entry.get("file") if isinstance(entry, dict) else None
            skipped.append(Skipped(name if isinstance(name, str) else f"runs[{i}]",
                                   f"runs[{i}] of the campaign file: {exc.reason}"))
            continue
        runs.append(run)
        damaged += [Damaged(d.where, d.what, d.reason, run.file, run.site)
                    for d in run.result.damages]
    sites = tuple(CampaignSite(str(s["name"]), str(s.get("country") or ""))
                  for s in head["sites"])
    for t in head["targets"]:
        if not isinstance(t.get("operator"), str | None):
            raise ResultFileError(path, f"damaged campaign file (target {t.get('name')!r}: "
                                        f"operator is {json_type_name(t.get('operator'))})")
        try:
            endpoint_of(str(t["url"]))
        except UsageError as exc:
            raise ResultFileError(path, f"damaged campaign file (target {t.get('name')!r}: "
                                        f"{exc})") from None
    runs = _combined(doc, runs, skipped, damaged, trusted)
    site_names = {s.name for s in sites}
    target_names = {str(t["name"]) for t in head["targets"]}
    placed = []
    for run in runs:  # a run must sit in a cell of the matrices (merge put it there)
        if run.site in site_names and run.target in target_names:
            placed.append(run)
        else:
            skipped.append(Skipped(run.file, f"in the campaign file: site {run.site!r} or "
                                             f"target {run.target!r} is not the campaign's"))
    runs = placed
    return Campaign(
        path=path,
        name=str(head["name"]),
        title=str(head.get("title") or ""),
        declared=bool(head["declared"]),
        parts=tuple(str(p) for p in head["parts"]),
        sites=sites,
        targets=tuple(CampaignTarget(str(t["name"]), str(t["url"]), t.get("operator"))
                      for t in head["targets"]),
        runs=tuple(runs),
        history=tuple(h for h in map(_history_entry, doc["history"]) if h is not None),
        skipped=tuple(Skipped(str(s.get("file")), str(s.get("reason")))
                      for s in doc["skipped"] if isinstance(s, dict)) + tuple(skipped),
        unexpected=tuple({str(k): str(v) for k, v in u.items()}
                         for u in doc["unexpected"] if isinstance(u, dict)),
        damaged=tuple(damaged),
        replaced=tuple(r for r in doc.get("replaced") or () if _is_replaced(r)),
        copies=tuple(c for c in _listed(doc, "copies") if is_copy(c)),
        future=tuple(f for f in _listed(doc, "future") if is_future_entry(f)),
    )


def _listed(doc: JSONObject, section: str) -> list[Any]:
    """A section that is a list, else none (a damaged one says nothing rather than break)."""
    value = doc.get(section)
    return value if isinstance(value, list) else []


def _pieces(entry: Any, where: str) -> tuple[Piece, ...] | None:
    """The pieces a ``runs`` or ``contributions`` entry lists (None: it lists none)."""
    listed = entry.get("pieces") if isinstance(entry, dict) else None
    if listed is None:
        return None
    pieces = [Piece.parse(p) for p in listed] if isinstance(listed, list) else [None]
    if None in pieces:
        raise ResultFileError(where, f"pieces is not a list of pieces: {listed!r}")
    return tuple(p for p in pieces if p is not None)


def _combined(doc: JSONObject, runs: list[CampaignRun], skipped: list[Skipped],
              damaged: list[Damaged], trusted: bool) -> list[CampaignRun]:
    """``runs`` with each cell that ``contributions`` adds pieces to combined (:mod:`.pieces`);
    a damaged contribution is skipped with its reason, as a damaged run is."""
    listed = doc.get("contributions")
    if not isinstance(listed, list) or not listed:
        return runs
    heads = {(r.site, r.target, r.kind): r for r in runs}
    given: dict[tuple[str, str, str], list[tuple[CampaignRun, tuple[Piece, ...]]]] = {}
    for i, entry in enumerate(listed):
        where = f"contributions[{i}]"
        try:
            run = _run(i, entry, trusted, "contributions")
            pieces = _pieces(entry, where)
            if not pieces:
                raise ResultFileError(where, "lists no pieces")
            if (run.site, run.target, run.kind) not in heads:
                raise ResultFileError(where, f"no counted run of {run.site} → {run.target}")
        except ResultFileError as exc:
            name = entry.get("file") if isinstance(entry, dict) else None
            skipped.append(Skipped(name if isinstance(name, str) else where,
                                   f"{where} of the campaign file: {exc.reason}"))
            continue
        given.setdefault((run.site, run.target, run.kind), []).append((run, pieces))
        damaged += [Damaged(d.where, d.what, d.reason, run.file, run.site)
                    for d in run.result.damages]
    entries = {}
    for e in doc["runs"]:
        key = (e.get("site"), e.get("target"), e.get("kind", "run")) if isinstance(
            e, dict) else None
        if key is not None and all(isinstance(k, str) for k in key):  # a damaged one is not
            entries[key] = e                                          # a run of the cells
    out = []
    for run in runs:
        more = given.get((run.site, run.target, run.kind))
        if not more:
            out.append(run)
            continue
        try:
            own = _pieces(entries.get((run.site, run.target, run.kind)), run.file)
        except ResultFileError:
            own = None
        taken = {p for _, pieces in more for p in pieces}
        if own is None:  # not listed (an edited file): what it measured that no other gives
            own = tuple(p for p in measured(run.result.raw) if p not in taken)
        sources = tuple(Source(r.file, str(r.result.raw["run"]["started"]), r.result.status,
                               tuple(piece_names(pieces)))
                        for r, pieces in [(run, own), *more])
        document = combine(run.result.raw, [(r.result.raw, pieces) for r, pieces in more])
        result = checked_result(document, run.file)
        out.append(CampaignRun(run.site, run.target, run.file, run.file_version,
                               replace(result, damages=run.result.damages), run.kind,
                               origins=(run, *(r for r, _ in more)), sources=sources))
    return out


def combined_text(site: str, target: str, sources: Sequence[Source]) -> str:
    """A cell combined from several runs, as ``sv7 merge`` prints it and the page's notices say
    it: each run's pieces, its file and when it started (``sources``: the newest first)."""
    said = []
    for source in sorted(sources, key=lambda s: s.started):
        pieces = pieces_text(p for p in map(Piece.parse, source.pieces) if p is not None)
        ended = "" if source.status == "complete" else f", {source.status}"
        said.append(f"{pieces or 'nothing'} from {source.file} "
                    f"(started {_when(source.started)}{ended})")
    return (f"{site} → {target}: combined from {len(sources)} runs, each part and interface "
            f"from the newest run that measured it: {'; '.join(said)}")


def _when(started: str) -> str:
    """``2026-11-21T09:00:00.123Z`` → ``2026-11-21 09:00:00 UTC`` (to the second: the
    pieces of a cell may well be run in one minute)."""
    try:
        moment = parse_timestamp(started)
    except ValueError:
        return started
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _is_replaced(entry: Any) -> bool:
    """A ``replaced`` entry :func:`replaced_text` can say (a damaged one is left out)."""
    return isinstance(entry, dict) and all(
        isinstance(entry.get(k), str) for k in ("site", "target", "file", "newer_file",
                                                "newer_status")
    ) and all(isinstance(entry.get(k), list) for k in ("parts", "newer_parts", "missing"))


def replaced_text(entry: Mapping[str, Any]) -> str:
    """An older run the page does not show, as ``sv7 merge`` prints it and the report's notices
    say it: what the newer run measured, what the older one did, how to see both."""
    shown = entry.get("shown")
    if isinstance(shown, list):  # merge that combines cells: a section shown whole
        parts = ",".join(map(str, entry["parts"]))
        hidden = pieces_text(p for p in map(Piece.parse, entry["missing"]) if p is not None)
        seen = pieces_text(p for p in map(Piece.parse, shown) if p is not None)
        interfaces = sorted({str(p).partition("/")[2] for p in [*entry["missing"], *shown]}
                            - {""}, key=lambda i: i != "soap")
        again = f" --interface {','.join(interfaces)}" if interfaces else ""
        return (f"{entry['site']} → {entry['target']}: the page shows {seen} of the newer run "
                f"({entry['newer_file']}); the older run ({entry['file']}) measured {hidden}, "
                f"which the page does not show (a cell shows one run's {parts} section): "
                f"measure them in one run (sv7 run --parts {parts}{again}), or merge without "
                f"{entry['newer_file']}")
    newer = ", ".join(map(str, entry["newer_parts"])) or "nothing"
    if entry["newer_status"] == "complete":
        what = f"measured only {newer}"
        lost = ", ".join(map(str, entry["missing"]))
    else:
        what = f"is {entry['newer_status']} (it was to measure {newer})"
        lost = ", ".join(map(str, entry["parts"]))
    both = list(dict.fromkeys([*entry["parts"], *entry["newer_parts"]]))  # the one run's
    return (f"{entry['site']} → {entry['target']}: the newer run ({entry['newer_file']}) {what}; "
            f"the older complete run ({entry['file']}) measured {lost}, which the page does not "
            "show (merge keeps the newest run per site x target): measure them in one run again "
            f"(sv7 run --parts {','.join(map(str, both))}), or merge without "
            f"{entry['newer_file']}")


_HISTORY_TYPES = {"site": str, "target": str, "file": str, "run_id": str, "started": str,
                  "status": str, "passed": int, "total": int}


def _history_entry(entry: Any) -> HistoryEntry | None:
    """An older run of a cell; None for a damaged entry (history only says what changed)."""
    if not isinstance(entry, dict) or any(
            not isinstance(entry.get(k), kind) or isinstance(entry.get(k), bool)
            for k, kind in _HISTORY_TYPES.items()):
        return None
    kind = entry.get("kind", "run")
    return HistoryEntry(**{k: entry[k] for k in _HISTORY_TYPES},
                        kind=kind if kind in ("run", "swarm") else "run")
