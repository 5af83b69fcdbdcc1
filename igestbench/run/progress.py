"""What a run shows while it runs: one live line on a terminal, plain lines otherwise.

Counts come from the records the workers stream, so the display costs the workers nothing.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from typing import TextIO

from igestbench.measure.timing import TimingRecord


class Progress:
    def __init__(self, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.phase = ""
        self.total: int | None = None
        self.done = 0
        self.errors = 0
        self._started = time.monotonic()
        self._last_draw = 0.0

    def start(self, phase: str, total: int | None = None) -> None:
        self.phase, self.total, self.done, self.errors = phase, total, 0, 0
        self._started = time.monotonic()
        if not self.live:
            print(f"sv7: {phase} …", file=self.stream, flush=True)

    def records(self, records: Iterable[TimingRecord], counts: str | None = None) -> None:
        """Count streamed records; ``counts`` (an op-name prefix) says which are work units."""
        for r in records:
            if counts is None or r.op == counts or r.op.startswith(counts + "/"):
                self.done += 1
            if not r.ok:
                self.errors += 1
        now = time.monotonic()
        if self.live and now - self._last_draw > 0.2:
            self._last_draw = now
            self._draw()

    def _draw(self) -> None:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        of = f"/{self.total}" if self.total else ""
        line = (
            f"sv7: {self.phase}: {self.done}{of} done, {self.done / elapsed:.1f}/s, "
            f"{self.errors} errors"
        )
        self.stream.write("\r\x1b[2K" + line)
        self.stream.flush()

    def finish(self, summary: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K")
        print(f"sv7: {self.phase}: {summary}", file=self.stream, flush=True)

    def note(self, line: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K")
        print(f"sv7: {line}", file=self.stream, flush=True)
