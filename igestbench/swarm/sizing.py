"""How many users a swarm worker needs: Little's law, then more when slots would wait.

An open-loop schedule at R calls/s whose calls take L seconds keeps R x L calls in flight on
average (Little's law); a worker with fewer users (each one client: one call at a time) than
that falls behind its schedule whatever its CPU — four users hold at most 200 calls/s against a
20 ms catalogue. So each worker sizes its users itself, per step:

* at the step's start, from its share of the rate and the latency it saw last (the mean of the
  previous step's calls from their actual send, or the setup's login before the first step):
  ``ceil(rate x latency x HEADROOM) + 1``;
* while the step runs, every :data:`TICK_S`, from the schedule itself: slots that are due
  (beyond the lateness tolerance) and that no user has taken while every user is in a call
  call for as many more users as there are such slots (less those still logging in), at most
  doubling the users that have logged in per round (a slow login must not read as a need for
  many more); a user not in a call will take a waiting slot as soon as its process runs it;

never more than the cap (``--users``, per worker). A user added logs in before it takes a slot
(its session's cost is not in any call's latency); users are never taken away within a run (an
idle user only waits). When the schedule needed more users than the cap allows, the time it
spent so is counted (``capped_s``, within the measured part of the step): that step was bounded
by a limit of the suite, and the master says so instead of reporting it as the catalogue's.

No Locust here (tested in-process); :mod:`igestbench.swarm.users` and ``worker`` drive it.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

__all__ = ["DEFAULT_CAP", "Sizer", "little_users"]

#: The default cap of users per worker: generous (against a 50 ms catalogue 128 users hold
#: 2,500 calls/s, more than one gevent process's CPU sends) and bounded (each active user is one
#: connection and one session on the catalogue).
DEFAULT_CAP = 128
#: Users beyond the mean need: calls' latencies vary, and a user is busy for all of its call.
HEADROOM = 2.0
#: The latency assumed before anything was seen (a catalogue a continent away).
DEFAULT_LATENCY_S = 0.05
#: How often a running step looks whether slots wait for a user.
TICK_S = 0.01


def little_users(rate: float, latency_s: float, cap: int) -> int:
    """Users for ``rate`` calls/s of ``latency_s`` each: Little's law with headroom, 1..cap."""
    return max(1, min(cap, math.ceil(rate * latency_s * HEADROOM) + 1))


@dataclass
class Sizer:
    """The users of one worker: how many may take slots, and whether the cap bounded a step."""

    cap: int
    #: Users with an index below this take slots; only ever grows.
    active: int = 0
    #: Users that exist (Locust spawned them) and those of them that have logged in.
    spawned: int = 0
    ready: int = 0
    #: The mean latency of the last step's calls (from their actual send), seconds.
    latency_s: float | None = None
    #: Nanoseconds of the current step's measured part in which slots waited at the cap.
    capped_ns: int = 0
    #: Set (and replaced) whenever ``active`` grows: waiting users wake and look again.
    grown: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self) -> None:
        self.set_cap(self.cap)

    def set_cap(self, cap: int) -> None:
        if cap < 1:
            raise ValueError("a worker needs at least one user")
        self.cap = cap

    def grow_to(self, users: int) -> None:
        users = min(self.cap, users)
        if users > self.active:
            self.active = users
            woken, self.grown = self.grown, threading.Event()
            woken.set()

    def start_step(self, rate: float) -> int:
        """Size for a step at ``rate`` (this worker's share); the users now active."""
        self.capped_ns = 0
        self.grow_to(little_users(rate, self.latency_s or DEFAULT_LATENCY_S, self.cap))
        return self.active

    def tick(self, waiting: int, busy: int, measuring: bool, elapsed_ns: int) -> None:
        """``waiting`` slots are due and untaken while ``busy`` users are in a call: add users
        for them, or count the time at the cap (``measuring``: in the measured part of the
        step). Users logging in, and users not in a call (a process short of CPU has not
        run them yet), will take those slots: only the rest call for more users."""
        starting = max(0, min(self.active, self.spawned) - self.ready)
        free = max(0, self.ready - busy)
        if waiting <= starting + free:
            return
        if self.active >= self.cap:
            if measuring:
                self.capped_ns += elapsed_ns
            return
        # at most twice the users that have logged in per round, as TCP's slow start: while
        # logins are slow (a busy catalogue) the backlog says more than the users need
        self.grow_to(min(self.active + waiting - starting - free,
                         max(self.active, 2 * self.ready + 1)))  # fmt: skip

    def end_step(self, mean_latency_s: float | None) -> None:
        if mean_latency_s is not None and mean_latency_s > 0:
            self.latency_s = mean_latency_s

    @property
    def capped_s(self) -> float:
        return self.capped_ns / 1e9
