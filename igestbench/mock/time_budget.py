"""How long a request's SQL may run, and on which connection: the store's time budget.

Every request runs inside :meth:`Store.time_budget <igestbench.mock.store.Store.time_budget>`:
its statements are stopped once they have taken ``seconds`` in all (SQLite's progress handler
reads the deadline kept here), and SQLite errors leave the block as ICAT faults
(:func:`sql_fault`). A request on the event loop (``inline_s``) reads by pread on the loop
thread's own connection, and raises :class:`RunElsewhere` for anything it must not do there; a
request in a worker borrows the connection that maps the database file while it runs, when no
other request holds it (:mod:`igestbench.mock.mapping`).
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import TYPE_CHECKING

import apsw

from igestbench.icat.faults import IcatBadParameter, IcatError, IcatInternal

if TYPE_CHECKING:
    from igestbench.mock.store import Store

#: What SQLite says when a statement exceeds one of its size limits: the query is too large.
_TOO_LARGE = (
    "too many SQL variables",
    "Expression tree is too large",
    "parser stack overflow",
    "too many terms",
    "string or blob too big",
    "too many columns",
    "LIKE or GLOB pattern too complex",
)


class TimeBudget:
    """The block of :meth:`~igestbench.mock.store.Store.time_budget`. A class, not a
    generator's context manager: it is entered once per request, and a generator (made,
    started, resumed, closed) cost several times as much as these two methods."""

    __slots__ = ("inline_s", "mapped", "seconds", "store")

    def __init__(self, store: Store, seconds: float, inline_s: float | None) -> None:
        self.store = store
        self.seconds = seconds
        self.inline_s = inline_s
        self.mapped = False

    def __enter__(self) -> None:
        store = self.store
        local = store.thread_state
        local.deadline = time.monotonic() + self.seconds
        local.inline_s = self.inline_s
        if self.inline_s is None:  # in a worker: the mapped connection, if free (mapping.py)
            try:
                self.mapped = self._lend_mapped()
            except BaseException:
                local.deadline = local.inline_s = None
                raise

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:  # fmt: skip
        store = self.store
        local = store.thread_state
        try:
            if self.mapped:
                self.mapped = False
                self._end_mapped()
        finally:
            local.deadline = None
            local.inline_s = None
        if isinstance(error, apsw.Error):
            raise sql_fault(error, self.seconds, store.stopping) from None

    def _lend_mapped(self) -> bool:
        """This thread's statements run on the mapped connection until :meth:`_end_mapped`,
        when no other request holds it (else on the thread's own, by pread); False when it
        did not take it. A nested block keeps what the outer one has."""
        store = self.store
        local = store.thread_state
        if getattr(local, "map_depth", 0):
            local.map_depth += 1
            return True
        conn = store.mapped.borrow()
        if conn is None:
            return False
        local.own = getattr(local, "conn", None), getattr(local, "statistics", None)
        local.conn, local.statistics = conn, store.mapped.statistics
        local.map_depth = 1
        return True

    def _end_mapped(self) -> None:
        """The end of a block :meth:`_lend_mapped` took the mapped connection for."""
        store = self.store
        local = store.thread_state
        local.map_depth -= 1
        if local.map_depth:
            return
        store.mapped.statistics = local.statistics
        local.conn, local.statistics = local.own
        local.own = None
        store.mapped.give_back()


class RunElsewhere(BaseException):
    """A request started on the event loop needs more than the loop may give it.

    A BaseException, like KeyboardInterrupt, so that no handler of ordinary errors on the way
    (each turns an Exception into a fault) can swallow it; transactions roll back on it.
    """


def sql_fault(exc: apsw.Error, budget_s: float, stopping: bool) -> IcatError:
    """The ICAT fault for an SQLite error that escaped the store's own checks."""
    text = str(exc)
    if text == "interrupted":
        if stopping:
            return IcatInternal("the local catalogue is shutting down")
        # ICAT has no query time limit of its own; a JPA query timeout surfaces from icat.server
        # as an unexpected persistence exception, which it reports as INTERNAL.
        return IcatInternal(
            f"the query took longer than --query-timeout ({budget_s:g} s) and was stopped"
        )
    if any(marker in text for marker in _TOO_LARGE):
        return IcatBadParameter(f"the query is too large for the local catalogue ({text})")
    return IcatInternal(f"database error: {text}")
