"""How far a cleanup is: one live line on a terminal, a line per stage elsewhere.

A cleanup of a few hundred objects takes a second and says nothing while it works (the run's
cleanups after each group would fill the output); from :data:`SHOWN_FROM` objects on — the
scale part's trees, a run stopped hard — it shows its stages and, on a terminal, a live count.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from typing import Any, TextIO

from igestbench.run.progress import Progress

#: Cleanups of fewer objects than this show nothing while they work (``always`` shows all).
SHOWN_FROM = 10_000
#: Seconds between two redraws of the live line.
REDRAW_S = 0.2


class CleanupLines:
    """A :class:`~igestbench.workloads.tree_delete.CleanupProgress` for terminals and logs."""

    def __init__(
        self,
        progress: Progress | None = None,
        *,
        stream: TextIO | None = None,
        live: bool | None = None,
        prefix: str = "sv7: cleanup",
        always: bool = False,
    ) -> None:
        self.stream = stream or (progress.stream if progress else sys.stderr)
        if live is None:
            live = progress.live if progress else self.stream.isatty()
        self.live = live
        self.prefix = prefix
        self.always = always
        self._stages: list[str] = []
        self._shown = always
        self._name = ""
        self._total: int | None = None
        self._done = 0
        self._started = time.monotonic()
        self._drawn = 0.0

    def stage(self, name: str, total: int | None = None) -> None:
        self._name, self._total, self._done = name, total, 0
        self._started = time.monotonic()
        if not self._shown and total is not None and total >= SHOWN_FROM:
            self._shown = True
            for earlier in self._stages:  # what led here, now that it is worth showing
                self._line(earlier)
        self._stages.append(name if total is None else f"{name} ~{total:,} objects")
        if self._shown:
            self._line(self._stages[-1])

    def advance(self, count: int) -> None:
        self._done += count
        now = time.monotonic()
        if self._shown and self.live and now - self._drawn >= REDRAW_S:
            self._drawn = now
            rate = self._done / max(now - self._started, 1e-9)
            of = f" of ~{self._total:,}" if self._total else ""
            self.stream.write(f"\r\x1b[2K{self.prefix}: {self._name}: {self._done:,}{of} "
                              f"({rate:,.0f} objects/s)")  # fmt: skip
            self.stream.flush()

    def finish(self, summary: str) -> None:
        if self._shown:
            self._line(summary)
        self._stages.clear()
        self._shown = self.always

    def _line(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K")
        print(f"{self.prefix}: {text}", file=self.stream, flush=True)


def cleanup_line(section: Mapping[str, Any] | None) -> str:
    """What a run's cleanup did, in one line (the result file's ``cleanup`` section): the same
    line after every run, whether it created ten objects or a million, finished or stopped."""
    if section is None:
        return "nothing cleaned up: the run stopped before it created anything"
    deleted = f"{section.get('deleted') or 0:,} object(s) deleted"
    left, journal = section.get("left"), section.get("journal")
    if left == 0 and not journal:
        return f"cleaned up: {deleted}, nothing of the run left on the catalogue"
    why = (f"{left:,} left" if left is not None
           else f"then {section.get('error') or 'the catalogue could not be asked what is left'}")
    how = f"; journal kept: {journal} (sv7 cleanup {journal} finishes the job)" if journal else ""
    return f"cleanup incomplete: {deleted}, {why}{how}"
