"""``sv7 merge``: every partner's result files into one campaign file.

Rules (issue 6):

* a site x target cell is counted by its newest run of each kind (latest ``run.started``; ties
  broken by the finish time, the run id and finally the file's SHA-256, so the choice never
  depends on the order of the files); older runs of the cell are kept as history. The kinds
  are ``run`` (``sv7 run``: checks, benchmarks, sweep) and ``swarm`` (``sv7 swarm``: a load
  sweep from many hosts): a swarm run stands beside the campaign run instead of replacing it;
* a cell of kind ``run`` takes each piece — a part on an interface (:mod:`.pieces`) — from the
  newest run (in the same order) that measured it: an older run that gives the cell pieces its
  newer runs did not measure (``--parts scale`` after a tour, ``--interface soap`` after
  ``rest``, a newer run that failed before its benchmarks) is listed in ``contributions`` with
  them, and said by merge (:attr:`MergeOutcome.combined`) and on the page; a piece a newer run
  measured again is history. A scale section is shown whole, from one run: an older run's scale
  on an interface the shown one lacks is named in ``replaced``;
* a file that cannot be read (corrupt, truncated, foreign, unknown version) is reported with its
  name and the loader's reason, and skipped; the same file given twice counts once;
* the same run in two files (a copy under another name) counts once and is said (``copies``);
  two files of the same run with different contents are a conflict, and neither is counted
  (:mod:`.copies`);
* a run that started after the merge's own clock (a partner machine's wrong clock) is said
  (``future``) and ordered as older than its cell's runs with a believable start
  (:mod:`.future`);
* a damaged part of a readable file (an HdrHistogram that does not decode, a sweep step of the
  wrong shape …: :mod:`.contents`) is left out, and named in ``damaged`` with the file;
* with a campaign.toml, a file of a site or target the campaign does not list is reported and
  kept out of the matrices; without one, the sites and targets seen are the expected ones;
* targets are compared by their canonical URL (:func:`canonical_target`), so that
  ``https://ICAT.example.org/ICATService/ICAT/`` in campaign.toml and
  ``https://icat.example.org:443/ICATService/ICAT`` in a result file are the same catalogue;
  runs against the built-in catalogue (``target.local``), whose port is new every run, are one
  target named ``built-in`` (:data:`BUILT_IN_TARGET`), so that the newest of them replaces the
  older ones as for any target (it is not in a campaign.toml: the built-in catalogue is no
  partner's, and a declared campaign reports such runs as not in the campaign);
  sites by their name, ignoring case, and spelled as the campaign spells them.

The output is a pure function of the set of readable files and the campaign: sorted, with no
path in it (see :mod:`.campaign`), and no clock but the one that tells a start in the future
(:mod:`.future`).
"""

from __future__ import annotations

import datetime as dt
import glob
import hashlib
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from igestbench import __version__
from igestbench.errors import UsageError
from igestbench.icat.endpoint import endpoint_of
from igestbench.options import PARTS
from igestbench.results.campaign import (
    CAMPAIGN_FORMAT,
    CAMPAIGN_VERSION,
    Skipped,
    Source,
    combined_text,
    replaced_text,
)
from igestbench.results.campaign_file import CampaignConfig, CampaignSite, CampaignTarget
from igestbench.results.contents import Damage
from igestbench.results.copies import copy_text, one_per_run
from igestbench.results.format import BUILT_IN_TARGET, JSONObject, ResultFileError
from igestbench.results.future import future_text, is_future
from igestbench.results.loader import MAX_DOCUMENT_BYTES, ResultFile, load_result
from igestbench.results.pieces import Piece, assign, measured, piece_names

_DEFAULT_PORTS = {"https": 443, "http": 80}


def canonical_target(url: str) -> str:
    """``scheme://host:port/path``: scheme and host lower-case, the default port written out,
    the service path (ICAT's default when none is given) without a trailing slash."""
    endpoint = endpoint_of(url)
    host = endpoint.host.lower()
    if ":" in host:  # an IPv6 address keeps its brackets in a URL
        host = f"[{host}]"
    return f"{endpoint.scheme}://{host}:{endpoint.port}{endpoint.path.rstrip('/')}"


