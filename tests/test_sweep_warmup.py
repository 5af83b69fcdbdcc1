"""The first step of a load sweep does not run cold.

Without a warm-up before it, the first step's workers connected and logged in inside their first
timed calls (the step's own warm-up, a fraction of a second at the first rate, reached a few of
the eight workers only), and the first step read worse than the ones after it. Now every
worker's client is made before the first step, the schedule runs a while at the first rate, and
nothing of that is counted; the result file says what the warm-up did.
"""

from __future__ import annotations

import threading

from igestbench.measure.schedule import OpenLoop
from igestbench.measure.sweep import SweepConfig, run_sweep
from igestbench.workloads.base import WrongResult

_made_here = threading.local()


class FakeClient:
    """A client that costs nothing; closing it is all it does."""

    def close(self) -> None:
        pass


def test_no_call_of_the_first_step_pays_for_its_connection() -> None:
    made = []

    def factory() -> FakeClient:
        made.append(threading.current_thread().name)
        _made_here.fresh = True  # the thread that made the client is the one that pays
        return FakeClient()

    def call(client: object) -> object:
        if getattr(_made_here, "fresh", False):
            _made_here.fresh = False
            raise WrongResult("this call connected and logged in first")
        return None

    config = SweepConfig(slo_ms=1000, max_rate=10, rates=[10], step_s=0.5, warmup_s=0.1)
    with OpenLoop(factory, {"search": call}, workers=8) as load:  # type: ignore[arg-type]
        result = run_sweep(load, config)
    (step,) = result.steps
    assert step.sent >= 4 and not step.errors, step.errors  # no measured call was a cold one
    assert len(made) == 8  # every worker's client, once, before the first step
    entry = result.to_dict()
    assert entry["warmup"]["clients"] == 8 and entry["warmup"]["rate"] == 10
    assert entry["warmup"]["seconds"] >= 0.9 and entry["warmup"]["calls"] >= 1


def test_the_warm_up_logs_its_workers_in_one_after_another() -> None:
    """Eight logins at once held a real ICAT 6.2.0 (Payara's five request threads, each waiting
    for the authenticator it calls over HTTP on the same threads) for 30 s: no answer to
    anyone, the sweep's first step all timeouts. The warm-up sends them one at a time."""
    lock = threading.Lock()
    busy, most = [0], [0]

    def factory() -> FakeClient:
        with lock:
            busy[0] += 1
            most[0] = max(most[0], busy[0])
        threading.Event().wait(0.02)  # a login's round trip
        with lock:
            busy[0] -= 1
        return FakeClient()

    with OpenLoop(factory, {"search": lambda client: None}, workers=8) as load:  # type: ignore[arg-type]
        made = load.warm_up(50.0, 0.1)
    assert made["clients"] == 8
    assert most[0] == 1
