"""The local catalogue at production size (issue 21, point 6), beside real ICAT 6.2.0.

``sv7 serve --db FILE --example-data`` in its own process is grown, through createMany calls of
10,000 Datafiles (a DatafileParameter on one in four), to each size of
``SV7_BENCH_SCALE_SIZES`` (default 100,000 and 1,000,000), with the scale part's own tree
(:mod:`igestbench.workloads.scale_tree`: Investigations of 25 Datasets of 400 Datafiles, the
member an InvestigationUser of each, ICAT's membership rules restricted to the tree). Printed
per size: the createMany rate (median of the calls, Datafiles/s), the server's resident memory,
and the scale part's query set as root and as the member taking turns — p50 of 20 calls with
the lean client, the server's CPU time per call — beside real ICAT 6.2.0's medians at 102,000
Datafiles as issue 21 recorded them (Payara + MariaDB on a 2-core machine of the same kind);
and where a createMany call's wall time went: the server's threads on a core and waiting for
one, the client's (this process) on a core and waiting, from the scheduler's own counts.

With ``SV7_BENCH_REAL_ICAT=URL`` (a real ICAT on loopback, root ``simple/root`` with
``SV7_BENCH_REAL_PASSWORD``, default ``root``) the same tree is grown there too, to each size of
``SV7_BENCH_REAL_SIZES`` (default 10,000: a real ICAT takes about 30 s per 10,000), beside a
fresh tree of the same size on the local catalogue (createMany of 1,000 on both), the same
queries are asked of both side by side (after WARMUP_CALLS calls of each, untimed, at the
first size: a JVM compiles its hot paths over its first calls), and both trees are removed
again. Beside each p50 it
prints each server's CPU time per call — the real one's HTTP listener and database
(``SV7_BENCH_REAL_DB_PORT``, default MariaDB's 3306) together, less what both spend idle, as
measured for 5 s before — which a busy machine distorts far less than wall times; and the
p50s and CPU times again with the servers taking turns of TURN calls, each answering as alone
(call by call, each server's caches are emptied by the other's work: see paired_p50).
When both servers have a User row ``simple/reader`` (password ``reader``), the member's calls
are timed too, in turns of TURN, beside root's; with ``SV7_BENCH_REAL_MEMBERSHIP=1`` the real
tree gets the same membership rules as the local one (which compares the two servers' costs of
ICAT's rules only where the real server grants its non-root users nothing broader: the test
prints what the member reads through).
With ``SV7_BENCH_BEFORE=DIR`` (a checkout of other code, e.g. main) a third catalogue is
served from it and grown alike, and takes its turn in every round: the change and the code
before it, side by side in one run. With ``SV7_BENCH_BEFORE`` but no real ICAT, the two local
catalogues alone are compared so (:func:`test_side_by_side_with_the_code_before`), over SOAP
and REST, at each size of ``SV7_BENCH_REAL_SIZES``.
Printed, never asserted: the figures depend on the machine.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psutil
import pytest

from igestbench.client import Catalogue, ClientConfig, connect
from igestbench.client.lean import KeepAliveConnection
from igestbench.icat.endpoint import endpoint_of
from igestbench.icat.faults import IcatError
from igestbench.icat.soapxml import escape
from igestbench.mock.rest import REST_PREFIX
from igestbench.run.scale import measure_query
from igestbench.workloads import Journal, RunTag, cleanup
from igestbench.workloads.scale_queries import QUERIES, Call, ScaleQuery, ask
from igestbench.workloads.scale_rules import add_membership_rules
from igestbench.workloads.scale_tree import ScaleTree, TreeShape
from tests.benchmarks.served import served_catalogue
from tests.soap_helpers import ENVELOPE
from tests.soap_helpers import login as soap_login

pytestmark = pytest.mark.benchmark(group="catalogue at scale")

#: issue 21: real ICAT 6.2.0, SOAP, medians of 20 calls at 102,000 Datafiles, and its
#: createMany rate; the rows whose query is the scale part's own
REAL_AT_102000_MS = {"name": 87.9, "count": 33.2, "like-prefix": 108.6}
REAL_POPULATION_PER_S = 330.0
#: issue 21: at least 20,000 Datafiles/s by createMany of 10,000; 3x faster than real ICAT
TARGET_RATE, TARGET_FACTOR = 20_000.0, 3.0
BATCH = 10_000
#: Calls of each query to both servers before the first figures of the side-by-side: a real
#: ICAT restarted minutes ago answers several times slower until its JIT has compiled the paths
#: the queries take (seen 2026-11-26: 26 ms for a Datafile by (dataset, name), 3 ms warm)
WARMUP_CALLS = 200
#: Calls of each server in a row in the side by side's last columns (see paired_p50): as many
#: as the scale part makes of one query in a row (its 20 timed calls), twice for each server
TURN = 20


def _sizes(variable: str, default: str) -> list[int]:
    return [int(s.replace("_", "")) for s in os.environ.get(variable, default).split(",") if s]


Send = Callable[[Call], None]


class Wire:
    """Raw SOAP POSTs of a query's calls over one keep-alive connection, the answer read whole
    but not decoded: the server and the wire, not a client's decoding (which costs the same
    against any server: 2,000 Datafiles take the lean client ~90 ms)."""

    def __init__(self, url: str, sid: str) -> None:
        # the lean client's connection: http.client, ~0.1 ms a call (requests: ~1 ms)
        self.http = KeepAliveConnection(endpoint_of(url), ClientConfig(url, read_timeout=600))
        self.sid = sid

    def __call__(self, call: Call) -> None:
        sid = self.sid
        if call.obj_id is not None:
            inner = (f"<tns:get><sessionId>{sid}</sessionId><query>{call.query}</query>"
                     f"<primaryKey>{call.obj_id}</primaryKey></tns:get>")
        else:
            inner = (f"<tns:search><sessionId>{sid}</sessionId><query>{escape(call.query)}"
                     "</query></tns:search>")
        status, content = self.http.post(ENVELOPE.format(body=inner).encode())
        wanted = call.rows if call.obj_id is None and call.at_least is None \
            and call.included is None else 1  # fmt: skip
        assert status == 200 and content.count(b"<return") == wanted, content[:300]

    def close(self) -> None:
        self.http.close()


class RestWire:
    """Raw REST GETs of a query's calls (``/icat/entityManager``) over one keep-alive
    connection, as :class:`Wire` for SOAP: the answer read whole, not decoded."""

    def __init__(self, url: str, sid: str) -> None:
        endpoint = endpoint_of(url)
        self.http = http.client.HTTPConnection(endpoint.host, endpoint.port, timeout=600)
        self.sid = sid

    def __call__(self, call: Call) -> None:
        params = {"sessionId": self.sid, "query": call.query}
        if call.obj_id is not None:
            params["id"] = str(call.obj_id)
        self.http.request("GET", f"{REST_PREFIX}entityManager?{urlencode(params)}")
        response = self.http.getresponse()
        content = response.read()
        assert response.status == 200, content[:300]

    def close(self) -> None:
        self.http.close()


#: thread id → (seconds on a core, seconds runnable but waiting for one) so far
ThreadTimes = dict[int, tuple[float, float]]


def thread_times(processes: list[psutil.Process]) -> ThreadTimes:
    """Each thread's times in ``processes`` so far, as the scheduler counts them
    (``/proc/PID/task/TID/schedstat``, nanoseconds: the clock ticks of ``cpu_times`` are 10 ms,
    coarser than a call); without it each process's user and system time (under its pid
    negated), and no wait."""
    times: ThreadTimes = {}
    for p in processes:
        try:
            tasks = list(Path(f"/proc/{p.pid}/task").iterdir())
        except OSError:
            times[-p.pid] = (sum(p.cpu_times()[:2]), 0.0)
            continue
        for task in tasks:
            try:
                fields = (task / "schedstat").read_text().split()
                times[int(task.name)] = (int(fields[0]) / 1e9, int(fields[1]) / 1e9)
            except (OSError, ValueError, IndexError):
                continue  # the thread ended while it was looked at
    return times


def spent(before: ThreadTimes, after: ThreadTimes) -> tuple[float, float]:
    """(seconds on a core, seconds waiting) between two :func:`thread_times`: of the threads
    alive at the second, each from its time at the first (a thread born since, from 0).

    A thread that ended in between is not counted. The sums of the live threads' times went
    backwards instead when a JVM ended a pool thread after a burst of work: seen 2026-11-27,
    a real ICAT's "idle" CPU after growing to 10⁵ Datafiles came out at -42 s per second, and
    its CPU per call at 60-3,000 ms."""
    run = wait = 0.0
    for tid, (now_run, now_wait) in after.items():
        then_run, then_wait = before.get(tid, (0.0, 0.0))
        run, wait = run + now_run - then_run, wait + now_wait - then_wait
    return run, wait


def idle_cpu_rates(servers: list[list[psutil.Process]], seconds: float = 5.0) -> list[float]:
    """CPU seconds per second each side's server processes spend while nobody calls them (a
    JVM's timers and collector, a database's background threads)."""
    before = [thread_times(processes) for processes in servers]
    time.sleep(seconds)
    return [spent(b, thread_times(processes))[0] / seconds
            for processes, b in zip(servers, before, strict=True)]


def paired_p50(query: ScaleQuery, sides: list[tuple[Send, ScaleTree]], calls: int = 20,
               warmup: int = 2, servers: list[list[psutil.Process]] | None = None,
               idle: list[float] | None = None,
               turn: int = 1) -> tuple[list[float], list[float | None]]:  # fmt: skip
    """p50 (ms) of each side's calls of ``query``, the sides taking turns of ``turn`` calls
    each (1: call by call; who goes first alternating), so that a busy machine's drift weighs
    on each alike; and, given each side's server processes, their CPU time per timed call (ms:
    what a busy machine distorts far less than the wall time; each side's processes count only
    their own work), less what they spend idle meanwhile (``idle``: CPU seconds per second).

    Call by call, each call of one server comes right after the other's, whose work has
    emptied the CPU's caches of its own: seen 2026-11-26, a Dataset's 400 Datafiles cost the
    local catalogue 1.1 ms of CPU alone and 1.5-1.6 ms with 6 ms of memory-heavy work by
    another process before each call (the lighter server loses the most); and a JVM goes on
    working after its answer (its collector, its compiler), on the other core of a 2-core
    machine, while the local catalogue answers. In turns of 20 calls (as the scale part makes
    them: a query's calls in a row), each side twice in the order ABBA, the median call is one
    a server answers as it would alone, and the drift still weighs alike."""
    walls: list[list[float]] = [[] for _ in sides]
    cpu: list[float | None] = [None for _ in sides]
    snapshots: list[ThreadTimes] = []
    began = 0.0
    warmup = -(-warmup // turn) * turn  # the timed calls begin with a turn
    order = list(enumerate(sides))
    for block, start in enumerate(range(0, warmup + calls, turn)):
        if start == warmup and servers is not None:
            snapshots = [thread_times(processes) for processes in servers]
            began = time.perf_counter()
        for i, (send, tree) in order if block % 2 == 0 else reversed(order):
            for n in range(start, min(start + turn, warmup + calls)):
                call = query.call(tree, n)
                started = time.perf_counter()
                send(call)
                if n >= warmup:
                    walls[i].append((time.perf_counter() - started) * 1000)
    if servers is not None:
        elapsed = time.perf_counter() - began
        rates = idle or [0.0] * len(servers)
        cpu = [(spent(before, thread_times(processes))[0] - rate * elapsed) * 1000 / calls
               for processes, before, rate in zip(servers, snapshots, rates, strict=True)]
    return [statistics.median(w) for w in walls], cpu


def listeners(*ports: int) -> list[psutil.Process]:
    """The processes listening on these loopback ports (a real ICAT: Payara and its database)."""
    found = {c.pid for c in psutil.net_connections("tcp")
             if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port in ports and c.pid}
    return [psutil.Process(pid) for pid in sorted(found)]


def _login(url: str, user: str, password: str) -> Catalogue:
    # a real ICAT writes about 300 Datafiles/s: a createMany of thousands takes many seconds
    client = connect(ClientConfig(url, read_timeout=600), "lean")
    client.login("simple", {"username": user, "password": password})
    return client


@dataclass(frozen=True)
class CallTimes:
    """Where the wall time of one createMany call went (seconds): the server's threads on a
    core and waiting for one, the client's (this process: the Beans built, encoded, the
    answer decoded) on a core and waiting; the rest is the wire and what nobody counted."""

    wall: float
    server: float
    server_wait: float
    client: float
    client_wait: float


def breakdown(calls: list[CallTimes], batch: int) -> str:
    """The medians of ``calls`` in a line, and the rate their CPU time alone would allow."""
    if not calls:
        return "no full call"

    def med(name: str) -> float:
        return statistics.median(getattr(c, name) for c in calls) * 1000

    cpu = med("server") + med("client")
    return (f"per call of {batch:,} (median of {len(calls)}): wall {med('wall'):,.0f} ms = server "
            f"on a core {med('server'):,.0f} + waiting for one {med('server_wait'):,.0f}, client "
            f"on a core {med('client'):,.0f} + waiting {med('client_wait'):,.0f}, and the rest; "
            f"CPU alone would allow {batch / cpu * 1000:,.0f} Datafiles/s")


class Grown:
    """A catalogue with the scale part's tree, grown size after size."""

    def __init__(self, url: str, root_password: str, facility: str, local: bool,
                 batch: int = BATCH, membership: bool | None = None) -> None:  # fmt: skip
        """``membership``: add ICAT's membership rules, restricted to the tree (by default on
        the local catalogue only: a real ICAT's own rules decide there)."""
        self.url, self.batch = url, batch
        self.root = _login(url, "root", root_password)
        self.journal = Journal(facility=facility)
        found = self.root.search("SELECT u.id FROM User u WHERE u.name = 'simple/reader'")
        self.tree = ScaleTree(self.root, self.journal, facility, TreeShape(batch=batch),
                              member_user_id=int(found[0]) if found else None)  # fmt: skip
        self.tree.found()
        if local if membership is None else membership:
            add_membership_rules(self.root, self.journal, facility)
        self.member = _login(url, "reader", "reader") if found else None
        self.rates: list[float] = []
        #: where the last grow_to's full calls spent their time (given the server)
        self.calls: list[CallTimes] = []

    def grow_to(self, size: int, server: psutil.Process | None = None) -> float:
        """Grow in createMany calls of the batch; the median rate of the calls (Datafiles/s).
        Given the server's process, each full call's times are kept in :attr:`calls`."""
        rates = []
        me = [psutil.Process()]
        self.calls = []
        while self.tree.size < size:
            step = min(size, self.tree.size + self.batch)
            before = thread_times([server] if server else []), thread_times(me)
            growth = self.tree.grow_to(step)
            if growth.rate_per_s is not None and growth.datafiles == self.batch:
                rates.append(growth.rate_per_s)
                if server is not None:
                    srv, srv_wait = spent(before[0], thread_times([server]))
                    mine, my_wait = spent(before[1], thread_times(me))
                    self.calls.append(CallTimes(growth.seconds, srv, srv_wait, mine, my_wait))
        self.rates += rates
        return statistics.median(rates) if rates else float("nan")

    def queries(self, server: psutil.Process | None) -> dict[str, dict[str, Any]]:
        out = {}
        clients = [self.root, *([self.member] if self.member else [])]
        for query in QUERIES:
            cpu0 = sum(server.cpu_times()[:2]) if server else 0.0
            figures = measure_query(clients, self.tree, query)
            cpu = (sum(server.cpu_times()[:2]) - cpu0) if server else None
            calls = sum(f["n"] for f in figures) + 2 * len(clients)
            out[query.name] = {"root": figures[0], "member": figures[1] if self.member else None,
                               "server_cpu_ms": cpu / calls * 1000 if cpu is not None else None}
        return out

    def remove(self) -> None:
        try:
            cleanup(self.root, self.journal)
        except IcatError:  # e.g. a real server still writing a createMany that timed out here
            time.sleep(30)
            cleanup(self.root, self.journal)
        self.close()

    def close(self) -> None:
        for client in (self.root, self.member):
            if client is not None:
                with contextlib.suppress(IcatError, OSError):
                    client.logout()
                client.close()


