"""The local catalogue's CPU per call, through its whole HTTP protocol object, beside other code.

A light call (a `get`, a one-row search) costs the local server a few tenths of a millisecond,
spread over many small steps: parsing the request, the SOAP or REST front, the SQL, writing
the answer. Served over a socket, the kernel and the client blur that figure; here each call's
bytes go straight into the server's HTTP protocol object (the one ``sv7 serve`` makes per
connection) in this process, its answer into a list, and the process's CPU time is read around
``--calls`` calls per query and interface (SOAP and REST), after 300 untimed ones.

With ``--before DIR`` (a checkout of other igestbench code, e.g. ``git worktree add DIR
7eba8a5``) the same calls run against that code too, each side in a process of its own
(``PYTHONPATH=DIR``) on its own copy of one database, in ``--rounds`` rounds that alternate
which side goes first. It prints, per interface and query, the least and the median over the
rounds of the CPU µs per call, and the change from the other code's least. No timing is asserted.

The database is the scale part's tree (Investigations of 25 Datasets of 400 Datafiles), grown to
``--size`` Datafiles in a temporary file by this checkout's local catalogue, or ``--db FILE``
grown before (``python -m tests.benchmarks.scale_memory --db FILE``). Only the queries that
the event loop answers itself are measured (a scan goes to a worker thread, which this does
not drive): by default ``get``, ``parameter-range``, ``dataset-name``, ``include`` and
``include-concise``.

    python -m tests.benchmarks.light_calls [--before DIR] [--size 100000 | --db FILE]
        [--rounds 3] [--calls 1000] [--queries get,include]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

#: the queries measured unless --queries says otherwise (all answered on the event loop)
LIGHT = ("get", "parameter-range", "dataset-name", "include", "include-concise")
ROOT = Path(__file__).resolve().parents[2]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--size", type=int, default=100_000, help="Datafiles in the tree")
    parser.add_argument("--db", type=Path, help="a tree grown before (not changed: copied)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (alternating order)")
    parser.add_argument("--calls", type=int, default=1000, help="timed calls per query")
    parser.add_argument("--queries", default=",".join(LIGHT), help="comma-separated")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    queries = [q for q in args.queries.split(",") if q]
    if args.child:
        print(json.dumps(measure(args.db, args.calls, queries)))
        return 0
    if args.before is not None and not (args.before / "igestbench").is_dir():
        parser.error(f"--before {args.before}: not a checkout of igestbench")
    sides = {"this": ROOT, **({"before": args.before.resolve()} if args.before else {})}
    with tempfile.TemporaryDirectory(prefix="sv7-light-calls-") as tmp:
        db = args.db
        if db is None:
            db = Path(tmp) / "tree.sqlite"
            started = time.monotonic()
            grow(db, args.size)
            print(f"{args.size:,} Datafiles grown in {time.monotonic() - started:.0f} s",
                  flush=True)  # fmt: skip
        figures: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
        for round_ in range(args.rounds):
            order = list(sides) if round_ % 2 == 0 else list(reversed(sides))
            for side in order:
                copy = Path(tmp) / f"{side}.sqlite"
                shutil.copyfile(db, copy)
                for key, us in run_side(sides[side], copy, args.calls, queries).items():
                    figures[side].setdefault(key, []).append(us)
                copy.unlink()
        print(f"CPU µs per call, {args.rounds} rounds of {args.calls:,} calls per query: least "
              "(median)" + ("; change: this code's least against the other's" if args.before
                            else ""))  # fmt: skip
        for key, values in figures["this"].items():
            line = f"  {key:22} this {min(values):7.1f} ({statistics.median(values):7.1f})"
            if "before" in figures:
                other = figures["before"][key]
                line += (f"   before {min(other):7.1f} ({statistics.median(other):7.1f})"
                         f"   change {(min(values) / min(other) - 1) * 100:+5.1f} %")
            print(line, flush=True)
    return 0


def grow(db: Path, size: int) -> None:
    """The scale part's tree of ``size`` Datafiles in ``db``, by this checkout's catalogue,
    under the Facility name :func:`measure` finds it by (scale_memory's)."""
    from tests.benchmarks.scale_memory import FACILITY
    from tests.benchmarks.sqlite_drivers import grow as grow_tree

    grow_tree(db, size, FACILITY)


def run_side(checkout: Path, db: Path, calls: int, queries: list[str]) -> dict[str, float]:
    """:func:`measure` in a process of its own with ``checkout``'s code first on the path."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--db", str(db),
               "--calls", str(calls), "--queries", ",".join(queries)]  # fmt: skip
    done = subprocess.run(command, cwd=checkout, env=_env(checkout), capture_output=True,
                          text=True, timeout=3600, check=False)  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{checkout}: the measurement failed:\n{done.stderr[-2000:]}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def _env(checkout: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout)}


class _Transport:
    """Enough of an asyncio transport for the protocol object: what it writes is kept."""

    def __init__(self) -> None:
        self.out: list[bytes] = []

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 5555) if name == "peername" else default

    def write(self, data: bytes) -> None:
        self.out.append(data)

    def writelines(self, parts: Sequence[bytes]) -> None:
        self.out.extend(parts)

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def measure(db: Path, calls: int, queries: list[str]) -> dict[str, float]:
    """CPU µs per call of each query over SOAP and REST, on the code this process imports."""
    import asyncio

    return asyncio.new_event_loop().run_until_complete(_measure(db, calls, queries))


async def _measure(db: Path, calls: int, queries: list[str]) -> dict[str, float]:
    from igestbench.config import ServeConfig
    from igestbench.mock.catalogue import CatalogueApp, LocalCatalogue
    from igestbench.mock.http import ConnectionFactory
    from igestbench.mock.http_messages import HttpLimits
    from igestbench.mock.soap import SoapEndpoint
    from igestbench.workloads import Journal
    from igestbench.workloads.scale_queries import BY_NAME
    from igestbench.workloads.scale_tree import ScaleTree, TreeShape
    from tests.benchmarks.scale_memory import BATCH, FACILITY, _attach, _tree_ids

    cat = LocalCatalogue(ServeConfig(db=str(db)))
    # no client: the tree only names its objects' ids, read from the database
    tree = ScaleTree(None, Journal(facility=FACILITY), FACILITY, TreeShape(batch=BATCH))  # type: ignore[arg-type]
    _attach(tree, _tree_ids(db))
    sid = cat.service.login("simple", {"username": "root", "password": "root"})
    endpoint = SoapEndpoint(cat.service, cat.config.max_elements)
    app = CatalogueApp(cat.config, endpoint, "127.0.0.1:5555", cat.workers, cat.ids)
    protocol = ConnectionFactory(app, "http", HttpLimits())()
    transport = _Transport()
    protocol.connection_made(transport)  # type: ignore[arg-type]  # what it uses of one
    jobs = [(face, name, [make(sid, BY_NAME[name].call(tree, i)) for i in range(300 + calls)])
            for face, make in (("SOAP", _soap_request), ("REST", _rest_request))
            for name in queries]  # fmt: skip
    figures = {}
    for face, name, requests in jobs:
        for request in requests[:300]:
            protocol.data_received(request)
        transport.out.clear()
        started = time.process_time()
        for request in requests[300:]:
            protocol.data_received(request)
            transport.out.clear()
        figures[f"{face} {name}"] = (time.process_time() - started) / calls * 1e6
        if protocol.busy:
            raise SystemExit(f"{face} {name}: a call went to a worker thread; not a light call")
    cat.stop()
    return figures


def _soap_request(sid: str, call: Any) -> bytes:
    from igestbench.icat.soapxml import escape
    from tests.soap_helpers import ENVELOPE

    if call.obj_id is not None:
        inner = (f"<tns:get><sessionId>{sid}</sessionId><query>{call.query}</query>"
                 f"<primaryKey>{call.obj_id}</primaryKey></tns:get>")  # fmt: skip
    else:
        inner = (f"<tns:search><sessionId>{sid}</sessionId><query>{escape(call.query)}"
                 "</query></tns:search>")  # fmt: skip
    body = ENVELOPE.format(body=inner).encode()
    return (b"POST /ICATService/ICAT HTTP/1.1\r\nHost: 127.0.0.1:5555\r\n"
            b"Accept-Encoding: identity\r\nContent-Type: text/xml; charset=utf-8\r\n"
            b'SOAPAction: ""\r\nContent-Length: ' + str(len(body)).encode() + b"\r\n\r\n"
            + body)  # fmt: skip


def _rest_request(sid: str, call: Any) -> bytes:
    from urllib.parse import urlencode

    params = {"sessionId": sid, "query": call.query}
    if call.obj_id is not None:
        params["id"] = str(call.obj_id)
    return (f"GET /icat/entityManager?{urlencode(params)} HTTP/1.1\r\n"
            "Host: 127.0.0.1:5555\r\nAccept-Encoding: identity\r\n\r\n").encode()


if __name__ == "__main__":
    sys.exit(main())
