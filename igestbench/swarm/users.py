"""The Locust users of a swarm worker: each one client, taking slots of the open-loop schedule.

A worker's users share one :class:`WorkerState`. The master has Locust spawn ``--users`` (the
cap) of them on each worker; only those the worker's :class:`~igestbench.swarm.sizing.Sizer`
made active take slots (Little's law and the schedule decide how many), the others wait. An
active user logs in first (untimed; the users of a worker one after another), then, while a
step runs, takes the next slot from the step's shared counter
(:class:`~igestbench.measure.schedule.StepSchedule`, the same schedule ``sv7 run``'s sweep
uses), sleeps until the slot's intended time, makes the call with its own
client and records intended, sent and done times. Between steps the users wait. They never
fire Locust's request events: Locust's statistics stay empty, our histograms are the figures.

This module imports Locust, hence gevent's monkey-patching: only ``sv7 swarm`` imports it.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from typing import ClassVar

from locust import User, constant, task

from igestbench.client.base import Catalogue
from igestbench.measure.schedule import (
    ClientFactory,
    Operation,
    StepSchedule,
    classify_failure,
)
from igestbench.swarm.sizing import DEFAULT_CAP, Sizer

__all__ = ["SwarmUser", "WorkerState"]

#: How long an idle user waits before it looks again whether a step has begun.
IDLE_WAIT_S = 0.5


class WorkerState:
    """What the users of one worker process share: how to make a client, and the running step."""

    def __init__(self) -> None:
        #: None until the master's setup arrived and a test login succeeded.
        self.factory: ClientFactory | None = None
        #: One period of the workload's operation mix, in order (``weighted_cycle``).
        self.ops: list[tuple[str, Operation]] = []
        self.step: StepSchedule | None = None
        #: Set while a step runs (users wait on it between steps).
        self.running = threading.Event()
        self.ids = itertools.count()
        self.clock = time.perf_counter_ns
        #: How many users take slots (the master's setup sets the cap).
        self.sizer = Sizer(DEFAULT_CAP)
        #: The running step's next slot no user has taken yet.
        self.taken = 0
        #: Held by a user while it logs in: the users of a worker log in one after another
        #: (threading's lock is gevent's under Locust's monkey-patching). Eight logins at once
        #: held a real ICAT 6.2.0's every request thread (Payara's five, each waiting for the
        #: authenticator it asks over HTTP on the same threads) for 30 s (2026-11-26).
        self.login_lock = threading.Lock()
        #: Users whose login made a session (a failed one is left to the user's first call).
        self.sessions = 0


class SwarmUser(User):
    """One client of a worker (one connection, one session), driven by the step's schedule.

    The master defines the same class (Locust dispatches users by class name); only a worker
    sets :attr:`state`.
    """

    wait_time = constant(0)
    state: ClassVar[WorkerState | None] = None

    def on_start(self) -> None:
        state = self.state
        self.k = next(state.ids) if state is not None else -1
        self.catalogue: Catalogue | None = None
        self.logged_in = False
        if state is not None:
            state.sizer.spawned += 1

    def on_stop(self) -> None:
        self._close()

    def _close(self) -> None:
        catalogue, self.catalogue = self.catalogue, None
        if catalogue is not None:
            with contextlib.suppress(Exception):  # a failure to close changes nothing measured
                catalogue.close()

    def _log_in(self, state: WorkerState, factory: ClientFactory) -> None:
        """Once, when made active: the session before the first slot, untimed, one user of
        the worker at a time. A failure is left to the first call, which tries again and
        counts it (no retry loop on a server that refuses)."""
        self.logged_in = True
        with state.login_lock, contextlib.suppress(Exception):
            self.catalogue = factory()
            state.sessions += 1

    @task
    def take_slot(self) -> None:
        state = self.state
        if state is None:
            time.sleep(IDLE_WAIT_S)
            return
        sizer = state.sizer
        if state.factory is None or self.k >= sizer.active:
            sizer.grown.wait(IDLE_WAIT_S)  # not (yet) one of the users that take slots
            return
        if not self.logged_in:
            self._log_in(state, state.factory)
            sizer.ready += 1
            return
        step = state.step
        if step is None or step.halt.is_set():
            state.running.wait(IDLE_WAIT_S)
            return
        k = self.k
        while len(step.calls) <= k:  # users may join while a step runs (Locust rebalances)
            step.calls.append([])
            step.in_flight.append(None)
        i = next(step.slots)
        if state.step is step:
            state.taken = max(state.taken, i + 1)
        offset = round(i * step.period_ns)
        if offset >= step.total_ns:  # this step's slots are all taken: wait for the next one
            step.halt.wait()
            return
        clock, halt, t0 = state.clock, step.halt, step.t0
        wait_ns = t0 + offset - clock()
        if (wait_ns > 0 and halt.wait(wait_ns / 1e9)) or halt.is_set():
            return
        if clock() - t0 >= step.total_ns:  # sending ends with the schedule
            return
        name, op = step.ops[i % len(step.ops)]
        sent = clock()
        step.in_flight[k] = (name, t0 + offset, sent)
        cause = None
        try:
            if self.catalogue is None:
                self.catalogue = state.factory()
            op(self.catalogue)
        except Exception as exc:  # every failure is a counted outcome, never a dead user
            cause = classify_failure(exc)
        done = clock()
        step.calls[k].append((name, t0 + offset, sent, done, cause))
        step.in_flight[k] = None
        state.sizer.observe((done - sent) / 1e9)
