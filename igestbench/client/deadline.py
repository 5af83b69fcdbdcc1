"""One deadline on a whole exchange with a catalogue: connecting, sending and the entire answer.

A socket's timeout, and with it the read timeout of requests, urllib3, urllib and http.client,
bounds each *wait for data*, not an exchange: a server that answers ``200`` with a
Content-Length of 100,000 and then one byte a second never trips it, and a call waits for
hours. ``--timeout`` promises more — the longest one call may take — so every client flavour
keeps it here, the same way:

* :class:`budget` (entered by :func:`igestbench.client.transport.transport_errors` around every
  call of every flavour) sets this thread's deadline for the exchange;
* every socket a client opens is a *bounded* one (:class:`BoundedSocket`, and
  :class:`BoundedSSLSocket` through the SSL context, :func:`bound_tls`): before each blocking
  operation — connect, TLS handshake, send, each read — it shrinks its timeout to what is left of
  the budget, and once nothing is left it fails with :class:`ExchangeTimeout` (a
  ``TimeoutError``, so every HTTP stack treats it as the timeout it is). Outside a budget it
  behaves as a plain socket with its own timeout;
* the HTTP stacks open bounded sockets through the pieces below: :class:`BoundedHTTPConnection`
  and :class:`BoundedHTTPSConnection` (http.client: the lean client, the checks' raw SOAP
  caller), :class:`BoundedHTTPHandler` and :class:`BoundedHTTPSHandler` (urllib: python-icat's
  suds transport) and :class:`BoundedAdapter` (requests: the zeep and rest flavours, the probe).

Why not a watchdog thread that closes a late socket: it has to find the socket a library holds
(urllib3 keeps the one in use out of its pool), and a closed socket fails as ``connection``, not
``timeout``. Why not streamed reading with a deadline between chunks: it does not bound the
headers, which can trickle too. The cost is a thread-local read, a clock read and a
``settimeout`` per socket operation, a few hundred nanoseconds (see
``tests/benchmarks/test_bench_deadline.py``).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import urllib3
import urllib3.connection
from requests.adapters import HTTPAdapter
from urllib3.util.ssl_ import create_urllib3_context

__all__ = [
    "BoundedAdapter",
    "BoundedHTTPConnection",
    "BoundedHTTPHandler",
    "BoundedHTTPSConnection",
    "BoundedHTTPSHandler",
    "BoundedSSLSocket",
    "BoundedSocket",
    "ConnectTimeout",
    "ExchangeTimeout",
    "bound_tls",
    "bounded_socket",
    "budget",
    "connecting",
    "create_connection",
    "grace",
]


class _State(threading.local):
    #: (monotonic time by which this thread's exchange must end, the budget in seconds it came
    #: from, the slack of its sockets' timeouts), or None without a budget; one attribute, read
    #: once per socket operation
    limit: tuple[float, float, float] | None = None


_state = _State()
#: How far a socket's timeout may stray from what is left of the budget before it is set again
#: (a fraction of the budget, at most _SLACK_MAX_S): setting a socket's timeout is a system
#: call, and an exchange that ends well within its budget then makes none.
_SLACK_FRACTION = 0.05
_SLACK_MAX_S = 1.0


class ExchangeTimeout(TimeoutError):
    """The exchange's budget was spent: no complete answer in time."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no complete answer within {seconds:g} s")
        self.seconds = seconds


class ConnectTimeout(ExchangeTimeout):
    """No connection within the time allowed: nothing answered the attempt to connect (a
    firewall that drops the packets, no route) — unlike an answer that came too slowly."""

    def __init__(self, seconds: float | None) -> None:
        TimeoutError.__init__(self, "no connection " + (
            f"within {seconds:g} s" if seconds is not None else "in time"))  # fmt: skip
        self.seconds = seconds or 0.0


