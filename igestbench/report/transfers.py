"""Ingestion with the bytes: the ids part's figures, beside the metadata benchmarks.

One row per run, IDS client, concurrency level and file size: files/s and MB/s of ``put`` and
of ``getData`` — the registry's figures (:mod:`igestbench.results.figures`, workload ``ids``),
read from the run's summary, so the page says what the terminal and the file said — and the
run's checks (files stored with the right size and checksum, downloads identical). From the
file alone, as every table of the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from igestbench.results.campaign import Campaign, CampaignRun
from igestbench.results.figures import IDS, MB_S, RATE, SummaryRow, ids_sizes, summary_rows

_EMPTY = "—"


@dataclass(frozen=True)
class TransferRow:
    site: str
    target: str
    flavour: str
    clients: int | None
    #: the file size as the run named it (``1MiB``) and in bytes
    size: str
    size_bytes: int
    put_files_per_s: float | None
    put_mb_per_s: float | None
    get_files_per_s: float | None
    get_mb_per_s: float | None
    #: the same figures as the registry writes them (``12.3 files/s``), for the page
    put_files_text: str
    put_mb_text: str
    get_files_text: str
    get_mb_text: str
    #: files stored with the size and checksum sent, of those put; downloads identical, of those
    #: — counted once per phase, over its files of every size: on its first row, empty on the
    #: others (a reader adding rows must not count a phase's files once per size)
    stored: str
    identical: str
    local: bool = False
    quick: bool = False
    #: the rows (file sizes), from this one, that ``stored`` and ``identical`` are counted over;
    #: 0 on a phase's later rows (the page's cell spans them)
    checked_sizes: int = 1


def _figure(rows: Mapping[str, SummaryRow], metric: str) -> tuple[float | None, str]:
    row = rows.get(metric)
    return (row.value, row.text) if row is not None else (None, _EMPTY)


def _run_rows(run: CampaignRun, local: bool) -> list[TransferRow]:
    figures: dict[tuple[str, int | None], dict[str, SummaryRow]] = {}
    for row in summary_rows(run.result):
        if row.workload == IDS:
            figures.setdefault((row.flavour, row.clients), {})[row.metric] = row
    found = []
    for entry in run.result.benchmarks:
        if entry.get("workload") != IDS:
            continue
        flavour = str(entry.get("flavour"))
        clients = entry.get("concurrency") if isinstance(entry.get("concurrency"), int) else None
        rows = figures.get((flavour, clients), {})
        checks = entry.get("checks") if isinstance(entry.get("checks"), Mapping) else {}
        assert isinstance(checks, Mapping)
        sizes = ids_sizes(entry)
        # the run checks a phase's files together: a row of one size must not pass for its own
        whole = " (all sizes)" if len(sizes) > 1 else ""
        stored = f"{checks.get('stored', 0)} / {checks.get('expected', 0)}{whole}"
        identical = f"{checks.get('identical', 0)} / {checks.get('downloaded', 0)}{whole}"
        for index, (label, size) in enumerate(sizes):
            first = index == 0
            put, put_text = _figure(rows, f"put {label} {RATE}")
            put_mb, put_mb_text = _figure(rows, f"put {label} {MB_S}")
            get, get_text = _figure(rows, f"getData {label} {RATE}")
            get_mb, get_mb_text = _figure(rows, f"getData {label} {MB_S}")
            found.append(TransferRow(
                run.site, run.target, flavour, clients, label, size,
                put, put_mb, get, get_mb, put_text, put_mb_text, get_text, get_mb_text,
                stored if first else "", identical if first else "", local, run.quick,
                len(sizes) if first else 0,
            ))  # fmt: skip
    return found


def transfer_rows(campaign: Campaign) -> list[TransferRow]:
    targets = {t.name: t for t in campaign.targets}
    rows: list[TransferRow] = []
    for run in campaign.runs:
        target = targets.get(run.target)
        rows += _run_rows(run, bool(target is not None and target.is_local_to(run.site)))
    return rows
