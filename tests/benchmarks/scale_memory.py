"""The local catalogue at 10⁷ Datafiles: its memory while it grows there and while the query set
runs on several workers at once, as root and as a member (issue 21, point 6).

``sv7 serve --db FILE`` runs in its own process (at the lowest priority, so that the machine's
other users keep their cores) and is grown with the scale part's tree (Investigations of 25
Datasets of 400 Datafiles, a numeric parameter on one in four) through createMany calls of
10,000 Datafiles, to ``--size`` (default 10,000,000). The server's memory is read from
``/proc/PID/status``: its resident set (``VmRSS``, what ``ps`` and psutil show), split into
private memory (``RssAnon``: the heap, what the process itself holds) and pages of files it maps
(``RssFile``: SQLite's memory-mapped database pages and shared libraries, which the OS cache
holds and can drop at any time). At every tenfold size and at the end it prints those, the
database's size on disk, the createMany rate, and the p50 of the indexed queries (as root).

Then the query set (``igestbench/workloads/scale_queries.py``) runs, as root and as the built-in
catalogue's member (``reader``, made an InvestigationUser of every Investigation of the tree,
under ICAT's usual membership rules restricted to the tree's Facility, as the scale part does):
first one query at a time (p50 of ``--calls`` calls each, ``--scan-calls`` for the three that
scan every Datafile), then ``--parallel`` client threads at once, each running the whole set
as root and as member ``--rounds`` times — so that scans run on several of the server's worker
threads at the same time — while a sampler reads the server's memory every 50 ms. The peak
resident set over the whole run is the figure of the issue's "under 4 GiB".

Run (about an hour on a busy 2-core machine for 10⁷; the growth alone ~25 minutes quiet):

    python -m tests.benchmarks.scale_memory [--size 10000000] [--db FILE] [--limit-gib 4]
    python -m tests.benchmarks.scale_memory --reuse --db FILE   # the query phase again

It exits 1 when the resident set went over ``--limit-gib`` (issue 21: under 4 GiB) or a query
failed, 0 else. Without ``--db`` the database is a temporary file, removed at the end; with it,
the file is kept (it must not exist yet, unless ``--reuse``: a database this script grew, whose
query phase is run again, e.g. with another version of the server). Only loopback traffic.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from array import array
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from igestbench.client import ClientConfig, connect
from igestbench.client.base import Catalogue
from igestbench.errors import Sv7Error
from igestbench.icat.beans import Bean
from igestbench.run.scale import BUILT_IN_MEMBER, measure_query
from igestbench.workloads import Journal
from igestbench.workloads.scale_queries import BY_NAME, QUERIES
from igestbench.workloads.scale_rules import add_membership_rules
from igestbench.workloads.scale_tree import MEMBER_ROLE, PARAMETER_NAME, ScaleTree, TreeShape
from tests.benchmarks.served import served_catalogue

#: The queries an index answers: each costs about the same at any size (the scans grow with
#: the catalogue: at 10⁷ a name-only lookup reads ten million index entries per call).
INDEXED = ("dataset-name", "get", "parameter-range", "include")
#: The queries that read every Datafile (or an index entry of each) per call.
SCANS = ("name", "count", "like-prefix")
FACILITY = "sv7-memory-scale"
BATCH = 10_000
GIB = 2**30
ROOT = {"username": "root", "password": "root"}
#: The server's limit per query: a member's COUNT at 10⁷ checks a rule on every Datafile.
QUERY_TIMEOUT_S = 900


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


class Peak:
    """The largest resident set seen, by whoever reads it (the sampler thread and the main one)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.memory = Memory.of(pid)
        self._lock = threading.Lock()

    def read(self) -> Memory:
        now = Memory.of(self.pid)
        with self._lock:
            if now.rss > self.memory.rss:
                self.memory = now
        return now

    @contextmanager
    def sampling(self, every_s: float = 0.05) -> Iterator[None]:
        stop = threading.Event()

        def sample() -> None:
            while not stop.wait(every_s):
                try:
                    self.read()
                except OSError:  # the server ended
                    return

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            yield
        finally:
            stop.set()
            sampler.join()


