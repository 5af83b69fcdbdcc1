"""Runs dated after the merge: a partner machine's wrong clock (or a hand edit) must not decide
which run of a cell the page shows.

Merge counts each cell's newest run (``run.started``). A run dated in 2030 would outrank every
real run of its site and target for years, and silently turn the real newest run into
history. No run can have started after the moment its file is merged, except by the clock of
the machine that wrote it; so a run that starts more than :data:`FUTURE_TOLERANCE` after the
merge's own clock is

* named, by ``sv7 merge`` and in the page's notices (:func:`future_text`), and
* ordered as older than every run of its cell whose start is believable, and among such runs
  by their own dates (one machine's clock is wrong alike for all its runs). Its date says
  nothing about when it ran, and no other evidence in the file does (its ``finished`` comes
  from the same clock, and merge reads no file times, which copies change). Ordered so, it
  still gives the cell each piece (:mod:`.pieces`) that no believable run measured — a
  partner's data is not lost — but never hides a run that a right clock dated. Ordering it
  "as if it started at the merge" instead would still put it above every real run.

This is the one place where merge reads a clock: two merges of the same files differ only when
a file's start passes from the future into the past between them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from igestbench.results.format import parse_timestamp

__all__ = ["FUTURE_TOLERANCE", "future_text", "is_future", "is_future_entry"]

#: How far ahead of the merge's clock a start may be before it is taken for a wrong clock.
#: Machines kept by NTP agree to well under a second; a machine without it drifts by a few
#: seconds a day (a quartz's ±20 ppm is 1.7 s), and a campaign's machines may be a minute or
#: two apart besides — harmless, since the runs of one cell come from one site's machine, whose
#: error moves them all alike. Five minutes lets all of that through, and still catches the
#: errors that do harm: a machine set to local time as if it were UTC (hours), a wrong date,
#: a battery-less board back at its build date, a hand edit.
FUTURE_TOLERANCE = dt.timedelta(minutes=5)


def is_future(started: dt.datetime, now: dt.datetime) -> bool:
    """Whether a run that started at ``started`` did so after ``now`` (beyond the tolerance)."""
    return started > now + FUTURE_TOLERANCE


def is_future_entry(entry: object) -> bool:
    """A ``future`` entry of a campaign file that :func:`future_text` can say."""
    return isinstance(entry, dict) and all(
        isinstance(entry.get(k), str) for k in ("file", "site", "target", "started"))


def future_text(entry: Mapping[str, Any]) -> str:
    """A run dated in the future, as ``sv7 merge`` prints it and the report's notices say it."""
    try:
        when = parse_timestamp(entry["started"]).astimezone(dt.UTC).strftime(
            "%Y-%m-%d %H:%M UTC")
    except ValueError:
        when = str(entry["started"])
    return (f"{entry['file']} ({entry['site']} → {entry['target']}) started in the future "
            f"({when}, more than {FUTURE_TOLERANCE.seconds // 60} min after the merge): its "
            "machine's clock? It is ordered as older than every run of its cell with a "
            "believable start, so it shows only what none of them measured")
