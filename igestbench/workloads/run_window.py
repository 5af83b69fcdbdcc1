"""When a run was, by the catalogue's clock: the window every object of the run was created in.

The journal's first line records two clocks at the moment the run began: this machine's and the
server's (:mod:`igestbench.client.server_clock`). Cleanup turns them into a :class:`RunWindow`
on the server's clock: from the run's start, less a small allowance, to its end — now, for a run
still going; the journal's last write, for a run that died — plus an allowance for a request that
was still on its way. An object whose ``createTime`` lies outside is not the run's.

A server that sends no ``Date`` (Payara, as a real ICAT 6.2.0 runs it) shows its clock in the
``createTime`` of the run's first object (:mod:`.clock_facility`): the journal records that
reading on a line of its own, and :meth:`RunClock.synced_by` carries it back to the run's start.
A journal without the server's clock (one written before igestbench recorded it, or whose
reading failed) falls back on the start in its run tag, by this machine's clock, with a wide
allowance for clocks that are not in step.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

#: Allowance at the start when the server's clock is known: the Date header is to the second,
#: databases keep createTime to the second (MariaDB rounds), and clusters drift a little.
SYNCED_SKEW = dt.timedelta(seconds=60)
#: Allowance when only this machine's clock is known: campaign machines may be minutes apart.
UNSYNCED_SKEW = dt.timedelta(minutes=15)
#: After the journal's last write, a create may still have been on its way when the run died
#: (its answer, with the id to journal, never came): up to a request's timeout.
IN_FLIGHT = dt.timedelta(minutes=5)


def _iso(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse(value: Any) -> dt.datetime:
    if not isinstance(value, str):
        raise ValueError("not a time")
    when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if when.tzinfo is None:
        raise ValueError("a time without its zone")
    return when.astimezone(dt.UTC)


@dataclass(frozen=True)
class RunClock:
    """Our clock and, when known, the server's, at the same moment (when the run began)."""

    client: dt.datetime
    server: dt.datetime | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"client": _iso(self.client), "server": _iso(self.server) if self.server else None}

    @classmethod
    def from_dict(cls, data: Any) -> RunClock:
        if not isinstance(data, dict):
            raise ValueError("clock is not an object")
        server = data.get("server")
        return cls(_parse(data["client"]), _parse(server) if server is not None else None)

    @property
    def skew(self) -> dt.timedelta:
        return SYNCED_SKEW if self.server is not None else UNSYNCED_SKEW

    def on_server(self, client_time: dt.datetime) -> dt.datetime:
        """``client_time`` (this machine's clock) as the server's clock showed it."""
        if self.server is None:
            return client_time
        return client_time + (self.server - self.client)

    def synced_by(self, reading: RunClock) -> RunClock:
        """This clock with the server's side filled in from a later ``reading`` of both clocks
        (the createTime of the run's first object): the offset between them is the same."""
        if self.server is not None or reading.server is None:
            return self
        return RunClock(self.client, reading.on_server(self.client))

    def window(self, ended: dt.datetime, in_flight: bool) -> RunWindow:
        """The run's window from its start to ``ended`` (this machine's clock); ``in_flight``:
        the run died, and a request may have been on its way after ``ended``."""
        end_margin = self.skew + (IN_FLIGHT if in_flight else dt.timedelta(0))
        start = self.on_server(self.client) - self.skew
        return RunWindow(start, self.on_server(ended) + end_margin)


@dataclass(frozen=True)
class RunWindow:
    """From ``start`` to ``end``, by the server's clock (both included)."""

    start: dt.datetime
    end: dt.datetime

    def __contains__(self, when: object) -> bool:
        if not isinstance(when, dt.datetime):
            return False
        if when.tzinfo is None:  # a client that drops the zone: ICAT's dates are UTC then
            when = when.replace(tzinfo=dt.UTC)
        return self.start <= when <= self.end

    def describe(self) -> str:
        return f"{_iso(self.start)} to {_iso(self.end)}"

    def to_dict(self) -> dict[str, str]:
        return {"start": _iso(self.start), "end": _iso(self.end)}

    @classmethod
    def from_dict(cls, data: Any) -> RunWindow:
        if not isinstance(data, dict):
            raise ValueError("window is not an object")
        return cls(_parse(data["start"]), _parse(data["end"]))