def _p50s(tree: ScaleTree, client: Catalogue) -> str:
    parts = []
    for name in INDEXED:
        (f,) = measure_query([client], tree, BY_NAME[name])
        if f.get("error"):
            raise SystemExit(f"{name}: {f['error']}")
        parts.append(f"{name} {f['p50_ms']:.2f} ms")
    return ", ".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000_000, help="Datafiles to grow to")
    parser.add_argument("--db", type=Path, help="keep the database in this new file")
    parser.add_argument("--reuse", action="store_true",
                        help="--db holds a tree this script grew: run the query phase only")
    parser.add_argument("--limit-gib", type=float, default=4.0, help="resident set limit")
    parser.add_argument("--calls", type=int, default=20, help="timed calls per indexed query")
    parser.add_argument("--scan-calls", type=int, default=5,
                        help="timed calls of each query that scans every Datafile")
    parser.add_argument("--parallel", type=int, default=4,
                        help="client threads running the query set at once")
    parser.add_argument("--rounds", type=int, default=2, help="times each thread runs the set")
    parser.add_argument("--checkout", help="serve with the igestbench of this directory (e.g. a "
                        "checkout of main, to compare its server with this one on one database)")
    args = parser.parse_args(argv)
    if args.reuse and (args.db is None or not args.db.exists()):
        parser.error("--reuse needs --db FILE, an existing database this script grew")
    if not args.reuse and args.db is not None and args.db.exists():
        parser.error(f"{args.db} exists: give a new file (or --reuse it)")
    with tempfile.TemporaryDirectory(prefix="sv7-scale-memory-") as tmp:
        db = args.db or Path(tmp) / "scale.sqlite"
        return _run(db, args)


def _run(db: Path, args: argparse.Namespace) -> int:
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    tree_ids = _tree_ids(db) if args.reuse else None
    what = (f"the tree in it, {len(tree_ids.datafiles):,} Datafiles" if tree_ids is not None
            else f"grown to {args.size:,} Datafiles by createMany of {BATCH:,}")
    server = f" (the server of {args.checkout})" if args.checkout else ""
    print(f"scale memory: sv7 serve --db {db}{server}, {what}; {started}, load average "
          f"{_load()}", flush=True)  # fmt: skip
    failed = False
    with served_catalogue("--db", str(db), "--example-data", "--query-timeout",
                          str(QUERY_TIMEOUT_S), nice=19,
                          checkout=args.checkout) as (proc, url):  # fmt: skip
        config = ClientConfig(url, read_timeout=QUERY_TIMEOUT_S + 60)
        client = connect(config, "lean")
        client.login("simple", ROOT)
        tree = ScaleTree(client, Journal(facility=FACILITY), FACILITY, TreeShape(batch=BATCH))
        peak = Peak(proc.pid)
        if tree_ids is None:
            tree.found()
            _grow(tree, client, args.size, peak, db)
        else:
            _attach(tree, tree_ids)
            print(f"  {_load_line(peak, db)}", flush=True)
        with peak.sampling():
            _add_member(tree, client)
            failed |= _query_phase(tree, config, args, peak)
        client.logout()
        client.close()
    over = peak.memory.rss > args.limit_gib * GIB
    print(f"peak resident set {peak.memory.rss / GIB:.2f} GiB ({peak.memory.text()}): "
          f"{'OVER' if over else 'under'} the limit of {args.limit_gib:g} GiB; database "
          f"{_db_bytes(db) / GIB:.2f} GiB; {time.strftime('%H:%M UTC', time.gmtime())}, "
          f"load average {_load()}")
    return 1 if over or failed else 0


def _grow(tree: ScaleTree, client: Catalogue, size: int, peak: Peak, db: Path) -> None:
    rates: list[float] = []
    began = time.monotonic()
    report_at = 100_000
    while tree.size < size:
        growth = tree.grow_to(min(size, tree.size + BATCH))
        if growth.rate_per_s is not None:
            rates.append(growth.rate_per_s)
        peak.read()
        if tree.size >= report_at or tree.size >= size:
            report_at = tree.size * 10
            print(f"{tree.size:,} Datafiles after {time.monotonic() - began:,.0f} s: "
                  f"{_load_line(peak, db)}; createMany of {BATCH:,}: median "
                  f"{statistics.median(rates[-100:]):,.0f} Datafiles/s (last 100 calls)",
                  flush=True)  # fmt: skip
            print(f"  p50 of 20 calls as root: {_p50s(tree, client)}", flush=True)