class budget:
    """``with budget(seconds):`` every bounded socket operation of this thread ends within
    ``seconds`` from now (None: no budget). Nested, the earlier deadline wins."""

    __slots__ = ("_limit", "_saved", "deadline", "seconds")

    def __init__(self, seconds: float | None) -> None:
        self._limit = seconds
        #: the deadline kept within the block (monotonic; None: none) and its budget in seconds
        self.deadline: float | None = None
        self.seconds = 0.0
        self._saved: tuple[float, float, float] | None = None

    def __enter__(self) -> budget:
        saved = self._saved = _state.limit
        kept = saved
        if self._limit is not None:
            mine = time.monotonic() + self._limit
            if saved is None or mine < saved[0]:
                slack = min(_SLACK_MAX_S, _SLACK_FRACTION * self._limit)
                kept = _state.limit = (mine, self._limit, slack)
        if kept is not None:
            self.deadline, self.seconds, _ = kept
        return self

    def __exit__(self, *exc_info: object) -> None:
        _state.limit = self._saved

    @property
    def expired(self) -> bool:
        """Whether the deadline this block kept has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline


@contextlib.contextmanager
def grace(seconds: float) -> Iterator[None]:
    """Within the block this thread's budget, if it has one, leaves at least ``seconds``: a
    cleanup (a logout) after an overall deadline ran out still gets its own short time. Calls
    inside keep their own budgets (the earlier deadline wins); without a budget it does nothing."""
    saved = _state.limit
    if saved is not None and saved[0] - time.monotonic() < seconds:
        _state.limit = (time.monotonic() + seconds, seconds,
                        min(_SLACK_MAX_S, _SLACK_FRACTION * seconds))
    try:
        yield
    finally:
        _state.limit = saved


def remaining(limit: float | None = None) -> float | None:
    """``limit`` (a timeout in seconds, None: none) shortened to what is left of this thread's
    budget; :class:`ExchangeTimeout` when nothing is left."""
    kept = _state.limit
    if kept is None:
        return limit
    left = kept[0] - time.monotonic()
    if left <= 0:
        raise ExchangeTimeout(kept[1])
    return left if limit is None or left < limit else limit


class _Bounded:
    """What bounded sockets share: their own timeout, and its shrinking to the budget."""

    _own_timeout: float | None = None
    #: the timeout set on the socket for the budget (None: its own is set)
    _shrunk_to: float | None = None

    def settimeout(self, value: float | None) -> None:
        self._own_timeout, self._shrunk_to = value, None
        super().settimeout(value)  # type: ignore[misc]

    def gettimeout(self) -> float | None:
        return self._own_timeout

    def _bound(self) -> None:
        """Before a blocking operation: the timeout it may wait, at most what is left (give
        or take the slack: an operation ends at most that much before or after the deadline)."""
        kept = _state.limit
        if kept is None:
            if self._shrunk_to is not None:  # used outside a budget after one: its own again
                self.settimeout(self._own_timeout)
            return
        deadline, seconds, slack = kept
        left = deadline - time.monotonic()
        if left <= 0:
            raise ExchangeTimeout(seconds)
        own = self._own_timeout
        want = left if own is None or left < own else own
        shrunk = self._shrunk_to
        if shrunk is None or abs(shrunk - want) > slack:
            super().settimeout(want)  # type: ignore[misc]
            self._shrunk_to = want


class BoundedSocket(_Bounded, socket.socket):
    """A TCP socket whose every send and receive ends by this thread's deadline."""

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        self._bound()
        return super().recv(*args, **kwargs)

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        self._bound()
        return super().recv_into(*args, **kwargs)

    def send(self, *args: Any, **kwargs: Any) -> int:
        self._bound()
        return super().send(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        self._bound()  # sendall's timeout bounds the whole send (Python >= 3.5)
        super().sendall(*args, **kwargs)


class BoundedSSLSocket(_Bounded, ssl.SSLSocket):
    """A TLS socket whose handshake, every send and every read end by the thread's deadline
    (recv, recv_into and sendall go through read and send)."""

    def do_handshake(self, *args: Any, **kwargs: Any) -> None:
        self._bound()
        super().do_handshake(*args, **kwargs)

    def read(self, *args: Any, **kwargs: Any) -> Any:
        self._bound()
        return super().read(*args, **kwargs)

    def write(self, *args: Any, **kwargs: Any) -> int:
        self._bound()
        return super().write(*args, **kwargs)

    def send(self, *args: Any, **kwargs: Any) -> int:
        self._bound()
        return super().send(*args, **kwargs)


def bounded_socket(sock: socket.socket) -> BoundedSocket:
    """``sock`` (connected, not TLS) as a :class:`BoundedSocket`, with its timeout and options."""
    timeout = sock.gettimeout()
    bounded = BoundedSocket(sock.family, sock.type, sock.proto, fileno=sock.detach())
    bounded.settimeout(timeout)
    return bounded


def create_connection(
    address: tuple[str, int],
    timeout: float | None = None,
    source_address: tuple[str, int] | None = None,
    **kwargs: Any,
) -> BoundedSocket:
    """:func:`socket.create_connection`, within the budget, giving a :class:`BoundedSocket`;
    :class:`ConnectTimeout` when no connection came in time."""
    with connecting(timeout):
        sock = socket.create_connection(address, remaining(timeout), source_address, **kwargs)
    return bounded_socket(sock)


@contextlib.contextmanager
def connecting(seconds: float | None = None) -> Iterator[None]:
    """A timeout inside (the socket's ``seconds``, or the budget spent) is a
    :class:`ConnectTimeout`: its hint is a firewall or a route, not a slow server."""
    try:
        yield
    except ConnectTimeout:
        raise
    except TimeoutError as exc:
        raise ConnectTimeout(getattr(exc, "seconds", seconds)) from exc


def bound_tls(context: ssl.SSLContext) -> ssl.SSLContext:
    """``context``, whose sockets are bounded (:class:`BoundedSSLSocket`); returned."""
    context.sslsocket_class = BoundedSSLSocket
    return context


# --- http.client and urllib ------------------------------------------------------------------


class BoundedHTTPConnection(http.client.HTTPConnection):
    """http.client's connection on a :class:`BoundedSocket`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = create_connection


class BoundedHTTPSConnection(http.client.HTTPSConnection):
    """http.client's TLS connection on a bounded socket: give it a :func:`bound_tls` context."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = create_connection


class BoundedHTTPHandler(urllib.request.HTTPHandler):
    """urllib's handler of ``http://`` on :class:`BoundedHTTPConnection`."""

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(BoundedHTTPConnection, req)


class BoundedHTTPSHandler(urllib.request.HTTPSHandler):
    """urllib's handler of ``https://`` on :class:`BoundedHTTPSConnection` (its context bound)."""

    def __init__(self, context: ssl.SSLContext) -> None:
        super().__init__(context=bound_tls(context))
        self._bounded_context = context

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(BoundedHTTPSConnection, req, context=self._bounded_context)


# --- requests and urllib3 --------------------------------------------------------------------


class _Urllib3Connection(urllib3.connection.HTTPConnection):
    def _new_conn(self) -> socket.socket:
        with connecting():  # urllib3's own connect timeout is its ConnectTimeoutError
            self.timeout = remaining(self.timeout)  # connecting, too, ends within the budget
        return bounded_socket(super()._new_conn())


class _Urllib3TLSConnection(urllib3.connection.HTTPSConnection):
    def _new_conn(self) -> socket.socket:
        with connecting():
            self.timeout = remaining(self.timeout)
        return bounded_socket(super()._new_conn())


class _Pool(urllib3.HTTPConnectionPool):
    ConnectionCls = _Urllib3Connection


class _TLSPool(urllib3.HTTPSConnectionPool):
    ConnectionCls = _Urllib3TLSConnection


_POOLS = {"http": _Pool, "https": _TLSPool}


class BoundedAdapter(HTTPAdapter):
    """requests' adapter whose connections are bounded sockets.

    Its TLS sockets come from one context per adapter, made by urllib3 as it makes its own
    (``create_urllib3_context``), with the verification the session asks for: ``insecure`` must
    agree with ``Session.verify`` being False. The CA file the session names is loaded into it
    by urllib3, as into its own.
    """

    def __init__(self, insecure: bool = False, **kwargs: Any) -> None:
        # before HTTPAdapter's constructor, which makes the pool manager
        required = ssl.CERT_NONE if insecure else ssl.CERT_REQUIRED
        self._tls = bound_tls(create_urllib3_context(cert_reqs=required))
        super().__init__(**kwargs)

    def init_poolmanager(
        self, connections: int, maxsize: int, block: bool = False, **pool_kwargs: Any
    ) -> None:
        super().init_poolmanager(connections, maxsize, block, ssl_context=self._tls,
                                 **pool_kwargs)  # fmt: skip
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        if proxy.lower().startswith("socks"):  # SOCKS has connection classes of its own
            return super().proxy_manager_for(proxy, **proxy_kwargs)
        manager = super().proxy_manager_for(proxy, ssl_context=self._tls, **proxy_kwargs)
        manager.pool_classes_by_scheme = _POOLS
        return manager
