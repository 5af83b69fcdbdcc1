"""The parts of ``sv7 run`` that are not workload groups: the service checks and the load sweep."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from igestbench.client import Catalogue, connect
from igestbench.config import RunConfig
from igestbench.errors import UsageError
from igestbench.icat.beans import Bean
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import get_profile
from igestbench.measure.sampler import Sampler
from igestbench.measure.schedule import OpenLoop
from igestbench.measure.sweep import SweepConfig, run_sweep
from igestbench.measure.timing import Recorder, Timer
from igestbench.nexus import generate_run
from igestbench.results import ResultWriter
from igestbench.run.progress import Progress
from igestbench.verify import Account, ReferenceQuery, VerifyOptions, run_verification
from igestbench.workloads import Journal, RunTag, WrongResult
from igestbench.workloads.ingest import Ingestor

if TYPE_CHECKING:
    from igestbench.run.runner import Target

#: The local catalogue's ordinary account: the checks prove it can read and cannot write.
LOCAL_READER = Account("reader", "simple", "reader", "reader")
#: What the runner puts into the built-in catalogue before the checks (see Runner._seed_local).
LOCAL_REFERENCE_QUERIES = (
    ReferenceQuery(
        "example datafiles",
        "SELECT COUNT(df) FROM Datafile df JOIN df.dataset ds JOIN ds.investigation i "
        "JOIN i.facility f WHERE f.name = 'EXAMPLE'",
        6,
    ),
    ReferenceQuery("example facility", "SELECT f FROM Facility f WHERE f.name = 'EXAMPLE'", 1),
)


def verify(
    config: RunConfig, target: Target, writer: ResultWriter, progress: Progress
) -> str | None:
    """Run sv_tests against the target; write ``checks`` and ``scores``; the API version."""
    base = config.verify if isinstance(config.verify, VerifyOptions) else VerifyOptions()
    creds = target.credentials
    accounts = list(base.accounts)
    if not any(a.role == "writer" for a in accounts):
        accounts.append(Account("writer", creds.authenticator, creds.username, creds.password))
    queries = base.reference_queries
    if target.local:
        if not any(a.role == "reader" for a in accounts):
            accounts.append(LOCAL_READER)
        queries = queries or LOCAL_REFERENCE_QUERIES
    options = dataclasses.replace(
        base,
        target=target.url,
        site=config.site,
        ca_file=target.client.ca_file,
        insecure=target.client.insecure,
        timeout=config.timeout,
        accounts=tuple(accounts),
        reference_queries=queries,
    )
    progress.start("verify")
    result = run_verification(options, quiet=True)
    found: dict[str, Any] = result.to_dict()
    writer.set_section("checks", found["checks"])
    writer.set_section("scores", found["scores"])
    outcomes = [c["outcome"] for c in found["checks"]]
    progress.finish(
        ", ".join(
            f"{outcomes.count(o)} {o}"
            for o in ("passed", "failed", "error", "skipped")
            if o in outcomes
        )
    )
    return result.api_version


# --- the load sweep ---------------------------------------------------------------------------

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


def sweep(
    config: RunConfig,
    target: Target,
    writer: ResultWriter,
    progress: Progress,
    sweep_tag: RunTag,
    journal_path: Path,
    sampler: Sampler,
) -> list[dict[str, Any]]:
    """Open-loop load at rising rates with the lean client; the ``sweeps`` entries.

    What it creates (the looked-up hierarchy, Datafiles of a ``create`` mix) goes to
    ``journal_path``, which the runner cleans up — also after Ctrl-C.
    """
    journal = Journal(journal_path)
    work = journal_path.parent
    creds = target.credentials

    def logged_in() -> Catalogue:
        client = connect(target.client, "lean")
        client.login(creds.authenticator, creds.as_login())
        return client

    setup = logged_in()
    try:
        ingestor = Ingestor(setup, get_profile("6.2"), journal, Timer(Recorder()))
        for path in generate_run(work / sweep_tag.name, sweep_tag.name, SWEEP_FILES):
            ingestor.ingest(path)
        mine = Query("Datafile").where(
            {"dataset.investigation.facility.name": Condition("=", sweep_tag.name)}
        )
        targets = setup.search(mine.include("dataset"))
        setup.logout()
    finally:
        setup.close()
    ops = _lookups(targets, int(targets[0]["dataset"].id), journal)
    unknown = sorted(set(config.mix) - set(ops))
    if unknown:
        raise UsageError(
            f"--mix: unknown operation(s) {', '.join(unknown)}; choose from {', '.join(ops)}"
        )
    settings = SweepConfig(
        slo_ms=config.slo_ms,
        max_rate=config.max_rate,
        step_s=config.duration,
        warmup_s=config.warmup,
        repeat=config.repeat,
        max_total_s=SWEEP_TIME_BUDGET_S,
        start_rate=min(10.0, config.max_rate),
        flavour="lean",
    )
    progress.start("sweep")
    per_connection = config.calls_per_connection or None
    with OpenLoop(logged_in, ops, dict(config.mix), calls_per_connection=per_connection) as load:
        try:
            result = run_sweep(load, settings, sampler=sampler, phase="sweep/lean")
        except KeyboardInterrupt:
            load.stop()
            raise
    entry = result.to_dict()
    if result.stopped:
        entry["stopped"] = result.stopped
    writer.append("sweeps", entry)
    progress.finish(
        f"sustained {result.sustained_rate}/s at p99 and mean < {config.slo_ms} ms "
        f"({len(result.steps)} steps)"
    )
    return [entry]