@pytest.fixture(scope="module")
def local() -> Iterator[tuple[Grown, psutil.Process]]:
    with tempfile.TemporaryDirectory(prefix="sv7-bench-scale-") as tmp, served_catalogue(
        "--db", str(Path(tmp) / "scale.sqlite"), "--example-data"
    ) as (proc, url):  # fmt: skip
        grown = Grown(url, "root", "sv7-bench-local-scale", local=True)
        yield grown, psutil.Process(proc.pid)
        grown.close()  # the database goes with the directory


def _ms(figures: dict[str, Any] | None) -> str:
    value = figures["p50_ms"] if figures else None
    return "—" if value is None else f"{value:8.2f}"


def test_population_and_queries_at_size(
    local: tuple[Grown, psutil.Process], capsys: pytest.CaptureFixture[str]
) -> None:
    grown, server = local
    loadavg = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() \
        else ["?"]  # fmt: skip
    with capsys.disabled():
        print(f"\ncatalogue at scale, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"load average {' '.join(loadavg)}")
    for size in _sizes("SV7_BENCH_SCALE_SIZES", "100000,1000000"):
        started = time.perf_counter()
        rate = grown.grow_to(size, server)
        took = time.perf_counter() - started
        figures = grown.queries(server)
        rss = server.memory_info().rss / 2**20
        with capsys.disabled():
            print(f"\n{size:,} Datafiles: grown in {took:.0f} s, createMany of {BATCH:,}: "
                  f"median {rate:,.0f} Datafiles/s (target {TARGET_RATE:,.0f}; real ICAT "
                  f"{REAL_POPULATION_PER_S:,.0f}); server RSS {rss:,.0f} MiB")
            print(f"  {breakdown(grown.calls, BATCH)}")
            print(f"  {'query':17} {'root p50':>9} {'member':>9} {'srv CPU':>8}  real@102k")
            for name, f in figures.items():
                real = REAL_AT_102000_MS.get(name)
                ratio = (f"{real:6.1f} ms ({real / f['root']['p50_ms']:.1f}x)"
                         if real and f["root"]["p50_ms"] else "")  # fmt: skip
                cpu = f["server_cpu_ms"]
                print(f"  {name:17} {_ms(f['root'])} {_ms(f['member'])} "
                      f"{cpu if cpu is not None else float('nan'):7.2f}  {ratio}")
                errors = [x.get("error") for x in (f["root"], f["member"]) if x and x.get("error")]
                assert not errors, errors  # a wrong answer is no figure
    assert grown.tree.size > 0


@pytest.mark.skipif("SV7_BENCH_REAL_ICAT" not in os.environ,
                    reason="set SV7_BENCH_REAL_ICAT=URL of a real ICAT on loopback")
def test_side_by_side_with_a_real_icat(capsys: pytest.CaptureFixture[str]) -> None:
    # a catalogue of its own, holding only this tree (and --example-data's few objects), as the
    # real one holds only its tree: a scan reads as many rows on both; with
    # SV7_BENCH_BEFORE=DIR (a checkout of other code, e.g. main) a third one served from it
    before = os.environ.get("SV7_BENCH_BEFORE")
    with contextlib.ExitStack() as stack:
        locals_ = []
        for checkout in (None, *([before] if before else [])):
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="sv7-bench-side-"))
            proc, url = stack.enter_context(served_catalogue(
                "--db", str(Path(tmp) / "side.sqlite"), "--example-data", checkout=checkout))
            locals_.append((url, psutil.Process(proc.pid)))
        _side_by_side(locals_, capsys)


