"""``sv7 run``: one site against one catalogue, every part, one result file.

The runner is the composition root of a run and the one owner of its result file: it probes the
target, runs the service checks, runs each workload with each client flavour at each
concurrency level in worker processes (the sampler watching), runs the load sweep, cleans up
everything the run created — also when stopped by SIGINT, SIGTERM or SIGHUP (exit 130, 143,
129; status ``interrupted``) — and finishes the file. What the run creates is journaled beside
the result file (:mod:`igestbench.run.cleanup`). Without a target it starts the local
catalogue on a free loopback port and runs against that.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from igestbench import redaction
from igestbench.client import ClientConfig, TransportFailure
from igestbench.client.repeats import RepeatPolicy, own_client, repeated_note
from igestbench.client.transport import INSECURE_NOTICE
from igestbench.config import RunConfig, ServeConfig
from igestbench.errors import Sv7Error
from igestbench.icat.credentials import Credentials
from igestbench.icat.faults import IcatSession
from igestbench.measure.sampler import START_PHASE, Sampler
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.nexus import generate_run
from igestbench.results import ResultWriter
from igestbench.results.figures import entry_figures
from igestbench.results.format import BUILT_IN_TARGET, ResultFileError
from igestbench.run import interfaces
from igestbench.run.benchmarks import benchmark_entry
from igestbench.run.cleanup import RunJournal
from igestbench.run.cleanup_progress import CleanupLines, cleanup_line
from igestbench.run.data_service import IdsProbe, probe_ids
from igestbench.run.out_dir import check_out_dir
from igestbench.run.outage import OutageNotes, describe, merge_outages
from igestbench.run.own_calls import through_outages
from igestbench.run.probe import host_facts, probe_facts, probe_summary, target_of
from igestbench.run.progress import LiveFigures, Progress
from igestbench.run.stopping import StopState, stop_signals
from igestbench.run.summary import phase_line
from igestbench.run.thresholds import evaluate, parse_threshold
from igestbench.run.workers import PREPARATION_FILES, WORKLOADS, WorkerSpec, run_workers
from igestbench.workloads import RunTag
from igestbench.workloads.ids_ingest import Payload, make_payloads, size_label
from igestbench.workloads.journal_io import JournalWriteError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_THRESHOLDS = 3
EXIT_UNREACHABLE = 4
#: The target answers, but TLS failed: a certificate this run does not trust, or https:// to a
#: port that speaks plain HTTP. Not "unreachable": the fix is --ca-file, --insecure or http://.
EXIT_TLS = 5
#: The run completed, but service checks failed or ended in errors (before 3 when both).
EXIT_CHECKS = 6
#: The result file or the journal could not be written (a full disk, a quota, an I/O error):
#: the run stopped and cleaned up from what it held in memory.
EXIT_WRITE = 7

LOCAL_ACCOUNT = Credentials(
    "simple", "ingest", "ingest", source="the built-in catalogue's ingest account"
)
#: The IDS clients: python-icat's when --flavour names it, and always the lean one.
IDS_FLAVOURS = ("python-icat", "lean")


@dataclass
class Target:
    url: str
    credentials: Credentials = field(repr=False)
    client: ClientConfig
    local: bool
    #: The built-in catalogue's IDS storage folder (journaled: sv7 cleanup removes it after a
    #: kill -9, when the temporary folder outlives the run).
    ids_storage: str | None = None

    def login_version(self, flavour: str = "lean", repeats: RepeatPolicy | None = None) -> str:
        """Log in and out once (a wrong password fails here, before anything is measured)
        and answer the catalogue's API version; a call lost on the way is repeated."""
        catalogue = own_client(self.client, flavour, repeats)
        try:
            catalogue.login(self.credentials.authenticator, self.credentials.as_login())
            catalogue.logout()
            return catalogue.version()
        finally:
            catalogue.close()


@dataclass(frozen=True)
class RunOutcome:
    exit_code: int
    path: Path | None
    summary: list[str]

    @property
    def completed(self) -> bool:
        """The run measured what it was asked to (its thresholds or checks may have failed)."""
        return self.exit_code in (EXIT_OK, EXIT_THRESHOLDS, EXIT_CHECKS)


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
        storage = str(local.ids.root) if local.ids is not None else None
        yield Target(local.service_url, credentials, client, local=True, ids_storage=storage)


