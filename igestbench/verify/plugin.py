"""The pytest plugin of the service checks: options, markers, header, version gates, records.

``sv_tests/conftest.py`` loads it (``pytest_plugins``), so ``pytest sv_tests --target URL``
works by hand; :func:`igestbench.verify.runner.run_verification` runs the same checks in-process
with a :class:`Recorder` that carries the options already parsed (passwords never pass through
an argument list).

Every check is marked with its part (``@pytest.mark.part("tls")``; ``severity="warning"`` for
checks whose failure alone makes ``sv7 check`` say WARNING rather than CRITICAL) and may be
gated on the server's API version (``@pytest.mark.icat_version(">=4.9")``). The recorder keeps,
per check, the outcome, part, duration and diagnosis, and replaces pytest's traceback by the
one-line diagnosis unless ``--sv7-debug`` is given.

PYTEST_DONT_REWRITE: the runner and the checks import this module before pytest loads it as a
plugin, which pytest would otherwise warn about (an error under ``filterwarnings = error``);
it has no assertions to rewrite.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from igestbench import redaction
from igestbench.client.base import ClientConfig
from igestbench.client.deadline import budget, grace
from igestbench.errors import Sv7Error, UsageError
from igestbench.results.scoring import Scores, score_target
from igestbench.verify.diagnosis import Diagnosis, diagnose, diagnose_skip
from igestbench.verify.options import (
    PARTS,
    VerifyOptions,
    options_from,
    register,
    values_from_pytest,
)
from igestbench.verify.rawsoap import RawSoap

OPTIONS_KEY = pytest.StashKey[VerifyOptions]()
VERSION_KEY = pytest.StashKey[str | None]()
VERSION_ERROR_KEY = pytest.StashKey[str]()
#: The check whose exchange ran out of --timeout where the basics are checked (BASIC_PARTS).
TIMED_OUT_KEY = pytest.StashKey[str]()
#: Parts without which nothing else can work: a target too slow for them (a check ran out of
#: --timeout) is not asked again, each later check would only wait as long for the same
#: verdict (a trickling server made sv7 check --timeout 5 take 70 s).
BASIC_PARTS = frozenset({"connectivity", "tls", "soap", "session"})
TIMEOUTS = frozenset({"connect-timeout", "timeout"})
#: When the checks' overall deadline ends (time.monotonic()), where one is set (--deadline).
DEADLINE_KEY = pytest.StashKey[float]()
#: How a check the deadline kept from starting, or cut off, is recorded (a skip's reason).
OUT_OF_TIME = "not done: the deadline"
#: A cleanup (a logout) after the deadline ran out still gets this long, or --timeout if
#: shorter: the probe logs out of what it opened, and ends soon after its deadline.
CLEANUP_GRACE_S = 5.0
#: Prefix of the user properties that carry facts for scoring and perfdata.
FACT_PREFIX = "sv7:"
_VERSION_SPEC = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+)*)\s*$")


@dataclass(frozen=True)
class CheckRecord:
    """One check as the result file holds it (``severity`` stays out of the file)."""

    id: str
    part: str
    outcome: str
    duration_s: float
    cause: str | None
    explanation: str | None
    hint: str | None
    severity: str = "error"

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "part": self.part,
            "outcome": self.outcome,
            "duration_s": round(self.duration_s, 6),
            "cause": self.cause,
            "explanation": self.explanation,
            "hint": self.hint,
        }


@dataclass
class _Entry:
    part: str
    severity: str
    outcome: str = "passed"
    duration_s: float = 0.0
    diagnosis: Diagnosis | None = None


def _check_id(item: pytest.Item) -> str:
    # independent of where pytest's rootdir happens to be
    return "::".join([f"sv_tests/{item.path.name}", *item.nodeid.split("::")[1:]])


class Recorder:
    """Collects each check's record and the facts the checks report."""

    def __init__(self, options: VerifyOptions | None = None) -> None:
        #: Options parsed elsewhere (the runner); None: from pytest's command line.
        self.options = options
        self.api_version: str | None = None
        self.facts: dict[str, Any] = {}
        self._entries: dict[str, _Entry] = {}
        #: modules of the checks that could not be collected (imported), with pytest's reason
        self.collection_errors: list[str] = []
        #: when the checks began: the deadline counts from here
        self.started = time.monotonic()
        #: the checks the deadline kept from starting or cut off, in order
        self.out_of_time: list[str] = []

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, None, None]:
        with within_deadline(item.config):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        with within_deadline(item.config):
            return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(
        self, item: pytest.Item, nextitem: pytest.Item | None
    ) -> Generator[None, None, None]:
        # fixtures' teardowns are cleanups (logouts): after the deadline each gets its grace
        with within_deadline(item.config, cleanup=True):
            return (yield)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            said = [line.strip() for line in str(report.longrepr).splitlines() if line.strip()]
            # pytest's "E   ModuleNotFoundError: No module named 'x'" line says it best
            reason = next((line for line in reversed(said) if line.startswith("E ")),
                          said[-1] if said else "cannot be collected")
            where = report.nodeid or "sv_tests"
            self.collection_errors.append(f"{where}: {reason.removeprefix('E').strip()}")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        marker = item.get_closest_marker("part")
        key = _check_id(item)
        entry = self._entries.setdefault(
            key,
            _Entry(marker.args[0], marker.kwargs.get("severity", "error"))
            if marker
            else _Entry("", "error"),
        )
        entry.duration_s += report.duration
        self.facts.update(
            (name[len(FACT_PREFIX) :], value)
            for name, value in item.user_properties
            if name.startswith(FACT_PREFIX)
        )
        excinfo = call.excinfo
        if excinfo is None or entry.outcome != "passed":
            return report  # passed, or the first failure of this check is already recorded
        if report.skipped:
            entry.outcome = "skipped"
            entry.diagnosis = diagnose_skip(str(excinfo.value))
            if str(excinfo.value).startswith(OUT_OF_TIME):
                self.out_of_time.append(key)
        elif report.failed and past_deadline(item.config) and (
            diagnose(excinfo.value).cause in TIMEOUTS
        ):
            # the deadline's budget ended its call: not the target's verdict but the probe's
            # bound (a check that failed for its own reason before then keeps its failure)
            entry.outcome = "skipped"
            entry.diagnosis = diagnose_skip(f"{OUT_OF_TIME} ran out during this check")
            self.out_of_time.append(key)
            if not item.config.stash[OPTIONS_KEY].debug:
                report.longrepr = entry.diagnosis.line()
        elif report.failed:
            entry.outcome = "failed" if call.when == "call" else "error"
            entry.diagnosis = diagnose(excinfo.value)
            if entry.diagnosis.cause in TIMEOUTS and entry.part in BASIC_PARTS:
                item.config.stash.setdefault(TIMED_OUT_KEY, key)
            if not item.config.stash[OPTIONS_KEY].debug:
                report.longrepr = entry.diagnosis.line()
        return report

    def records(self) -> list[CheckRecord]:
        out = []
        for key, e in self._entries.items():
            d = e.diagnosis
            out.append(
                CheckRecord(
                    key,
                    e.part,
                    e.outcome,
                    e.duration_s,
                    d.cause if d else None,
                    d.explanation if d else None,
                    d.hint if d else None,
                    e.severity,
                )
            )
        return out

    def scores(self) -> Scores | None:
        target = self.options.target if self.options else None
        return score_target(target, self.facts) if target else None

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        records = [r for r in self.records() if r.outcome in ("failed", "error")]
        if records:
            terminalreporter.section("sv7 diagnosis")
            for r in records:
                terminalreporter.line(f"{r.outcome.upper()} {r.id} [{r.part}] {r.cause}")
                terminalreporter.line(f"    {r.explanation}")
                terminalreporter.line(f"    hint: {r.hint}")
        scores = self.scores()
        if scores is not None:
            terminalreporter.section("sv7 deployment scores")
            for name, s in scores.to_dict().items():
                value = "?" if s["score"] is None else s["score"]
                terminalreporter.line(f"{name}: {s['level']} {value}/{s['max']} ({s['evidence']})")