def _side_by_side(locals_: list[tuple[str, psutil.Process]],
                  capsys: pytest.CaptureFixture[str]) -> None:
    """Real ICAT, the local catalogue and (a third) the local one of another checkout, taking
    turns call by call."""
    url = os.environ["SV7_BENCH_REAL_ICAT"]
    password = os.environ.get("SV7_BENCH_REAL_PASSWORD", "root")
    # the real server's processes: its HTTP listener and its database's (MariaDB: 3306)
    real_port = endpoint_of(url).port
    real_processes = listeners(real_port, int(os.environ.get("SV7_BENCH_REAL_DB_PORT", "3306")))
    servers = [real_processes, *([p] for _, p in locals_)] if real_processes else None
    # named as a run's Facilities are: cleanup removes nothing else (workloads/run_tag.py)
    tag = RunTag.new("bench").name
    # createMany of 1,000 on all: of 10,000 a real ICAT takes over a minute on a busy machine
    # SV7_BENCH_REAL_MEMBERSHIP=1: the member reads the real tree through the same membership
    # rules as the local one (which measures ICAT's rules only where the real server grants its
    # non-root users nothing broader: a rule per entity for everyone reads every row as root does)
    membership = os.environ.get("SV7_BENCH_REAL_MEMBERSHIP") == "1"
    real = Grown(url, password, f"sv7-bench-{tag}-scale", local=False, batch=1000,
                 membership=membership)  # fmt: skip
    with capsys.disabled():
        print(f"\nthe member on the real ICAT: {_real_member_rules(real, membership)}")
    grown = [real]
    try:
        for i, (local_url, _) in enumerate(locals_):
            grown.append(Grown(local_url, "root", f"sv7-bench-{tag}-scale-local{i or ''}",
                               local=True, batch=1000))
        _compare(grown, servers, real_processes, capsys)
    finally:
        for side in grown:
            side.remove()


