"""IDS ``put`` of 100 MiB files: this checkout's ``sv7 serve`` beside another's, alternating.

    python -m tests.benchmarks.ids_against --against DIR [--rounds 3] [--files 10]

DIR is another checkout (for example ``git archive main | tar -x -C /tmp/main``). Each round
starts ``sv7 serve --ids-storage`` of each checkout in turn (a kept storage: each file synced
before the answer) and puts the same 100 MiB file ``--files`` times with the lean client of
this checkout; it prints the medians of MB/s and of the server's CPU seconds per GB received
(what the load of a shared machine changes least), and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil

from tests.benchmarks.served import served_catalogue
from tests.benchmarks.test_bench_ids import MiB, dataset, logged_in


def one_round(source: Path, files: int, checkout: str | None) -> tuple[float, float]:
    """(MB/s, server CPU seconds per GB) of ``files`` puts of ``source``."""
    with (
        tempfile.TemporaryDirectory() as storage,
        served_catalogue("--ids-storage", storage, checkout=checkout) as (proc, url),
    ):
        client, service = logged_in(url)
        ds, fmt = dataset(client)
        server = psutil.Process(proc.pid)
        cpu = sum(server.cpu_times()[:2])
        start = time.perf_counter()
        stored = [service.put(source, f"f{n}", ds, fmt).id for n in range(files)]
        seconds = time.perf_counter() - start
        cpu = sum(server.cpu_times()[:2]) - cpu
        service.delete(stored)
        service.close()
        client.logout()
        client.close()
    total = files * source.stat().st_size
    return total / seconds / 1e6, cpu / (total / 1e9)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="another checkout's directory")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=10)
    args = parser.parse_args()
    runs: dict[str, list[tuple[float, float]]] = {"this": [], args.against: []}
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "file.bin"
        source.write_bytes(os.urandom(100 * MiB))  # in the page cache: sent from memory
        for _ in range(args.rounds):
            runs[args.against].append(one_round(source, args.files, args.against))
            runs["this"].append(one_round(source, args.files, None))
    print(f"IDS put, {args.files} x 100 MiB per round, {args.rounds} rounds, alternating; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip
    for name, figures in runs.items():
        rates = [r for r, _ in figures]
        cpus = [c for _, c in figures]
        print(f"  {name}: put median {statistics.median(rates):,.0f} MB/s "
              f"(rounds: {', '.join(f'{r:,.0f}' for r in rates)}), server CPU "
              f"{statistics.median(cpus):.2f} s per GB")  # fmt: skip


if __name__ == "__main__":
    main()