def _load_line(peak: Peak, db: Path) -> str:
    now = peak.read()
    return (f"{now.text()}; peak {peak.memory.text()}; database {_db_bytes(db) / GIB:.2f} GiB; "
            f"load average {_load()}")


def _add_member(tree: ScaleTree, client: Catalogue) -> None:
    """The member an InvestigationUser of every Investigation of the tree, and the scale part's
    membership rules (restricted to the tree's Facility); what exists already is kept."""
    member = BUILT_IN_MEMBER.user_name
    (user_id,) = client.search(f"SELECT u.id FROM User u WHERE u.name = '{member}'")
    held = set(client.search(
        f"SELECT iu.investigation.id FROM InvestigationUser iu WHERE iu.user.id = {user_id} "
        f"AND iu.investigation.facility.name = '{FACILITY}'"))  # fmt: skip
    beans = [Bean("InvestigationUser", {"user": Bean("User", {"id": user_id}),
                                        "investigation": Bean("Investigation", {"id": i}),
                                        "role": MEMBER_ROLE})
             for i in tree.investigations if i not in held]  # fmt: skip
    for first in range(0, len(beans), 1000):
        client.create_many(beans[first:first + 1000])
    rules = client.search(f"SELECT COUNT(r) FROM Rule r WHERE r.what LIKE '%{FACILITY}%'")
    if not rules or not rules[0]:
        add_membership_rules(client, tree.journal, FACILITY)
    print(f"  member {member}: InvestigationUser of {len(tree.investigations):,} "
          f"Investigations ({len(beans):,} added), membership rules on {FACILITY}", flush=True)


def _query_phase(
    tree: ScaleTree, config: ClientConfig, args: argparse.Namespace, peak: Peak
) -> bool:
    """The query set one at a time, then on ``--parallel`` threads; whether a query failed."""
    failed = False
    with _clients(config, 1) as ((root, member),):
        print(f"the query set one query at a time, as root / as member (p50, ms; "
              f"{args.calls} calls, {args.scan_calls} for {', '.join(SCANS)}; "
              f"{time.strftime('%H:%M UTC', time.gmtime())}, load average {_load()}):", flush=True)
        for query in QUERIES:
            calls = args.scan_calls if query.name in SCANS else args.calls
            began = time.perf_counter()
            figures = measure_query([root, member], tree, query, calls=calls, warmup=1)
            failed |= _print_figures(query.name, figures, time.perf_counter() - began, peak)
    print(f"the query set on {args.parallel} threads at once, each as root and as member, "
          f"{args.rounds} rounds ({time.strftime('%H:%M UTC', time.gmtime())}, load average "
          f"{_load()}):", flush=True)
    failed |= _parallel(tree, config, args, peak)
    return failed


def _print_figures(name: str, figures: list[dict[str, Any]], seconds: float, peak: Peak) -> bool:
    cells = []
    for role, f in zip(("root", "member"), figures, strict=True):
        text = "error" if f["p50_ms"] is None else f"{f['p50_ms']:,.2f}"
        if f.get("error"):
            text += f" ({f['errors']}: {str(f['error'])[:120]})"
        cells.append(f"{role} {text}")
    print(f"  {name:<16} {' / '.join(cells)}  [{seconds:,.0f} s; {peak.read().text()}]",
          flush=True)  # fmt: skip
    return any(f.get("error") for f in figures)


