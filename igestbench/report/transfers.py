"""Ingestion with the bytes: the ids part's figures, beside the metadata benchmarks.

One row per run, IDS client, concurrency level and file size: files per second and MB/s of
``put`` and of ``getData``, as the run computed them (``transfers`` of its ``ids`` benchmark
entries: over the time the clients spent in those calls, N clients in flight counted), and the
run's checks (files stored with the right size and checksum, downloads identical). From the
file alone, as every table of the report.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from igestbench.results.campaign import Campaign

WORKLOAD = "ids"


@dataclass(frozen=True)
class TransferRow:
    site: str
    target: str
    flavour: str
    clients: int
    #: the file size as the run named it (``1MiB``) and in bytes
    size: str
    size_bytes: int
    put_files_per_s: float | None
    put_mb_per_s: float | None
    get_files_per_s: float | None
    get_mb_per_s: float | None
    #: files stored with the size and checksum sent, of those put; downloads identical, of those
    stored: str
    identical: str
    local: bool = False
    quick: bool = False


def _figure(transfers: Mapping[str, Any], op: str, key: str) -> float | None:
    value = transfers.get(op, {}).get(key)
    return float(value) if isinstance(value, int | float) else None


def transfer_rows(campaign: Campaign) -> list[TransferRow]:
    rows: list[TransferRow] = []
    operators = {t.name: t for t in campaign.targets}
    for run in campaign.runs:
        target = operators.get(run.target)
        local = bool(target is not None and target.is_local_to(run.site))
        for entry in run.result.benchmarks:
            if entry.get("workload") != WORKLOAD:
                continue
            checks = entry.get("checks", {})
            transfers = entry.get("transfers", {})
            sizes = checks.get("file_sizes", {})
            stored = f"{checks.get('stored', 0)} / {checks.get('expected', 0)}"
            identical = f"{checks.get('identical', 0)} / {checks.get('downloaded', 0)}"
            for label, size in sorted(sizes.items(), key=lambda item: item[1]):
                put, get = f"ids/put/{label}", f"ids/getData/{label}"
                rows.append(TransferRow(
                    run.site, run.target, str(entry["flavour"]), int(entry["concurrency"]),
                    label, int(size),
                    _figure(transfers, put, "files_per_s"), _figure(transfers, put, "mb_per_s"),
                    _figure(transfers, get, "files_per_s"), _figure(transfers, get, "mb_per_s"),
                    stored, identical, local, run.quick,
                ))  # fmt: skip
    return rows
