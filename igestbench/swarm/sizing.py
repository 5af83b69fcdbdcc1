"""How many users a swarm worker needs: Little's law on the latency it sees, then the schedule.

An open-loop schedule at R calls/s whose calls take L seconds keeps R x L calls in flight on
average (Little's law); a worker with fewer users (each one client: one call at a time) than
that falls behind its schedule whatever its CPU — four users hold at most 200 calls/s against a
20 ms catalogue. So each worker sizes its users itself (:class:`Sizer`), from its share of the
rate:

* the **need** is ``ceil(R x L x HEADROOM) + 1`` users, L the latency of its recent calls from
  their actual send (a moving average; before the first call of a step, the previous step's
  mean, or the setup's lookups before the first step) — the headroom absorbs the spread of the
  latencies and lets a backlog drain;
* at a step's start the worker makes that many users active; while the step runs it looks every
  :data:`TICK_S` whether slots are due (beyond the lateness tolerance) that no user has taken:
  if so, users are added up to the need as the latency then stands (a catalogue slowing under
  load raises it); and if that backlog keeps growing while every user that has logged in is in
  a call and none is still logging in — the need underestimates — users are added for the new
  slots, at most doubling those logged in per look;

never more than the cap (``--users``, per worker). A backlog the users then drain — left by the
users' logins at a step's start, or by a pause of the worker's process — adds no one: a slow
login must not read as a need for many sessions. A user added logs in before it takes a slot
(its session's cost is in no call's latency); users are never taken away within a run (an idle
user only waits). When slots waited and the need was above the cap, the time is counted
(``capped_s``, within the measured part of the step): that step was bounded by a limit of the
suite, and the master says so instead of reporting it as the catalogue's.

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
#: Weight of the newest call in the moving average of the latency (about the last 20 calls).
RECENT_WEIGHT = 0.05
#: The shortest window over which a growing backlog is judged.
WINDOW_MIN_S = 0.05


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
    #: The moving average of the current step's calls, seconds (None before its first call).
    recent_s: float | None = None
    #: Nanoseconds of the current step's measured part in which slots waited at the cap.
    capped_ns: int = 0
    #: Set (and replaced) whenever ``active`` grows: waiting users wake and look again.
    grown: threading.Event = field(default_factory=threading.Event)
    #: The backlog at the start of the current window, and the window's time so far: whether
    #: the backlog grows is judged over two latencies (at least WINDOW_MIN_S), not one look.
    _waiting: int | None = None
    _window_ns: int = 0
    #: The last window's verdict: the backlog grew while every user was in a call.
    _behind: bool = False

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

    def observe(self, seconds: float) -> None:
        """One call's latency from its actual send."""
        recent = self.recent_s
        self.recent_s = seconds if recent is None else recent + RECENT_WEIGHT * (seconds - recent)

    def need(self, rate: float) -> int:
        """Users ``rate`` needs at the latency as it stands (not capped)."""
        latency = self.recent_s or self.latency_s or DEFAULT_LATENCY_S
        return little_users(rate, latency, 10**9)

    def start_step(self, rate: float) -> int:
        """Size for a step at ``rate`` (this worker's share); the users now active."""
        self.capped_ns, self.recent_s, self._waiting, self._window_ns = 0, None, None, 0
        self._behind = False
        self.grow_to(self.need(rate))
        return self.active

    def _growing(self, waiting: int, elapsed_ns: int) -> bool | None:
        """Whether the backlog grew over the window that just ended; None within a window."""
        if self._waiting is None:  # the first look of a step: the window starts here
            self._waiting, self._window_ns = waiting, 0
            return None
        self._window_ns += elapsed_ns
        latency = self.recent_s or self.latency_s or DEFAULT_LATENCY_S
        if self._window_ns < max(WINDOW_MIN_S, 2 * latency) * 1e9:
            return None
        growing, self._waiting, self._window_ns = waiting > self._waiting, waiting, 0
        return growing

    def tick(self, rate: float, waiting: int, busy: int, measuring: bool, elapsed_ns: int) -> None:
        """``waiting`` slots are due and untaken while ``busy`` users are in a call: add users
        as the need says, or as a backlog that grew over the last window says; count the time
        the cap bounded (``measuring``: in the measured part of the step)."""
        verdict = self._growing(waiting, elapsed_ns)
        if verdict is not None:  # the backlog grew with every user in a call, none logging in
            starting = max(0, min(self.active, self.spawned) - self.ready)
            self._behind = verdict and waiting > 0 and starting == 0 and busy >= self.ready
        if waiting <= 0:
            return
        need = self.need(rate)
        if measuring and self.active >= self.cap and (need > self.cap or self._behind):
            self.capped_ns += elapsed_ns
        if need > self.active:
            self.grow_to(need)
        elif verdict is not None and self._behind:
            self.grow_to(min(self.active + waiting, 2 * self.ready + 1))

    def end_step(self, mean_latency_s: float | None) -> None:
        if mean_latency_s is not None and mean_latency_s > 0:
            self.latency_s = mean_latency_s

    @property
    def capped_s(self) -> float:
        return self.capped_ns / 1e9