def _real_member_rules(real: Grown, membership: bool) -> str:
    """What the real server's member (simple/reader) reads the tree through, in words."""
    if real.member is None:
        return "none (no User row simple/reader): root only"
    rules = real.root.search("SELECT r.what FROM Rule r WHERE r.grouping IS NULL "
                             "AND r.crudFlags LIKE '%R%'")  # fmt: skip
    public = sorted(str(w) for w in rules if " " not in str(w).strip())
    broad = (f"; but {len(public)} READ rule(s) for everyone of a whole entity (e.g. "
             f"{', '.join(public[:3])}) let it read every row as root does" if public else "")
    own = "the membership rules, as on the local catalogue" if membership else "its own rules"
    return f"simple/reader, an InvestigationUser of the tree, through {own}{broad}"


def _lean(side: Grown) -> Send:
    """The calls of a query through the lean client of ``side``'s root."""

    def send(call: Call) -> None:
        ask(side.root, call)

    return send


def _compare(grown: list[Grown], servers: list[list[psutil.Process]] | None,
             real_processes: list[psutil.Process], capsys: pytest.CaptureFixture[str]) -> None:
    password = os.environ.get("SV7_BENCH_REAL_PASSWORD", "root")
    warmed = False
    names = ["real", "local", "before"][: len(grown)]
    for size in _sizes("SV7_BENCH_REAL_SIZES", "10000"):
        rates = [side.grow_to(size) for side in grown]
        wires = [Wire(side.url, soap_login(side.url, "root", password if i == 0 else "root"))
                 for i, side in enumerate(grown)]
        # the member of the real and the local tree (simple/reader on both), when both have one
        members = [Wire(side.url, soap_login(side.url, "reader", "reader"))
                   for side in grown[:2] if side.member is not None]  # fmt: skip
        if len(members) < 2:
            for lone in members:
                lone.close()
            members = []
        try:
            trees: list[tuple[Send, ScaleTree]] = [
                (wire, side.tree) for wire, side in zip(wires, grown, strict=True)]
            if not warmed:  # a JVM just started compiles its hot paths over the first calls
                for q in QUERIES:
                    paired_p50(q, trees, calls=1, warmup=WARMUP_CALLS)
                warmed = True
            idle = idle_cpu_rates(servers) if servers else None
            figures = {}
            for q in QUERIES:
                wire, cpu = paired_p50(q, trees, servers=servers, idle=idle)
                # warmed by the calls before: every call of a turn is timed, the first too
                turns, turns_cpu = paired_p50(q, trees, calls=2 * TURN, warmup=0, turn=TURN,
                                              servers=servers, idle=idle)
                lean, _ = paired_p50(q, [(_lean(side), side.tree) for side in grown[:2]])
                member: tuple[list[float], list[float | None]] | None = None
                if members:  # as the scale part asks: the member's calls right after root's
                    member = paired_p50(
                        q, [(m, side.tree) for m, side in zip(members, grown, strict=False)],
                        calls=2 * TURN, warmup=TURN, turn=TURN, servers=(servers or [])[:2]
                        or None, idle=(idle or [])[:2] or None)  # fmt: skip
                figures[q.name] = (wire, cpu, lean, turns, turns_cpu, member)
        finally:
            for wire_of_side in (*wires, *members):
                wire_of_side.close()
        with capsys.disabled():
            loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
            before = (f", before {rates[2]:,.0f} ({rates[2] / rates[0]:.0f}x)"
                      if len(rates) > 2 else "")  # fmt: skip
            print(f"\nside by side at {size:,} Datafiles of the tree "
                  f"({time.strftime('%H:%M UTC', time.gmtime())}, load average {loadavg}): "
                  f"createMany of 1,000 real {rates[0]:,.0f} / local {rates[1]:,.0f} "
                  f"Datafiles/s ({rates[1] / rates[0]:.0f}x){before}; p50 of 20 calls as root, "
                  f"ms, the {len(grown)} servers taking turns call by call ({', '.join(names)}); "
                  "server CPU per call, ms "
                  f"(real: {', '.join(p.name() for p in real_processes) or 'not found'}; "
                  "less what each spends idle: "
                  f"{', '.join(f'{r * 1000:.0f}' for r in idle or ())} ms/s)")
            extra = f" {'before':>8} {'real/before':>11}" if len(grown) > 2 else ""
            print(f"  {'query':17} {'wire: real':>10} {'local':>8} {'real/local':>10}{extra}   "
                  f"{'CPU: real':>9} {'local':>7} {'real/local':>10}   "
                  f"{'lean client: real':>17} {'local':>8} {'real/local':>10}   "
                  f"{f'wire, turns of {TURN}: real':>24} {'local':>8} {'real/local':>10}   "
                  f"{'CPU: real':>9} {'local':>7} {'real/local':>10}")
            for name, (wire, cpu, lean, turns, turns_cpu, _) in figures.items():
                wr, wl = wire[0], wire[1]
                cr, cl = cpu[0], cpu[1]
                before_text = (f" {wire[2]:8.2f} {wr / wire[2]:10.1f}x" if len(wire) > 2
                               else "")  # fmt: skip
                cpu_text, turns_cpu_text = (
                    f"{r:9.2f} {l_:7.2f} {r / l_:9.1f}x" if r is not None and l_
                    else f"{'—':>9} {'—':>7} {'—':>10}"
                    for r, l_ in ((cr, cl), (turns_cpu[0], turns_cpu[1])))
                print(f"  {name:17} {wr:10.2f} {wl:8.2f} {wr / wl:9.1f}x{before_text}   "
                      f"{cpu_text}   {lean[0]:17.2f} {lean[1]:8.2f} {lean[0] / lean[1]:9.1f}x   "
                      f"{turns[0]:24.2f} {turns[1]:8.2f} {turns[0] / turns[1]:9.1f}x   "
                      f"{turns_cpu_text}")
            if members:
                print(f"  as the member (simple/reader), in turns of {TURN} (real, local): "
                      "wire p50 ms real / local (real/local), server CPU per call ms real / "
                      "local (real/local); the member / root ratio of each server's wire p50")
                for name, (_, _, _, turns, _, member) in figures.items():
                    assert member is not None
                    (mr, ml), (cr, cl) = member
                    cpu_text = (f"CPU {cr:7.2f} / {cl:6.2f} ({cr / cl:5.1f}x)" if cr is not None
                                and cl else "CPU —")  # fmt: skip
                    print(f"  {name:17} wire {mr:8.2f} / {ml:6.2f} ({mr / ml:5.1f}x)   {cpu_text}"
                          f"   member/root: real {mr / turns[0]:5.2f}x, local "
                          f"{ml / turns[1]:5.2f}x")


