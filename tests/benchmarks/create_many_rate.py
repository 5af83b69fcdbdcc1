"""createMany of 10,000 Datafiles on the local catalogue, this code beside another checkout's.

Issue 21.6 asks for createMany of 10,000 at 20,000 Datafiles/s or more. Two ``sv7 serve --db
FILE`` processes run at once — this worktree's and ``--checkout DIR``'s (e.g. ``git archive
main | tar -x -C DIR``) — each grown with the scale part's tree (Datafiles in Datasets of 400,
a DatafileParameter on one in four) by the same lean client, one createMany of 10,000 on each
in turn, so that the machine's load weighs on both alike. Printed per server: the median rate
(Datafiles/s over the call's wall time, as ``sv7 run --parts scale`` counts it), the server's
CPU time per call (its process, all threads: what a busier machine cannot hide) and the rate
that CPU time alone would allow; with the load average and the time. Printed, never asserted.

    python -m tests.benchmarks.create_many_rate --checkout DIR [--calls 20] [--start 100000]

``--start``: Datafiles each tree holds before the timed calls (a catalogue's first calls are
not its steady ones). Only loopback traffic; the databases are temporary files.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path

import psutil

from igestbench.client import ClientConfig, connect
from igestbench.workloads import Journal
from igestbench.workloads.scale_tree import ScaleTree, TreeShape
from tests.benchmarks.served import served_catalogue

BATCH = 10_000


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", required=True, help="the other code's directory")
    parser.add_argument("--calls", type=int, default=20, help="timed createMany calls each")
    parser.add_argument("--start", type=int, default=100_000, help="Datafiles before them")
    args = parser.parse_args(argv)
    sides = {"this": None, args.checkout: args.checkout}
    print(f"createMany of {BATCH:,} Datafiles, this worktree beside {args.checkout}; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {_load()}",
          flush=True)  # fmt: skip
    with ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="sv7-create-many-"))
        trees: dict[str, tuple[ScaleTree, psutil.Process]] = {}
        for name, checkout in sides.items():
            db = Path(tmp) / f"{len(trees)}.sqlite"
            proc, url = stack.enter_context(
                served_catalogue("--db", str(db), "--example-data", checkout=checkout))
            client = connect(ClientConfig(url, read_timeout=600), "lean")
            stack.callback(client.close)
            client.login("simple", {"username": "root", "password": "root"})
            tree = ScaleTree(client, Journal(facility="sv7-rate"), "sv7-rate",
                             TreeShape(batch=BATCH))  # fmt: skip
            tree.found()
            trees[name] = (tree, psutil.Process(proc.pid))
        for tree, _ in trees.values():
            tree.grow_to(args.start)
        rates: dict[str, list[float]] = {name: [] for name in trees}
        cpu_ms: dict[str, list[float]] = {name: [] for name in trees}
        for turn in range(args.calls):
            order = list(trees.items())
            for name, (tree, server) in order if turn % 2 == 0 else reversed(order):
                before = sum(server.cpu_times()[:2])
                growth = tree.grow_to(tree.size + BATCH)
                cpu_ms[name].append((sum(server.cpu_times()[:2]) - before) * 1000)
                if growth.rate_per_s is not None:
                    rates[name].append(growth.rate_per_s)
        for name in trees:
            cpu = statistics.median(cpu_ms[name])
            print(f"  {name}: median {statistics.median(rates[name]):,.0f} Datafiles/s "
                  f"(quartiles {_quartiles(rates[name])}; {len(rates[name])} calls); server "
                  f"CPU {cpu:,.0f} ms per call (it alone would allow "
                  f"{BATCH / cpu * 1000:,.0f} Datafiles/s)")
    print(f"  ended {time.strftime('%H:%M UTC', time.gmtime())}, load average {_load()}")
    return 0


def _quartiles(values: list[float]) -> str:
    if len(values) < 4:
        return "-"
    q = statistics.quantiles(values, n=4)
    return f"{q[0]:,.0f}-{q[2]:,.0f}"


if __name__ == "__main__":
    sys.exit(main())
