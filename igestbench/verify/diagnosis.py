"""One cause, a one-line explanation and a hint for every check that did not pass.

What the SV reports wrote by hand as footnotes of the success matrix ("firewall", "self-signed
certificate", "non-standard port") is decided here from the exception a check raised, walking
its chain (``raise … from``) so that the most telling link wins:

* :class:`CheckFailed` — a check that found the cause itself (a certificate it inspected, a
  login the catalogue refused) names it;
* :class:`~igestbench.client.transport.TransportFailure` — its ``cause``; a TLS failure is told
  apart by OpenSSL's verify message in ``detail``;
* :class:`~igestbench.icat.faults.IcatError` — ``insufficient-privileges``, else
  ``icat-fault-<TYPE>``; an IDS's error answer (:class:`~igestbench.client.data_service.IdsFault`)
  ``insufficient-privileges`` too, else ``ids-fault``;
* ``AssertionError`` — the catalogue answered, but not what the check expected: ``wrong-result``;
* raw network errors a check did not wrap are classified like the clients' own.

Beyond the issue's list there are four causes, so that nothing is forced into a wrong one:
``connection`` (closed mid-exchange), ``tls-plain-http`` (https:// to a port that answers plain
HTTP), ``tls-handshake`` (TLS failed for another reason than the certificate, e.g. protocol
versions) and ``unexpected`` (a bug in the suite or a client).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from igestbench.client.data_service import IdsFault
from igestbench.client.transport import (
    NETWORK_ERRORS,
    TransportCause,
    TransportFailure,
    classify,
)
from igestbench.errors import Sv7Error, UsageError
from igestbench.icat.faults import IcatError, IcatInsufficientPrivileges
from igestbench.results.causes import CAUSES, explain, one_line, tls_cause


class CheckFailed(Sv7Error):
    """A check that knows why it failed: ``cause`` is one of :data:`CAUSES`."""

    def __init__(self, cause: str, detail: str, hint: str | None = None) -> None:
        if cause not in CAUSES:
            raise ValueError(f"unknown cause {cause!r}")
        super().__init__(detail)
        self.cause = cause
        self.detail = detail
        #: A hint that knows more than the cause's usual one (e.g. which variable to fix).
        self.hint = hint


@dataclass(frozen=True)
class Diagnosis:
    cause: str | None
    explanation: str
    hint: str | None

    def line(self) -> str:
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{self.cause or 'skipped'}: {self.explanation}{hint}"


def _links(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _of_transport(failure: TransportFailure) -> tuple[str, str]:
    if failure.cause is TransportCause.TLS:
        return tls_cause(failure.detail), failure.detail
    return str(failure.cause.value), str(failure)


def _check_failed(exc: BaseException) -> CheckFailed | None:
    return next((link for link in _links(exc) if isinstance(link, CheckFailed)), None)


def _cause_of(exc: BaseException) -> tuple[str, str]:
    """(cause, detail) of the most telling link of ``exc``'s chain."""
    chain = list(_links(exc))
    for link in chain:
        if isinstance(link, CheckFailed):
            return link.cause, link.detail
        if isinstance(link, TransportFailure):
            return _of_transport(link)
        if isinstance(link, IcatInsufficientPrivileges):
            return "insufficient-privileges", str(link)
        if isinstance(link, IdsFault):  # the IDS's own refusal reads like ICAT's
            if link.code == "InsufficientPrivilegesException":
                return "insufficient-privileges", str(link)
            return "ids-fault", str(link)
        if isinstance(link, IcatError):
            return f"icat-fault-{link.fault_type.value}", str(link)
    for link in chain:
        if isinstance(link, AssertionError):
            return "wrong-result", str(link) or "an assertion failed"
        if isinstance(link, UsageError):
            return "usage", str(link)
        if isinstance(link, NETWORK_ERRORS):
            return _of_transport(classify(link, "the target"))
    return "unexpected", f"{type(exc).__name__}: {exc}"


def diagnose(exc: BaseException) -> Diagnosis:
    """The diagnosis of a check that raised ``exc``."""
    cause, detail = _cause_of(exc)
    explanation, hint = explain(cause, detail)
    found = _check_failed(exc)
    if found is not None and found.cause == cause and found.hint:
        hint = found.hint  # e.g. the variable the refused password came from
    return Diagnosis(cause, explanation, hint)


def diagnose_skip(reason: str) -> Diagnosis:
    """A skipped check: no cause, the reason as its explanation (it says how to enable it)."""
    return Diagnosis(None, one_line(reason) or "skipped", None)