def _recorder(config: pytest.Config) -> Recorder | None:
    return next((p for p in config.pluginmanager.get_plugins() if isinstance(p, Recorder)), None)


def pytest_addoption(parser: pytest.Parser) -> None:
    register(parser.getgroup("sv7", "service verification (sv7)").addoption, pytest=True)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"part(name, severity='error', writes=False): the part of a service check "
        f"({', '.join(PARTS)}); writes: it creates data (left out by sv7 check)",
    )
    config.addinivalue_line(
        "markers", "icat_version(spec): run only on servers of that API version, e.g. '>=4.9'"
    )
    recorder = _recorder(config)
    if recorder is None:
        recorder = Recorder()
        config.pluginmanager.register(recorder, "sv7-recorder")
    if recorder.options is None:
        from igestbench.accounts import load_logins

        values = values_from_pytest(config.getoption)
        try:
            # a hand-run suite: the accounts as every sv7 command resolves them (the default
            # one from SV7_AUTH/SV7_USER/SV7_PASSWORD or sv7.toml, roles on top); no prompt
            logins = load_logins(values["account"] or (), values["credentials"], values["config"])
            recorder.options = options_from(values, logins)
        except UsageError as exc:
            raise pytest.UsageError(str(exc)) from None
    config.stash[OPTIONS_KEY] = recorder.options
    config.stash[VERSION_KEY] = None
    if recorder.options.deadline is not None:
        config.stash[DEADLINE_KEY] = recorder.started + recorder.options.deadline
    # pytest's log capture shows the records of a failed check: no secret in them either
    redaction.install_record_redaction()
    for account in recorder.options.accounts:
        redaction.remember(account.password)


def past_deadline(config: pytest.Config) -> bool:
    """Whether the checks' overall deadline (if any) has run out."""
    end = config.stash.get(DEADLINE_KEY, None)
    return end is not None and time.monotonic() >= end


