"""A target that stops answering mid-run: recorded as an outage, waited for (bounded), resumed.

A restart or a network cut must neither end a run nor vanish into an error count. Each worker's
client is wrapped in an :class:`OutageGuard`: when a call fails because nothing answers
(:func:`not_answering`), the guard notes a suspected outage from the moment that call was sent
and re-raises, so the timed operation is recorded as failed (with its cause). The next call — or
the worker, when it has nothing left to call — first waits until the target answers a fresh call
again (``getEntityNames``: ``version()`` is cached by the clients), polling with a growing pause
and bounded by ``max_wait_s``, logs in again (a restarted catalogue has lost its sessions) and
goes on. When the first poll answers, one connection was lost, not the target: a lost call,
counted as its operation's error (``benchmarks[].errors`` and ``ops[…].errors`` of the result
file), never as an outage, and the session goes on. Only when the first poll fails too is it
an outage — reported from the lost call's send time, and closed when a poll answers. A target
that does not come back in time ends the worker with :class:`TargetGone`. The errors of an
outage count the failed call and every failed poll.

Outages travel to the parent as frozen :class:`Outage` snapshots (once when they start, once when
they end); the parent merges what several workers saw of the same outage
(:func:`merge_outages`) and says so while it happens (:class:`OutageNotes`). The load sweep,
whose open loop must keep its schedule rather than wait, records outages with an
:class:`OutageWatch` instead.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ParamSpec, TypeVar

from igestbench.client import Catalogue, TransportCause, TransportFailure
from igestbench.client.repeats import GATEWAY_STATUSES
from igestbench.errors import TransportError
from igestbench.icat.beans import Bean
from igestbench.icat.entity_info import EntityInfo
from igestbench.icat.query import Query
from igestbench.results import utc_timestamp
from igestbench.workloads import RawSearch

P = ParamSpec("P")
T = TypeVar("T")

_SILENT = frozenset({TransportCause.REFUSED, TransportCause.CONNECT_TIMEOUT, TransportCause.TIMEOUT,
                     TransportCause.CONNECTION})
FIRST_POLL_S = 0.1
MAX_POLL_S = 2.0
DEFAULT_WAIT_S = 120.0


def not_answering(exc: TransportFailure) -> bool:
    """Whether ``exc`` means that nothing answered (rather than a wrong or refusing answer)."""
    return exc.cause in _SILENT or (
        exc.cause is TransportCause.HTTP_STATUS and exc.status in GATEWAY_STATUSES
    )


def cause_name(exc: TransportFailure) -> str:
    """The key an outage counts ``exc`` under: the cause, with the status for ``http-status``."""
    if exc.cause is TransportCause.HTTP_STATUS and exc.status is not None:
        return f"http-{exc.status}"
    return exc.cause.value


def wall_time(perf_ns: int) -> str:
    """The result-file time of a ``perf_counter_ns`` reading taken earlier in any process."""
    ago_ns = time.perf_counter_ns() - perf_ns
    moment = dt.datetime.fromtimestamp((time.time_ns() - ago_ns) / 1e9, dt.UTC)
    return utc_timestamp(moment)


@dataclasses.dataclass(frozen=True)
class Outage:
    """One stretch of time in which the target did not answer, as one client saw it.

    ``*_ns`` are ``perf_counter_ns`` readings (comparable between the processes of one machine);
    ``start`` and ``end`` the same moments as result-file times. Frozen: a snapshot is put on a
    queue, which pickles it later, in another thread.
    """

    start_ns: int
    start: str
    errors: Mapping[str, int]
    end_ns: int | None = None
    end: str | None = None

    @classmethod
    def begin(cls, start_ns: int, exc: TransportFailure) -> Outage:
        return cls(start_ns, wall_time(start_ns), {cause_name(exc): 1})

    def seen(self, exc: TransportFailure) -> Outage:
        errors = dict(self.errors)
        errors[cause_name(exc)] = errors.get(cause_name(exc), 0) + 1
        return dataclasses.replace(self, errors=errors)

    def ended(self, end_ns: int) -> Outage:
        return dataclasses.replace(self, end_ns=end_ns, end=wall_time(end_ns))

    @property
    def duration_s(self) -> float | None:
        return None if self.end_ns is None else (self.end_ns - self.start_ns) / 1e9

    def to_dict(self, **context: Any) -> dict[str, Any]:
        """An ``outages`` entry of the result file, with ``context`` (phase …) added."""
        duration = self.duration_s
        return {
            "start": self.start,
            "end": self.end,
            "duration_s": None if duration is None else round(duration, 3),
            "errors": dict(self.errors),
            **context,
        }


class TargetGone(TransportError):
    """The target stopped answering and did not come back within the bound."""


def poll_until_back(
    probe: Callable[[], object],
    max_wait_s: float,
    failed: Callable[[TransportFailure], None],
    sleep: Callable[[float], object] = time.sleep,
) -> bool:
    """Call ``probe`` until it raises no :class:`TransportFailure`; False after ``max_wait_s``.

    The pause between polls is a tenth of the time waited so far (from 0.1 s up to 2 s): the
    end of an outage is known to within about a tenth of its length, and a catalogue that is
    slow to come up is not hammered. The bound may be passed by one call's timeout.
    """
    started = time.monotonic()
    while True:
        try:
            probe()
        except TransportFailure as exc:
            failed(exc)
        else:
            return True
        waited = time.monotonic() - started
        if waited >= max_wait_s:
            return False
        pause = min(max(FIRST_POLL_S, waited / 10), MAX_POLL_S)
        sleep(min(pause, max_wait_s - waited))


class OutageGuard:
    """A :class:`~igestbench.client.Catalogue` that notices, records and waits out outages."""

    def __init__(
        self,
        inner: Catalogue,
        max_wait_s: float = DEFAULT_WAIT_S,
        on_outage: Callable[[Outage], object] | None = None,
    ) -> None:
        self.inner = inner
        self.flavour = inner.flavour
        self.max_wait_s = max_wait_s
        self._on_outage = on_outage
        self._login: tuple[str, dict[str, str]] | None = None
        #: The outage in progress (None while the target answers); from a lost call on, a
        #: suspected one until the first poll fails too.
        self.outage: Outage | None = None
        #: Whether ``outage`` was reported (its first poll failed): else it is a lost call.
        self._reported = False
        self._gone: str | None = None
        #: Calls forwarded so far: a workload resumed after an outage skips what it did.
        self.calls = 0

    def _report(self, outage: Outage) -> None:
        if self._on_outage is not None:
            self._on_outage(outage)

    def _do(self, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        if self.outage is not None or self._gone is not None:
            self.recover()
        self.calls += 1
        sent_ns = time.perf_counter_ns()
        try:
            return call(*args, **kwargs)
        except TransportFailure as exc:
            if not_answering(exc):
                # not reported yet: a lost call until the first poll fails too (recover)
                self.outage = Outage.begin(sent_ns, exc)
                self._reported = False
            raise

    def recover(self) -> Outage | None:
        """Wait for the target, log in again and close the outage; TargetGone if it stays away.

        The outage (ended), or None when there was none: nothing was lost, or one call was lost
        and the target answered the first poll — a lost call, which its operation counted as
        failed with its cause, and neither an outage nor reported as one.
        """
        if self._gone is not None:
            raise TargetGone(self._gone)
        if self.outage is None:
            return None
        back_ns: list[int] = []

        def probe() -> None:
            self.inner.entity_names()
            back_ns.append(time.perf_counter_ns())
            # after an outage the target may have restarted and lost its sessions: log in
            # again. After a lost call (the first poll answered at once) the session is the
            # same, and a new login would leave the old session open on the target until it
            # expires (hours on a production ICAT).
            if self._login is not None and self._reported:
                self.inner.login(*self._login)

        def failed(exc: TransportFailure) -> None:
            assert self.outage is not None
            self.outage = self.outage.seen(exc)
            if not self._reported:  # the first poll failed as well: the target is down
                self._reported = True
                self._report(self.outage)

        if not poll_until_back(probe, self.max_wait_s, failed):
            outage = self.outage
            errors = ", ".join(f"{cause} x{n}" for cause, n in sorted(outage.errors.items()))
            self._gone = (
                f"the target stopped answering at {outage.start} and did not come back "
                f"within {self.max_wait_s:g} s ({errors})"
            )
            self._report(outage)
            raise TargetGone(self._gone)
        outage, self.outage = self.outage, None
        if not self._reported:
            return None  # a lost call: the first poll answered
        ended = outage.ended(back_ns[-1])
        self._report(ended)
        return ended

    # --- the Catalogue protocol ------------------------------------------------------------

    def login(self, authenticator: str, credentials: Mapping[str, str]) -> None:
        self._do(self.inner.login, authenticator, credentials)
        self._login = (authenticator, dict(credentials))

    def logout(self) -> None:
        # Straight through, never waiting: logging out of a target that is down is not worth
        # two minutes of a worker that is stopping.
        self._login = None
        self.inner.logout()

    def refresh(self) -> None:
        self._do(self.inner.refresh)

    def user_name(self) -> str:
        return self._do(self.inner.user_name)

    def version(self) -> str:
        return self.inner.version()  # cached by every flavour: no call to guard

    def entity_names(self) -> list[str]:
        return self._do(self.inner.entity_names)

    def entity_info(self, name: str) -> EntityInfo:
        return self._do(self.inner.entity_info, name)

    def search(self, query: str | Query) -> list[Any]:
        return self._do(self.inner.search, query)

    def get(self, query: str, obj_id: int) -> Bean:
        return self._do(self.inner.get, query, obj_id)

    def create(self, bean: Bean) -> int:
        return self._do(self.inner.create, bean)

    def create_many(self, beans: Sequence[Bean]) -> list[int]:
        return self._do(self.inner.create_many, beans)

    def update(self, bean: Bean) -> None:
        self._do(self.inner.update, bean)

    def delete(self, bean: Bean) -> None:
        self._do(self.inner.delete, bean)

    def delete_many(self, beans: Sequence[Bean]) -> None:
        self._do(self.inner.delete_many, beans)

    def close(self) -> None:
        self.inner.close()


class RawOutageGuard(OutageGuard):
    """The guard of a client that can fetch and decode apart (multi-query times both)."""

    inner: Any  # a Catalogue that is also a RawSearch

    def search_raw(self, query: str | Query) -> bytes:
        raw: bytes = self._do(self.inner.search_raw, query)
        return raw

    def decode_search(self, raw: bytes) -> list[Any]:
        found: list[Any] = self.inner.decode_search(raw)  # client work only
        return found


def guard(
    inner: Catalogue,
    max_wait_s: float = DEFAULT_WAIT_S,
    on_outage: Callable[[Outage], object] | None = None,
) -> OutageGuard:
    """``inner`` guarded, keeping what it can do beyond the protocol (a raw search)."""
    kind = RawOutageGuard if isinstance(inner, RawSearch) else OutageGuard
    return kind(inner, max_wait_s, on_outage)


# --- the parent's view ------------------------------------------------------------------------


def merge_outages(seen: Iterable[tuple[int, Outage]], **context: Any) -> list[dict[str, Any]]:
    """One ``outages`` entry per outage, however many workers saw it (overlapping times).

    An entry's end is the latest end its workers saw; None when none of them saw one (the
    target did not come back, or the run was interrupted). ``context`` (phase …) goes into each.
    """
    merged: list[dict[str, Any]] = []
    span: tuple[int, int | None] | None = None
    for index, outage in sorted(seen, key=lambda item: item[1].start_ns):
        if span is not None and (span[1] is None or outage.start_ns <= span[1]):
            entry = merged[-1]
            for cause, n in outage.errors.items():
                entry["errors"][cause] = entry["errors"].get(cause, 0) + n
            entry["workers"] = sorted({*entry["workers"], index})
            if outage.end_ns is not None and (span[1] is None or outage.end_ns > span[1]):
                span = (span[0], outage.end_ns)
                entry["end"] = outage.end
                entry["duration_s"] = round((outage.end_ns - span[0]) / 1e9, 3)
            continue
        span = (outage.start_ns, outage.end_ns)
        merged.append(outage.to_dict(**context, workers=[index]))
    return merged


def describe(entry: Mapping[str, Any]) -> str:
    """One ``notes`` line for an ``outages`` entry."""
    errors = ", ".join(f"{cause} x{n}" for cause, n in sorted(entry["errors"].items()))
    how_long = "" if entry["end"] is None else f" for {entry['duration_s']:g} s"
    back = "" if entry["end"] is not None else " and did not come back"
    return f"the target stopped answering{how_long} during {entry['phase']}{back} ({errors})"


class OutageNotes:
    """Progress lines while workers report outages: one when it starts, one when it ends."""

    def __init__(self, note: Callable[[str], object], max_wait_s: float) -> None:
        self._note = note
        self._max_wait_s = max_wait_s
        self._open: set[tuple[int, int]] = set()
        self._since: int | None = None

    def seen(self, index: int, outage: Outage) -> None:
        key = (index, outage.start_ns)
        if outage.end_ns is None:
            if not self._open:
                self._since = outage.start_ns
                self._note(
                    f"target stopped answering at {outage.start} "
                    f"({', '.join(outage.errors)}); waiting up to {self._max_wait_s:g} s"
                )
            self._open.add(key)
            return
        self._open.discard(key)
        if not self._open and self._since is not None:
            self._note(f"target back after {(outage.end_ns - self._since) / 1e9:.1f} s")
            self._since = None


class OutageWatch:
    """Outages as the open-loop threads of a sweep see them: recorded, never waited for.

    :meth:`failed` and :meth:`answered` are called by every thread after every call;
    ``answered`` costs one attribute test while nothing is wrong. As with the guard, one call
    lost and the next answered is a lost call, not an outage: an outage needs a second failure
    (another call, or a poll) before anything answers again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.current: Outage | None = None
        self._ended: list[Outage] = []

    def failed(self, exc: TransportFailure, sent_ns: int) -> None:
        if not not_answering(exc):
            return
        with self._lock:
            current = self.current
            self.current = Outage.begin(sent_ns, exc) if current is None else current.seen(exc)

    def answered(self, sent_ns: int | None = None) -> None:
        """A call was answered: the outage in progress has ended — or, when its first failed
        call was its only one, it was a lost call (counted by its step, with its cause), not an
        outage, and is forgotten. ``sent_ns``: when the call was sent (None: a poll sent now).
        A call sent before the outage began says nothing of its end (an answer already on its
        way when the target went), and is not taken for one."""
        if self.current is None:
            return
        with self._lock:
            current = self.current
            if current is not None and (sent_ns is None or sent_ns >= current.start_ns):
                if sum(current.errors.values()) > 1:
                    self._ended.append(current.ended(time.perf_counter_ns()))
                self.current = None

    def count(self, exc: TransportFailure) -> None:
        """A failed poll while the outage in progress is waited out."""
        with self._lock:
            if self.current is not None:
                self.current = self.current.seen(exc)

    def take(self) -> list[Outage]:
        """The outages seen since the last take, the one still in progress (if any) last."""
        with self._lock:
            taken, self._ended = self._ended, []
            return [*taken, self.current] if self.current is not None else taken
