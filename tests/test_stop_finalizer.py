"""A stop signal that lands inside a finalizer stops the run all the same, without a traceback.

Tryout 4 #19: a SIGTERM during a run once printed ``Exception ignored in: <function
WeakValueDictionary.__init__.<locals>.remove …>`` with a traceback ending in the stop handler's
``KeyboardInterrupt: SIGINT``: the handler raised inside a weakref callback run by the garbage
collector, where Python prints an exception and drops it — and the stop with it. Here the race is
provoked deterministically: the callback itself raises the signal, so the handler runs inside it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
import weakref

import pytest

from igestbench.run.stopping import Stopped, stop_signals


class _Thing:
    pass


def _signal_inside_a_weakref_callback(signum: int) -> None:
    """Free an object whose weakref callback raises ``signum``: the handler runs in there."""
    thing = _Thing()

    def callback(ref: object) -> None:
        signal.raise_signal(signum)  # the handler runs now, inside the callback

    ref = weakref.ref(thing, callback)
    del thing
    assert ref() is None


def _wait_for_the_stop(seconds: float = 10.0) -> None:
    """Go on as the run would (it did, after a dropped stop); the stop ends this."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        time.sleep(0.01)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_stop_dropped_by_a_weakref_callback_is_raised_again_without_a_traceback(
    signum: signal.Signals, capfd: pytest.CaptureFixture[str]
) -> None:
    with stop_signals() as state:
        with pytest.raises(Stopped) as stopped:
            _signal_inside_a_weakref_callback(signum)
            _wait_for_the_stop()
        state.hold()
    assert stopped.value.signum == signum and str(stopped.value) == signum.name
    assert state.name == signum.name
    err = capfd.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err, err
    assert "still cleaning up" not in err  # the stop sent again is not a second signal


def test_a_second_signal_during_the_cleanup_is_still_only_noted(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with stop_signals() as state:
        with pytest.raises(Stopped):
            signal.raise_signal(signal.SIGTERM)
        state.hold()
        signal.raise_signal(signal.SIGTERM)  # noted, not raised: the cleanup must finish
    assert "SIGTERM received; still cleaning up" in capfd.readouterr().err


_WORKER = textwrap.dedent("""
    import signal, sys, time, weakref
    from igestbench.run.stopping import worker_signals
    from tests.test_stop_finalizer import _signal_inside_a_weakref_callback, _wait_for_the_stop

    worker_signals()
    try:
        _signal_inside_a_weakref_callback(signal.SIGTERM)
        _wait_for_the_stop()
        print("not stopped")
    except KeyboardInterrupt as exc:
        print(f"stopped: {exc}")
""")


def test_a_worker_stopped_inside_a_finalizer_stops_and_names_the_signal() -> None:
    done = subprocess.run([sys.executable, "-c", _WORKER], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.stdout.strip() == "stopped: SIGTERM", (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr
