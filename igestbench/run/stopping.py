"""Every way a run can be stopped is a stop with cleanup: SIGINT, SIGTERM and SIGHUP alike.

Ctrl-C sends SIGINT, but ``timeout``, CI runners, systemd and ``kill`` send SIGTERM, and a closed
terminal or SSH session SIGHUP. :func:`stop_signals` turns each into :class:`Stopped` — a
``KeyboardInterrupt``, so every place that already stops cleanly on Ctrl-C does so for all
three — and remembers which signal it was, for the exit code (128 + signal: 130, 143, 129).
Once a stop has begun, further signals are noted and ignored: the cleanup must finish (kill -9
stays possible; ``sv7 cleanup`` finishes the job from the journal).

A stop must come within seconds from any part (systemd allows 90 s before SIGKILL, CI runners
less), so no part may swallow one: pytest, which runs the service checks in this process, catches
``KeyboardInterrupt`` and returns an exit status instead; :meth:`StopState.check` raises the stop
again where a part like that hands control back.

Worker processes get the same handlers (:func:`worker_signals`), raised once: a worker that is
already stopping (its answer on its way to the runner) is not interrupted again by a second
signal — a Ctrl-C reaches it from the terminal *and* from the runner. A worker that is still
starting (a spawned interpreter importing its modules) must not die of a ``KeyboardInterrupt``
with a traceback, nor of a start cut in half by one: the runner starts workers with the stop
signals kept back (:func:`starting_a_process`), a worker inherits them blocked and unblocks them
(:func:`unblock_stop_signals`) once its handlers are in place, so a signal that came early is
delivered there and stops it like any other. The runner passes the signal it got on to its
workers, so that a worker stopped by a SIGTERM says SIGTERM. Workers never outlive the runner:
:func:`die_with_parent` asks Linux to kill them when it dies (``PR_SET_PDEATHSIG``) and, as a
portable fallback, watches the parent's pid.

A handler runs between two bytecodes of the main thread, wherever that is — also inside a
finalizer or a weakref callback (``WeakValueDictionary``'s ``remove``, run when the garbage
collector frees a value), where an exception cannot travel: Python prints ``Exception ignored
in …`` with a traceback and drops it (tryout 4 #19). So while the handlers are installed,
``sys.unraisablehook`` is ours too: a dropped :class:`Stopped` is not printed, and the same
signal is sent to the main thread again :data:`RELAY_S` later (:func:`_relay`), when the
finalizer has returned, where the handler raises it again — a real signal, so that a main thread
blocked in a system call by then wakes as it did for the first. Anything else unraisable goes to
the hook that was there before.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

#: The signals that stop a run with cleanup, by name.
STOP_SIGNALS: dict[str, signal.Signals] = {
    "SIGINT": signal.SIGINT,
    "SIGTERM": signal.SIGTERM,
    **({"SIGHUP": signal.SIGHUP} if hasattr(signal, "SIGHUP") else {}),
}
#: After a stop was dropped (raised inside a finalizer), how long until it is raised again.
RELAY_S = 0.05
#: How often a worker looks whether its parent is still there (the fallback to pdeathsig).
PARENT_CHECK_S = 0.2
_PR_SET_PDEATHSIG = 1


class Stopped(KeyboardInterrupt):
    """The run was told to stop by a signal."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def exit_code(signum: int) -> int:
    """The shell's convention: 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP)."""
    return 128 + signum


@dataclass
class StopState:
    """Which signal stopped the run (None: none yet)."""

    signum: int | None = None
    #: Set once the cleanup has begun: a signal is then noted, not raised.
    held: bool = False
    #: The stop was raised (and not dropped by a finalizer: then it is raised again).
    raised: bool = False
    #: A dropped stop's signal is on its way again (the next one is that, not a second signal).
    relaying: bool = False
    #: The handlers are installed: a dropped stop is sent again only then.
    active: bool = True
    #: Whether a second signal is said on stderr (the runner's; a worker's is quiet).
    announce: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def hold(self) -> None:
        self.held = True

    def check(self) -> None:
        """Raise :class:`Stopped` if a signal came and was swallowed on its way (pytest catches
        ``KeyboardInterrupt`` and returns); call it where such a part hands control back."""
        if self.signum is not None and not self.held:
            raise Stopped(self.signum)

    def take(self, signum: int) -> bool:
        """A stop signal came (the handler's part): True when it must be raised now; says
        so on stderr when it is a second signal while the cleanup runs."""
        relayed, self.relaying = self.relaying, False
        if self.signum is None:
            self.signum = signum
        if not self.active:
            return False  # a dropped stop sent again after the handlers went: nothing to do
        if not self.raised and not self.held:
            self.raised = True
            return True
        if not relayed and self.announce:
            name = signal.Signals(signum).name
            print(f"sv7: {name} received; still cleaning up, please wait", file=sys.stderr,
                  flush=True)  # fmt: skip
        return False

    @property
    def name(self) -> str:
        return signal.Signals(self.signum or signal.SIGINT).name

    @property
    def exit_code(self) -> int:
        return exit_code(self.signum or signal.SIGINT)


