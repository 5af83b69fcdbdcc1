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
delivered there and stops it like any other. Workers never outlive the runner:
:func:`die_with_parent` asks Linux to kill them when it dies (``PR_SET_PDEATHSIG``) and, as a
portable fallback, watches the parent's pid.
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
from collections.abc import Iterator
from dataclasses import dataclass
from types import FrameType

#: The signals that stop a run with cleanup, by name.
STOP_SIGNALS: dict[str, signal.Signals] = {
    "SIGINT": signal.SIGINT,
    "SIGTERM": signal.SIGTERM,
    **({"SIGHUP": signal.SIGHUP} if hasattr(signal, "SIGHUP") else {}),
}
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

    def hold(self) -> None:
        self.held = True

    def check(self) -> None:
        """Raise :class:`Stopped` if a signal came and was swallowed on its way (pytest catches
        ``KeyboardInterrupt`` and returns); call it where such a part hands control back."""
        if self.signum is not None and not self.held:
            raise Stopped(self.signum)

    @property
    def name(self) -> str:
        return signal.Signals(self.signum or signal.SIGINT).name

    @property
    def exit_code(self) -> int:
        return exit_code(self.signum or signal.SIGINT)


@contextlib.contextmanager
def stop_signals() -> Iterator[StopState]:
    """Within the block, SIGINT, SIGTERM and SIGHUP raise :class:`Stopped` once, then are noted
    only (as is any signal after :meth:`StopState.hold`).

    Outside the main thread (where Python cannot install handlers) this does nothing.
    """
    state = StopState()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        first = state.signum is None
        if first:
            state.signum = signum
        if first and not state.held:
            raise Stopped(signum)
        name = signal.Signals(signum).name
        print(f"sv7: {name} received; still cleaning up, please wait", file=sys.stderr, flush=True)

    previous = {s: signal.signal(s, handler) for s in STOP_SIGNALS.values()}
    try:
        yield state
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def worker_signals() -> StopState:
    """In a worker: SIGINT, SIGTERM and SIGHUP stop it as Ctrl-C does (systemd signals every
    process), once; after that, and after :meth:`StopState.hold`, a signal is ignored (the
    runner kills a worker that does not end in time).
    """
    state = StopState()

    def handler(signum: int, frame: FrameType | None) -> None:
        if state.signum is None and not state.held:
            state.signum = signum
            raise KeyboardInterrupt(signal.Signals(signum).name)

    for s in STOP_SIGNALS.values():
        signal.signal(s, handler)
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