def _parallel(tree: ScaleTree, config: ClientConfig, args: argparse.Namespace,
              peak: Peak) -> bool:  # fmt: skip
    durations: dict[tuple[str, str], list[float]] = {}
    errors: list[str] = []
    lock = threading.Lock()
    start = threading.Barrier(args.parallel)

    def worker(index: int, root: Catalogue, member: Catalogue) -> None:
        start.wait()
        for rnd in range(args.rounds):
            # each thread starts the set at another query: scans overlap with everything
            order = QUERIES[index % len(QUERIES):] + QUERIES[:index % len(QUERIES)]
            for query in order:
                figures = measure_query([root, member], tree, query, calls=1, warmup=0)
                with lock:
                    for role, f in zip(("root", "member"), figures, strict=True):
                        if f["p50_ms"] is not None:
                            durations.setdefault((query.name, role), []).append(f["p50_ms"])
                        if f.get("error"):
                            errors.append(f"{query.name} as {role}: {f['error']}")
            del rnd

    began = time.perf_counter()
    with _clients(config, args.parallel) as pairs:
        threads = [threading.Thread(target=worker, args=(i, *pair))
                   for i, pair in enumerate(pairs)]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    seconds = time.perf_counter() - began
    for query in QUERIES:
        cells = [f"{role} {statistics.median(durations[(query.name, role)]):,.2f}"
                 if (query.name, role) in durations else f"{role} error"
                 for role in ("root", "member")]  # fmt: skip
        n = len(durations.get((query.name, "root"), []))
        print(f"  {query.name:<16} {' / '.join(cells)} (median of {n} calls)")
    print(f"  {seconds:,.0f} s; after: {peak.read().text()}; peak so far {peak.memory.text()}")
    for error in errors[:10]:
        print(f"  ERROR {error}")
    return bool(errors)


@contextmanager
def _clients(config: ClientConfig, n: int) -> Iterator[list[tuple[Catalogue, Catalogue]]]:
    """``n`` pairs of logged-in lean clients: (root, member)."""
    made: list[Catalogue] = []
    try:
        pairs = []
        for _ in range(n):
            pair = []
            for mechanism, credentials in (("simple", ROOT), (
                    BUILT_IN_MEMBER.authenticator, BUILT_IN_MEMBER.as_login())):
                client = connect(config, "lean")
                made.append(client)
                client.login(mechanism, credentials)
                pair.append(client)
            pairs.append((pair[0], pair[1]))
        yield pairs
    finally:
        for client in made:
            with suppress(Sv7Error):
                client.logout()
            client.close()


@dataclass(frozen=True)
class TreeIds:
    """The ids of a tree this script grew, read from its database before the server starts."""

    facility: int
    types: dict[str, int]
    investigations: array[int]
    datasets: array[int]
    datafiles: array[int]


def _tree_ids(db: Path) -> TreeIds:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        (facility,) = conn.execute("SELECT id FROM Facility WHERE name = ?", (FACILITY,)).fetchone()
        types = {t: conn.execute(f'SELECT min(id) FROM "{t}" WHERE facility_id = ?',
                                 (facility,)).fetchone()[0]
                 for t in ("InvestigationType", "DatasetType", "DatafileFormat")}  # fmt: skip
        (types["ParameterType"],) = conn.execute(
            "SELECT id FROM ParameterType WHERE facility_id = ? AND name = ?",
            (facility, PARAMETER_NAME)).fetchone()  # fmt: skip
        investigations = array("q", (r[0] for r in conn.execute(
            "SELECT id FROM Investigation WHERE facility_id = ? ORDER BY id", (facility,))))
        datasets = array("q", (r[0] for r in conn.execute(
            "SELECT d.id FROM Dataset d JOIN Investigation i ON i.id = d.investigation_id "
            "WHERE i.facility_id = ? ORDER BY d.id", (facility,))))
        first, last = datasets[0], datasets[-1]
        datafiles = array("q", (r[0] for r in conn.execute(
            "SELECT id FROM Datafile WHERE dataset_id BETWEEN ? AND ? ORDER BY id", (first, last))))
    finally:
        conn.close()
    return TreeIds(facility, types, investigations, datasets, datafiles)


def _attach(tree: ScaleTree, ids: TreeIds) -> None:
    """Make ``tree`` the one in the database (it was grown in order: the n-th id is serial n)."""
    tree.facility_id = ids.facility
    for entity, obj_id in ids.types.items():
        tree._types[entity] = Bean(entity, {"id": obj_id})  # a benchmark's reuse
    tree.parameter_type = Bean("ParameterType", {
        "id": ids.types["ParameterType"], "name": PARAMETER_NAME, "units": "K",
        "valueType": "NUMERIC", "applicableToDatafile": True})  # fmt: skip
    tree.investigations = ids.investigations
    tree.datasets = ids.datasets
    tree.datafiles = ids.datafiles


def _db_bytes(db: Path) -> int:
    return sum(p.stat().st_size for p in db.parent.glob(db.name + "*") if p.is_file())


def _load() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


if __name__ == "__main__":
    sys.exit(main())
