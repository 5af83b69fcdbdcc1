"""``sv7 run``: one site against one catalogue, every part, one result file.

The runner is the composition root of a run and the one owner of its result file: it probes the
target, runs the service checks, runs each workload with each client flavour at each
concurrency level in worker processes (the sampler watching), runs the load sweep, cleans up
everything the run created — also after Ctrl-C — and finishes the file. Without a target it
starts the local catalogue on a free loopback port and runs against that.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from igestbench.client import Catalogue, ClientConfig, TransportFailure, connect
from igestbench.config import RunConfig, ServeConfig
from igestbench.errors import Sv7Error
from igestbench.icat.credentials import Credentials
from igestbench.icat.faults import IcatError, IcatInternal
from igestbench.icat.query import Condition, Query
from igestbench.measure.sampler import Sampler
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.nexus import generate_run
from igestbench.results import ResultWriter
from igestbench.run.benchmarks import UNIT_OPS, benchmark_entry
from igestbench.run.outage import OutageNotes, describe, merge_outages
from igestbench.run.probe import host_facts, probe
from igestbench.run.progress import Progress
from igestbench.run.thresholds import evaluate, parse_threshold
from igestbench.run.workers import WORKLOADS, WorkerSpec, run_workers
from igestbench.workloads import Journal, RunTag, cleanup

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_THRESHOLDS = 3
EXIT_UNREACHABLE = 4
EXIT_INTERRUPTED = 130

LOCAL_ACCOUNT = Credentials("simple", "ingest", "ingest")
#: NeXus files a worker ingests to prepare the workloads other than the full cycle.
PREPARATION_FILES = {"single-query": 3, "burst": 1, "multi-query": 1}


@dataclass
class Target:
    url: str
    credentials: Credentials = field(repr=False)
    client: ClientConfig
    local: bool


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int
    path: Path | None
    summary: list[str]


@contextlib.contextmanager
def _target(config: RunConfig) -> Iterator[Target]:
    """The catalogue to run against; the local one (started here) when there is no target."""
    if config.target is not None:
        assert config.credentials is not None  # load_run_config insists
        client = ClientConfig(
            config.target,
            connect_timeout=min(config.timeout, 10.0),
            read_timeout=config.timeout,
            ca_file=config.ca_file,
            insecure=config.insecure,
        )
        yield Target(config.target, config.credentials, client, local=False)
        return
    # over HTTPS with a throwaway CA, so that the TLS checks have something to check; with
    # example data readable by everyone, which the read checks look for (not under the run tag:
    # the run did not create it)
    with LocalCatalogue(ServeConfig(tls="ca", example_data=True)) as local:
        assert local.tls is not None
        credentials = config.credentials or LOCAL_ACCOUNT
        client = ClientConfig(local.service_url, ca_file=local.tls.ca)
        yield Target(local.service_url, credentials, client, local=True)


class Runner:
    def __init__(self, config: RunConfig, progress: Progress | None = None) -> None:
        self.config = config
        self.progress = progress or Progress()
        self.tag = RunTag.new(config.site)
        self.journals: list[Path] = []
        self.summary: list[str] = []
        self.benchmarks: list[dict[str, Any]] = []
        self.sweeps: list[dict[str, Any]] = []
        #: (deleted, already gone) by the cleanups after each group of workers
        self.cleaned = [0, 0]

    def run(self) -> RunOutcome:
        config = self.config
        thresholds = [parse_threshold(t) for t in config.fail_on]
        with _target(config) as target, tempfile.TemporaryDirectory(prefix="sv7-run-") as tmp:
            self.work = Path(tmp)
            target_section, probe_section = probe(target.client)
            target_section["local"] = target.local
            writer = ResultWriter(
                config.out,
                run={
                    "id": self.tag.run_id,
                    "tag": self.tag.name,
                    "site": config.site,
                    "parts": list(config.parts),
                    "flavours": list(config.flavours),
                    "concurrency": list(config.concurrency),
                    "options": config.public(),
                },
                target=target_section,
                environment=host_facts(),
                secrets=[target.credentials.password],
                compress=config.gzip,
            )
            writer.set_section("probe", probe_section)
            self.progress.note(f"result file: {writer.path}")
            status, code = "complete", EXIT_OK
            sampler = Sampler(interval_s=1.0).start()
            try:
                # the checks first: when the target cannot be reached, they say why
                if "verify" in config.parts:
                    from igestbench.run import service_checks

                    service_checks.verify(config, target, writer, self.progress)
                target_section["api_version"] = self._reach(target)
                writer.set_section("target", target_section)
                self._parts(target, writer, sampler)
            except TransportFailure as exc:
                writer.append("notes", f"target unreachable: {exc}")
                self.summary.append(f"the target cannot be reached: {exc}")
                status, code = "failed", EXIT_UNREACHABLE
            except Sv7Error as exc:
                # e.g. the run's own account refused: the checks (if any) say more
                writer.append("notes", f"run stopped: {exc}")
                self.summary.append(f"the run stopped: {exc}")
                status, code = "failed", EXIT_ERROR
            except KeyboardInterrupt:
                writer.append("notes", "interrupted (Ctrl-C); cleaned up what was created")
                status, code = "interrupted", EXIT_INTERRUPTED
            finally:
                sampler.stop()
                for series in sampler.series():
                    writer.append("samples", series.to_dict())
                if code not in (EXIT_UNREACHABLE, EXIT_ERROR) or self.journals:
                    writer.set_section("cleanup", self._cleanup(target))
                path = writer.finish(status)
            if code == EXIT_OK and thresholds:
                failures = evaluate(thresholds, self.benchmarks, self.sweeps)
                for failure in failures:
                    self.summary.append(f"threshold failed: {failure}")
                if failures:
                    code = EXIT_THRESHOLDS
        return RunOutcome(code, path, self.summary)

    # --- parts ---------------------------------------------------------------------------

    def _reach(self, target: Target, attempts: int = 3) -> str:
        """Connect and log in before measuring: the API version, or a clear failure.

        An INTERNAL fault is retried (a second apart): a flaky server answers a few calls that
        way, and one of them must not cost the whole run; a refused login is not retried.
        """
        for _ in range(attempts - 1):
            try:
                return self._login_once(target)
            except IcatInternal:
                time.sleep(1.0)
        return self._login_once(target)

    @staticmethod
    def _login_once(target: Target) -> str:
        catalogue = connect(target.client, "zeep")
        try:
            catalogue.login(target.credentials.authenticator, target.credentials.as_login())
            catalogue.logout()
            return catalogue.version()
        finally:
            catalogue.close()

    def _parts(self, target: Target, writer: ResultWriter, sampler: Sampler) -> None:
        config = self.config
        for flavour in config.flavours:
            for workload in (w for w in WORKLOADS if w in config.parts):
                for level in config.concurrency:
                    entry, specs = self._workload(target, workload, flavour, level, writer, sampler)
                    self.benchmarks.append(entry)
                    writer.append("benchmarks", entry)
                    writer.flush()
                    # after the entry is written: a target gone for good must not lose it
                    self._cleanup_journals(target, specs)
        if "sweep" in config.parts:
            from igestbench.run import load_sweep

            sweep_tag = RunTag(config.site, f"{self.tag.run_id}-sweep")
            journal = self.work / f"{sweep_tag.name}.jsonl"
            self.journals.append(journal)  # before it starts: Ctrl-C may come at any moment
            self.sweeps.extend(
                load_sweep.sweep(config, target, writer, self.progress, sweep_tag, journal, sampler)
            )

    def _workload(
        self,
        target: Target,
        workload: str,
        flavour: str,
        level: int,
        writer: ResultWriter,
        sampler: Sampler,
    ) -> tuple[dict[str, Any], list[WorkerSpec]]:
        config = self.config
        phase = f"{workload}/{flavour}/{level}"
        specs = []
        for index in range(level):
            tag = RunTag(config.site, f"{self.tag.run_id}-{workload}-{flavour}-c{level}-w{index}")
            count = config.cycles if workload == "full-cycle" else PREPARATION_FILES[workload]
            files = generate_run(
                self.work / tag.name, tag.name, count, payload_bytes=config.payload_bytes
            )  # not timed
            journal = self.work / f"{tag.name}.jsonl"
            self.journals.append(journal)
            specs.append(
                WorkerSpec(
                    index=index,
                    workload=workload,
                    flavour=flavour,
                    client=target.client,
                    credentials=target.credentials,
                    tag=tag,
                    journal_path=journal,
                    profile="6.2",
                    files=tuple(files),
                    count=config.queries if workload == "single-query" else config.files,
                    batch_size=config.batch_size,
                    page_size=config.page_size,
                    outage_wait=config.outage_wait,
                )
            )
        unit = UNIT_OPS[workload][0] if workload == "full-cycle" else workload
        self.progress.start(phase)

        def watch(pids: list[int]) -> None:
            for pid in pids:
                sampler.add_process(pid)

        notes = OutageNotes(self.progress.note, config.outage_wait)
        with sampler.phase(phase) as series:
            run = run_workers(
                specs,
                on_records=lambda chunk: self.progress.records(chunk, unit),
                on_start=watch,
                on_outage=notes.seen,
            )
        outages = merge_outages(run.outages, phase=phase)
        for outage in outages:
            writer.append("outages", outage)
            writer.append("notes", describe(outage))
        entry = benchmark_entry(workload, flavour, level, run, series.client_bound)
        if run.interrupted:
            raise KeyboardInterrupt
        bad = len(entry["problems"]) + sum(o["count"] - o["ok"] for o in entry["ops"].values())
        down = f", {len(outages)} outage(s) of the target" if outages else ""
        self.progress.finish(f"{entry['throughput_per_s']}/s, {bad} errors or problems{down}")
        return entry, specs

    # --- cleanup -------------------------------------------------------------------------

    def _clean(self, catalogue: Catalogue, journals: list[Path]) -> None:
        """Delete what ``journals`` list, count it, and forget the journals done with."""
        for path in journals:
            if path.exists():
                report = cleanup(catalogue, Journal.load(path))
                self.cleaned[0] += report.deleted
                self.cleaned[1] += report.already_gone
                path.unlink()
            self.journals.remove(path)

    def _cleanup_journals(self, target: Target, specs: list[WorkerSpec]) -> None:
        """Remove what one group of workers created, right after it (polite on production)."""
        catalogue = connect(target.client, "zeep")
        try:
            catalogue.login(target.credentials.authenticator, target.credentials.as_login())
            self._clean(
                catalogue, [s.journal_path for s in specs if s.journal_path in self.journals]
            )
        finally:
            catalogue.close()

    def _cleanup(self, target: Target) -> dict[str, Any]:
        """Remove whatever is still journaled and count what is left under the run tag."""
        try:
            catalogue = connect(target.client, "zeep")
        except Sv7Error as exc:
            return {"deleted": 0, "already_gone": 0, "left": None, "error": str(exc)}
        try:
            catalogue.login(target.credentials.authenticator, target.credentials.as_login())
            self._clean(catalogue, list(self.journals))
            deleted, gone = self.cleaned
            query = Query("Facility").where({"name": Condition("LIKE", self.tag.name + "%")})
            (left,) = catalogue.search(query.count())
            return {"deleted": deleted, "already_gone": gone, "left": int(left)}
        except (IcatError, TransportFailure) as exc:
            return {"deleted": 0, "already_gone": 0, "left": None, "error": str(exc)}
        finally:
            catalogue.close()
