"""Part ``sweep`` of ``sv7 run``: open-loop load at rising rates, then the connection modes."""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from igestbench.client import Catalogue, TransportFailure, connect
from igestbench.config import RunConfig
from igestbench.errors import Sv7Error
from igestbench.icat.beans import Bean
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import get_profile
from igestbench.measure.sampler import Sampler
from igestbench.measure.schedule import ClientFactory, OpenLoop, Operation, Reconnect
from igestbench.measure.sweep import StepResult, SweepConfig, SweepResult, run_sweep
from igestbench.measure.timing import Recorder, Timer
from igestbench.nexus import generate_run
from igestbench.options import MIX_OPERATIONS
from igestbench.results import ResultWriter
from igestbench.results.sweeps import rate_text, sweep_verdict
from igestbench.run.benchmarks import finite
from igestbench.run.outage import OutageWatch, describe, poll_until_back
from igestbench.run.progress import Progress
from igestbench.workloads import Journal, RunTag, WrongResult
from igestbench.workloads.ingest import Ingestor

if TYPE_CHECKING:
    from igestbench.run.runner import Target

SWEEP_FILES = 5
SWEEP_TIME_BUDGET_S = 600.0


def _lookups(
    targets: list[Bean], dataset_id: int, journal: Journal
) -> dict[str, Callable[[Catalogue], object]]:
    """The operations a sweep can mix, each checking its answer (a wrong one is an error)."""
    turn = itertools.count()

    def pick() -> Bean:
        return targets[next(turn) % len(targets)]

    def search(client: Catalogue) -> object:
        target = pick()
        found = client.search(
            Query("Datafile").where(
                {
                    "dataset.id": Condition("=", target["dataset"].id),
                    "name": Condition("=", target["name"]),
                }
            )
        )
        if len(found) != 1 or found[0].id != target.id:
            raise WrongResult(f"search for Datafile {target.id} gave {len(found)}")
        return found

    def concise(client: Catalogue) -> object:
        target = pick()
        found = client.search(f"Datafile [id = {int(target['id'])}]")
        if len(found) != 1:
            raise WrongResult(f"concise lookup of Datafile {target.id} gave {len(found)}")
        return found

    def get(client: Catalogue) -> object:
        target = pick()
        found = client.get("Datafile", int(target["id"]))
        if found.id != target.id:
            raise WrongResult(f"get of Datafile {target.id} gave {found.id}")
        return found

    def create(client: Catalogue) -> object:
        name = f"sweep-{next(turn):08d}.nxs"
        new_id = client.create(
            Bean(
                "Datafile",
                {
                    "name": name,
                    "location": f"/sv7/sweep/{name}",
                    "fileSize": 0,
                    "dataset": Bean("Dataset", {"id": dataset_id}),
                },
            )
        )
        journal.add("Datafile", new_id)  # created under the run's tag: cleaned up like the rest
        return new_id

    return {"search": search, "concise": concise, "get": get, "create": create}


#: The client of each interface's sweep: the lean load path over SOAP, the rest client over REST.
SWEEP_FLAVOURS = {"soap": "lean", "rest": "rest"}


class _OneSession:
    """A client that logs out when it is closed: a client per call must not leave a session
    per call behind on a production catalogue. The logout follows the timed call."""

    def __init__(self, inner: Catalogue) -> None:
        self.inner = inner
        self.flavour = inner.flavour

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def close(self) -> None:
        with contextlib.suppress(Sv7Error):
            self.inner.logout()
        self.inner.close()


def _watched(ops: Mapping[str, Operation], watch: OutageWatch) -> dict[str, Operation]:
    """``ops`` telling ``watch`` when nothing answered and when something did again."""

    def watching(op: Operation) -> Operation:
        def call(client: Catalogue) -> object:
            sent_ns = time.perf_counter_ns()
            try:
                answer = op(client)
            except TransportFailure as exc:
                watch.failed(exc, sent_ns)
                raise
            watch.answered(sent_ns)
            return answer

        return call

    return {name: watching(op) for name, op in ops.items()}


def _answers(probe: Callable[[], object], watch: OutageWatch) -> bool:
    try:
        probe()
    except TransportFailure as exc:
        watch.count(exc)  # a failed poll: an outage's, not a lost call's
        return False
    return True


