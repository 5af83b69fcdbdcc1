"""Every way a run can be stopped is a stop with cleanup: SIGINT, SIGTERM and SIGHUP alike.

Ctrl-C sends SIGINT, but ``timeout``, CI runners, systemd and ``kill`` send SIGTERM, and a closed
terminal or SSH session SIGHUP. :func:`stop_signals` turns each into :class:`Stopped` — a
``KeyboardInterrupt``, so every place that already stops cleanly on Ctrl-C does so for all
three — and remembers which signal it was, for the exit code (128 + signal: 130, 143, 129).
Once a stop has begun, further signals are noted and ignored: the cleanup must finish (kill -9
stays possible; ``sv7 cleanup`` finishes the job from the journal).

Worker processes get the same handlers (:func:`worker_signals`) and, in addition, never outlive
the runner: :func:`die_with_parent` asks Linux to kill them when it dies
(``PR_SET_PDEATHSIG``) and, as a portable fallback, watches the parent's pid.
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


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


def worker_signals() -> None:
    """In a worker: SIGTERM and SIGHUP stop it as Ctrl-C does (systemd signals every process)."""
    for s in STOP_SIGNALS.values():
        signal.signal(s, _raise_interrupt if s != signal.SIGINT else signal.default_int_handler)


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
