"""Speed of the local catalogue, driven from separate processes (issues 2 and 11).

Starts ``sv7 serve`` in its own process, fills it with one Investigation per round, then measures:

* createMany of 2,000 Datafiles (seconds; each into a fresh Dataset);
* a search returning those 2,000 rows (``SELECT o FROM Datafile o WHERE o.dataset.id = N``, one
  raw SOAP POST over a keep-alive ``requests`` session: ms, and the size of the answer);
* single-result searches per second with 1, 8 and 32 concurrent keep-alive clients, with
  p50/p99 latency and errors, driven by Debian's ``wrk`` (a C load generator) with a Lua script
  that cycles through 100 different lookups;
* the server's resident memory at the end.

It prints medians with their range over ``--rounds`` (the machine may be shared and noisy), beside
real ICAT 6.2.0's figures as recorded in the project's ICAT reference notes, as ratios. With
``--against DIR`` a second catalogue runs the igestbench of checkout DIR (e.g. ``git archive main``
unpacked) and the two are measured in alternating rounds and printed side by side: before/after
figures of a change from one run. ``--search-only`` measures just the 2,000-row search (issue 11).

Run:  python -m tests.benchmarks.catalogue_load [--seconds 10] [--rounds 3] [--against DIR]
      (needs ``wrk`` on PATH unless --search-only). Only loopback traffic; every step is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import requests

from igestbench.icat.soapxml import escape
from tests.benchmarks.served import served_catalogue
from tests.soap_helpers import ENVELOPE, create, login

N_FILES = 2000
CONCURRENCY = (1, 8, 32)


def setup(url: str, sid: str, facility: str = "BENCH") -> tuple[int, int]:
    fac = create(url, sid, "facility", f"<name>{facility}</name>")
    f = f"<facility><id>{fac}</id></facility>"
    it = create(url, sid, "investigationType", f"{f}<name>exp</name>")
    dt = create(url, sid, "datasetType", f"{f}<name>raw</name>")
    inv = create(
        url,
        sid,
        "investigation",
        f"{f}<name>INV</name><title>t</title><type><id>{it}</id></type><visitId>1</visitId>",
    )
    return inv, dt


def create_many_body(sid: str, dataset: int) -> bytes:
    beans = "".join(
        f'<beans xsi:type="tns:datafile"><dataset><id>{dataset}</id></dataset>'
        f"<fileSize>{1000 + i}</fileSize><location>/data/INV/run/frame-{i:05d}.nxs</location>"
        f"<name>frame-{i:05d}.nxs</name></beans>"
        for i in range(N_FILES)
    )
    body = f"<tns:createMany><sessionId>{sid}</sessionId>{beans}</tns:createMany>"
    return ENVELOPE.format(body=body).encode()


def timed_post(session: requests.Session, url: str, body: bytes) -> tuple[float, int]:
    t0 = time.perf_counter()
    r = session.post(url, data=body, headers={"Content-Type": "text/xml"}, timeout=60)
    elapsed = time.perf_counter() - t0
    assert r.status_code == 200, r.text[:300]
    return elapsed, len(r.content)


def wrk_script(sid: str, dataset: int) -> str:
    bodies = []
    for i in range(0, N_FILES, N_FILES // 100):
        q = (
            f"SELECT o FROM Datafile o JOIN o.dataset AS ds WHERE ds.id = {dataset} "
            f"AND o.name = 'frame-{i:05d}.nxs'"
        )
        body = ENVELOPE.format(
            body=f"<tns:search><sessionId>{sid}</sessionId><query>{escape(q)}</query></tns:search>"
        )
        bodies.append("[[" + body + "]]")
    return (
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "text/xml; charset=utf-8"\n'
        f"bodies = {{{', '.join(bodies)}}}\ncounter = 0\n"
        "request = function()\n  counter = counter + 1\n"
        "  return wrk.format(nil, nil, nil, bodies[(counter % #bodies) + 1])\nend\n"
    )


def parse_wrk(output: str) -> dict[str, str]:
    out = {"rps": "?", "p50": "?", "p99": "?", "errors": "0", "requests": "0"}
    if m := re.search(r"Requests/sec:\s+([\d.]+)", output):
        out["rps"] = m.group(1)
    if m := re.search(r"(\d+) requests in", output):
        out["requests"] = m.group(1)
    if m := re.search(r"^\s+50%\s+(\S+)", output, re.M):
        out["p50"] = m.group(1)
    if m := re.search(r"^\s+99%\s+(\S+)", output, re.M):
        out["p99"] = m.group(1)
    errors = 0
    if m := re.search(r"Non-2xx or 3xx responses: (\d+)", output):
        errors += int(m.group(1))
    if m := re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    ):
        errors += sum(int(x) for x in m.groups())
    out["errors"] = str(errors)
    return out


@dataclass
class Figures:
    """Everything measured on one catalogue, pooled over rounds."""

    create_s: list[float] = field(default_factory=list)
    create_server_cpu_s: list[float] = field(default_factory=list)  # per round
    search_s: list[float] = field(default_factory=list)
    search_bytes: int = 0
    #: per round, CPU seconds per search of the server process and of this (the client) process
    search_server_cpu_s: list[float] = field(default_factory=list)
    search_client_cpu_s: list[float] = field(default_factory=list)
    #: clients → per round: wrk's requests/s, p50, p99, errors
    lookups: dict[int, list[dict[str, str]]] = field(default_factory=dict)
    rss_mib: list[float] = field(default_factory=list)


def server_cpu(proc: subprocess.Popen[str]) -> float:
    """CPU seconds (user + system) the server process has used so far."""
    times = psutil.Process(proc.pid).cpu_times()
    return float(times.user + times.system)


def measure_round(
    proc: subprocess.Popen[str], url: str, args: argparse.Namespace, figures: Figures
) -> None:
    """One round on a fresh Facility: createMany, the 2,000-row search, wrk lookups, RSS."""
    sid = login(url)
    inv, dt = setup(url, sid, f"BENCH-{len(figures.rss_mib)}")
    http = requests.Session()
    dataset = 0
    create_cpu = 0.0
    for run in range(args.repeat):
        dataset = create(
            url,
            sid,
            "dataset",
            f"<investigation><id>{inv}</id></investigation>"
            f"<name>run-{run}</name><type><id>{dt}</id></type>",
        )
        body = create_many_body(sid, dataset)
        cpu0 = server_cpu(proc)
        elapsed, _ = timed_post(http, url, body)
        figures.create_s.append(elapsed)
        create_cpu += server_cpu(proc) - cpu0
    # per round: the OS counts CPU time in 10 ms ticks, too coarse for one call
    figures.create_server_cpu_s.append(create_cpu / args.repeat)
    query = f"SELECT o FROM Datafile o WHERE o.dataset.id = {dataset}"
    search_body = ENVELOPE.format(
        body=f"<tns:search><sessionId>{sid}</sessionId><query>{escape(query)}</query></tns:search>"
    ).encode()
    # the server's first search builds the JPQL parser (about a second): not what is measured
    timed_post(http, url, search_body)
    calls = max(args.repeat * 4, 10)
    server_cpu0, client_cpu0 = server_cpu(proc), time.process_time()
    for _ in range(calls):
        elapsed, figures.search_bytes = timed_post(http, url, search_body)
        figures.search_s.append(elapsed)
    # CPU time is what a busy shared machine distorts least: the wall time includes waiting for
    # a core, the CPU time only the work
    figures.search_server_cpu_s.append((server_cpu(proc) - server_cpu0) / calls)
    figures.search_client_cpu_s.append((time.process_time() - client_cpu0) / calls)
    if not args.search_only:
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "search.lua"
            script.write_text(wrk_script(sid, dataset))
            for c in CONCURRENCY:
                cpu0 = server_cpu(proc)
                out = subprocess.run(
                    [
                        "wrk",
                        f"-t{min(c, 2)}",
                        f"-c{c}",
                        f"-d{args.seconds}s",
                        "--latency",
                        "-s",
                        str(script),
                        url,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=args.seconds + 60,
                    check=True,
                ).stdout
                found = parse_wrk(out)
                cpu_us = (server_cpu(proc) - cpu0) / max(1, int(found["requests"])) * 1e6
                found["server_cpu_us"] = f"{cpu_us:.0f}"
                figures.lookups.setdefault(c, []).append(found)
    figures.rss_mib.append(psutil.Process(proc.pid).memory_info().rss / 2**20)


def spread(values: list[float], scale: float = 1.0, digits: int = 0) -> str:
    """``median (min-max)`` of ``values`` times ``scale``."""
    v = sorted(x * scale for x in values)
    if len(v) == 1:
        return f"{v[0]:,.{digits}f}"
    return f"{statistics.median(v):,.{digits}f} ({v[0]:,.{digits}f}-{v[-1]:,.{digits}f})"


def _rates(figures: Figures, clients: int, key: str) -> list[float]:
    return [float(r[key]) for r in figures.lookups.get(clients, []) if r[key] != "?"]


def report(columns: dict[str, Figures], rounds: int) -> None:
    """The figures side by side, each with its ratio to real ICAT 6.2.0's recorded figure."""
    first = next(iter(columns.values()))
    rows: list[tuple[str, list[str], str]] = []

    def against_real(value: float, real: float, faster_when_lower: bool) -> str:
        ratio = real / value if faster_when_lower else value / real
        return f" [{ratio:.1f}x]"

    create = [
        spread(f.create_s, 1, 3) + " s" + against_real(statistics.median(f.create_s), 2.6, True)
        for f in columns.values()
    ]
    rows.append((f"createMany of {N_FILES:,} Datafiles", create, "2.6 s"))
    rows.append(
        (
            "  server CPU time per createMany (per round)",
            [spread(f.create_server_cpu_s, 1000, 0) + " ms" for f in columns.values()],
            "",
        )
    )
    search = [
        spread(f.search_s, 1000, 1)
        + f" ms, {f.search_bytes / 1024:.0f} kB"
        + against_real(statistics.median(f.search_s) * 1000, 51.0, True)
        for f in columns.values()
    ]
    rows.append((f"search returning {N_FILES:,} Datafiles", search, "51 ms (644 kB)"))
    cpu = [
        f"server {spread(f.search_server_cpu_s, 1000, 1)} ms, "
        f"client {spread(f.search_client_cpu_s, 1000, 1)} ms"
        for f in columns.values()
    ]
    rows.append(("  CPU time per search (per round)", cpu, ""))
    for c in CONCURRENCY:
        if not first.lookups:
            break
        real = 150.0 if c == 1 else 560.0
        cells = []
        for f in columns.values():
            rps = _rates(f, c, "rps")
            errors = sum(int(r["errors"]) for r in f.lookups.get(c, []))
            p99 = "/".join(r["p99"] for r in f.lookups.get(c, []))
            cpu = _rates(f, c, "server_cpu_us")
            cells.append(
                f"{spread(rps)}/s"
                + against_real(statistics.median(rps), real, False)
                + f" p99 {p99}, {errors} errors, server CPU {spread(cpu)} us/request"
            )
        rows.append(
            (
                f"single-result searches, {c} client{'s' * (c > 1)}",
                cells,
                "~150/s" if c == 1 else "250-560/s",
            )
        )
    rows.append(
        ("server RSS at the end", [spread(f.rss_mib) + " MiB" for f in columns.values()], "")
    )
    print(
        f"\nlocal catalogue benchmark: {os.cpu_count()} cores, server and driver on one machine; "
        f"median (min-max) over {rounds} round(s); [ratio] = times better than real ICAT 6.2.0"
    )
    print("real ICAT 6.2.0 (Payara + MariaDB) as recorded in the project's ICAT reference notes")
    print("(2-core machine of the same kind; for 8-32 clients the ratio is to its best, 560/s)\n")
    for label, cells, real in rows:
        print(label)
        for name, cell in zip(columns, cells, strict=True):
            print(f"  {name:<16} {cell}")
        if real:
            print(f"  {'real ICAT 6.2.0':<16} {real}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10, help="per wrk run (default 10)")
    parser.add_argument("--repeat", type=int, default=5, help="createMany runs per round")
    parser.add_argument("--rounds", type=int, default=1, help="rounds per catalogue (default 1)")
    parser.add_argument("--against", metavar="DIR", help="also measure the checkout in DIR")
    parser.add_argument(
        "--search-only", action="store_true", help="only createMany and the 2,000-row search"
    )
    args = parser.parse_args()
    if not args.search_only and shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    checkouts: dict[str, str | None] = {"this checkout": None}
    if args.against:
        checkouts[f"{Path(args.against).name}"] = str(Path(args.against).resolve())
    columns = {name: Figures() for name in checkouts}
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(served_catalogue(checkout=path))
            for name, path in checkouts.items()
        }
        for _ in range(args.rounds):
            for name, (proc, url) in servers.items():
                measure_round(proc, url, args, columns[name])
    report(columns, args.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