@contextlib.contextmanager
def within_deadline(config: pytest.Config, cleanup: bool = False) -> Iterator[None]:
    """Every call of the block ends by the overall deadline (if any): a call in flight when it
    runs out fails as a timeout (:mod:`igestbench.client.deadline`). ``cleanup``: the block
    gets its grace after the deadline (see :func:`cleaning_up`)."""
    end = config.stash.get(DEADLINE_KEY, None)
    if end is None:
        yield
        return
    with budget(max(end - time.monotonic(), 0.0)):
        if cleanup:
            with cleaning_up(config.stash[OPTIONS_KEY]):
                yield
        else:
            yield


def cleaning_up(options: VerifyOptions) -> contextlib.AbstractContextManager[None]:
    """Around a logout: after the overall deadline it still gets CLEANUP_GRACE_S (or
    --timeout if shorter); without a deadline nothing changes."""
    return grace(min(CLEANUP_GRACE_S, options.timeout))


def client_config(options: VerifyOptions) -> ClientConfig:
    if options.target is None:
        raise UsageError("no --target")
    return ClientConfig(
        options.target,
        connect_timeout=options.timeout,
        read_timeout=options.timeout,
        ca_file=options.ca_file,
        insecure=options.insecure,
    )


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Ask the server its API version once, before the header shows it and gates use it."""
    config = session.config
    options = config.stash[OPTIONS_KEY]
    if options.target is None:
        return
    try:
        with within_deadline(config), RawSoap(client_config(options)) as soap:
            config.stash[VERSION_KEY] = soap.api_version
    except Sv7Error as exc:
        config.stash[VERSION_ERROR_KEY] = diagnose(exc).cause or ""
    recorder = _recorder(config)
    if recorder is not None:
        recorder.api_version = config.stash[VERSION_KEY]


def pytest_report_header(config: pytest.Config) -> list[str]:
    options = config.stash[OPTIONS_KEY]
    if options.target is None:
        return ["sv7 target: none (every check skips; pass --target URL)"]
    version = config.stash[VERSION_KEY] or f"unknown ({config.stash.get(VERSION_ERROR_KEY, '')})"
    roles = ", ".join(f"{a.role}={a.user_name}" for a in options.accounts) or "none"
    return [
        f"sv7 target: {options.target} (site {options.site or 'unnamed'})",
        f"ICAT API version: {version}; accounts: {roles}",
    ]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    options = config.stash[OPTIONS_KEY]
    unmarked = [i.nodeid for i in items if i.get_closest_marker("part") is None]
    if unmarked:
        raise pytest.UsageError(f"service checks without a part marker: {', '.join(unmarked)}")
    parts = {i.nodeid: str(i.get_closest_marker("part").args[0]) for i in items}  # type: ignore[union-attr]
    if options.parts or options.read_only:
        keep = [i for i in items if (not options.parts or parts[i.nodeid] in options.parts)
                and not (options.read_only and _writes(i))]
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep
    # in the order a client meets them (files sort by name); stable, so modules stay together
    items.sort(key=lambda i: PARTS.index(parts[i.nodeid]))
    if options.target is None:
        skip = pytest.mark.skip(reason="no target: run with --target https://host/ICATService/ICAT")
        for item in items:
            item.add_marker(skip)


def _writes(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("part")
    return bool(marker is not None and marker.kwargs.get("writes"))


def _version_tuple(text: str) -> tuple[int, ...]:
    numbers = re.match(r"\d+(?:\.\d+)*", text.strip())
    return tuple(int(n) for n in numbers.group(0).split(".")) if numbers else ()


def version_satisfies(version: str, spec: str) -> bool:
    """Whether ``version`` (``6.2.0``) satisfies ``spec`` (``>=4.9``)."""
    match = _VERSION_SPEC.match(spec)
    if match is None:
        raise UsageError(f"icat_version({spec!r}): expected e.g. '>=4.9'")
    have, want = _version_tuple(version), _version_tuple(match[2])
    width = max(len(have), len(want))
    have, want = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
    compare: Mapping[str, bool] = {
        ">=": have >= want, "<=": have <= want, "==": have == want,
        "!=": have != want, ">": have > want, "<": have < want,
    }  # fmt: skip
    return compare[match[1]]


def pytest_runtest_setup(item: pytest.Item) -> None:
    stash, timeout = item.config.stash, item.config.stash[OPTIONS_KEY].timeout
    if past_deadline(item.config):
        deadline = item.config.stash[OPTIONS_KEY].deadline
        pytest.skip(f"{OUT_OF_TIME} ({deadline:g} s) ran out before this check")
    timed_out = stash.get(TIMED_OUT_KEY, None)
    if timed_out is not None:
        pytest.skip(f"not attempted: {timed_out} got no answer within --timeout "
                    f"({timeout:g} s); the target is not asked again")  # fmt: skip
    marker = item.get_closest_marker("icat_version")
    version = item.config.stash[VERSION_KEY]
    # an unknown version gates nothing: the check itself then shows why the server is unreachable
    if (
        marker is not None
        and version is not None
        and not version_satisfies(version, marker.args[0])
    ):
        pytest.skip(f"needs ICAT {marker.args[0]}, the server runs {version}")