class _SweepLoop(OpenLoop):
    """The sweep's open loop, which keeps its schedule through an outage (the calls fail and
    are counted by cause) and deals with it between steps: it waits for the target (bounded),
    records the outage and runs the step once more, since a step with the target away measured
    its absence. Outages are what refused connections (more than one before an answer: one
    refused call followed by an answer is a lost call, counted in the step's errors), or a
    silence that outlasted the step (a fresh call after it still unanswered); timeouts and
    resets that end while the step runs are the load's own effect, which the sweep is there to
    measure."""

    def __init__(  # the outage's bits, then OpenLoop's own arguments
        self, watch: OutageWatch, probe: Callable[[], object], max_wait_s: float, *args: Any,
        **kwargs: Any,
    ) -> None:  # fmt: skip
        super().__init__(*args, **kwargs)
        self.watch, self._probe, self._max_wait_s = watch, probe, max_wait_s
        self.outages: list[dict[str, Any]] = []
        self.gone: str | None = None
        self.phase = "sweep/lean"

    def run(self, rate: float, duration_s: float, warmup_s: float = 0.0,
            on_end: Callable[[], None] | None = None) -> StepResult:
        result = super().run(rate, duration_s, warmup_s, on_end)
        if self._outages_during(rate, repeated=True) and not self.stopped:
            self.close()  # new clients, new sessions: a restarted catalogue lost the old ones
            result = super().run(rate, duration_s, warmup_s, on_end)
            self._outages_during(rate, repeated=False)  # recorded; a step is repeated once
        return result

    def _outages_during(self, rate: float, repeated: bool) -> bool:
        watch = self.watch
        down = watch.current is not None and not _answers(self._probe, watch)
        if down and not poll_until_back(self._probe, self._max_wait_s, watch.count):
            self.gone = (
                f"the target stopped answering during the step at {rate_text(rate)} and did not "
                f"come back within {self._max_wait_s:g} s"
            )
            self.stop()
        else:
            watch.answered()  # whatever was in progress has ended: the target answers
        seen = watch.take()
        hits = [o for o in seen if "refused" in o.errors or (down and o is seen[-1])]
        for outage in hits:
            context = {"phase": self.phase, "rate": rate, "repeated": repeated}
            self.outages.append(outage.to_dict(**context))
        return bool(hits)


#: httperf's connection modes: (name, calls per connection, what a renewal does).
CONNECTION_MODES: tuple[tuple[str, int | None, Reconnect], ...] = (
    ("persistent", None, "new-client"),
    ("reopen", 1, "reopen"),  # a new TCP (and TLS) connection per call, the same session
    ("new-client", 1, "new-client"),  # a new client per call: connection, TLS and login
)
CONNECTION_STEP_S = 2.0
CONNECTION_RATE = 20.0


def _connection_modes(
    config: RunConfig,
    factories: Mapping[Reconnect, ClientFactory],
    ops: Mapping[str, Operation],
    result: SweepResult,
) -> list[dict[str, Any]]:
    """The cost of each connection mode, at half the sustained rate (20/s without one).

    ``factories``: the client a renewal of each kind needs — for ``reopen``, one whose close
    drops the connection only (its workers' sessions are left to expire, a few per run).
    """
    sustained = result.sustained_rate
    rate = min(config.max_rate, sustained / 2 if sustained else CONNECTION_RATE)
    modes = []
    for mode, per_connection, reconnect in CONNECTION_MODES:
        with OpenLoop(
            factories[reconnect], ops, dict(config.mix), calls_per_connection=per_connection,
            reconnect=reconnect,
        ) as load:  # fmt: skip
            try:
                step = load.run(rate, min(config.duration, CONNECTION_STEP_S), config.warmup)
            except KeyboardInterrupt:
                load.stop()  # no call may create anything once the cleanup has begun
                raise
        figures = step.to_dict()
        figures = {k: figures[k] for k in ("sent", "latency_ms", "errors")}
        modes.append({"mode": mode, "rate": rate, **figures})
    return modes


def _mix_entry(step: StepResult) -> dict[str, Any]:
    """A step's ``ops``: per operation of the mix, how often it was asked, how often answered
    correctly, and how fast (corrected latency of the correct answers)."""
    return {
        name: {
            "count": op.count,
            "ok": op.ok,
            "success_rate": op.success_rate,
            "errors": dict(op.errors),
            "latency_ms": op.latency.summary(),
        }
        for name, op in sorted(step.ops.items())
    }