def _short_target_name(canonical: str) -> str:
    """How a target without a campaign entry is named: its host, and its port if unusual."""
    endpoint = endpoint_of(canonical)
    host = endpoint.host
    if endpoint.port == _DEFAULT_PORTS[endpoint.scheme]:
        return host
    return f"{host}:{endpoint.port}"


@dataclass(frozen=True)
class _Loaded:
    result: ResultFile
    sha256: str
    url: str  # canonical URL
    #: started after the merge's clock (future.py): ordered before every believable start
    future: bool = False

    @property
    def target(self) -> str:
        """What the run's target is known by: its canonical URL, or ``built-in``."""
        return BUILT_IN_TARGET if self.result.raw["target"].get("local") is True else self.url

    @property
    def order(self) -> tuple[bool, str, str, str, str]:
        """Sort key: later is newer (ISO times in UTC compare as text); a run dated in the
        future is older than every other (see :mod:`.future`)."""
        finished = self.result.finished.isoformat() if self.result.finished else ""
        return (not self.future, self.result.started.isoformat(), finished,
                self.result.run_id, self.sha256)


@dataclass(frozen=True)
class MergeOutcome:
    """The campaign document and what the user must be told about the inputs."""

    document: JSONObject
    skipped: tuple[Skipped, ...]
    #: One line per file of a site or target that the campaign does not list.
    unexpected: tuple[str, ...]
    #: One line per damaged part of a file that was left out (the file itself is counted).
    damaged: tuple[str, ...] = ()
    #: One line per older complete run whose figures the newer run of its cell does not cover.
    replaced: tuple[str, ...] = ()
    #: One line per site x target whose pieces come from more than one run, and from which.
    combined: tuple[str, ...] = ()
    #: One line per file that holds a run another file holds too (counted once).
    copies: tuple[str, ...] = ()
    #: One line per counted run that started after the merge's clock.
    future: tuple[str, ...] = ()