def _relay(state: StopState) -> None:
    """Send the stop's signal to the main thread again, :data:`RELAY_S` from now (if the
    handlers are still installed then)."""
    signum = state.signum
    main = threading.main_thread().ident
    if signum is None or main is None:
        return
    state.raised, state.relaying = False, True

    def send() -> None:
        time.sleep(RELAY_S)
        with state.lock:
            if state.active:
                signal.pthread_kill(main, signum)

    threading.Thread(target=send, name="sv7-stop-relay", daemon=True).start()


def _relay_dropped_stops(state: StopState) -> Callable[[], None]:
    """From now on a :class:`Stopped` that Python dropped (raised inside a finalizer or a
    weakref callback) is not printed but raised again (:func:`_relay`); the function returned
    ends that."""
    previous = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, Stopped) and state.raised:
            _relay(state)
            return
        previous(unraisable)

    def end() -> None:
        with state.lock:
            state.active = False
        _checkpoint()  # a signal sent again just before: handled now, by the handler still here
        if sys.unraisablehook is hook:
            sys.unraisablehook = previous

    sys.unraisablehook = hook
    return end


def _checkpoint() -> None:
    """Nothing: calling a Python function lets the interpreter run the handlers of signals
    that came (it looks for them as a function begins)."""


@contextlib.contextmanager
def stop_signals() -> Iterator[StopState]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise :class:`Stopped` once, then are noted
    only (as is any signal after :meth:`StopState.hold`). A stop dropped by a finalizer is
    raised again (see the module docstring).

    Outside the main thread (where Python cannot install handlers) this does nothing.
    """
    state = StopState()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        if state.take(signum):
            raise Stopped(signum)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS.values()}
    end_relay = _relay_dropped_stops(state)
    try:
        yield state
    finally:
        end_relay()
        for s, old in previous.items():
            signal.signal(s, old)


def worker_signals() -> StopState:
    """In a worker: SIGINT, SIGTERM and SIGHUP stop it as Ctrl-C does (systemd signals every
    process), once; after that, and after :meth:`StopState.hold`, a signal is ignored (the
    runner kills a worker that does not end in time).
    """
    state = StopState(announce=False)

    def handler(signum: int, frame: FrameType | None) -> None:
        if state.take(signum):
            raise Stopped(signum)  # a KeyboardInterrupt naming the signal

    for s in STOP_SIGNALS.values():
        signal.signal(s, handler)
    # for the process's lifetime: a stop dropped by a finalizer is raised again, not printed
    _relay_dropped_stops(state)
    return state


_MASKABLE = hasattr(signal, "pthread_sigmask")


@contextlib.contextmanager
def starting_a_process() -> Iterator[None]:
    """Around the start of a process (a worker; multiprocessing's resource tracker, which it
    starts with the first semaphore): a stop signal neither cuts the start in half — the child
    would read half of what it is sent and die with a traceback — nor reaches the child before
    its handlers are in place. It is kept, and raised here once the start is done; the child
    inherits the stop signals blocked: a worker unblocks them (:func:`unblock_stop_signals`),
    the resource tracker only those it ignores (SIGINT, SIGTERM) — a SIGHUP to the process
    group, a closed terminal, would kill it, and the one started after it prints tracebacks."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kept: list[int] = []

    def keep(signum: int, frame: FrameType | None) -> None:
        kept.append(signum)

    previous = {s: signal.signal(s, keep) for s in STOP_SIGNALS.values()}
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, set(STOP_SIGNALS.values())) if (
        _MASKABLE) else None  # fmt: skip
    try:
        yield
    finally:
        if blocked is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # one waiting is kept now
        for s, old in previous.items():
            signal.signal(s, old)
        for signum in dict.fromkeys(kept):
            signal.raise_signal(signum)  # to the handlers of the run, as if it came now


def unblock_stop_signals() -> None:
    """In a worker whose handlers are in place: take the stop signals (one that came while it
    started is delivered now)."""
    if _MASKABLE:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, set(STOP_SIGNALS.values()))


def die_with_parent(parent_pid: int) -> None:
    """Make sure this process does not outlive ``parent_pid``, its parent.

    On Linux the kernel sends SIGKILL the moment the parent dies. Everywhere, a daemon thread
    checks every :data:`PARENT_CHECK_S` whether the parent is still ours and ends the process
    at once if not: nothing a worker could still do is worth creating objects nobody will
    clean up — the run's journal (beside the result file) names what it created so far.
    """
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_S)
        os._exit(exit_code(signal.SIGKILL))

    if os.getppid() != parent_pid:  # died before the kernel was asked
        os._exit(exit_code(signal.SIGKILL))
    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
