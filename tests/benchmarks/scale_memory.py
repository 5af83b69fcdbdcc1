"""The local catalogue at 10⁷ Datafiles: its memory while it grows there (issue 21, point 6).

``sv7 serve --db FILE`` runs in its own process (at the lowest priority, so that the machine's
other users keep their cores) and is grown with the scale part's tree (Investigations of 25
Datasets of 400 Datafiles, a numeric parameter on one in four, the member an InvestigationUser
of each) through createMany calls of 10,000 Datafiles, to ``--size`` (default 10,000,000).
The server's memory is read from ``/proc/PID/status`` after every call: its resident set
(``VmRSS``), split into private memory (``RssAnon``: the heap, what the process itself holds)
and pages of files it maps (``RssFile``: SQLite's memory-mapped database pages and shared
libraries, which the OS cache holds and can drop at any time). At every tenfold size and at the
end it prints those, the database's size on disk, the createMany rate, and the p50 of the
indexed queries of the scale part's set (20 calls each, as root); at the end one name-only
lookup, a scan of every Datafile (its timing is ``test_bench_scale.py``'s), and the memory
after it.

Run (about 30 minutes on a quiet 2-core machine; more while others work):

    python -m tests.benchmarks.scale_memory [--size 10000000] [--db FILE] [--limit-gib 4]

It exits 1 when the resident set went over ``--limit-gib`` (issue 21: under 4 GiB), 0 else.
Without ``--db`` the database is a temporary file, removed at the end; with it, the file is
kept (it must not exist yet). Only loopback traffic.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from igestbench.client import ClientConfig, connect
from igestbench.run.scale import measure_query
from igestbench.workloads import Journal
from igestbench.workloads.scale_queries import BY_NAME
from igestbench.workloads.scale_tree import ScaleTree, TreeShape
from tests.benchmarks.served import served_catalogue

#: The queries an index answers: each costs about the same at any size (the scans grow with
#: the catalogue: at 10⁷ a name-only lookup reads ten million index entries per call).
INDEXED = ("dataset-name", "get", "parameter-range", "include")
BATCH = 10_000
GIB = 2**30


@dataclass
class Memory:
    """One reading of the server's memory, bytes."""

    rss: int
    anon: int
    file: int

    @classmethod
    def of(cls, pid: int) -> Memory:
        fields = {}
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "RssShmem"):
                fields[key] = int(value.split()[0]) * 1024
        return cls(fields.get("VmRSS", 0), fields.get("RssAnon", 0),
                   fields.get("RssFile", 0) + fields.get("RssShmem", 0))

    def text(self) -> str:
        return (f"RSS {self.rss / 2**20:,.0f} MiB (private {self.anon / 2**20:,.0f} MiB, "
                f"mapped files {self.file / 2**20:,.0f} MiB)")


def _p50s(tree: ScaleTree, client: object) -> str:
    parts = []
    for name in INDEXED:
        (f,) = measure_query([client], tree, BY_NAME[name])  # type: ignore[list-item]
        if f.get("error"):
            raise SystemExit(f"{name}: {f['error']}")
        parts.append(f"{name} {f['p50_ms']:.2f} ms")
    return ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000_000, help="Datafiles to grow to")
    parser.add_argument("--db", type=Path, help="keep the database in this new file")
    parser.add_argument("--limit-gib", type=float, default=4.0, help="resident set limit")
    args = parser.parse_args(argv)
    if args.db is not None and args.db.exists():
        parser.error(f"{args.db} exists: give a new file")
    with tempfile.TemporaryDirectory(prefix="sv7-scale-memory-") as tmp:
        db = args.db or Path(tmp) / "scale.sqlite"
        return _grow(db, args.size, args.limit_gib)


def _grow(db: Path, size: int, limit_gib: float) -> int:
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(f"scale memory: sv7 serve --db {db}, grown to {size:,} Datafiles by createMany of "
          f"{BATCH:,}; {started}, load average {_load()}", flush=True)
    with served_catalogue("--db", str(db), "--example-data", nice=19) as (proc, url):
        client = connect(ClientConfig(url, read_timeout=600), "lean")
        client.login("simple", {"username": "root", "password": "root"})
        tree = ScaleTree(client, Journal(facility="sv7-memory-scale"), "sv7-memory-scale",
                         TreeShape(batch=BATCH))
        tree.found()
        peak = Memory.of(proc.pid)
        rates: list[float] = []
        began = time.monotonic()
        report_at = 100_000
        while tree.size < size:
            growth = tree.grow_to(min(size, tree.size + BATCH))
            if growth.rate_per_s is not None:
                rates.append(growth.rate_per_s)
            now = Memory.of(proc.pid)
            if now.rss > peak.rss:
                peak = now
            if tree.size >= report_at or tree.size >= size:
                report_at = tree.size * 10
                print(f"{tree.size:,} Datafiles after {time.monotonic() - began:,.0f} s: "
                      f"{now.text()}; peak {peak.text()}; database "
                      f"{_db_bytes(db) / GIB:.2f} GiB; createMany of {BATCH:,}: median "
                      f"{statistics.median(rates[-100:]):,.0f} Datafiles/s (last 100 calls); "
                      f"load average {_load()}", flush=True)
                print(f"  p50 of 20 calls as root: {_p50s(tree, client)}", flush=True)
        # a scan reads a whole index of Datafile: its pages are then mapped (RssFile)
        scan_started = time.perf_counter()
        (scan,) = measure_query([client], tree, BY_NAME["name"], calls=1, warmup=0)
        after = Memory.of(proc.pid)
        peak = after if after.rss > peak.rss else peak
        print(f"one name-only lookup (a scan of {tree.size:,} Datafiles): "
              f"{(time.perf_counter() - scan_started) * 1000:,.0f} ms"
              f"{' — ' + str(scan['error']) if scan.get('error') else ''}; then {after.text()}")
        client.logout()
        client.close()
    over = peak.rss > limit_gib * GIB
    print(f"peak resident set {peak.rss / GIB:.2f} GiB ({peak.text()}): "
          f"{'OVER' if over else 'under'} the limit of {limit_gib:g} GiB")
    return 1 if over else 0


def _db_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
