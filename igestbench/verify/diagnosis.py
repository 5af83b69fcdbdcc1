"""One cause, a one-line explanation and a hint for every check that did not pass.

What the SV reports wrote by hand as footnotes of the success matrix ("firewall", "self-signed
certificate", "non-standard port") is decided here from the exception a check raised, walking
its chain (``raise … from``) so that the most telling link wins:

* :class:`CheckFailed` — a check that found the cause itself (a certificate it inspected, a
  login the catalogue refused) names it;
* :class:`~igestbench.client.transport.TransportFailure` — its ``cause``; a TLS failure is told
  apart by OpenSSL's verify message in ``detail``;
* :class:`~igestbench.icat.faults.IcatError` — ``insufficient-privileges``, else
  ``icat-fault-<TYPE>``;
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

from igestbench import redaction
from igestbench.client.transport import (
    NETWORK_ERRORS,
    TransportCause,
    TransportFailure,
    classify,
)
from igestbench.errors import Sv7Error, UsageError
from igestbench.icat.faults import IcatError, IcatExceptionType, IcatInsufficientPrivileges

_HINTS: dict[str, tuple[str, str]] = {
    # cause: (what it means, what to do)
    "dns": ("the host name does not resolve", "check the name; a site may publish it only inside"),
    "refused": (
        "nothing accepts connections on that port",
        "check the port (ICAT runs on 443, often 8181) and that the service is up",
    ),
    "timeout": (
        "no answer in time, a firewall likely drops the packets",
        "ask the site to open the port to your address, or raise --timeout",
    ),
    "connection": (
        "the connection was closed in the middle of an exchange",
        "a proxy, load balancer or overloaded server: retry, then ask the site",
    ),
    "tls-self-signed": (
        "the server presents a self-signed certificate",
        "pass --ca-file with that certificate (or --insecure to skip the check), or ask the "
        "site for a certificate from a public CA",
    ),
    "tls-unknown-ca": (
        "the certificate is issued by a CA this client does not trust (a local CA?)",
        "pass --ca-file with the site's CA certificate (or --insecure to skip the check), "
        "or ask for one from a public CA",
    ),
    "tls-expired": (
        "the certificate is outside its validity period",
        "ask the site to renew the certificate (and check this machine's clock)",
    ),
    "tls-hostname": (
        "the certificate is for another host name",
        "use the name the certificate names, or ask the site to add this one to it",
    ),
    "tls-plain-http": (
        "the port does not speak TLS (plain HTTP?)",
        "use http:// for this port, or the port the site serves HTTPS on (usually 443)",
    ),
    "tls-handshake": (
        "TLS could not be negotiated",
        "the server may offer only old protocols or ciphers: ask the site for TLS 1.2 or later",
    ),
    "http-status": (
        "the web server answered with an HTTP status ICAT does not give",
        "check the path (normally /ICATService/ICAT) and that ICAT is deployed there",
    ),
    "not-icat": (
        "what answers there is not an ICAT SOAP service",
        "check the URL: <url>?wsdl must show ICAT's WSDL",
    ),
    "auth-refused": (
        "the catalogue refused the login",
        "check authenticator, user name and password (SV7_PASSWORD_<ROLE> or --credentials)",
    ),
    "insufficient-privileges": (
        "the account may not do this",
        "ask the site for an account with write rules, or leave out the writer account",
    ),
    "wrong-result": (
        "the catalogue answered, but not what was expected",
        "check the expectation (e.g. counts in --reference-queries), then report it to the site",
    ),
    "usage": ("the options or files given are unusable", "fix the option or file named"),
    "unexpected": (
        "the check itself failed unexpectedly",
        "rerun with --debug and report the traceback to the igestbench maintainers",
    ),
}
_FAULT_HINT = "ICAT refused the request: the message says why; the server log may say more"

#: Every cause a diagnosis can name.
CAUSES: tuple[str, ...] = (
    *_HINTS,
    *(f"icat-fault-{t.value}" for t in IcatExceptionType if t is not t.INSUFFICIENT_PRIVILEGES),
)

# OpenSSL's verify messages (1.1 and 3.x spellings), most specific first.
_TLS_MESSAGES: tuple[tuple[str, str], ...] = (
    ("self-signed certificate in certificate chain", "tls-unknown-ca"),
    ("self signed certificate in certificate chain", "tls-unknown-ca"),
    ("self-signed certificate", "tls-self-signed"),
    ("self signed certificate", "tls-self-signed"),
    ("certificate has expired", "tls-expired"),
    ("certificate is not yet valid", "tls-expired"),
    ("hostname mismatch", "tls-hostname"),
    ("ip address mismatch", "tls-hostname"),
    ("unable to get local issuer certificate", "tls-unknown-ca"),
    ("unable to get issuer certificate", "tls-unknown-ca"),
    ("unable to verify the first certificate", "tls-unknown-ca"),
    # what OpenSSL makes of a plain-HTTP answer to its ClientHello (1.1/3.0, then 3.2 and later)
    ("wrong version number", "tls-plain-http"),
    ("record layer failure", "tls-plain-http"),
    ("packet length too long", "tls-plain-http"),
)


class CheckFailed(Sv7Error):
    """A check that knows why it failed: ``cause`` is one of :data:`CAUSES`."""

    def __init__(self, cause: str, detail: str) -> None:
        if cause not in CAUSES:
            raise ValueError(f"unknown cause {cause!r}")
        super().__init__(detail)
        self.cause = cause
        self.detail = detail


@dataclass(frozen=True)
class Diagnosis:
    cause: str | None
    explanation: str
    hint: str | None

    def line(self) -> str:
        hint = f" (hint: {self.hint})" if self.hint else ""
        return f"{self.cause or 'skipped'}: {self.explanation}{hint}"


def tls_cause(detail: str) -> str:
    """The TLS cause that OpenSSL's message in ``detail`` names."""
    text = detail.lower()
    return next((cause for key, cause in _TLS_MESSAGES if key in text), "tls-handshake")


def _links(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _one_line(text: str, limit: int = 240) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _of_transport(failure: TransportFailure) -> tuple[str, str]:
    if failure.cause is TransportCause.TLS:
        return tls_cause(failure.detail), failure.detail
    return str(failure.cause.value), str(failure)


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
    detail = redaction.scrub(detail)  # the diagnosis goes into result files and reports
    meaning, hint = _HINTS.get(cause, ("", _FAULT_HINT))
    explanation = f"{meaning}: {_one_line(detail)}" if meaning else _one_line(detail)
    return Diagnosis(cause, explanation, hint)


def diagnose_skip(reason: str) -> Diagnosis:
    """A skipped check: no cause, the reason as its explanation (it says how to enable it)."""
    return Diagnosis(None, _one_line(reason) or "skipped", None)
