"""Speed of the local catalogue, driven from separate processes (issue 2's benchmark).

Starts ``sv7 serve`` in its own process, fills it with one Dataset, then measures and prints:

* createMany of 2,000 Datafiles (seconds, median of runs into fresh Datasets);
* a search returning those 2,000 rows (ms, median, and the size of the answer);
* single-result searches per second with 1, 8 and 32 concurrent keep-alive clients, with
  p50/p99 latency and errors, driven by Debian's ``wrk`` (a C load generator) with a Lua script
  that cycles through 100 different lookups;
* the server's resident memory at the end.

Run:  python -m tests.benchmarks.catalogue_load [--seconds 10]   (needs ``wrk`` on PATH)
Only loopback traffic; every step is bounded in time.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import requests

from igestbench.icat.soapxml import escape
from tests.benchmarks.served import served_catalogue
from tests.soap_helpers import ENVELOPE, call, login, returns

N_FILES = 2000
CONCURRENCY = (1, 8, 32)


def create(url: str, sid: str, xml_type: str, fields: str) -> int:
    r = call(
        url,
        "create",
        f'<sessionId>{sid}</sessionId><bean xsi:type="tns:{xml_type}">{fields}</bean>',
    )
    assert r.status_code == 200, r.text
    return int(returns(r)[0].text or 0)


def setup(url: str, sid: str) -> tuple[int, int]:
    fac = create(url, sid, "facility", "<name>BENCH</name>")
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
    out = {"rps": "?", "p50": "?", "p99": "?", "errors": "0"}
    if m := re.search(r"Requests/sec:\s+([\d.]+)", output):
        out["rps"] = m.group(1)
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=int, default=10, help="per wrk run (default 10)")
    parser.add_argument("--repeat", type=int, default=5, help="createMany/search repetitions")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed (Debian: apt-get install wrk)")
    with served_catalogue() as (proc, url):
        sid = login(url)
        inv, dt = setup(url, sid)
        http = requests.Session()
        create_times = []
        dataset = 0
        for run in range(args.repeat):
            dataset = create(
                url,
                sid,
                "dataset",
                f"<investigation><id>{inv}</id></investigation>"
                f"<name>run-{run}</name><type><id>{dt}</id></type>",
            )
            elapsed, _ = timed_post(http, url, create_many_body(sid, dataset))
            create_times.append(elapsed)
        query = f"SELECT o FROM Datafile o WHERE o.dataset.id = {dataset}"
        search_body = ENVELOPE.format(
            body=f"<tns:search><sessionId>{sid}</sessionId>"
            f"<query>{escape(query)}</query></tns:search>"
        ).encode()
        search_times, size = [], 0
        for _ in range(max(args.repeat * 4, 10)):
            elapsed, size = timed_post(http, url, search_body)
            search_times.append(elapsed)
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            script = Path(tmp) / "search.lua"
            script.write_text(wrk_script(sid, dataset))
            for c in CONCURRENCY:
                threads = min(c, 2)
                out = subprocess.run(
                    [
                        "wrk",
                        f"-t{threads}",
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
                rows.append((c, parse_wrk(out)))
        rss = psutil.Process(proc.pid).memory_info().rss / 2**20
    print(f"\nlocal catalogue benchmark ({os.cpu_count()} cores, server and driver on one machine)")
    print(
        f"createMany of {N_FILES} Datafiles: median {statistics.median(create_times):.3f} s "
        f"(runs: {', '.join(f'{t:.3f}' for t in create_times)})"
    )
    print(
        f"search returning {N_FILES} rows: median {statistics.median(search_times) * 1000:.1f} ms"
        f" ({size / 1024:.0f} kB of XML)"
    )
    print("single-result searches (wrk, keep-alive):")
    print(f"  {'clients':>7} {'req/s':>9} {'p50':>9} {'p99':>9} {'errors':>7}")
    for c, r in rows:
        print(f"  {c:>7} {r['rps']:>9} {r['p50']:>9} {r['p99']:>9} {r['errors']:>7}")
    print(f"server RSS at the end: {rss:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
