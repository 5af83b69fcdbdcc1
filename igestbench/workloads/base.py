"""What every workload shares: its context, its outcome, and the wrong-answer error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from igestbench.client.base import Catalogue
from igestbench.errors import Sv7Error
from igestbench.icat.schema import Profile
from igestbench.measure.timing import Recorder, Timer, TimingRecord
from igestbench.workloads.journal import Journal, RunTag


class WrongResult(Sv7Error):
    """The catalogue answered, but not what it should have (counted as a failed operation)."""


@dataclass
class WorkloadContext:
    """One client's view of a run: where to talk, under which tag, what it created."""

    catalogue: Catalogue
    profile: Profile
    tag: RunTag
    journal: Journal
    recorder: Recorder = field(default_factory=Recorder)

    def __post_init__(self) -> None:
        self.timer = Timer(self.recorder)
        if self.journal.facility is None:
            # everything the workloads create hangs below the Facility named after the tag
            self.journal.name_facility(self.tag.name)


@dataclass(frozen=True)
class WorkloadResult:
    """Timing records of one workload plus what it checked on the server afterwards."""

    name: str
    records: list[TimingRecord]
    #: Facts verified after the run, e.g. {"expected": 2000, "found": 2000}.
    checks: dict[str, Any] = field(default_factory=dict)
    #: What the server-side checks found wrong (empty when all is well).
    problems: list[str] = field(default_factory=list)

    @property
    def failures(self) -> int:
        return sum(1 for r in self.records if not r.ok)

    @property
    def ok(self) -> bool:
        return not self.problems and self.failures == 0
