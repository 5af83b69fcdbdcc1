"""REST's write of 10,000 new Datafiles beside SOAP's createMany, this code beside another's.

Two ``sv7 serve --db FILE`` processes run at once — this worktree's and ``--checkout DIR``'s
(e.g. ``git archive main | tar -x -C DIR``). Each is sent, in turn and in alternating order so
that the machine's load weighs on both alike, the same four requests per round, each into a
fresh Dataset:

* ``soap``: a createMany of 10,000 Datafiles (name, location, fileSize, dataset by id);
* ``rest``: ``POST /icat/entityManager`` of the same 10,000 as a JSON list;
* ``soap+p``, ``rest+p``: the same with a DatafileParameter on one Datafile in four, as the
  scale part sends them (SOAP: the type as sent with its ``applicableToDatafile``; REST: the
  type by id, which ICAT loads).

The bodies are built before the clock starts and posted raw over one keep-alive connection per
server, so the figure is the server's (and the loopback's), not a client library's. Printed per
server and request: the median rate (Datafiles/s over the call's wall time; the parameters ride
along, as the scale part counts), its quartiles, the server's CPU time per call; then the ratios
measured side by side: REST / SOAP on each server, and this / the other for each request.
Printed, never asserted.

    python -m tests.benchmarks.rest_create_many_rate --checkout DIR [--rounds 5]

Only loopback traffic; the databases are temporary files.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from urllib.parse import quote

import psutil
import requests

from igestbench.client import ClientConfig, connect
from igestbench.client.base import Catalogue
from igestbench.icat.beans import Bean
from tests.benchmarks.served import served_catalogue
from tests.soap_helpers import ENVELOPE, login

BATCH = 10_000
KINDS = ("soap", "rest", "soap+p", "rest+p")
#: One Datafile in this many carries a parameter (the scale part's TreeShape.parameter_every).
EVERY = 4


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


class Server:
    """One served catalogue: a Facility with types, an Investigation, a Dataset per call."""

    def __init__(self, stack: ExitStack, db: Path, checkout: str | None, rounds: int) -> None:
        proc, url = stack.enter_context(served_catalogue("--db", str(db), checkout=checkout))
        self.process = psutil.Process(proc.pid)
        self.soap_url = url
        self.rest_url = url.split("/ICATService/")[0] + "/icat/entityManager"
        client = connect(ClientConfig(url, read_timeout=600), "lean")
        stack.callback(client.close)
        client.login("simple", {"username": "root", "password": "root"})
        self.sid = login(url)  # a session of its own, its id written into the bodies
        self.parameter_type, self.datasets = _setup(client, rounds * len(KINDS))
        self.http = requests.Session()
        stack.callback(self.http.close)

    def cpu_s(self) -> float:
        return float(sum(self.process.cpu_times()[:2]))

    def body(self, kind: str, dataset: int) -> tuple[str, bytes, str]:
        """(URL, body, content type) of one request of ``kind`` into ``dataset``."""
        parameters = kind.endswith("+p")
        if kind.startswith("soap"):
            beans = "".join(_soap_bean(i, dataset, self.parameter_type, parameters)
                            for i in range(BATCH))  # fmt: skip
            body = f"<tns:createMany><sessionId>{self.sid}</sessionId>{beans}</tns:createMany>"
            return self.soap_url, ENVELOPE.format(body=body).encode(), "text/xml; charset=utf-8"
        entities = [_rest_bean(i, dataset, self.parameter_type, parameters) for i in range(BATCH)]
        form = f"sessionId={self.sid}&entities={quote(json.dumps(entities))}"
        return self.rest_url, form.encode(), "application/x-www-form-urlencoded"

    def post(self, url: str, body: bytes, content_type: str) -> tuple[float, float]:
        """(wall seconds, server CPU seconds) of one request, its ids counted."""
        cpu = self.cpu_s()
        began = time.perf_counter()
        answer = self.http.post(url, data=body, headers={"Content-Type": content_type},
                                timeout=600)  # fmt: skip
        wall = time.perf_counter() - began
        cpu = self.cpu_s() - cpu
        if answer.status_code != 200:
            raise RuntimeError(f"{url} answered {answer.status_code}: {answer.text[:300]}")
        made = len(answer.json()) if url == self.rest_url else answer.text.count("<return>")
        if made != BATCH:
            raise RuntimeError(f"{url} created {made} objects, not {BATCH}")
        return wall, cpu


def _setup(client: Catalogue, datasets: int) -> tuple[int, list[int]]:
    """(the ParameterType's id, ``datasets`` Datasets' ids) in a new Facility."""
    (facility,) = client.create_many([Bean("Facility", {"name": "sv7-rest-rate"})])
    fac = Bean("Facility", {"id": facility})
    it, dst, pt = client.create_many([
        Bean("InvestigationType", {"name": "experiment", "facility": fac}),
        Bean("DatasetType", {"name": "raw", "facility": fac}),
        Bean("ParameterType", {"name": "temperature", "units": "K", "valueType": "NUMERIC",
                               "applicableToDatafile": True, "facility": fac}),
    ])  # fmt: skip
    (inv,) = client.create_many([Bean("Investigation", {
        "name": "inv", "visitId": "1", "title": "t", "facility": fac,
        "type": Bean("InvestigationType", {"id": it})})])  # fmt: skip
    ids = client.create_many([Bean("Dataset", {
        "name": f"ds-{n:04d}", "type": Bean("DatasetType", {"id": dst}),
        "investigation": Bean("Investigation", {"id": inv})}) for n in range(datasets)])
    return pt, ids


def _soap_bean(i: int, dataset: int, parameter_type: int, parameters: bool) -> str:
    name = f"frame-{i:05d}.nxs"
    extra = ""
    if parameters and i % EVERY == 0:
        extra = (f"<parameters><type><id>{parameter_type}</id><name>temperature</name>"
                 "<units>K</units><valueType>NUMERIC</valueType><applicableToDatafile>true"
                 f"</applicableToDatafile></type><numericValue>{i}</numericValue></parameters>")
    return (f'<beans xsi:type="tns:datafile"><dataset><id>{dataset}</id></dataset>'
            f"<fileSize>{1_048_576 + i}</fileSize><location>/data/{dataset}/{name}</location>"
            f"<name>{name}</name>{extra}</beans>")  # fmt: skip


def _rest_bean(i: int, dataset: int, parameter_type: int, parameters: bool) -> object:
    name = f"frame-{i:05d}.nxs"
    body: dict[str, object] = {"dataset": {"id": dataset}, "fileSize": 1_048_576 + i,
                               "location": f"/data/{dataset}/{name}", "name": name}
    if parameters and i % EVERY == 0:
        body["parameters"] = [{"type": {"id": parameter_type}, "numericValue": i}]
    return {"Datafile": body}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", required=True, help="the other code's directory")
    parser.add_argument("--rounds", type=int, default=5, help="timed calls of each request")
    args = parser.parse_args(argv)
    print(f"write of {BATCH:,} Datafiles, REST beside SOAP, this worktree beside "
          f"{args.checkout}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f"load average {_load()}", flush=True)  # fmt: skip
    names = ("this", "other")
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sv7-rest-rate-")))
        servers = {name: Server(stack, tmp / f"{name}.sqlite", checkout, args.rounds)
                   for name, checkout in zip(names, (None, args.checkout), strict=True)}
        rates: dict[tuple[str, str], list[float]] = {(n, k): [] for n in names for k in KINDS}
        cpu_ms: dict[tuple[str, str], list[float]] = {(n, k): [] for n in names for k in KINDS}
        calls = 0
        for turn in range(args.rounds):
            order = names if turn % 2 == 0 else names[::-1]
            for kind in KINDS:
                for name in order:
                    server = servers[name]
                    request = server.body(kind, server.datasets[calls])
                    wall, cpu = server.post(*request)
                    rates[name, kind].append(BATCH / wall)
                    cpu_ms[name, kind].append(cpu * 1000)
                calls += 1
        for name in names:
            print(f"  {name if name == 'this' else args.checkout}:")
            for kind in KINDS:
                r, c = rates[name, kind], cpu_ms[name, kind]
                print(f"    {kind:7} median {statistics.median(r):8,.0f} Datafiles/s "
                      f"(quartiles {_quartiles(r)}; {len(r)} calls), server CPU "
                      f"{statistics.median(c):6,.0f} ms per call")  # fmt: skip
        median = {key: statistics.median(values) for key, values in rates.items()}
        for name in names:
            print(f"  REST / SOAP on {name}: "
                  f"{median[name, 'rest'] / median[name, 'soap']:.2f} (plain), "
                  f"{median[name, 'rest+p'] / median[name, 'soap+p']:.2f} (with parameters)")
        for kind in KINDS:
            print(f"  this / other, {kind}: {median['this', kind] / median['other', kind]:.2f}")
    print(f"  ended {time.strftime('%H:%M UTC', time.gmtime())}, load average {_load()}")
    return 0


def _quartiles(values: list[float]) -> str:
    if len(values) < 4:
        return "-"
    q = statistics.quantiles(values, n=4)
    return f"{q[0]:,.0f}-{q[2]:,.0f}"


if __name__ == "__main__":
    sys.exit(main())
