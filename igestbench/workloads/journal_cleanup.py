"""The Python API's cleanup: what the server proves is the run's deleted, then the journal file
removed — or kept — as ``sv7 run`` and ``sv7 cleanup`` remove or keep it.

:func:`igestbench.workloads.ownership.cleanup` deletes and reports, and never touches the file:
``sv7 run`` cleans up after each group of workers while the run still writes to its journal.
What removes the file is the command that owns it, by one rule (:func:`all_gone`): every object
the journal lists is gone — nothing foreign in sight, nothing of the run kept, nothing named after
the run left on the server, no file left in an IDS. Otherwise the file stays, so that a later
``sv7 cleanup`` (or another call of :func:`cleanup`) resumes from it.

A caller of the Python API (README, "Workloads") owns its journal as the commands own theirs, so
:func:`cleanup` applies the same rule to the file the journal was written to or read from
(:meth:`Journal.load <igestbench.workloads.journal.Journal.load>`), under the journal's lock: a
run still going holds that lock, and its journal is kept. A journal that names an IDS is kept:
its stored files are ``sv7 cleanup``'s to remove (it knows how to reach the IDS; a catalogue
client does not), and the file is what tells it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from igestbench.client.base import Catalogue
from igestbench.icat.schema import Profile
from igestbench.workloads import ownership
from igestbench.workloads.journal import Journal, JournalInUse, JournalLock
from igestbench.workloads.ownership import DELETE_BATCH, CleanupReport, count_left
from igestbench.workloads.tree_delete import CleanupProgress


def all_gone(report: CleanupReport, left: int, files_left: Sequence[str] = ()) -> bool:
    """Whether everything a journal lists is gone after its cleanup, so that its file may go:
    ``left`` objects named after the run are still on the server, ``files_left`` in an IDS."""
    return report.complete and left == 0 and not files_left


def cleanup(
    catalogue: Catalogue,
    journal: Journal,
    batch_size: int = DELETE_BATCH,
    *,
    progress: CleanupProgress | None = None,
    resume: bool = False,
    profile: Profile | None = None,
) -> CleanupReport:
    """Delete what the server proves is the run's (:func:`.ownership.cleanup`); then remove the
    journal's file when everything it lists is gone (``journal_removed`` in the report)."""
    report = ownership.cleanup(catalogue, journal, batch_size, progress=progress,
                               resume=resume, profile=profile)  # fmt: skip
    file = journal.path or journal.source
    if file is None or journal.data_service is not None or not file.exists():
        return report
    if not all_gone(report, count_left(catalogue, journal.run_tag())):
        return report
    try:
        with JournalLock(file):
            file.unlink()
    except JournalInUse:  # a run still going, or a cleanup beside this one: theirs to remove
        return report
    return dataclasses.replace(report, journal_removed=True)


__all__ = ["all_gone", "cleanup"]
