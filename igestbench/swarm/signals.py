"""Stops of ``sv7 swarm`` under gevent: a signal becomes an exception in the main greenlet.

The master and the workers run on gevent's hub; a signal handler (``gevent.signal_handler``)
runs in a greenlet of its own, so setting a flag would stop a process only where its main
greenlet next looks — not while it waits on a slow catalogue (the probe, the login, the ingest
of the few files before the steps) or on a master that does not answer. So the handler throws
into the main greenlet, as gevent itself does with a KeyboardInterrupt raised in the hub
(``Hub.handle_system_error``): the wait there ends at once with the exception, and the process
stops through its ``except`` and ``finally`` blocks — with cleanup, and without a traceback.
"""

from __future__ import annotations

from collections.abc import Callable

import gevent

from igestbench.run.stopping import STOP_SIGNALS

__all__ = ["on_stop_signals", "raise_in_main"]


def raise_in_main(exc: BaseException, still: Callable[[], bool] = lambda: True) -> None:
    """Raise ``exc`` in the main greenlet as soon as the hub runs (from any greenlet), if
    ``still()`` says so then (the main greenlet may have begun its cleanup in the meantime)."""
    hub = gevent.get_hub()
    main = hub.parent

    def throw() -> None:
        if main is not None and not main.dead and still():
            main.throw(exc)

    hub.loop.run_callback(throw)


def on_stop_signals(handler: Callable[[int], None]) -> None:
    """Call ``handler(signum)`` on SIGINT, SIGTERM and SIGHUP (replacing Python's handlers, so
    Ctrl-C raises no KeyboardInterrupt in whatever greenlet happens to run)."""
    for signum in STOP_SIGNALS.values():
        gevent.signal_handler(signum, handler, signum)
