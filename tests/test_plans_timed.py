"""What a read on the event loop costs it (mock/plans.py ``Plans.timed``): the loop thread's
CPU time, read from its clock (a system call) only where the wall time says it may matter."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from igestbench.icat.schema import get_profile
from igestbench.mock.plans import Plans
from igestbench.mock.store import Store


@pytest.fixture()
def plans() -> Iterator[Plans]:
    store = Store(get_profile("6.2"))
    try:
        yield Plans(store)
    finally:
        store.close()


@pytest.fixture()
def clock_reads(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The readings of the thread's CPU clock, as they are made."""
    reads: list[float] = []
    real = time.thread_time

    def thread_time() -> float:
        reads.append(real())
        return reads[-1]

    monkeypatch.setattr(time, "thread_time", thread_time)
    return reads


def test_a_read_within_its_budget_reads_the_cpu_clock_once(
    plans: Plans, clock_reads: list[float]
) -> None:
    """A thread spends no more CPU time than wall time passes: a read whose wall time stayed
    within the budget stayed within it, without a second reading of the CPU clock."""
    with plans.store.time_budget(30.0, inline_s=60.0), plans.timed("quick"):
        pass
    assert len(clock_reads) == 1
    assert not plans._over_once and not plans._slow


def test_a_read_over_its_budget_is_judged_by_its_cpu_time(
    plans: Plans, clock_reads: list[float]
) -> None:
    """Over budget by the wall clock (it waited for a core, say) is not over budget: the CPU
    clock decides; CPU time over budget twice in a row makes the read slow."""
    with plans.store.time_budget(30.0, inline_s=0.001), plans.timed("waited"):
        time.sleep(0.01)  # wall time, no CPU time
    assert len(clock_reads) == 2 and not plans._over_once
    for turn in range(2):
        with plans.store.time_budget(30.0, inline_s=0.001), plans.timed("busy"):
            began = time.thread_time()
            while time.thread_time() - began < 0.005:
                pass
        assert ("busy" in plans._slow) == (turn == 1)


def test_a_read_in_a_worker_is_not_timed(plans: Plans, clock_reads: list[float]) -> None:
    with plans.store.time_budget(30.0), plans.timed("in a worker"):
        pass
    assert clock_reads == []
