"""How far a cleanup is: one live line on a terminal, a line per stage elsewhere.

A cleanup of a few hundred objects takes a second and says nothing while it works (the run's
cleanups after each group would fill the output); from :data:`SHOWN_FROM` objects on — the
scale part's trees, a run stopped hard — it shows its stages and, on a terminal, a live count.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

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
