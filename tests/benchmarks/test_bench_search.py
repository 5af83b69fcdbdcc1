"""The 2,000-row search of issue 11, beside real ICAT 6.2.0's recorded figure.

``sv7 serve`` in its own process holds 2,000 Datafiles in one Dataset; the search
``SELECT o FROM Datafile o WHERE o.dataset.id = N`` is sent as one raw SOAP POST over a
keep-alive ``requests`` session, as ``python -m tests.benchmarks.catalogue_load`` sends it. Printed:
the wall time (median and range), the server's and this client's CPU time per search (what a busy
machine distorts least), the answer's size, and the ratio to real ICAT 6.2.0's 51 ms (644 kB,
recorded in the project's ICAT reference notes on a 2-core machine of the same kind; issue 11
asks for at most 20 ms). Printed, never asserted: the figures depend on the machine.

``test_rest_beside_soap`` asks the same catalogue for the same 2,000 Datafiles over REST
(``GET /icat/entityManager``) and over SOAP, in alternating rounds, and prints both medians and
their ratio (issue 20: REST within 1.5x of SOAP and at most 17 ms, twice as fast as the real
server's REST). With ``SV7_REAL_ICAT=http://127.0.0.1:8080`` (and ``SV7_REAL_ICAT_PASSWORD``,
default ``root``, for ``simple/root``) a real ICAT is given the same 2,000 Datafiles below a
Facility of its own, measured in the same rounds, and cleaned up afterwards.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Callable, Iterator

import psutil
import pytest
import requests

from igestbench.icat.soapxml import escape
from tests.benchmarks.catalogue_load import create_many_body, setup, timed_post
from tests.benchmarks.served import served_catalogue
from tests.soap_helpers import ENVELOPE, create, login

pytestmark = pytest.mark.benchmark(group="2,000-row search")

REAL_ICAT_MS = 51.0  # ICAT 6.2.0, Payara + MariaDB, 2,000 Datafiles, 644 kB (reference notes)
TARGET_MS = 20.0  # issue 11: at least twice as fast as the real server it measured


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[psutil.Process, str, bytes]]:
    """(server process, URL, search request body) of a catalogue holding 2,000 Datafiles."""
    with served_catalogue() as (proc, url):
        sid = login(url)
        inv, dt = setup(url, sid)
        dataset = create(
            url,
            sid,
            "dataset",
            f"<investigation><id>{inv}</id></investigation><name>run</name>"
            f"<type><id>{dt}</id></type>",
        )
        timed_post(requests.Session(), url, create_many_body(sid, dataset))
        query = f"SELECT o FROM Datafile o WHERE o.dataset.id = {dataset}"
        body = ENVELOPE.format(
            body=f"<tns:search><sessionId>{sid}</sessionId><query>{escape(query)}</query>"
            "</tns:search>"
        ).encode()
        yield psutil.Process(proc.pid), url, body


def test_search_returning_2000_datafiles(
    served: tuple[psutil.Process, str, bytes], capsys: pytest.CaptureFixture[str]
) -> None:
    server, url, body = served
    http = requests.Session()
    _, size = timed_post(http, url, body)  # the first search builds the server's JPQL parser
    walls: list[float] = []
    calls = 30
    server_cpu0, client_cpu0 = sum(server.cpu_times()[:2]), time.process_time()
    for _ in range(calls):
        elapsed, size = timed_post(http, url, body)
        walls.append(elapsed * 1000)
    server_cpu = (sum(server.cpu_times()[:2]) - server_cpu0) / calls * 1000
    client_cpu = (time.process_time() - client_cpu0) / calls * 1000
    assert size > 500_000  # 2,000 Datafiles came back
    median = statistics.median(walls)
    with capsys.disabled():
        print(f"\nsearch returning 2,000 Datafiles ({size / 1024:.0f} kB), {calls} calls")
        print(f"  wall         : median {median:6.1f} ms (range {min(walls):.1f}-{max(walls):.1f})")
        print(f"  CPU per call : server {server_cpu:6.1f} ms, client {client_cpu:.1f} ms")
        print(
            f"  real ICAT 6.2.0: {REAL_ICAT_MS:g} ms; real / local = {REAL_ICAT_MS / median:.2f} "
            f"(issue 11 asks for <= {TARGET_MS:g} ms)"
        )


#: The target of issue 20 for the local REST search, and its ratio to the local SOAP search.
REST_TARGET_MS, REST_RATIO = 17.0, 1.5


class Searches:
    """The 2,000-Datafile search of one catalogue, over SOAP and over REST, on keep-alive
    sessions; each call returns its wall time in ms (the answer checked for its size)."""

    def __init__(self, url: str, sid: str, dataset: int) -> None:
        self.url, self.sid, self.dataset = url, sid, dataset
        self.query = f"SELECT o FROM Datafile o WHERE o.dataset.id = {dataset}"
        self.body = ENVELOPE.format(
            body=f"<tns:search><sessionId>{sid}</sessionId><query>{escape(self.query)}</query>"
            "</tns:search>"
        ).encode()
        self.rest_url = url.replace("/ICATService/ICAT", "/icat/entityManager")
        self.soap_http, self.rest_http = requests.Session(), requests.Session()

    def soap(self) -> float:
        elapsed, size = timed_post(self.soap_http, self.url, self.body)
        assert size > 500_000
        return elapsed * 1000

    def rest(self) -> float:
        t0 = time.perf_counter()
        r = self.rest_http.get(
            self.rest_url, params={"sessionId": self.sid, "query": self.query}, timeout=60
        )
        elapsed = time.perf_counter() - t0
        assert r.status_code == 200 and len(r.content) > 500_000, r.text[:300]
        return elapsed * 1000


def _fill(url: str, sid: str, facility: str) -> int:
    """A Dataset of 2,000 Datafiles below a new Facility ``facility``; its id."""
    inv, dt = setup(url, sid, facility)
    dataset = create(
        url,
        sid,
        "dataset",
        f"<investigation><id>{inv}</id></investigation><name>run</name><type><id>{dt}</id></type>",
    )
    timed_post(requests.Session(), url, create_many_body(sid, dataset))
    return dataset


@pytest.fixture(scope="module")
def real_icat() -> Iterator[Searches | None]:
    """The same search on a real ICAT (SV7_REAL_ICAT), or None; its data deleted afterwards."""
    base = os.environ.get("SV7_REAL_ICAT")
    if not base:
        yield None
        return
    url = base.rstrip("/") + "/ICATService/ICAT"
    sid = login(url, "root", os.environ.get("SV7_REAL_ICAT_PASSWORD", "root"))
    name = f"sv7-bench-{int(time.time())}"
    try:
        yield Searches(url, sid, _fill(url, sid, name))
    finally:
        found = requests.get(
            base.rstrip("/") + "/icat/entityManager",
            params={
                "sessionId": sid,
                "query": f"SELECT f.id FROM Facility f WHERE f.name = '{name}'",
            },
            timeout=60,
        ).json()
        entities = json.dumps([{"Facility": {"id": i}} for i in found])
        requests.delete(
            base.rstrip("/") + "/icat/entityManager",
            params={"sessionId": sid, "entities": entities},
            timeout=120,
        )


def test_rest_beside_soap(
    served: tuple[psutil.Process, str, bytes],
    real_icat: Searches | None,
    capsys: pytest.CaptureFixture[str],
) -> None:
    server, url, body = served
    sid = body.split(b"<sessionId>")[1].split(b"</sessionId>")[0].decode()
    dataset = int(body.split(b"o.dataset.id = ")[1].split(b"<")[0])
    local = Searches(url, sid, dataset)
    kinds: dict[str, Callable[[], float]] = {"local SOAP": local.soap, "local REST": local.rest}
    if real_icat is not None:
        kinds |= {"real SOAP": real_icat.soap, "real REST": real_icat.rest}
    for measure in kinds.values():
        measure()  # warm: parsers, statement caches, the JVM's JIT
    walls: dict[str, list[float]] = {k: [] for k in kinds}
    server_cpu = dict.fromkeys(kinds, 0.0)  # of the local server: what load distorts least
    rounds, per_round = 5, 6
    for _ in range(rounds):  # alternating rounds: a change in the machine's load hits all alike
        for kind, measure in kinds.items():
            cpu0 = sum(server.cpu_times()[:2])
            walls[kind] += [measure() for _ in range(per_round)]
            server_cpu[kind] += sum(server.cpu_times()[:2]) - cpu0
    medians = {k: statistics.median(v) for k, v in walls.items()}
    soap, rest = medians["local SOAP"], medians["local REST"]
    with capsys.disabled():
        print(f"\n2,000-Datafile search, {rounds} alternating rounds of {per_round} calls each")
        for kind, values in walls.items():
            cpu = ""
            if kind.startswith("local"):
                cpu = f", server CPU {server_cpu[kind] / len(values) * 1000:5.1f} ms per call"
            print(
                f"  {kind:11s}: median {medians[kind]:6.1f} ms "
                f"(range {min(values):.1f}-{max(values):.1f}){cpu}"
            )
        print(
            f"  local REST / local SOAP = {rest / soap:.2f} (issue 20 asks <= {REST_RATIO:g}); "
            f"local REST {rest:.1f} ms (asks <= {REST_TARGET_MS:g} ms)"
        )
        if real_icat is not None:
            print(
                f"  real REST / local REST = {medians['real REST'] / rest:.2f}, "
                f"real SOAP / local SOAP = {medians['real SOAP'] / soap:.2f} (issue 20 asks >= 2)"
            )
        now = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        print(f"  load average {os.getloadavg()[0]:.2f}, {now}")
