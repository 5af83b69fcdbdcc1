"""What a run shows while it runs: one live line on a terminal, plain lines otherwise.

Counts come from the records the workers stream, so the display costs the workers nothing. The
live figures of a workload are the registry's (:mod:`igestbench.results.figures`) over the calls
streamed so far — the same definitions, units and writing as the line that ends the phase and
the result file, so the live rate converges on the final one instead of being another number.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

from igestbench.measure.timing import TimingRecord
from igestbench.results.figures import RATE, entry_figures, format_value, measures_of


class LiveFigures:
    """The records of one phase streamed so far, as a ``benchmarks`` entry the registry reads:
    per op the calls, successes and time, each client's first call of an op kept apart (cold)
    as the entry written at the end keeps it."""

    def __init__(self, workload: str, concurrency: int,
                 checks: Mapping[str, Any] | None = None) -> None:
        self.workload = workload
        self.concurrency = concurrency
        self.checks = dict(checks or {})
        # the ids part's measures come from its checks (the file sizes)
        ops = [op for m in measures_of(workload, {"checks": self.checks}) for op in m.calls]
        #: op -> [warm calls, ok, ns of ok calls, ns of failed calls, cold calls]
        self._ops: dict[str, list[int]] = {op: [0, 0, 0, 0, 0] for op in ops}
        self._started: set[tuple[int, str]] = set()
        self.calls = 0
        self.errors = 0

    def add(self, worker: int, records: Iterable[TimingRecord]) -> None:
        for r in records:
            if not r.ok and not self._is_step(r.op):
                self.errors += 1
            stats = self._ops.get(r.op)
            if stats is None:
                continue
            self.calls += 1
            if (worker, r.op) not in self._started:
                self._started.add((worker, r.op))
                stats[4] += 1
                continue
            stats[0] += 1
            if r.ok:
                stats[1] += 1
                stats[2] += r.duration_ns
            else:
                stats[3] += r.duration_ns

    def _is_step(self, op: str) -> bool:
        """A step inside a call of the workload's (its failure is the call's)."""
        return any(op.startswith(call + "/") for call in self._ops)

    def entry(self) -> dict[str, Any]:
        ops = {op: {"count": s[0], "ok": s[1], "mean_ms": s[2] / s[1] / 1e6 if s[1] else None,
                    "failed_ms": s[3] / 1e6, "cold_ms": [0.0] * s[4]}
               for op, s in self._ops.items() if s[0] or s[4]}
        return {"workload": self.workload, "concurrency": self.concurrency, "ops": ops,
                "checks": self.checks, "flavour": "", "problems": []}

    def line(self) -> str:
        """``107 calls, 0 errors · 29.4 cycles/s`` (burst: each measure's rate): the calls of
        the workload's unit of work so far, the failed records, the registry's rates."""
        rows = [r for r in entry_figures(self.entry()) if r.metric.endswith(RATE)
                and r.value is not None]
        names = [r.metric.removesuffix(RATE).strip() for r in rows]
        rates = "".join(f" · {name + ' ' if name else ''}{r.text}"
                        for name, r in zip(names, rows, strict=True))
        return f"{self.calls} calls, {format_value(self.errors, 'errors')}{rates}"


class Progress:
    def __init__(self, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self.phase = ""
        self.total: int | None = None
        self.done = 0
        self.errors = 0
        self.figures: LiveFigures | None = None
        self._started = time.monotonic()
        self._last_draw = 0.0

    def start(self, phase: str, total: int | None = None,
              figures: LiveFigures | None = None) -> None:
        """A new phase; ``figures``: the workload whose live figures the line shows."""
        self.phase, self.total, self.done, self.errors = phase, total, 0, 0
        self.figures = figures
        self._started = time.monotonic()
        if not self.live:
            print(f"sv7: {phase} …", file=self.stream, flush=True)

    def records(self, records: Iterable[TimingRecord], counts: str | None = None,
                worker: int = 0) -> None:
        """Count streamed records of ``worker``; without live figures, ``counts`` (an op name)
        says which are the phase's calls."""
        records = list(records)
        if self.figures is not None:
            self.figures.add(worker, records)
        for r in records:
            if counts is None or r.op == counts:
                self.done += 1
            if not r.ok:
                self.errors += 1
        now = time.monotonic()
        if self.live and now - self._last_draw > 0.2:
            self._last_draw = now
            self._draw()

    def _draw(self) -> None:
        if self.figures is not None:
            line = f"sv7: {self.phase}: {self.figures.line()}"
        else:
            of = f"/{self.total}" if self.total else ""
            line = f"sv7: {self.phase}: {self.done}{of} calls, {self.errors} errors"
        self.stream.write("\r\x1b[2K" + line)
        self.stream.flush()

    def finish(self, summary: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K")
        print(f"sv7: {self.phase}: {summary}", file=self.stream, flush=True)
        self.figures = None

    def note(self, line: str) -> None:
        if self.live:
            self.stream.write("\r\x1b[2K")
        print(f"sv7: {line}", file=self.stream, flush=True)
