"""The 2,000-row search of issue 11, beside real ICAT 6.2.0's recorded figure.

``sv7 serve`` in its own process holds 2,000 Datafiles in one Dataset; the search
``SELECT o FROM Datafile o WHERE o.dataset.id = N`` is sent as one raw SOAP POST over a
keep-alive ``requests`` session, as ``python -m tests.benchmarks.catalogue_load`` sends it. Printed:
the wall time (median and range), the server's and this client's CPU time per search (what a busy
machine distorts least), the answer's size, and the ratio to real ICAT 6.2.0's 51 ms (644 kB,
recorded in the project's ICAT reference notes on a 2-core machine of the same kind; issue 11
asks for at most 20 ms). Printed, never asserted: the figures depend on the machine.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator

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
