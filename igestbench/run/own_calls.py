"""The runner's own steps between the parts (the cleanup after each workload), through outages.

Every call inside such a step that is safe to repeat is repeated when its connection is lost
(:mod:`igestbench.client.repeats`), so one lost call costs a moment, not the run. What is left
is a step that fails because nothing answers: connections refused, timed out, lost try after
try. That is not yet a target gone — a catalogue restarting is down for seconds — so the runner
does what each worker does for its calls (:mod:`igestbench.run.outage`): it records an outage
from the moment the step's failed call was sent, polls the target with a growing pause for at
most ``--outage-wait`` seconds, and does the step again once the target answers (a cleanup
surveys anew, so nothing is counted twice). Only a target that stays away for the whole wait
stops the run, as unreachable, saying so.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from igestbench.client import ClientConfig, TransportFailure, connect
from igestbench.run.outage import Outage, not_answering, poll_until_back

_T = TypeVar("_T")
#: Outages one step is done again after: a target that comes and goes for longer is not one
#: that a run can measure.
MAX_OUTAGES = 3


def answers(client: ClientConfig) -> None:
    """One fresh call (a new connection, ``getEntityNames``): raises if the target does not
    answer it."""
    catalogue = connect(client, "lean")
    try:
        catalogue.entity_names()
    finally:
        catalogue.close()


def through_outages(
    step: Callable[[], _T],
    client: ClientConfig,
    max_wait_s: float,
    what: str,
    note: Callable[[str], object],
    record: Callable[[dict[str, Any]], object],
    probe: Callable[[], object] | None = None,
) -> _T:
    """``step()``; when it fails because the target does not answer, the target is waited for
    (at most ``max_wait_s``) and the step done again once it is back.

    ``note`` says it while it happens (progress lines); ``record`` gets each outage as an
    ``outages`` entry of the result file, with ``phase`` = ``what``. A target that does not come
    back raises the step's failure, with how long it was waited for.
    """
    poll = probe or (lambda: answers(client))
    for _ in range(MAX_OUTAGES):
        sent_ns = time.perf_counter_ns()
        try:
            return step()
        except TransportFailure as exc:
            if not not_answering(exc):
                raise
            failure = exc
        note(f"target stopped answering during {what} ({failure.cause.value}); "
             f"waiting up to {max_wait_s:g} s")  # fmt: skip
        outage, back = _wait(Outage.begin(sent_ns, failure), poll, max_wait_s)
        record(outage.to_dict(phase=what))
        if not back:
            raise TransportFailure(
                failure.cause, failure.url,
                f"{failure.detail}; it did not answer again within {max_wait_s:g} s "
                "(--outage-wait)", failure.status,
            ) from failure  # fmt: skip
        note(f"target back after {outage.duration_s or 0.0:.1f} s: {what} again")
    return step()  # the last outage too has passed: once more, whatever comes of it


def _wait(outage: Outage, poll: Callable[[], object], max_wait_s: float) -> tuple[Outage, bool]:
    """(the outage, ended if the target came back, whether it did) after polling for it."""
    back_ns: list[int] = []

    def failed(exc: TransportFailure) -> None:
        nonlocal outage
        outage = outage.seen(exc)

    def polled() -> None:
        poll()
        back_ns.append(time.perf_counter_ns())

    if not poll_until_back(polled, max_wait_s, failed):
        return outage, False
    return outage.ended(back_ns[-1]), True


__all__ = ["MAX_OUTAGES", "answers", "through_outages"]
