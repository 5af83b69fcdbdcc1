"""The suite's own calls that are safe to repeat, repeated when one is lost.

A run makes many calls for its own bookkeeping besides those it measures: the cleanup after each
workload (a login, tens of survey searches, deleteMany), ownership checks, a logout, the target's
REST version. On a flaky network — or ``sv7 serve --drop-rate 0.02`` — one of a hundred such calls
loses its connection now and then; before, that one call stopped the whole run as "the target
cannot be reached". Here each such call is tried again, at most :attr:`RepeatPolicy.tries` times
with a short, growing pause, when it failed in a way that a second try can mend
(:func:`worth_repeating`: the connection closed mid-exchange, a gateway's 502/503/504, ICAT's
INTERNAL) — and only when repeating it cannot change what the server holds:

* reads (``search``, ``get``, ``getUserName``, ``getEntityNames`` …) and ``login`` (a lost one
  leaves at most a session that expires) are repeated as they are;
* ``logout`` is repeated, and a SESSION fault on a repeat means the lost one went through;
* ``delete``/``deleteMany`` (the run's own objects) are *confirmed by reading*: after a lost
  call the objects still there are looked up and only those deleted again — the lost call may
  have done its work before the connection went;
* ``create``, ``createMany`` and ``update`` are never repeated: a create whose answer was lost may
  have been made, and a second would make it twice.

The calls a workload *measures* never come through here (their clients are the workers',
:mod:`igestbench.run.outage`): a lost measured call is an error in that workload's figures, and
repeating it would hide the error and change the reading. A failure that repeating cannot mend
(refused, timed out, a wrong answer) is raised at once; whether the target is gone is the
runner's question (:mod:`igestbench.run.own_calls`), not this module's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from igestbench.client import connect
from igestbench.client.base import Catalogue, ClientConfig
from igestbench.client.transport import TransportCause, TransportFailure
from igestbench.icat.beans import Bean
from igestbench.icat.entity_info import EntityInfo
from igestbench.icat.faults import IcatError, IcatInternal, IcatNoSuchObject, IcatSession
from igestbench.icat.query import Condition, Query

_T = TypeVar("_T")

#: What a proxy or load balancer answers for a catalogue behind it that did not (this time).
GATEWAY_STATUSES = frozenset({502, 503, 504})


def worth_repeating(exc: BaseException) -> bool:
    """Whether a second try may succeed where ``exc`` ended the first: the connection was lost
    mid-exchange, a gateway gave up on this one call, or ICAT failed internally. Not a refused
    connection, a timeout (each try would wait as long again: the runner waits for a target
    that stopped answering, :mod:`igestbench.run.own_calls`), a TLS or a wrong answer."""
    if isinstance(exc, IcatInternal):
        return True
    if not isinstance(exc, TransportFailure):
        return False
    return exc.cause is TransportCause.CONNECTION or (
        exc.cause is TransportCause.HTTP_STATUS and exc.status in GATEWAY_STATUSES
    )


@dataclass
class RepeatPolicy:
    """How often, and how far apart, a lost call is tried again; counts what it repeated."""

    #: tries in all (the first and its repeats): at 2 % of connections lost, four in a row are
    #: lost once in six million calls
    tries: int = 4
    #: the pause before the first repeat, growing by ``factor`` (0.1, 0.4, 1.6 s: 2.1 s at most)
    first_pause_s: float = 0.1
    factor: float = 4.0
    sleep: Callable[[float], object] = field(default=time.sleep, repr=False)
    #: calls repeated so far (shared by every client that uses this policy)
    repeated: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def call(self, call: Callable[[], _T], lost: Callable[[BaseException], object] | None = None,
             ) -> _T:  # fmt: skip
        """``call()``, tried again after a failure :func:`worth_repeating`; ``lost(exc)`` is
        called before each repeat (a delete confirms there what the lost call did)."""
        pause = self.first_pause_s
        for attempt in range(1, self.tries + 1):
            try:
                return call()
            except (TransportFailure, IcatError) as exc:
                if attempt == self.tries or not worth_repeating(exc):
                    raise
                with self._lock:
                    self.repeated += 1
                self.sleep(pause)
                pause *= self.factor
                if lost is not None:
                    lost(exc)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises


class _Done(Exception):
    """A lost call proved to have done its work (raised by a confirmation, caught here)."""


class Repeating:
    """A :class:`~igestbench.client.base.Catalogue` for the suite's own calls: those safe to
    repeat are repeated when lost (see the module docstring), the others go through once."""

    def __init__(self, inner: Catalogue, policy: RepeatPolicy | None = None) -> None:
        #: the client underneath (``inner``, as the IDS finds its session: data_service.py)
        self.inner = inner
        self.flavour = inner.flavour
        self.policy = policy or RepeatPolicy()
        make_sibling = getattr(inner, "sibling", None)
        #: another connection in the same session, repeating as this one (cleanup's lanes)
        self.sibling: Callable[[], Repeating] | None = None
        if make_sibling is not None:
            self.sibling = lambda: Repeating(make_sibling(), self.policy)

    def __repr__(self) -> str:
        return f"<Repeating {self.inner!r}>"

    def _read(self, call: Callable[..., _T], *args: Any) -> _T:
        return self.policy.call(lambda: call(*args))

    # --- sessions: a lost login leaves a session that expires; a repeated logout is done ----

    def login(self, authenticator: str, credentials: Mapping[str, str]) -> None:
        self._read(self.inner.login, authenticator, credentials)

    def logout(self) -> None:
        repeated = False

        def once() -> None:
            try:
                self.inner.logout()
            except IcatSession:
                if not repeated:
                    raise  # the session was gone before: say so, as the client would
                # the lost logout ended the session before its answer went missing

        def lost(exc: BaseException) -> None:
            nonlocal repeated
            repeated = True

        self.policy.call(once, lost)

    def refresh(self) -> None:
        self._read(self.inner.refresh)

    # --- reads ------------------------------------------------------------------------------

    def user_name(self) -> str:
        return self._read(self.inner.user_name)

    def version(self) -> str:
        return self.inner.version()  # cached by every flavour

    def entity_names(self) -> list[str]:
        return self._read(self.inner.entity_names)

    def entity_info(self, name: str) -> EntityInfo:
        return self._read(self.inner.entity_info, name)

    def search(self, query: str | Query) -> list[Any]:
        return self._read(self.inner.search, query)

    def get(self, query: str, obj_id: int) -> Bean:
        return self._read(self.inner.get, query, obj_id)

    # --- writes: never repeated -------------------------------------------------------------

    def create(self, bean: Bean) -> int:
        return self.inner.create(bean)

    def create_many(self, beans: Sequence[Bean]) -> list[int]:
        return self.inner.create_many(beans)

    def update(self, bean: Bean) -> None:
        self.inner.update(bean)

    # --- deletes of the run's own objects: confirmed by reading -----------------------------

    def delete(self, bean: Bean) -> None:
        self.delete_many([bean], one=True)

    def delete_many(self, beans: Sequence[Bean], *, one: bool = False) -> None:
        """``beans`` deleted; after a lost call only those still there are deleted again.
        A NO_SUCH_OBJECT of a repeat names its index in ``beans``, as the first call's would."""
        pending = list(beans)

        def once() -> None:
            if not pending:
                raise _Done
            try:
                if one:
                    self.inner.delete(pending[0])
                else:
                    self.inner.delete_many(pending)
            except IcatNoSuchObject as exc:
                if len(pending) == len(beans) or not 0 <= exc.offset < len(pending):
                    raise
                at = next(i for i, b in enumerate(beans) if b is pending[exc.offset])
                raise IcatNoSuchObject(exc.message, at) from exc

        def lost(exc: BaseException) -> None:
            pending[:] = self._still_there(pending)

        try:
            self.policy.call(once, lost)
        except _Done:
            return

    def _still_there(self, beans: Sequence[Bean]) -> list[Bean]:
        """Those of ``beans`` the server still holds (one read per entity, repeated if lost)."""
        by_entity: dict[str, set[int]] = {}
        for bean in beans:
            by_entity.setdefault(bean.entity, set()).add(int(bean.id or 0))
        found: set[tuple[str, int]] = set()
        for entity, ids in by_entity.items():
            query = Query(entity).select("id").where({"id": Condition("IN", sorted(ids))})
            found |= {(entity, int(i)) for i in self.search(query)}
        return [b for b in beans if (b.entity, int(b.id or 0)) in found]

    def close(self) -> None:
        self.inner.close()


def repeated_note(count: int) -> str:
    """The result file's note of how many of the suite's own calls were repeated."""
    return (f"{count} of the runner's own calls (its logins, cleanups and ownership checks; "
            "never a measured one) lost their connection or met an INTERNAL fault and were "
            "repeated")


def own_client(
    config: ClientConfig, flavour: str = "lean", policy: RepeatPolicy | None = None
) -> Repeating:
    """A client for the suite's own calls: connected (the version read, repeated if lost) and
    wrapped in :class:`Repeating`, not yet logged in."""
    policy = policy or RepeatPolicy()
    return Repeating(policy.call(lambda: connect(config, flavour)), policy)
