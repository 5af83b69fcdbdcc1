"""IDS ``put`` and ``getData`` of 100 MiB files: this checkout's ``sv7 serve`` beside another's.

    python -m tests.benchmarks.ids_against --against DIR [--rounds 3] [--files 10]

DIR is another checkout (for example ``git archive main | tar -x -C /tmp/main``). Each round
starts ``sv7 serve --ids-storage`` of each checkout in turn (a kept storage: each file synced
before the answer), puts the same 100 MiB file ``--files`` times with the lean client of this
checkout, then gets each back (``getData``, the stored files dropped from the page cache
first); it prints the medians of MB/s and of the server's CPU seconds per GB moved, and the
load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from tests.benchmarks.served import served_catalogue
from tests.benchmarks.test_bench_ids import MiB, Nothing, dataset, drop_cache, logged_in

Figures = dict[str, tuple[float, float]]  # "put"/"getData": (MB/s, server CPU s per GB)


def one_round(source: Path, files: int, checkout: str | None) -> Figures:
    """The figures of ``files`` puts of ``source``, then of their getData."""
    total = files * source.stat().st_size
    figures: Figures = {}
    with (
        tempfile.TemporaryDirectory() as storage,
        served_catalogue("--ids-storage", storage, checkout=checkout) as (proc, url),
    ):
        client, service = logged_in(url)
        ds, fmt = dataset(client)
        server = psutil.Process(proc.pid)

        def measured(what: str, move: Callable[[], object]) -> None:
            cpu = sum(server.cpu_times()[:2])
            start = time.perf_counter()
            move()
            seconds = time.perf_counter() - start
            cpu = sum(server.cpu_times()[:2]) - cpu
            figures[what] = (total / seconds / 1e6, cpu / (total / 1e9))

        stored: list[int] = []
        measured("put", lambda: stored.extend(
            service.put(source, f"f{n}", ds, fmt).id for n in range(files)))  # fmt: skip
        for path in Path(storage, "main").rglob("*"):
            if path.is_file():
                drop_cache(path)
        measured("getData", lambda: [
            service.get_data([df], Nothing(), source.stat().st_size) for df in stored])  # fmt: skip
        service.delete(stored)
        service.close()
        client.logout()
        client.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="another checkout's directory")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=10)
    args = parser.parse_args()
    runs: dict[str, list[Figures]] = {"this": [], args.against: []}
    with tempfile.TemporaryDirectory() as work:
        source = Path(work) / "file.bin"
        source.write_bytes(os.urandom(100 * MiB))  # in the page cache: sent from memory
        for _ in range(args.rounds):
            runs[args.against].append(one_round(source, args.files, args.against))
            runs["this"].append(one_round(source, args.files, None))
    print(f"IDS put and getData, {args.files} x 100 MiB per round, {args.rounds} rounds, "
          f"alternating; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")  # fmt: skip
    for what in ("put", "getData"):
        for name, rounds in runs.items():
            rates = [r[what][0] for r in rounds]
            cpus = [r[what][1] for r in rounds]
            print(f"  {what:7} {name}: median {statistics.median(rates):,.0f} MB/s "
                  f"(rounds: {', '.join(f'{r:,.0f}' for r in rates)}), server CPU "
                  f"{statistics.median(cpus):.2f} s per GB")  # fmt: skip


if __name__ == "__main__":
    main()
