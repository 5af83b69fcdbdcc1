"""One run given to ``sv7 merge`` in more than one file: counted once, and said.

A coordinator collects partners' files by mail, shared folders and copies of copies, so the
same run often arrives twice under different names (``SITEA_…-f331.json`` and ``dup.json``). A
run is known by its site, its run id (``run.id``: the second it started and 16 random bits, so
two runs of one site never share one) and its target (a run has one). The copies of one run
are told apart by their bytes:

* the same bytes (``identical``): counted once, from the file whose name sorts first; the other
  names are said, so that a count of files and a count of runs can be reconciled;
* a copy taken while the run was still going (``status`` partial: the writer rewrites the file
  as the run goes) beside its finished file (``unfinished``): the finished one is counted, as it
  holds everything the earlier snapshot held, and the snapshot is said;
* anything else (``conflict``): the same run with other contents — one of them edited, or
  damaged, or rewritten by another tool. Merge cannot know which copy tells the truth, so none
  of them is counted: each is skipped with the names of the others, which the coordinator
  resolves by keeping the partner's own copy.

Which copy is counted depends only on the files' contents and names, never on the order they
were given in (merge's output is a pure function of its inputs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from igestbench.results.loader import ResultFile

__all__ = ["Copy", "copy_text", "one_per_run"]

IDENTICAL = "identical"
UNFINISHED = "unfinished"


class _File(Protocol):
    @property
    def result(self) -> ResultFile: ...

    @property
    def target(self) -> str: ...

    @property
    def sha256(self) -> str: ...


F = TypeVar("F", bound=_File)


@dataclass(frozen=True)
class Copy:
    """A file not counted because ``same_as`` holds the same run (``how``: identical or
    unfinished); a ``copies`` entry of the campaign file (:meth:`to_dict`)."""

    file: str
    same_as: str
    site: str
    run_id: str
    how: str

    def to_dict(self) -> dict[str, str]:
        return {"file": self.file, "same_as": self.same_as, "site": self.site,
                "run_id": self.run_id, "how": self.how}


def copy_text(entry: Mapping[str, Any]) -> str:
    """A copy counted once, as ``sv7 merge`` prints it and the report's notices say it."""
    if entry.get("how") == UNFINISHED:
        return (f"{entry['file']} is a copy of the same run as {entry['same_as']} taken before "
                f"the run finished (site {entry['site']}, run id {entry['run_id']}): counted "
                f"once, from {entry['same_as']}")
    return (f"{entry['file']} is the same run as {entry['same_as']} (the same bytes; site "
            f"{entry['site']}, run id {entry['run_id']}): counted once")


def is_copy(entry: object) -> bool:
    """A ``copies`` entry :func:`copy_text` can say (a damaged one is left out)."""
    return isinstance(entry, dict) and all(
        isinstance(entry.get(k), str) for k in ("file", "same_as", "site", "run_id", "how"))


def one_per_run(files: Iterable[F]) -> tuple[list[F], list[Copy], list[tuple[F, str]]]:
    """``files`` with each run once (see the module docstring); the copies counted once; and
    the files of conflicting copies, each with the reason it is skipped."""
    runs: dict[tuple[str, str, str], list[F]] = {}
    for item in files:
        key = (item.result.site.casefold(), item.result.run_id, item.target)
        runs.setdefault(key, []).append(item)
    kept: list[F] = []
    copies: list[Copy] = []
    conflicts: list[tuple[F, str]] = []
    for same_run in runs.values():
        distinct = _by_content(same_run, copies)
        if len(distinct) == 1:
            kept.append(distinct[0])
            continue
        finished = [f for f in distinct if f.result.status != "partial"]
        if len(finished) == 1 and all(f.result.started == finished[0].result.started
                                      for f in distinct):
            kept.append(finished[0])
            copies += [_copy(f, finished[0], UNFINISHED) for f in distinct if f is not finished[0]]
            continue
        for item in distinct:
            others = ", ".join(f.result.path.name for f in distinct if f is not item)
            conflicts.append((item, (
                f"conflicts with {others}: the same run (site {item.result.site}, run id "
                f"{item.result.run_id}) with other contents — one of them edited, damaged or "
                "rewritten: none of them is counted; keep the partner's own copy and merge "
                "again")))
    return kept, copies, conflicts


def _by_content(same_run: Sequence[F], copies: list[Copy]) -> list[F]:
    """One file per distinct content of a run (the name that sorts first); the others are
    added to ``copies`` — except a file of the same name, which is one file given twice."""
    first: dict[str, F] = {}
    for item in sorted(same_run, key=lambda f: (f.result.path.name, str(f.result.path))):
        kept = first.setdefault(item.sha256, item)
        if kept is not item and kept.result.path.name != item.result.path.name:
            copies.append(_copy(item, kept, IDENTICAL))
    return list(first.values())


def _copy(item: _File, kept: _File, how: str) -> Copy:
    return Copy(item.result.path.name, kept.result.path.name, item.result.site,
                item.result.run_id, how)
