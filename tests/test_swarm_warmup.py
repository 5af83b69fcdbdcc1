"""``sv7 swarm``'s first step does not run cold, and its workers do not log in all at once.

As ``sv7 run``'s sweep (tests/test_sweep_warmup.py): before the first counted step every worker
logs in the users its share of the first rate needs and runs the first rate's schedule a while;
nothing of that is counted, and the result file says what the warm-up did. The logins go one
after another — workers in turn, and a worker's users in turn — because eight at once held a
real ICAT 6.2.0 (Payara's request threads all waiting on the authenticator) for 30 s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Iterator
from pathlib import Path

import pytest

from igestbench.config import FaultKnobs, ServeConfig
from igestbench.mock.catalogue import CatalogueApp, LocalCatalogue
from igestbench.mock.http_messages import Request, Response
from tests.swarm_support import Swarm, left_below, needs_locust, no_traceback

#: Every call of the catalogue takes this long, logins too: logins sent together overlap.
LATENCY_MS = 100
#: Users per worker: below what the first rate needs (Little's law: 20/s x 0.1 s x 2 + 1 = 5 per
#: worker), so that every user a worker may have is logged in by the warm-up, none later.
USERS = 4


class LoginsInFlight:
    """How many SOAP logins the catalogue was answering at once, at most."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.most = self.count = 0

    def begin(self) -> None:
        with self.lock:
            self.now += 1
            self.count += 1
            self.most = max(self.most, self.now)

    def end(self) -> None:
        with self.lock:
            self.now -= 1


@pytest.fixture()
def counted_logins(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[LocalCatalogue,
                                                                      LoginsInFlight]]:
    logins = LoginsInFlight()
    answer = CatalogueApp.__call__

    def counting(app: CatalogueApp, request: Request) -> Response | Awaitable[Response]:
        if request.method != "POST" or b"login>" not in request.body:
            return answer(app, request)
        logins.begin()
        result = answer(app, request)
        if isinstance(result, Response):
            logins.end()
            return result

        async def answered() -> Response:
            try:
                return await result
            finally:
                logins.end()

        return answered()

    monkeypatch.setattr(CatalogueApp, "__call__", counting)
    with LocalCatalogue(ServeConfig(knobs=FaultKnobs(latency_ms=LATENCY_MS))) as cat:
        yield cat, logins


@needs_locust
@pytest.mark.slow
def test_the_first_step_is_warm_and_the_logins_go_one_at_a_time(
    counted_logins: tuple[LocalCatalogue, LoginsInFlight], tmp_path: Path
) -> None:
    cat, logins = counted_logins
    began = time.monotonic()
    swarm = Swarm(cat.service_url, tmp_path, "--rates", "40", "--duration", "1",
                  "--users", str(USERS), "--slo-ms", "5000", workers=2)  # fmt: skip
    result = swarm.finish(timeout=180)
    (sweep,) = result["sweeps"]
    warmup = sweep["warmup"]
    # every user of both workers logged in before the first step, and each had calls
    assert warmup["rate"] == 40 and warmup["workers"] == 2
    assert warmup["clients"] == 2 * USERS
    assert warmup["calls"] >= warmup["clients"] and warmup["seconds"] >= 0.3
    (step,) = sweep["steps"]
    assert step["users"]["used"] == 2 * USERS  # no user of the first step logged in during it
    # the warm-up's calls are in no figure: the step counts its own second (and its slots)
    assert step["sent"] <= 40 * step["duration_s"] + 2
    # setup, warm-up and cleanup: logins one after another, never two at once
    assert logins.count >= 2 + 2 * USERS
    assert logins.most == 1, (logins.most, logins.count, time.monotonic() - began)
    log = swarm.log()
    assert "warm-up at 40.0 requests/s (not counted)" in log and no_traceback(swarm.logs())
    assert left_below(cat.service_url, result["run"]["tag"]) == 0
