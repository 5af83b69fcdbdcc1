"""The wire under every client flavour: addresses, TLS, HTTP sessions, SOAP answers, failures.

Each concern is decided here once, so the three flavours cannot drift apart:

* **Addresses** are read by :mod:`igestbench.icat.endpoint` (shared with the merge and the
  report).
* **TLS.** Certificates are verified by default against the system store (the same store for
  requests, urllib and http.client, so flavours agree on what they trust); ``ca_file`` replaces
  the store, ``insecure`` switches verification off and must be asked for explicitly.
* **Environment.** requests sessions run with ``trust_env`` off, because with it on a
  ``REQUESTS_CA_BUNDLE`` or ``CURL_CA_BUNDLE`` in the environment silently replaces the CA the
  user chose (requests prefers them over ``Session.verify``) and ``~/.netrc`` could add
  credentials. Proxies from the environment (``HTTPS_PROXY``, ``NO_PROXY`` …) still apply: they
  are resolved once for the catalogue's URL by :func:`environment_proxies` and set explicitly.
* **Timeouts.** ``ClientConfig.read_timeout`` (``--timeout``) bounds a whole call — connecting,
  sending and the entire answer — not each wait for data: :func:`transport_errors` keeps it as
  the call's budget and every flavour's sockets keep to it (:mod:`igestbench.client.deadline`);
  a call that runs out of it fails with cause ``timeout``.
* **Failures.** :func:`transport_errors` maps whatever the HTTP stack raises (requests, urllib,
  http.client, socket, ssl) to :class:`TransportFailure` with a ``cause`` that failure diagnosis
  can switch on; :func:`read_answer` turns an HTTP answer into the SOAP response element or raises
  the ICAT fault (via :func:`igestbench.icat.faults.error_from_fault`, session ids redacted) or a
  ``not-icat``/``http-status`` failure.
"""

from __future__ import annotations

import contextlib
import enum
import http.client
import socket
import ssl
import urllib.error
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import requests
import urllib3
from lxml import etree

from igestbench import __version__, redaction
from igestbench.client.base import ClientConfig
from igestbench.client.deadline import BoundedAdapter, ConnectTimeout, bound_tls, budget
from igestbench.errors import Sv7Error, TransportError, UsageError
from igestbench.icat.endpoint import Endpoint
from igestbench.icat.entity_info import decode_entity_info
from igestbench.icat.faults import IcatError, error_from_fault
from igestbench.icat.operations import Operation
from igestbench.icat.schema import Profile, get_profile
from igestbench.icat.soapxml import ICAT_NS, SOAP_ENV_NS, decode_value, local_name

USER_AGENT = f"igestbench/{__version__}"
#: What replaces a session id in every message that leaves a client.
REDACTED = redaction.SESSION
SOAP_HEADERS = {"Content-Type": "text/xml; charset=utf-8", "SOAPAction": '""'}

# --- TLS and HTTP sessions -------------------------------------------------------------------


#: The one line a command prints when --insecure switched certificate verification off.
INSECURE_NOTICE = (
    "TLS certificate verification is off (--insecure): the target's identity is not checked"
)


def check_tls_choice(config: ClientConfig) -> None:
    """UsageError when the TLS options contradict each other or name a missing file."""
    if config.insecure and config.ca_file is not None:
        raise UsageError("--insecure and --ca-file contradict each other: choose one")
    if config.ca_file is not None and not config.ca_file.is_file():
        raise UsageError(f"--ca-file {config.ca_file}: no such file")


def requests_verify(config: ClientConfig) -> bool | str:
    """``Session.verify``: False, the user's CA file, or the system store (not certifi's)."""
    check_tls_choice(config)
    if config.insecure:
        return False
    if config.ca_file is not None:
        return str(config.ca_file)
    paths = ssl.get_default_verify_paths()
    return paths.cafile or paths.capath or True


def ssl_context(config: ClientConfig) -> ssl.SSLContext:
    """The TLS policy of ``config`` for urllib and http.client based clients (its sockets keep
    to the call's budget)."""
    check_tls_choice(config)
    ca_file = str(config.ca_file) if config.ca_file is not None else None
    context = ssl.create_default_context(cafile=ca_file)
    if config.insecure:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return bound_tls(context)


def environment_proxies(url: str) -> dict[str, str]:
    """The proxies the environment sets for ``url`` (empty when NO_PROXY exempts it)."""
    return dict(requests.utils.get_environ_proxies(url))


def timeouts(config: ClientConfig) -> tuple[float, float]:
    """(connect, read) timeouts in seconds, as requests takes them (each wait for data; the
    whole call is bounded by its budget, :func:`call_budget`)."""
    return (config.connect_timeout, config.read_timeout)


def call_budget(config: ClientConfig) -> float:
    """The longest one call may take, connecting to the last byte of the answer (--timeout)."""
    return config.read_timeout


