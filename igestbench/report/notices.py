"""What a reader must know about the inputs, each notice with its cause.

Files skipped or damaged, runs of an old format, runs that did not finish and why, quick tours.
Runs that ended alike are said once ("3 runs failed — TLS failed: the server presents a
self-signed certificate: ELETTRA → HZB ICAT, ESRF → HZB ICAT, …") instead of one line each
saying only "ended: failed".
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence

from igestbench.options import PROFILE_SETTINGS
from igestbench.report.footnotes import run_problems
from igestbench.results.campaign import Campaign, CampaignRun, combined_text, replaced_text
from igestbench.results.copies import copy_text
from igestbench.results.format import parse_timestamp
from igestbench.results.future import future_text
from igestbench.results.server_clock import LOCAL, clock_text

_HINT = re.compile(r" \(hint: .*\)$")
_WORKER = re.compile(r"^worker \d+: ")
#: why a file says "partial": it is written so from the first write until the run finishes
KILLED = ("the file was never finished: the run was killed (kill -9, a crash, a power cut) or "
          "is still running; its figures are those written before")


def end_cause(run: CampaignRun) -> str:
    """Why a run did not complete, in one line (the runner's note, else what it left)."""
    status = run.result.status
    notes = [n for n in run.result.raw.get("notes", ()) if isinstance(n, str)]
    if status == "partial":
        return KILLED
    if notes:
        return _HINT.sub("", notes[0])
    problems = run_problems(run.result)
    if problems:
        return problems[0].explanation
    stopped = [_WORKER.sub("", p) for entry in run.result.benchmarks
               for p in entry.get("problems") or () if isinstance(p, str) and _WORKER.match(p)]
    if stopped:
        return f"a workload's clients stopped: {stopped[0]}"
    if status == "interrupted":
        return "stopped by a signal (Ctrl-C, SIGTERM or SIGHUP); what it created was cleaned up"
    return "the file does not say why"


#: The parts whose figures the quick profile's counts and flavours set.
_BENCHMARKS = ("full-cycle", "single-query", "burst", "multi-query", "ids")


def quick_traits(run: CampaignRun) -> tuple[str, ...]:
    """What the quick profile set in ``run``, among the parts it ran: an option the user gave
    (``--scale-sizes 1000,10000``) is not the profile's. None: the profile set nothing the
    run measured. A file without its options: the profile's whole description."""
    record = run.result.raw["run"]
    options, parts = record.get("options"), record.get("parts")
    if not isinstance(options, dict) or not isinstance(parts, list):
        return ("one client flavour", "small counts", "a short sweep")
    quick = PROFILE_SETTINGS["quick"]

    def profile(*keys: str) -> bool:
        return any(_same(options.get(k), quick[k]) for k in keys)

    traits = []
    benchmarks = set(parts) & set(_BENCHMARKS)
    if benchmarks and profile("flavours"):
        traits.append("one client flavour")
    if benchmarks and profile("cycles", "files", "queries", "batch_size", "file_sizes"):
        traits.append("small counts")
    if "sweep" in parts and profile("max_rate", "duration", "warmup"):
        traits.append("a short sweep")
    if "scale" in parts and profile("scale_sizes"):
        sizes = " and ".join(f"{n:,}" for n in quick["scale_sizes"])
        traits.append(f"a tree of {sizes} Datafiles")
    return tuple(traits)


def _same(value: object, setting: object) -> bool:
    if isinstance(setting, tuple):
        return isinstance(value, list) and tuple(value) == setting
    return value == setting


def _listed(items: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


#: A server's clock this far from the client's is worth a coordinator's word to its operator.
CLOCK_OFF_S = 60.0


def clock_notices(runs: Sequence[CampaignRun]) -> list[str]:
    """Runs whose cleanup had no server clock to go by (``run.server_clock``, source
    ``local``: a window of ±15 min by the client's clock), and servers whose clock was more
    than :data:`CLOCK_OFF_S` from the client's."""
    notes = []
    blind: dict[str, list[CampaignRun]] = {}
    off = []
    for run in runs:
        record = run.result.raw["run"].get("server_clock")
        if not isinstance(record, dict):
            continue
        if record.get("source") == LOCAL:
            blind.setdefault(str(record.get("problem") or "no reading"), []).append(run)
        offset = record.get("offset_s")
        if isinstance(offset, int | float) and abs(offset) > CLOCK_OFF_S:
            off.append(f"{run.site} → {run.target} ({clock_text(record)})")
    for problem, alike in blind.items():
        count = "1 run" if len(alike) == 1 else f"{len(alike)} runs"
        allowance = alike[0].result.raw["run"]["server_clock"].get("allowance_s")
        within = f"±{allowance / 60:g} min" if isinstance(allowance, int | float) else "a window"
        notes.append(
            f"{count} read no clock of the server ({problem}): the cleanup proved what was the "
            f"run's within {within} by the client's clock, not the server's: "
            f"{_listed([f'{r.site} → {r.target}' for r in alike])} "
            f"(file{'s' if len(alike) > 1 else ''} {_listed([r.file for r in alike], 3)})")
    if off:
        notes.append(f"server clocks more than {CLOCK_OFF_S:g} s from the client's: "
                     f"{_listed(off)}")
    return notes


def notices(campaign: Campaign) -> list[str]:
    notes = [f"{s.file}: skipped: {s.reason}" for s in campaign.skipped]
    notes += [f"{u.get('file')}: not counted: {u.get('reason')} (site {u.get('site')}, "
              f"target {u.get('target')})" for u in campaign.unexpected]
    notes += [f"{d.file}: damaged, {d}" for d in campaign.damaged]
    notes += [copy_text(c) for c in campaign.copies]  # the same run in two files: once
    notes += [future_text(f) for f in campaign.future]  # a start after the merge's clock
    notes += [replaced_text(r) for r in campaign.replaced]  # a newer run hides an older one's
    # a cell made of several runs' pieces says which run gave which; the notices about runs
    # below are about each of those runs as it is in its file
    notes += [combined_text(r.site, r.target, r.sources) for r in campaign.runs if r.sources]
    behind = [origin for run in campaign.runs for origin in run.behind]
    notes += [f"{run.file}: written in result format version {run.file_version}, read as "
              f"version {run.result.raw['version']}"
              for run in behind if run.file_version != run.result.raw["version"]]
    ended: dict[tuple[str, str], list[CampaignRun]] = {}
    for run in behind:
        if run.result.status != "complete":
            ended.setdefault((run.result.status, end_cause(run)), []).append(run)
    for (status, cause), runs in ended.items():
        verb = {"partial": "did not finish", "interrupted": "were interrupted",
                "failed": "failed"}.get(status, f"ended {status}")
        if len(runs) == 1:
            verb = {"were interrupted": "was interrupted"}.get(verb, verb)
        who = _listed([f"{r.site} → {r.target}" + (" (swarm)" if r.kind == "swarm" else "")
                       for r in runs])
        files = _listed([r.file for r in runs], 3)
        count = "1 run" if len(runs) == 1 else f"{len(runs)} runs"
        notes.append(f"{count} {verb} — {cause}: {who} (file{'s' if len(runs) > 1 else ''} "
                     f"{files})")
    notes += clock_notices(behind)
    quick = [(r, traits) for r in behind if r.quick and (traits := quick_traits(r))]
    if quick:
        one = len(quick) == 1
        what = "1 run is a quick tour" if one else f"{len(quick)} runs are quick tours"
        who = _listed([f"{r.site} → {r.target} ({', '.join(t)})" for r, t in quick], 5)
        notes.append(f"{what} (the default profile of sv7 run): {who}. "
                     f"{'Its' if one else 'Their'} figures are marked as such and are not "
                     "comparable with those of full runs (sv7 run --profile full).")
    return notes


def period(campaign: Campaign) -> tuple[dt.date, dt.date] | None:
    """The first and last day (UTC) of the campaign's counted runs; a run dated in the
    future (its machine's clock: ``future``) does not stretch the campaign to its date, unless
    no run has a believable one."""
    moments: list[dt.datetime] = []
    doubtful: list[dt.datetime] = []
    future = {(f["site"], f["target"], f["file"]) for f in campaign.future}
    for run in campaign.runs:
        into = doubtful if (run.site, run.target, run.file) in future else moments
        into.append(run.result.started)
        if run.result.finished is not None:
            into.append(run.result.finished)
    for entry in campaign.history:
        try:
            started = parse_timestamp(entry.started)
        except ValueError:
            continue
        (doubtful if (entry.site, entry.target, entry.file) in future else moments).append(
            started)
    moments = moments or doubtful
    if not moments:
        return None
    return min(moments).date(), max(moments).date()


def period_text(days: tuple[dt.date, dt.date] | None) -> str:
    """``2026-11-23``, or ``2026-11-21 to 2026-11-23``; ``no runs`` without any."""
    if days is None:
        return "no runs"
    first, last = days
    return first.isoformat() if first == last else f"{first.isoformat()} to {last.isoformat()}"
