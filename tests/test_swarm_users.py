"""sv7 swarm's users follow demand (issue 19, part 6), and its summary says how a sweep went
(part 2): each worker sizes its users from its share of the rate and the latency it sees
(Little's law, then more while slots wait), up to --users; a step the cap bounded says so, as
the suite's limit, never as the catalogue's.

In-process: the sizing (:mod:`igestbench.swarm.sizing`) and the summary's sentences. End to end
against a catalogue that answers after 400 ms: one worker holds 40 lookups/s (16 calls in
flight; the 8 fixed users of before held at most 20/s, missed most slots and let the calls
queue for seconds), and with ``--users 4`` the same step is reported as bounded by the cap."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.config import FaultKnobs, ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.results.sweeps import sweep_verdict
from igestbench.swarm.sizing import Sizer, little_users
from igestbench.swarm.summary import bounded_text, outcome_lines, rate, step_lines
from tests.swarm_support import Swarm, left_below, needs_locust, no_traceback

# --- sizing ----------------------------------------------------------------------------------


def test_littles_law_with_headroom_within_the_cap() -> None:
    assert little_users(320, 0.020, 128) == 14  # 6.4 in flight, twice that, one more
    assert little_users(10, 0.002, 128) == 2
    assert little_users(5000, 0.1, 128) == 128  # the cap
    assert little_users(0.5, 0.0, 128) == 1


def test_the_sizer_follows_the_latency_it_sees_up_to_the_cap() -> None:
    sizer = Sizer(cap=20, latency_s=0.01)
    woken = sizer.grown
    assert sizer.start_step(100) == 3 and woken.is_set()  # 100 x 10 ms x 2 + 1
    sizer.spawned, sizer.ready = 20, 3
    tick = 10_000_000  # ns
    sizer.tick(100, waiting=0, busy=3, measuring=True, elapsed_ns=tick)
    assert sizer.active == 3  # on schedule: nobody added
    for _ in range(20):
        sizer.observe(0.05)  # the catalogue slows down: 50 ms
    sizer.tick(100, waiting=2, busy=3, measuring=True, elapsed_ns=tick)
    assert sizer.active == 11  # 100 x ~50 ms x 2 + 1, added as slots wait
    for _ in range(40):
        sizer.observe(0.2)  # and more: the need is over the cap
    sizer.ready = 11
    sizer.tick(100, waiting=5, busy=11, measuring=False, elapsed_ns=tick)
    assert sizer.active == 20 and sizer.capped_ns == 0  # at the cap; in the warm-up: not counted
    sizer.tick(100, waiting=5, busy=20, measuring=True, elapsed_ns=2 * tick)
    assert sizer.capped_s == pytest.approx(0.02)
    sizer.end_step(0.2)
    assert sizer.start_step(1) == 20 and sizer.capped_ns == 0  # users stay; the count restarts
    with pytest.raises(ValueError):
        Sizer(cap=0)


def test_a_backlog_that_drains_adds_no_one_one_that_grows_does() -> None:
    sizer = Sizer(cap=100, latency_s=0.02)
    assert sizer.start_step(320) == 14  # 6.4 in flight: 14 with the headroom
    sizer.spawned = 100
    tick = 10_000_000
    # the users' logins took long: 60 slots wait, then drain as the 14 take them
    for waiting, ready in ((60, 0), (64, 5), (66, 14), (40, 14), (20, 14), (3, 14), (0, 14)):
        sizer.ready = ready
        for _ in range(2):
            sizer.observe(0.02)
        sizer.tick(320, waiting=waiting, busy=ready, measuring=False, elapsed_ns=tick)
    assert sizer.active == 14
    # a backlog that keeps growing while every user is in a call: more users, at most doubling
    sizer.observe(0.02)
    for waiting in range(10, 400, 10):
        sizer.tick(320, waiting=waiting, busy=sizer.ready, measuring=True, elapsed_ns=tick)
    assert sizer.active == 29 and sizer.capped_ns == 0  # 2 x 14 + 1, then they log in


# --- what the master prints ------------------------------------------------------------------


def _step(demanded: float, p99: float, *, capped: bool = False) -> dict[str, Any]:
    return {
        "demanded_rate": demanded, "response_rate": demanded * 0.99, "sent": 100,
        "missed_slots": 3, "errors": {},
        "latency_ms": {"corrected": {"p50": p99 / 2, "p99": p99, "mean": p99 / 2},
                       "uncorrected": {"mean": 21.5}},
        "workers": 2, "lost_workers": 0, "user_capped": capped, "client_bound": False,
        "users": {"used": 8 if capped else 5, "cap_per_worker": 4, "workers_at_cap": 2,
                  "capped_s": 2.5 if capped else 0.0},
    }  # fmt: skip


def test_a_step_the_user_cap_bounded_is_said_to_be_the_suites_limit() -> None:
    """The step's line and the sweep's verdict (the registry's, as in the file's summary) say
    the cap bounded it, as a limit of the suite; the rate it sustained is a lower bound."""
    capped = _step(80, 900, capped=True)
    lines = step_lines(1, capped, 50.0)
    assert lines[0].startswith("step 2: 80.0 requests/s demanded, 79.2 requests/s answered,")
    assert "2 workers, 8 users, user-capped — broke the objective: p99 900 ms ≥ 50 ms" in lines[0]
    assert lines[1] == (
        "  bounded by the suite (not a measure of the catalogue): the --users cap (4 per worker) "
        "was reached with slots waiting for 2.5 s of the step on 2 worker(s); calls took 21.5 ms "
        "from their actual send — raise --users to see what the catalogue holds")
    assert step_lines(0, _step(10, 5), 50.0)[1:] == []
    sweep = {"slo_ms": 50.0, "steps": [_step(10, 5), capped], "sustained_rate": 10.0,
             "stopped": bounded_text(80), "interface": "soap", "flavour": "lean"}
    (line,) = outcome_lines(sweep, {"mode": "swarm"})
    assert line.startswith("sweep SOAP · lean: sustained ≥ 10.0 requests/s (corrected mean and p99")
    assert ("objective broken at 80.0 requests/s: p99 900 ms ≥ 50 ms; the --users cap bounded "
            "that step: a limit of the suite, not of the catalogue — raise --users; the sweep "
            "ended: a limit of the suite bounded the step at 80.0 requests/s") in line
    assert sweep_verdict(sweep).marks == ("user-capped",)
    assert rate(1234.5) == "1,234 requests/s" and "None" not in line


# --- end to end ------------------------------------------------------------------------------

LATENCY_MS = 400
RATE = 40  # 16 calls in flight: twice what the 8 fixed users of before could hold (20/s)


@pytest.fixture()
def slow_catalogue() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(knobs=FaultKnobs(latency_ms=LATENCY_MS))) as cat:
        yield cat


@needs_locust
@pytest.mark.slow
def test_one_worker_holds_a_rate_fixed_users_could_not(
    slow_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    swarm = Swarm(slow_catalogue.service_url, tmp_path, "--rates", str(RATE), "--duration", "3",
                  "--warmup", "1", "--slo-ms", "2000", workers=1)  # fmt: skip
    result = swarm.finish()
    (step,) = result["sweeps"][0]["steps"]
    slots = RATE * 3
    # near 0: a busy machine's scheduling misses a few (too few fixed users miss most, and
    # their calls wait in a queue that grows by the second: the corrected latency says so)
    assert step["missed_slots"] <= 0.2 * slots, step
    assert step["sent"] >= 0.95 * slots
    assert step["latency_ms"]["corrected"]["p50"] < 1.5 * LATENCY_MS, step
    # at least what Little's law says is in flight, and not many times that
    assert RATE * LATENCY_MS / 1000 <= step["users"]["used"] <= 4 * RATE * LATENCY_MS / 1000
    assert step["user_capped"] is False and step["users"]["capped_s"] == 0
    assert result["sweeps"][0]["sustained_rate"] == RATE
    assert no_traceback(swarm.logs())
    assert left_below(slow_catalogue.service_url, result["run"]["tag"]) == 0


@needs_locust
@pytest.mark.slow
def test_a_step_bounded_by_the_user_cap_says_so(
    slow_catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    swarm = Swarm(slow_catalogue.service_url, tmp_path, "--rates", f"2,{RATE},{2 * RATE}",
                  "--duration", "2", "--warmup", "1", "--slo-ms", "2000", "--users", "4",
                  workers=1)  # fmt: skip
    result = swarm.finish()
    (sweep,) = result["sweeps"]
    first, capped = sweep["steps"]  # the sweep ends at the bounded step: higher is no better
    assert first["user_capped"] is False and first["users"]["used"] <= 4
    assert capped["user_capped"] is True and capped["users"]["used"] == 4
    assert capped["users"]["capped_s"] > 1.0 and capped["missed_slots"] > RATE
    assert sweep["sustained_rate"] == 2.0
    assert sweep["stopped"] == f"a limit of the suite bounded the step at {RATE:.1f} requests/s, "\
        "and would bound higher rates the more"
    (row,) = result["summary"]
    assert row["marks"] == ["user-capped"] and row["bound"] == "lower"
    assert "the --users cap bounded that step: a limit of the suite, not of the catalogue" in (
        row["note"])
    log = swarm.log()
    assert "  bounded by the suite (not a measure of the catalogue): the --users cap (4 per" in log
    assert row["note"] in log