def http_session(config: ClientConfig, endpoint: Endpoint, pool_size: int = 4) -> requests.Session:
    """A requests session with pooled keep-alive connections and the TLS policy of ``config``.

    requests has no session-wide timeout: pass :func:`timeouts` with every request, and make it
    within a :class:`~igestbench.client.deadline.budget` (:func:`transport_errors` keeps one),
    reading the answer there too: the session's sockets keep to it.
    """
    session = requests.Session()
    session.trust_env = False
    session.verify = requests_verify(config)
    session.proxies = environment_proxies(endpoint.service_url)
    session.headers["User-Agent"] = USER_AGENT
    adapter = BoundedAdapter(config.insecure, pool_connections=1, pool_maxsize=pool_size)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    if config.insecure:
        # The user asked for no verification explicitly, and the commands say so once
        # (INSECURE_NOTICE); urllib3 would warn on every request, with its file and line.
        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    return session


# --- transport failures ----------------------------------------------------------------------


class TransportCause(enum.StrEnum):
    """Why a catalogue could not be talked to; failure diagnosis (issue 5) keys on these."""

    DNS = "dns"
    REFUSED = "refused"
    #: No connection in time: nothing answered the attempt (a firewall drops it, no route).
    CONNECT_TIMEOUT = "connect-timeout"
    #: Connected, but no complete answer in time (a slow or overloaded server).
    TIMEOUT = "timeout"
    TLS = "tls"
    #: Reset or closed in the middle of an exchange.
    CONNECTION = "connection"
    HTTP_STATUS = "http-status"
    NOT_ICAT = "not-icat"


_CAUSE_TEXT = {
    TransportCause.DNS: "host name not found",
    TransportCause.REFUSED: "connection refused",
    TransportCause.CONNECT_TIMEOUT: "could not connect in time",
    TransportCause.TIMEOUT: "timed out",
    TransportCause.TLS: "TLS failed",
    TransportCause.CONNECTION: "connection lost",
    TransportCause.HTTP_STATUS: "unexpected HTTP status",
    TransportCause.NOT_ICAT: "not an ICAT SOAP service",
}


class TransportFailure(TransportError):
    """A :class:`TransportError` that knows its cause, the URL, and the HTTP status if any."""

    def __init__(
        self, cause: TransportCause, url: str, detail: str, status: int | None = None
    ) -> None:
        super().__init__(f"{url}: {_CAUSE_TEXT[cause]}: {detail}")
        self.cause = cause
        self.url = url
        self.detail = detail
        self.status = status


def status_failure(url: str, status: int) -> TransportFailure:
    """An answer with an HTTP status no ICAT SOAP service gives (it answers 200 or 500)."""
    return TransportFailure(TransportCause.HTTP_STATUS, url, f"HTTP {status}", status)


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and everything it wraps: causes, contexts, urllib3's ``reason``, exception args."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        linked = [current.__cause__, current.__context__, getattr(current, "reason", None)]
        linked += list(current.args)
        todo += [e for e in linked if isinstance(e, BaseException)]


_TIMEOUTS = (TimeoutError, requests.Timeout, urllib3.exceptions.TimeoutError)


def _is_timeout(exc: BaseException) -> bool:
    # urllib3 derives "could not connect at all" from its connect *timeout* class.
    return isinstance(exc, _TIMEOUTS) and not isinstance(exc, urllib3.exceptions.NewConnectionError)