def merge(paths: Iterable[str | os.PathLike[str]], campaign: CampaignConfig | None = None,
          name: str = "campaign", max_bytes: int = MAX_DOCUMENT_BYTES,
          now: dt.datetime | None = None) -> MergeOutcome:
    """Merge the result files at ``paths`` (see the module docstring); a file larger than
    ``max_bytes`` (decompressed) is skipped. ``now``: the merge's clock (a start after it is
    in the future); the machine's by default."""
    now = now or dt.datetime.now(dt.UTC)
    loaded: list[_Loaded] = []
    skipped: set[Skipped] = set()
    for raw_path in paths:
        path = Path(raw_path)
        try:
            result = load_result(path, max_bytes)
            url = canonical_target(result.target_url)
            with path.open("rb") as raw:
                digest = hashlib.file_digest(raw, "sha256").hexdigest()
        except ResultFileError as exc:
            skipped.add(Skipped(path.name, exc.reason))
            continue
        except OSError as exc:
            skipped.add(Skipped(path.name, f"cannot read ({exc.strerror or exc})"))
            continue
        except UsageError as exc:  # the URL in the file is not an ICAT address
            skipped.add(Skipped(path.name, f"target.url: {exc}"))
            continue
        loaded.append(_Loaded(result, digest, url, is_future(result.started, now)))
    counted, copies, conflicts = one_per_run(loaded)
    skipped.update(Skipped(f.result.path.name, reason) for f, reason in conflicts)
    files = sorted(counted, key=lambda f: f.order)
    head, site_names, target_names = _expected(files, campaign, name)
    cells: dict[tuple[str, str, str], list[_Loaded]] = {}
    unexpected: list[dict[str, str]] = []
    for item in files:
        site_name = site_names.get(item.result.site.casefold())
        target_name = target_names.get(item.target)
        if site_name is None or target_name is None:
            what = "site" if site_name is None else "target"
            unexpected.append({"file": item.result.path.name, "site": item.result.site,
                               "target": item.target,
                               "reason": f"{what} not in the campaign"})
            continue
        cells.setdefault((site_name, target_name, item.result.kind), []).append(item)
    runs: list[JSONObject] = []
    history: list[JSONObject] = []
    replaced: list[JSONObject] = []
    contributions: list[JSONObject] = []
    combined: list[str] = []
    future: list[JSONObject] = []
    for (site, target, kind), items in sorted(cells.items()):
        newest, *older = ordered = sorted(items, key=lambda f: f.order, reverse=True)
        shares = (assign([measured(f.result.raw) for f in ordered]) if kind == "run"
                  else [(frozenset(), frozenset())] * len(ordered))
        more = [(f, taken) for f, (taken, _) in zip(older, shares[1:], strict=True) if taken]
        runs.append({"site": site, "target": target, "kind": kind,
                     "file": newest.result.path.name, "file_version": newest.result.version,
                     "sha256": newest.sha256,
                     # only in a combined cell: a cell of one run is written as before
                     **({"pieces": piece_names(shares[0][0])} if more else {}),
                     "result": newest.result.raw})
        contributions.extend({"site": site, "target": target, "kind": kind,
                              "file": f.result.path.name, "file_version": f.result.version,
                              "sha256": f.sha256, "pieces": piece_names(taken),
                              "result": f.result.raw} for f, taken in more)
        if more:
            combined.append(combined_text(site, target, [
                _source(f, taken) for f, taken in [(newest, shares[0][0]), *more]]))
        history.extend(_history(site, target, item) for item in older)
        future.extend({"file": f.result.path.name, "site": site, "target": target,
                       "started": f.result.raw["run"]["started"]} for f in ordered if f.future)
        replaced.extend(_hidden(site, target, ordered, shares))
    damaged = sorted(({"file": f.result.path.name, "site": f.result.site, **d.to_dict()}
                      for f in files for d in f.result.damages),
                     key=lambda d: (d["file"], d["where"]))
    unexpected.sort(key=lambda u: (u["file"], u["site"], u["target"]))
    copied = sorted((c.to_dict() for c in copies), key=lambda c: (c["file"], c["same_as"]))
    future.sort(key=lambda f: (f["site"], f["target"], f["file"]))
    ordered_skips = tuple(sorted(skipped, key=lambda s: (s.file, s.reason)))
    document: JSONObject = {
        "format": CAMPAIGN_FORMAT,
        "version": CAMPAIGN_VERSION,
        "tool": {"name": "igestbench", "version": __version__},
        "campaign": head,
        "runs": runs,
        "history": history,
        "skipped": [{"file": s.file, "reason": s.reason} for s in ordered_skips],
        "unexpected": unexpected,
        "damaged": damaged,
        # only when there is one: a merge that hides nothing writes the file it wrote before
        **({"replaced": replaced} if replaced else {}),
        **({"contributions": contributions} if contributions else {}),
        **({"copies": copied} if copied else {}),
        **({"future": future} if future else {}),
    }
    lines = tuple(f"{u['file']}: {u['reason']} (site {u['site']}, target {u['target']})"
                  for u in unexpected)
    return MergeOutcome(document, ordered_skips, lines,
                        tuple(f"{d['file']}: {damage_text(d)}" for d in damaged),
                        tuple(replaced_text(r) for r in replaced), tuple(combined),
                        tuple(map(copy_text, copied)), tuple(map(future_text, future)))


def damage_text(damage: Mapping[str, str]) -> str:
    """One damaged part, as ``sv7 merge`` prints it and the report's notices say it."""
    return str(Damage(damage["where"], damage["what"], damage["reason"]))


#: What ``sv7 merge`` takes from a directory it is given.
RESULT_PATTERNS = ("*.json", "*.json.gz")
_GLOB_CHARS = frozenset("*?[")


def result_paths(arguments: Iterable[str]) -> tuple[list[Path], list[str]]:
    """The files ``sv7 merge`` is asked to read, and a line for each argument that names none.

    A directory stands for the result files in it (``*.json``, ``*.json.gz``); a pattern the
    shell left unexpanded (``results/*.json.gz`` when there is no such file — or any pattern on
    Windows) is expanded here, and one that matches nothing is reported, not read as a file.
    """
    paths: list[Path] = []
    unmatched: list[str] = []
    for argument in arguments:
        path = Path(argument)
        if path.is_dir():
            found = sorted({p for pattern in RESULT_PATTERNS for p in path.glob(pattern)
                            if p.is_file()})
            if not found:
                unmatched.append(f"{argument}: a directory without result files "
                                 f"({', '.join(RESULT_PATTERNS)})")
            paths += found
        elif not path.exists() and _GLOB_CHARS & set(argument):
            matches = sorted(Path(m) for m in glob.glob(argument, recursive=True))
            if not matches:
                unmatched.append(f"{argument}: no file matches this pattern")
            paths += matches
        else:
            paths.append(path)  # missing or unreadable ones are reported by merge()
    return paths, unmatched


