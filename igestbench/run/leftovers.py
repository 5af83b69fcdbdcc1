"""``sv7 cleanup``: finish the cleanup of runs that were stopped hard (kill -9, power cut).

A run's journal sits beside its result file (``reports/<name>.journal.jsonl``) and says which
catalogue it belongs to. ``sv7 cleanup reports/`` finds the journals in a directory itself
(``sv7 cleanup FILE.journal.jsonl`` takes one); the target comes from the journal, and a
``--target`` that names another catalogue is refused, as is a server whose API version is not
the one the run saw — before anything is deleted, as is a journal whose run tag is not one sv7
writes (before any request). Then only what the server proves to be the run's is deleted
(:func:`igestbench.workloads.ownership.cleanup`); a journal is removed once its cleanup is
complete and kept, with a message, when anything was left. The cleanup records its verification
and progress in the journal, so that a cleanup stopped hard resumes where it stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from igestbench.client import Catalogue, ClientConfig
from igestbench.client.repeats import own_client
from igestbench.errors import Sv7Error, UsageError
from igestbench.icat.credentials import Credentials
from igestbench.icat.endpoint import endpoint_of
from igestbench.run.cleanup_progress import CleanupLines
from igestbench.workloads import Journal
from igestbench.workloads.journal import JOURNAL_SUFFIX, JournalLock, journal_lines
from igestbench.workloads.journal_cleanup import all_gone
from igestbench.workloads.journal_io import repair_tail
from igestbench.workloads.ownership import CleanupReport, cleanup, count_left
from igestbench.workloads.stored_files import clean_stored_files, remove_local_storage


class ForeignJournal(Sv7Error):
    """A journal applied to a catalogue it was not written against: nothing was deleted."""


def find_journals(paths: Sequence[Path]) -> list[Path]:
    """The journal files ``paths`` name: files as given, directories searched (not below)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found += sorted(p for p in path.glob("*" + JOURNAL_SUFFIX) if p.is_file())
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"{path}: no such journal file or directory")
    return list(dict.fromkeys(found))


@dataclass
class Outcome:
    """What ``sv7 cleanup`` did with one journal: lines to print, and whether it is done."""

    path: Path
    lines: list[str] = field(default_factory=list)
    complete: bool = False


def _url(journal: Journal, path: Path, target: str | None) -> str:
    """The catalogue to clean up at: the journal's own, checked against ``--target``."""
    known = journal.catalogue
    if known is None:
        if target is None:
            raise UsageError(f"{path}: this journal (igestbench 0.1.0) does not say which "
                             "catalogue it belongs to; give it with --target")  # fmt: skip
        return target
    if target is not None and endpoint_of(target).service_url != known.url:
        raise ForeignJournal(
            f"{path} belongs to the catalogue at {known.describe()}, not to "
            f"{endpoint_of(target).service_url}: nothing deleted (leave out --target to clean "
            f"up at {known.url})"
        )
    return known.url


def _check_server(journal: Journal, path: Path, catalogue: Catalogue) -> None:
    known = journal.catalogue
    if known is not None and catalogue.version() != known.api_version:
        raise ForeignJournal(
            f"{path} was written against ICAT {known.api_version} at {known.url}; the server "
            f"there now says ICAT {catalogue.version()}: not the same catalogue, nothing deleted"
        )


def clean_one(
    path: Path,
    target: str | None,
    client: Callable[[str], tuple[ClientConfig, Credentials]],
) -> Outcome:
    """Clean up after one journal; ``client(url)`` says how to reach and log in at ``url``."""
    with JournalLock(path):
        return _clean_locked(path, target, client)


def _clean_locked(
    path: Path,
    target: str | None,
    client: Callable[[str], tuple[ClientConfig, Credentials]],
) -> Outcome:
    outcome = Outcome(path)
    journal = Journal.load(path)
    tag = journal.run_tag()  # an invalid tag is refused here, before any request
    outcome.lines += [line if str(path) in line else f"{path}: {line}"
                      for line in journal_lines(journal)]  # fmt: skip
    if journal.catalogue is not None and journal.catalogue.local and target is None:
        removed = remove_local_storage(journal)
        path.unlink()
        outcome.lines.append(
            f"{path}: the run used its built-in catalogue, which stopped with it; nothing left "
            "to clean up, journal removed"
        )
        if removed is not None:
            outcome.lines.append(f"{path}: its IDS storage {removed} removed")
        outcome.complete = True
        return outcome
    url = _url(journal, path, target)
    config, credentials = client(url)
    # many small queries: the client that spends least; each safe to repeat is repeated when
    # its connection is lost (client/repeats.py)
    catalogue = own_client(config, "lean")
    try:
        _check_server(journal, path, catalogue)
        catalogue.login(credentials.authenticator, credentials.as_login())
        # the cleanup records its progress here (we hold the lock: nobody else writes)
        repair_tail(path)
        journal.path = path
        stored = clean_stored_files(catalogue, config, journal)  # before its Datafiles go
        progress = CleanupLines(prefix=f"sv7 cleanup: {path.name}", always=True)
        report = cleanup(catalogue, journal, resume=True, progress=progress)
        left = count_left(catalogue, tag)
        catalogue.logout()
    finally:
        catalogue.close()
    outcome.lines += _describe(path, url, report, left)
    if stored is not None:
        outcome.lines.append(f"{path}: deleted {stored.deleted} files through the IDS")
        if stored.left:
            outcome.lines.append(f"{path}: files left in the IDS: {', '.join(stored.left[:5])}")
    if not all_gone(report, left, stored.left if stored is not None else ()):
        outcome.lines.append(f"{path}: journal kept (not everything was cleaned up)")
        return outcome
    path.unlink()
    outcome.lines.append(f"{path}: cleanup complete, journal removed")
    outcome.complete = True
    return outcome


def _describe(path: Path, url: str, report: CleanupReport, left: int) -> list[str]:
    lost = ""
    if report.by_name:
        lost = (f", {report.by_name:,} of them not listed in the journal (created along with "
                "another object, or by a create whose answer never came)")  # fmt: skip
    lines = [f"{path}: deleted {report.deleted:,} objects at {url} (below the run's "
             f"{report.facilities} Facility(ies){lost}); {report.already_gone:,} journaled "
             "objects were gone already"]  # fmt: skip
    if report.refused_names:
        shown = ", ".join(repr(n) for n in report.refused_names[:5])
        lines.append(f"{path}: {len(report.refused_names)} Facility name(s) in the journal are "
                     f"not the run's (not its tag): ignored: {shown}")  # fmt: skip
    if report.foreign:
        lines.append(
            f"{path}: {len(report.foreign):,} object(s) are not the run's "
            f"({report.describe_reasons()}); left alone: {report.describe_foreign()}"
        )
    if report.kept:
        lines.append(f"{path}: {report.kept:,} of the run's own object(s) kept: something not "
                     "the run's hangs below them, and a delete would take it along")  # fmt: skip
    if left:
        lines.append(f"{path}: {left:,} object(s) named after the run are still there")
    return lines


def clean_all(
    paths: Sequence[Path],
    target: str | None,
    client: Callable[[str], tuple[ClientConfig, Credentials]],
) -> Iterator[Outcome]:
    """:func:`clean_one` for each journal ``paths`` name; a refusal or failure of one journal
    is its outcome (with the reason), the others still go."""
    for path in find_journals(paths):
        try:
            yield clean_one(path, target, client)
        except Sv7Error as exc:
            message = str(exc)
            yield Outcome(path, [message if str(path) in message else f"{path}: {message}"])