def is_connect_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is a timeout while connecting (ours, requests' or urllib3's), not while
    waiting for the answer."""
    if isinstance(exc, ConnectTimeout | requests.ConnectTimeout):
        return True
    return isinstance(exc, urllib3.exceptions.ConnectTimeoutError) and not isinstance(
        exc, urllib3.exceptions.NewConnectionError)  # fmt: skip


# Most specific first: the OS's verdict (refused, no such host) beats the wrappers around it,
# and a timeout while connecting the timeout of the exchange around it.
_CLASSIFIERS: tuple[tuple[TransportCause, Callable[[BaseException], bool]], ...] = (
    (TransportCause.REFUSED, lambda e: isinstance(e, ConnectionRefusedError)),
    (TransportCause.DNS, lambda e: isinstance(e, socket.gaierror)),
    (TransportCause.TLS, lambda e: isinstance(e, ssl.SSLError | ssl.CertificateError)),
    (TransportCause.CONNECT_TIMEOUT, is_connect_timeout),
    (TransportCause.TIMEOUT, _is_timeout),
)


def _detail(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError) and exc.verify_message:
        return f"certificate verify failed: {exc.verify_message}"
    return str(exc) or type(exc).__name__


def classify(exc: BaseException, url: str) -> TransportFailure:
    """The failure that ``exc``, raised while talking to ``url``, stands for."""
    chain = list(_chain(exc))
    for cause, matches in _CLASSIFIERS:
        for e in chain:
            if matches(e):
                return TransportFailure(cause, url, _detail(e))
    for e in chain:
        if isinstance(e, requests.HTTPError) and e.response is not None:
            return status_failure(url, e.response.status_code)
        if isinstance(e, urllib.error.HTTPError):
            return status_failure(url, e.code)
    return TransportFailure(TransportCause.CONNECTION, url, _detail(chain[-1]))


#: What the HTTP stacks of the flavours raise when the network or the peer fails.
NETWORK_ERRORS = (requests.RequestException, OSError, http.client.HTTPException)


@contextlib.contextmanager
def transport_errors(
    url: str, not_icat: tuple[type[BaseException], ...] = (), timeout: float | None = None
) -> Iterator[None]:
    """Raise every network error inside as a :class:`TransportFailure` (original as cause).

    ``not_icat``: exception types of a SOAP library that mean the answer was not ICAT's WSDL or
    SOAP (a zeep or suds parse error), reported as ``not-icat``. ``timeout``: the budget of the
    whole exchange inside (:func:`call_budget`); once it is spent, whatever the HTTP stack made
    of that is a ``timeout``.
    """
    limit = budget(timeout)
    try:
        with limit:
            yield
    except Sv7Error:  # already ours (a fault or failure translated further in)
        raise
    except NETWORK_ERRORS as exc:
        if limit.expired:
            raise _spent(limit, url, exc) from exc
        raise classify(exc, url) from exc
    except not_icat as exc:
        if limit.expired:
            raise _spent(limit, url, exc) from exc
        raise TransportFailure(TransportCause.NOT_ICAT, url, _detail(exc)) from exc


def _spent(limit: budget, url: str, exc: BaseException) -> TransportFailure:
    if any(is_connect_timeout(e) for e in _chain(exc)):
        return TransportFailure(
            TransportCause.CONNECT_TIMEOUT, url, f"no connection within {limit.seconds:g} s"
        )
    return TransportFailure(
        TransportCause.TIMEOUT, url, f"no complete answer within {limit.seconds:g} s"
    )


# --- SOAP answers and ICAT faults ------------------------------------------------------------

_PARSER = etree.XMLParser(
    resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True, remove_comments=True
)


def redact(message: str, session_id: str | None = None) -> str:
    """``message`` without the session id (ICAT echoes it in SESSION faults) or any other
    secret: the one redaction of :mod:`igestbench.redaction`, which the logs go through too."""
    return redaction.scrub(message, (session_id,))


def fault_error(
    type_name: str | None, message: str, offset: int | None, session_id: str | None = None
) -> IcatError:
    """The exception for an ICAT fault, whichever library received it, session id redacted."""
    return error_from_fault(type_name, redact(message, session_id), offset)


def read_answer(
    url: str, status: int, body: bytes, operation: Operation, session_id: str | None
) -> etree._Element:
    """The ``<opResponse>`` element of an HTTP answer; raises the fault or failure it holds."""
    if status not in (200, 500):
        raise status_failure(url, status)
    try:
        root = etree.fromstring(body, _PARSER)
    except etree.XMLSyntaxError:
        if status == 500:
            raise status_failure(url, status) from None
        raise TransportFailure(TransportCause.NOT_ICAT, url, "the answer is not XML") from None
    soap_body = root.find(f"{{{SOAP_ENV_NS}}}Body")
    element = next(iter(soap_body), None) if soap_body is not None else None
    if element is None:
        raise TransportFailure(TransportCause.NOT_ICAT, url, "the answer is not a SOAP envelope")
    if element.tag == f"{{{SOAP_ENV_NS}}}Fault":
        detail = element.find(f"detail/{{{ICAT_NS}}}IcatException")
        if detail is None:  # a SOAP fault that is not an IcatException (e.g. malformed request)
            raise fault_error(None, element.findtext("faultstring") or "", -1, session_id)
        offset = detail.findtext("offset")
        raise fault_error(
            detail.findtext("type"),
            detail.findtext("message") or "",
            int(offset) if offset else -1,
            session_id,
        )
    if local_name(element) != operation.response_name:
        raise TransportFailure(
            TransportCause.NOT_ICAT, url, f"<{local_name(element)}> answers {operation.name}"
        )
    if operation.name == "login":  # every flavour but python-icat reads its session id here
        redaction.remember_session(element.findtext("return"))
    answer: etree._Element = element
    return answer


def _decode_text(profile: Profile, element: etree._Element) -> str:
    return element.text or ""


_RETURN_DECODERS: dict[str | None, Callable[[Profile, etree._Element], Any]] = {
    "xs:string": _decode_text,
    "xs:long": lambda p, e: int(e.text or "0"),
    "xs:double": lambda p, e: float(e.text or "0"),
    "xs:boolean": lambda p, e: (e.text or "").strip() in ("true", "1"),
    "xs:anyType": decode_value,
    "tns:entityInfo": lambda p, e: decode_entity_info(e),
    "tns:entityBaseBean": decode_value,
}


def decode_answer(profile: Profile, operation: Operation, response: etree._Element) -> Any:
    """The Python value of an operation's ``return`` elements, decoded with our schema model."""
    returns = operation.returns
    if returns is None:
        return None
    decode = _RETURN_DECODERS[returns.type]
    values = [decode(profile, e) for e in response.iterchildren("return")]
    if returns.many:
        return values
    return values[0] if values else None


def profile_for_version(api_version: str) -> Profile:
    """The API profile to decode a server's answers with: 4.x speaks 4.3, the rest 6.2."""
    return get_profile("4.3" if api_version.strip().startswith("4.") else "6.2")