def _expected(files: list[_Loaded], campaign: CampaignConfig | None, name: str
              ) -> tuple[JSONObject, dict[str, str], dict[str, str]]:
    """The campaign section, and the maps folded site name → site, a file's target (canonical
    URL or ``built-in``, see _Loaded.target) → target name."""
    if campaign is None:
        sites = [CampaignSite(s) for s in sorted({f.result.site for f in files})]
        # the built-in catalogue is named so, and shown at the URL of its newest run
        urls = {f.target: f.url for f in files}  # files are oldest first: the newest wins
        keyed = sorted(((key, CampaignTarget(key if key == BUILT_IN_TARGET
                                             else _short_target_name(url), url))
                        for key, url in urls.items()), key=lambda kt: (kt[1].url, kt[0]))
        seen = {p for f in files for p in f.result.raw["run"].get("parts", ())}
        parts = tuple(p for p in PARTS if p in seen)
        title, declared = "", False
    else:
        sites = list(campaign.sites)
        keyed = [(t.url, t) for t in (CampaignTarget(t.name, canonical_target(t.url), t.operator)
                                      for t in campaign.targets)]
        declared_urls = [key for key, _ in keyed]
        twice = sorted({u for u in declared_urls if declared_urls.count(u) > 1})
        if twice:
            raise UsageError(f"campaign {campaign.name}: the same target listed twice: "
                             f"{', '.join(twice)}")
        name, title, parts, declared = campaign.name, campaign.title, campaign.parts, True
    targets = [t for _, t in keyed]
    head: JSONObject = {
        "name": name, "title": title, "declared": declared, "parts": list(parts),
        "sites": [{"name": s.name, "country": s.country} for s in sites],
        "targets": [{"name": t.name, "url": t.url, "operator": t.operator} for t in targets],
    }
    return (head, {s.name.casefold(): s.name for s in sites},
            {key: t.name for key, t in keyed})


def _history(site: str, target: str, item: _Loaded) -> dict[str, Any]:
    outcomes = [c.get("outcome") for c in item.result.checks]
    return {"site": site, "target": target, "kind": item.result.kind,
            "file": item.result.path.name,
            "sha256": item.sha256, "run_id": item.result.run_id,
            "started": item.result.raw["run"]["started"], "status": item.result.status,
            "passed": outcomes.count("passed"),
            "total": sum(o != "skipped" for o in outcomes)}


def _source(item: _Loaded, pieces: frozenset[Piece]) -> Source:
    return Source(item.result.path.name, item.result.raw["run"]["started"], item.result.status,
                  tuple(piece_names(pieces)))


def _hidden(site: str, target: str, ordered: list[_Loaded],
            shares: list[tuple[frozenset[Piece], frozenset[Piece]]]) -> list[JSONObject]:
    """The pieces older runs measured that the cell does not show (a scale section of one
    interface behind a newer one of the other: :data:`.pieces.WHOLE`), named so that merge and
    the page say what the campaign leaves out. A piece a newer run measured too is history."""
    lost = []
    for item, (_, hidden) in zip(ordered, shares, strict=True):
        if not hidden:
            continue
        parts = {p.part for p in hidden}
        shown = next(f for f, (taken, _) in zip(ordered, shares, strict=True)
                     if any(p.part in parts for p in taken))
        shown_pieces = [p for p in shares[ordered.index(shown)][0] if p.part in parts]
        lost.append({"site": site, "target": target, "file": item.result.path.name,
                     "parts": sorted(parts, key=_part_order),
                     "newer_file": shown.result.path.name,
                     "newer_status": shown.result.status,
                     "newer_parts": sorted(parts, key=_part_order),
                     "missing": piece_names(hidden), "shown": piece_names(shown_pieces)})
    return lost


def _part_order(part: str) -> int:
    return PARTS.index(part) if part in PARTS else len(PARTS)