class Runner:
    def __init__(self, config: RunConfig, progress: Progress | None = None,
                 terminal_notes: Callable[[], list[str]] = list) -> None:
        self.config = config
        self.progress = progress or Progress()
        #: what the file says of a terminal that went away (closed_streams.py): asked last
        self.terminal_notes = terminal_notes
        self.tag = RunTag.new(config.site)
        self.summary: list[str] = []
        self.benchmarks: list[dict[str, Any]] = []
        self.sweeps: list[dict[str, Any]] = []
        #: ids of the service checks that failed or ended in an error
        self.failed_checks: list[str] = []
        #: the interfaces measured (decided once the target answered: run.interfaces)
        self.interfaces: tuple[str, ...] = (interfaces.SOAP,)
        #: the target's IDS, when the ids part runs and the probe found one
        self.ids: IdsProbe | None = None
        self._payloads: tuple[Payload, ...] | None = None
        #: how the run's own calls (cleanups, logins) are repeated when lost; how many were
        self.repeats = RepeatPolicy()
        #: the last group's workers found the target gone (their outage did not end)
        self._gone = False

    def run(self) -> RunOutcome:
        """The whole run; SIGINT, SIGTERM and SIGHUP stop it with cleanup (see stopping.py)."""
        thresholds = [parse_threshold(t) for t in self.config.fail_on]
        check_out_dir(self.config.out)  # before the first request: a usage error, exit 2
        with stop_signals() as stop:
            code, path = self._run(stop)
        if code == EXIT_OK and thresholds:
            failures = evaluate(thresholds, self.benchmarks, self.sweeps)
            for failure in failures:
                self.summary.append(f"threshold failed: {failure}")
            if failures:
                code = EXIT_THRESHOLDS
        if code in (EXIT_OK, EXIT_THRESHOLDS) and self.failed_checks:
            shown, more = self.failed_checks[:3], len(self.failed_checks) - 3
            self.summary.append(
                f"{len(self.failed_checks)} service check(s) failed or ended in an error "
                f"(see checks in the result file): {', '.join(shown)}"
                + (f" (+{more} more)" if more > 0 else "")
            )
            code = EXIT_CHECKS
        return RunOutcome(code, path, self.summary)

    def _run(self, stop: StopState) -> tuple[int, Path]:
        config = self.config
        with _target(config) as target, tempfile.TemporaryDirectory(prefix="sv7-run-") as tmp:
            self.work = Path(tmp)
            self.target_storage = target.ids_storage
            redaction.remember(target.credentials.password)  # wherever it might turn up
            target_section = target_of(target.client)  # the probe itself runs below, stoppable
            target_section["local"] = target.local
            if target.local:  # one name for it, whatever port it had this time (sv7 merge)
                target_section["name"] = BUILT_IN_TARGET
            writer = ResultWriter(
                config.out,
                run={
                    "id": self.tag.run_id,
                    "tag": self.tag.name,
                    "site": config.site,
                    "profile": config.profile,
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
            status, code = "complete", EXIT_OK
            #: every part asked for ran: "complete" is written only then (an error nobody
            #: foresaw must not leave a file that says the run finished)
            measured = False
            self.journal = RunJournal(writer.path, self.tag, CleanupLines(self.progress),
                                      self.repeats)  # fmt: skip
            sampler = Sampler(interval_s=1.0)
            try:
                self.progress.note(f"result file: {writer.path}")
                self.progress.start("probe")
                probe_section = probe_facts(target.client)
                writer.set_section("probe", probe_section)
                self.progress.finish(probe_summary(probe_section))
                if probe_section["http"]["status"] is not None:  # else the checks say why
                    self._say_estimate(target)
                if target.client.insecure:
                    self.progress.note(INSECURE_NOTICE)
                    writer.append("notes", INSECURE_NOTICE)
                sampler.start()
                # the checks first: when the target cannot be reached, they say why
                if "verify" in config.parts:
                    from igestbench.run import service_checks

                    checked = service_checks.verify(config, target, writer, self.progress)
                    stop.check()  # pytest returns from a stop as from a failed check
                    self.failed_checks = [c.id for c in checked.failed]
                target_section["api_version"] = self._reach(target)
                choice = interfaces.choose(
                    config.interfaces, target_section["api_version"],
                    interfaces.probe_rest(target.client),
                )  # fmt: skip
                self.interfaces = choice.measured
                target_section["interfaces"] = choice.to_dict()
                writer.set_section("target", target_section)
                writer.set_run("interfaces", list(choice.measured))
                self.progress.note(f"interfaces: {', '.join(choice.measured)} ({choice.why})")
                if "ids" in config.parts:
                    self.ids = probe_ids(target.client)
                    target_section["data_service"] = self.ids.to_dict()
                    writer.set_section("target", target_section)
                    found = f"IDS {self.ids.version} at {self.ids.url}" if self.ids.served else (
                        f"no IDS, the ids part is skipped: {self.ids.problem}")
                    self.progress.note(found)
                    if not self.ids.served:
                        writer.append("notes", f"ids part not run: {self.ids.problem}")
                # before anything is created: a kill -9 from here on leaves the journal
                self.journal.start(target, target_section["api_version"])
                writer.set_run("journal", str(self.journal.path))
                writer.set_run("server_clock", self.journal.server_clock)  # where it came from
                self.progress.note(f"journal: {self.journal.path}")
                self._parts(target, writer, sampler)
                measured = True
            except (ResultFileError, JournalWriteError) as exc:
                # a full disk, a quota: stop now; the cleanup below needs no file
                status, code = "failed", EXIT_WRITE
                self.summary.append(f"the run stopped: {exc}; it cleans up by what it holds in "
                                    "memory, not by the journal file")  # fmt: skip
                self._note(writer, f"run stopped: {exc}")
            except TransportFailure as exc:
                status, code = "failed", self._transport_failed(exc, writer)
            except Sv7Error as exc:
                # e.g. the run's own account refused: the checks (if any) say more
                hint = f" ({target.credentials.refused_hint()})" if isinstance(
                    exc, IcatSession) else ""
                self._note(writer, f"run stopped: {exc}{hint}")
                self.summary.append(f"the run stopped: {exc}{hint}")
                status, code = "failed", EXIT_ERROR
            except KeyboardInterrupt:  # Stopped by a signal (stopping.py), or Ctrl-C in a part
                status, code = "interrupted", stop.exit_code
            except Exception as exc:  # a fault of sv7's own: cleaned up, said, then raised
                self._note(writer, f"run stopped by an unexpected error: {exc!r}")
                self.summary.append(f"the run stopped by an unexpected error: {exc!r}")
                status, code = "failed", EXIT_ERROR
                raise
            finally:
                if status == "complete" and not measured:  # e.g. a BaseException of a library
                    self._note(writer, "run stopped before every part ran")
                    status, code = "failed", EXIT_ERROR
                stop.hold()  # from here on a signal is noted, not raised: the cleanup must finish
                sampler.stop()
                # the cleanup first: a write that fails below must not cost it
                cleaned_up = None
                if code not in (EXIT_UNREACHABLE, EXIT_TLS, EXIT_ERROR) or self.journal.started:
                    cleaned_up = self._cleanup(target)
                if stop.signum is not None:  # also one that came during the cleanup
                    status, code = "interrupted", stop.exit_code
                self._say_end(status, stop, cleaned_up)
                try:
                    for series in sampler.series():
                        writer.append("samples", series.to_dict())
                    if cleaned_up is not None:
                        writer.set_section("cleanup", cleaned_up)
                    if status == "interrupted":
                        cleaned = "cleaned up" if not self.journal.kept else "tried to clean up"
                        note = f"interrupted ({stop.name}); {cleaned} what was created"
                        writer.append("notes", note)
                    if self.repeats.repeated:
                        writer.append("notes", repeated_note(self.repeats.repeated))
                    for note in self.terminal_notes():
                        writer.append("notes", note)
                    path = writer.finish(status)
                except ResultFileError as exc:
                    code = code if status == "interrupted" else EXIT_WRITE
                    self.summary.append(f"the result file could not be finished: {exc} (it "
                                        "holds the run as of its last complete write)")  # fmt: skip
                    path = writer.path
        return code, path

    def _transport_failed(self, exc: TransportFailure, writer: ResultWriter) -> int:
        """Say why the target could not be used, with the checks' diagnosis; the exit code."""
        from igestbench.verify.diagnosis import diagnose

        diagnosis = diagnose(exc)
        if (diagnosis.cause or "").startswith("tls-"):
            self._note(writer, f"TLS failed: {diagnosis.line()}")
            self.summary.append(f"TLS failed, nothing measured: {diagnosis.line()}")
            return EXIT_TLS
        self._note(writer, f"target unreachable: {diagnosis.line()}")
        self.summary.append(f"the target cannot be reached: {diagnosis.line()}")
        return EXIT_UNREACHABLE

    def _note(self, writer: ResultWriter, note: str) -> None:
        """A note while the run stops: a failed write of it is reported when the file is
        finished, and never keeps the run from cleaning up."""
        with contextlib.suppress(ResultFileError):
            writer.append("notes", note)

    # --- parts ---------------------------------------------------------------------------

    def _say_estimate(self, target: Target) -> None:
        """How long the run will be, where the target's answer time makes it long."""
        from igestbench.run import estimate

        try:
            answer = estimate.answer_ms(target.client)
        except Sv7Error:
            return  # the checks, or reaching the target, say why it does not answer
        line = estimate.estimate_line(self.config, answer)
        if line is not None:
            self.progress.note(line)

    def _reach(self, target: Target) -> str:
        """Connect and log in before measuring: the API version, or a clear failure.

        A call lost on the way, or answered with an INTERNAL fault, is repeated (a flaky
        server answers a few calls that way, and one of them must not cost the whole run:
        client/repeats.py); a refused login is not.
        """
        return target.login_version("zeep", self.repeats)

    def _clean_group(self, target: Target, writer: ResultWriter, after: str) -> None:
        """The cleanup after a group of workers, through an outage of the target (own_calls):
        a lost call is repeated, a target that stopped answering is waited for
        (--outage-wait), and only one that stays away stops the run as unreachable."""

        def record(outage: dict[str, Any]) -> None:
            writer.append("outages", outage)
            writer.append("notes", describe(outage))

        if self._gone:  # its workers waited the whole --outage-wait already: not twice
            self._gone = False
            self.journal.clean_group(target)
            return
        through_outages(lambda: self.journal.clean_group(target), target.client,
                        self.config.outage_wait, f"the cleanup after {after}",
                        self.progress.note, record)  # fmt: skip

    def _parts(self, target: Target, writer: ResultWriter, sampler: Sampler) -> None:
        config = self.config
        for interface in self.interfaces:
            for flavour in self._flavours(interface):
                for workload in (w for w in WORKLOADS if w in config.parts):
                    for level in config.concurrency:
                        entry = self._workload(target, workload, flavour, level, writer, sampler)
                        entry["interface"] = interface
                        self.benchmarks.append(entry)
                        writer.append("benchmarks", entry)
                        writer.flush()
                        # after the entry is written: a target gone for good must not lose it
                        self._clean_group(target, writer, f"{workload}/{flavour}/{level}")
        if self.ids is not None and self.ids.served:
            flavours = [f for f in IDS_FLAVOURS if f in config.flavours or f == "lean"]
            for flavour in flavours:
                for level in config.concurrency:
                    entry = self._workload(target, "ids", flavour, level, writer, sampler)
                    entry["interface"] = "ids"
                    self.benchmarks.append(entry)
                    writer.append("benchmarks", entry)
                    writer.flush()
                    self._clean_group(target, writer, f"ids/{flavour}/{level}")  # files too
        if "sweep" in config.parts:
            from igestbench.run import load_sweep

            for interface in self.interfaces:
                suffix = "" if interface == interfaces.SOAP else f"-{interface}"
                sweep_tag = RunTag(config.site, f"{self.tag.run_id}-sweep{suffix}")
                self.sweeps.extend(
                    load_sweep.sweep(
                        config, target, writer, self.progress, sweep_tag, self.journal.path,
                        sampler, work=self.work, interface=interface,
                    )
                )  # fmt: skip
        if "scale" in config.parts:
            from igestbench.run import scale

            scale.scale(config, target, writer, self.progress, self.tag, self.journal.path,
                        self.interfaces, sampler)  # fmt: skip
            # the tree goes as soon as it is measured (10^5 Datafiles and up: polite)
            self._clean_group(target, writer, "scale")

    def _flavours(self, interface: str) -> tuple[str, ...]:
        """The clients that measure ``interface``: --flavour over SOAP, the rest client over
        REST (the SOAP flavours cannot speak it, nor it SOAP)."""
        if interface == interfaces.REST:
            return (interfaces.REST_FLAVOUR,)
        return tuple(f for f in self.config.flavours if f != interfaces.REST_FLAVOUR)

    def _workload(
        self,
        target: Target,
        workload: str,
        flavour: str,
        level: int,
        writer: ResultWriter,
        sampler: Sampler,
    ) -> dict[str, Any]:
        config = self.config
        phase = f"{workload}/{flavour}/{level}"
        specs = []
        for index in range(level):
            tag = RunTag(config.site, f"{self.tag.run_id}-{workload}-{flavour}-c{level}-w{index}")
            count = config.cycles if workload == "full-cycle" else PREPARATION_FILES[workload]
            ids_part = self._ids_spec(workload)
            files = generate_run(
                self.work / tag.name, tag.name, count, payload_bytes=config.payload_bytes
            )  # not timed
            specs.append(
                WorkerSpec(
                    index=index,
                    workload=workload,
                    flavour=flavour,
                    client=target.client,
                    credentials=target.credentials,
                    tag=tag,
                    journal_path=self.journal.path,
                    profile="6.2",
                    files=tuple(files),
                    count={"single-query": config.queries, "ids": config.cycles}.get(
                        workload, config.files
                    ),
                    batch_size=config.batch_size,
                    page_size=config.page_size,
                    outage_wait=config.outage_wait,
                    **ids_part,
                )
            )
        # the live figures as the registry defines them; a createMany makes a batch of the
        # client's Datafiles (fewer when it has fewer)
        checks: dict[str, Any] = {"batch_size": min(config.batch_size, config.files)}
        if workload == "ids":  # its measures are per file size
            checks["file_sizes"] = {size_label(s): s for s in config.file_sizes}
        live = LiveFigures(workload, level, checks)
        self.progress.start(phase, figures=live)

        def watch(pids: list[int]) -> None:
            for pid in pids:
                sampler.add_process(pid)

        notes = OutageNotes(self.progress.note, config.outage_wait)
        # the workers' start-up apart: the phase's client CPU is its workload's alone
        with sampler.phase(phase, start=START_PHASE) as series:
            run = run_workers(
                specs,
                on_records=lambda index, chunk: self.progress.records(chunk, worker=index),
                on_start=watch,
                on_outage=notes.seen,
                on_done=sampler.sample,  # the workers' CPU, read before they are reaped
                on_ready=sampler.ready,
            )
        outages = merge_outages(run.outages, phase=phase)
        # a worker waited the whole --outage-wait and the target did not come back
        self._gone = any(o["end"] is None for o in outages) and not run.interrupted
        for outage in outages:
            writer.append("outages", outage)
            writer.append("notes", describe(outage))
        entry = benchmark_entry(workload, flavour, level, run,
                                client_cpu=series.client_summary())
        if run.interrupted:
            raise KeyboardInterrupt
        self.journal.check_outcomes(o.error for o in run.outcomes)  # a full disk stops the run
        down = f", {len(outages)} outage(s) of the target" if outages else ""
        self.progress.finish(phase_line(entry_figures(entry)) + down)
        return entry

    def _ids_spec(self, workload: str) -> dict[str, Any]:
        """What a worker of the ids part needs besides the others' spec (empty for the rest):
        the files to upload are written once per run, untimed, and shared by every worker."""
        if workload != "ids" or self.ids is None:
            return {}
        if self._payloads is None:
            self.progress.note(
                "writing the files to upload: "
                + ", ".join(size_label(s) for s in sorted(set(self.config.file_sizes)))
            )
            self._payloads = tuple(
                make_payloads(self.work / "ids-payloads", self.tag.name, self.config.file_sizes)
            )
        return {
            "ids_url": self.ids.url,
            "payloads": self._payloads,
            "ids_storage": self.target_storage,
        }

    # --- cleanup -------------------------------------------------------------------------

    def _cleanup(self, target: Target) -> dict[str, Any]:
        """Remove whatever is still journaled; the result file's ``cleanup`` section."""
        section = self.journal.finish(target)
        if section.get("foreign"):
            self.summary.append(
                f"{len(section['foreign'])} journaled object(s) no longer belong to this run on "
                "the catalogue; left alone: " + ", ".join(section["foreign"][:5])
            )
        return section

    def _say_end(self, status: str, stop: StopState, cleaned_up: dict[str, Any] | None) -> None:
        """One line at the end of every run: how it ended when it did not finish, and what
        its cleanup did (what is left and how to remove it)."""
        cleanup = cleanup_line(cleaned_up)
        if status == "interrupted":
            self.summary.insert(0, f"interrupted by {stop.name}; {cleanup}")
        else:
            self.summary.append(cleanup)