def _success_rates(result: SweepResult) -> str:
    """``search 100%, get 99.5%`` at the sustained rate; empty without one."""
    step = next((s for s in result.steps if s.demanded_rate == result.sustained_rate), None)
    if step is None:
        return ""
    rates = (f"{name} {op.success_rate:.1%}" for name, op in sorted(step.ops.items()))
    return "; correct answers: " + ", ".join(rates)


def sweep(
    config: RunConfig,
    target: Target,
    writer: ResultWriter,
    progress: Progress,
    sweep_tag: RunTag,
    journal_path: Path,
    sampler: Sampler,
    work: Path,
    interface: str = "soap",
) -> list[dict[str, Any]]:
    """Open-loop load at rising rates with the client of ``interface`` (lean over SOAP, rest
    over REST), then the connection modes at one moderate rate; the ``sweeps`` entries, each
    saying its interface.

    What it creates (the looked-up hierarchy, Datafiles of a ``create`` mix) goes to
    ``journal_path`` (the run's journal), which the runner cleans up — also after Ctrl-C; the
    NeXus files it ingests are written below ``work``.
    """
    journal = Journal(journal_path, sweep_tag.name)
    creds = target.credentials
    flavour = SWEEP_FLAVOURS[interface]

    def logged_in(one_session: bool = True) -> Catalogue:
        # "reopen" keeps the session: the client's close drops only its connection, which
        # the next call opens again
        client = connect(target.client, flavour)
        try:
            client.login(creds.authenticator, creds.as_login())
        except BaseException:
            client.close()
            raise
        return cast(Catalogue, _OneSession(client)) if one_session else client

    setup = logged_in()
    try:
        ingestor = Ingestor(setup, get_profile("6.2"), journal, Timer(Recorder()))
        for path in generate_run(work / sweep_tag.name, sweep_tag.name, SWEEP_FILES):
            ingestor.ingest(path)
        mine = Query("Datafile").where(
            {"dataset.investigation.facility.name": Condition("=", sweep_tag.name)}
        )
        targets = setup.search(mine.include("dataset"))
    finally:
        setup.close()
    ops = _lookups(targets, int(targets[0]["dataset"].id), journal)
    # --mix was checked against MIX_OPERATIONS before the run started; the two must agree
    assert tuple(ops) == MIX_OPERATIONS, (tuple(ops), MIX_OPERATIONS)
    settings = SweepConfig(
        slo_ms=config.slo_ms,
        max_rate=config.max_rate,
        step_s=config.duration,
        warmup_s=config.warmup,
        repeat=config.repeat,
        max_total_s=SWEEP_TIME_BUDGET_S,
        start_rate=min(10.0, config.max_rate),
        flavour=flavour,
    )
    phase = f"sweep/{flavour}"
    progress.start(phase if interface != "soap" else "sweep")
    watch = OutageWatch()

    def watched_client() -> Catalogue:
        sent_ns = time.perf_counter_ns()
        try:
            return logged_in()
        except TransportFailure as exc:
            watch.failed(exc, sent_ns)
            raise

    def probe() -> None:
        connect(target.client, flavour).close()  # a new connection: the version, uncached

    load = _SweepLoop(
        watch, probe, config.outage_wait, watched_client, _watched(ops, watch), dict(config.mix),
        calls_per_connection=config.calls_per_connection or None,
    )  # fmt: skip
    load.phase = phase
    with load:
        try:
            result = run_sweep(load, settings, sampler=sampler, phase=phase)
            entry: dict[str, Any] = result.to_dict()
            for step_entry, step in zip(entry["steps"], result.steps, strict=True):
                step_entry["ops"] = _mix_entry(step)
            entry = finite(entry)
            if not load.stopped:
                factories: dict[Reconnect, ClientFactory] = {
                    "new-client": logged_in,
                    "reopen": lambda: logged_in(one_session=False),
                }
                modes = _connection_modes(config, factories, ops, result)
                entry["connection_modes"] = finite(modes)
        except KeyboardInterrupt:
            load.stop()
            raise
        finally:
            for outage in load.outages:
                writer.append("outages", outage)
                writer.append("notes", describe(outage))
    if load.gone or result.stopped:
        entry["stopped"] = load.gone or result.stopped
    entry["outages"] = load.outages
    entry["interface"] = interface
    writer.append("sweeps", entry)
    progress.finish(f"{sweep_verdict(entry).line} ({len(result.steps)} steps)"
                    f"{_success_rates(result)}")
    return [entry]
