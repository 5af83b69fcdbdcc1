"""Run the service checks in-process and return their records and the deployment scores.

``sv7 run`` (its ``verify`` part) and ``sv7 check`` call :func:`run_verification`; it runs
pytest on ``sv_tests/`` with a :class:`~igestbench.verify.plugin.Recorder` that already holds the
parsed options, so passwords never pass through pytest's argument list. The project's own pytest
settings (``addopts``) are cleared: they belong to the project's tests, not to the checks.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from igestbench.errors import UsageError
from igestbench.results.scoring import Scores
from igestbench.verify.options import VerifyOptions
from igestbench.verify.plugin import CheckRecord, Recorder

#: Where the checks live: beside the package in a source checkout.
SV_TESTS_DIR = Path(__file__).resolve().parents[2] / "sv_tests"


@dataclass(frozen=True)
class VerificationResult:
    """The checks of one target, its scores, and what the checks measured on the way."""

    checks: tuple[CheckRecord, ...]
    scores: Scores | None
    api_version: str | None
    #: Facts the checks recorded (timings in ms, counts, authenticators …).
    facts: Mapping[str, Any] = field(default_factory=dict)
    #: pytest's exit status (0 all passed, 1 some failed, …).
    exit_status: int = 0
    #: modules of the checks that could not be imported, each with pytest's reason
    collection_errors: tuple[str, ...] = ()
    #: the checks the options' deadline kept from starting or cut off (ids, in order)
    out_of_time: tuple[str, ...] = ()
    #: how long the checks took, in seconds
    elapsed_s: float = 0.0

    @property
    def failed(self) -> tuple[CheckRecord, ...]:
        return tuple(c for c in self.checks if c.outcome in ("failed", "error"))

    def to_dict(self) -> dict[str, Any]:
        """The result file's ``checks`` and ``scores`` (see igestbench/results/layout.md)."""
        return {
            "checks": [c.to_dict() for c in self.checks],
            "scores": self.scores.to_dict() if self.scores is not None else None,
        }


class _Interrupt:
    """A pytest plugin that keeps the ``KeyboardInterrupt`` pytest caught, to raise it again.

    A stop can also land while the garbage collector runs a finaliser (a client's ``__del__``
    closing its connections), where Python drops the exception ("Exception ignored in …") and
    the checks would go on to their end. :meth:`finaliser_hook` keeps such a stop instead, and
    the next check's setup raises it, so pytest stops there as on any Ctrl-C.
    """

    def __init__(self) -> None:
        self.caught: KeyboardInterrupt | None = None
        self.dropped: KeyboardInterrupt | None = None

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        # not pytest's own Interrupted (a KeyboardInterrupt too), which ends a session whose
        # checks could not be collected: that is a result (checks-not-run), not a stop
        value = excinfo.value
        own = isinstance(value, pytest.Session.Interrupted)
        if isinstance(value, KeyboardInterrupt) and not own:
            self.caught = value

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if self.dropped is not None:
            raise self.dropped

    @property
    def stop(self) -> KeyboardInterrupt | None:
        """The stop to raise again once pytest has returned, if any came."""
        return self.caught or self.dropped

    @contextlib.contextmanager
    def finaliser_hook(self) -> Iterator[None]:
        """Within the block, a stop dropped in a finaliser is kept (and not printed); anything
        else dropped there goes where it went before."""
        previous = sys.unraisablehook

        def hook(unraisable: sys.UnraisableHookArgs) -> None:
            if isinstance(unraisable.exc_value, KeyboardInterrupt):
                self.dropped = self.dropped or unraisable.exc_value
            else:
                previous(unraisable)

        sys.unraisablehook = hook
        try:
            yield
        finally:
            sys.unraisablehook = previous


def pytest_arguments(options: VerifyOptions, quiet: bool, sv_tests: Path) -> list[str]:
    """pytest's arguments; the options themselves reach the plugin through the Recorder."""
    args = [str(sv_tests), "-o", "addopts=", "-p", "no:cacheprovider", "--strict-markers"]
    # pytest's own hook for exceptions dropped in finalisers would replace the runner's (and,
    # under the project's ``filterwarnings = error``, fail the whole session on a stop dropped
    # there); the checks do not need it
    args += ["-p", "no:unraisableexception"]
    # pytest-benchmark, where installed, makes a .benchmarks folder in the user's directory at
    # every session; the checks measure with their own timers
    args += ["-p", "no:benchmark"]
    args += ["-q"] if not quiet else ["-qq", "--no-header", "--no-summary"]
    # failures print as one-line diagnoses unless debugging; this shapes only what is left
    args += ["--tb=long" if options.debug else "--tb=short"]
    return args


def run_verification(
    options: VerifyOptions, quiet: bool = False, sv_tests: Path = SV_TESTS_DIR
) -> VerificationResult:
    """Run the checks of ``options.parts`` (all when empty) against ``options.target``.

    ``quiet``: nothing is printed (``sv7 check``); otherwise pytest's progress, the diagnoses
    and the scores go to standard output.
    """
    if not sv_tests.is_dir():
        raise UsageError(f"the service checks are not at {sv_tests}: run from a source checkout")
    recorder = Recorder(options)
    interrupt = _Interrupt()
    args = pytest_arguments(options, quiet, sv_tests)
    sink = io.StringIO()
    with contextlib.ExitStack() as stack:
        if quiet:
            stack.enter_context(contextlib.redirect_stdout(sink))
            stack.enter_context(contextlib.redirect_stderr(sink))
        stack.enter_context(interrupt.finaliser_hook())
        status = pytest.main(args, plugins=[recorder, interrupt])
    if interrupt.stop is not None:
        # pytest turned a stop (Ctrl-C, or a signal stopping.py raises as one) into an exit
        # status; the checks did not end, and whoever ran them must stop too
        raise interrupt.stop
    if status in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR):
        # pytest printed why (to the sink when quiet): pass its last words on
        said = [line for line in sink.getvalue().splitlines() if line.strip()][-1:]
        raise UsageError(
            f"the service checks could not run (pytest exit status {int(status)})"
            + (f": {said[0].strip()}" if said else "")
        )
    return VerificationResult(
        checks=tuple(recorder.records()),
        scores=recorder.scores(),
        api_version=recorder.api_version,
        facts=dict(recorder.facts),
        exit_status=int(status),
        collection_errors=tuple(recorder.collection_errors),
        out_of_time=tuple(recorder.out_of_time),
        elapsed_s=time.monotonic() - recorder.started,
    )