@pytest.mark.skipif("SV7_BENCH_BEFORE" not in os.environ or "SV7_BENCH_REAL_ICAT" in os.environ,
                    reason="set SV7_BENCH_BEFORE=DIR (other code's checkout) without a real ICAT")
def test_side_by_side_with_the_code_before(capsys: pytest.CaptureFixture[str]) -> None:
    """This code's local catalogue and that of ``SV7_BENCH_BEFORE``, each in its own process
    with a tree of its own grown alike, taking turns call by call (as beside a real ICAT,
    WARMUP_CALLS calls of each query first), SOAP and REST; p50 and server CPU per call."""
    with contextlib.ExitStack() as stack:
        sides = []
        for i, checkout in enumerate((None, os.environ["SV7_BENCH_BEFORE"])):
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="sv7-bench-before-"))
            proc, url = stack.enter_context(served_catalogue(
                "--db", str(Path(tmp) / "side.sqlite"), "--example-data", checkout=checkout))
            grown = Grown(url, "root", f"sv7-bench-{RunTag.new('bench').name}-scale{i}", local=True)
            stack.callback(grown.remove)
            sides.append((grown, [psutil.Process(proc.pid)]))
        servers = [processes for _, processes in sides]
        warmed = False
        for size in _sizes("SV7_BENCH_REAL_SIZES", "10000"):
            for grown, _ in sides:
                grown.grow_to(size)
            sids = [soap_login(grown.url, "root", "root") for grown, _ in sides]
            wires: list[Wire | RestWire] = []
            for kind in (Wire, RestWire):
                wires += [kind(grown.url, sid) for (grown, _), sid in zip(sides, sids, strict=True)]
            try:
                faces: dict[str, list[Send]] = {"SOAP": [*wires[:2]], "REST": [*wires[2:]]}
                if not warmed:
                    for face_wires in faces.values():
                        for q in QUERIES:
                            paired_p50(q, [(w, g.tree) for w, (g, _) in zip(face_wires, sides,
                                                                           strict=True)],
                                       calls=1, warmup=WARMUP_CALLS)  # fmt: skip
                    warmed = True
                idle = idle_cpu_rates(servers)
                figures = {}
                for face, face_wires in faces.items():
                    for q in QUERIES:
                        pairs = [(w, g.tree) for w, (g, _) in zip(face_wires, sides, strict=True)]
                        figures[face, q.name] = paired_p50(q, pairs, servers=servers, idle=idle)
            finally:
                for opened in wires:
                    opened.close()
            with capsys.disabled():
                loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
                print(f"\nthis code (now) and SV7_BENCH_BEFORE (before) side by side at {size:,} "
                      f"Datafiles of the tree ({time.strftime('%H:%M UTC', time.gmtime())}, "
                      f"load average {loadavg}): p50 of 20 calls as root, ms, taking turns call "
                      "by call; server CPU per call, ms")
                print(f"  {'face':5} {'query':17} {'wire: now':>9} {'before':>8} {'before/now':>10}"
                      f"   {'CPU: now':>8} {'before':>7} {'before/now':>10}")
                for (face, name), (walls, cpu) in figures.items():
                    cn, cb = cpu
                    cpu_text = (f"{cn:8.2f} {cb:7.2f} {cb / cn:9.2f}x" if cn and cb is not None
                                else f"{'—':>8} {'—':>7} {'—':>10}")  # fmt: skip
                    print(f"  {face:5} {name:17} {walls[0]:9.2f} {walls[1]:8.2f} "
                          f"{walls[1] / walls[0]:9.2f}x   {cpu_text}")
