"""The sockets of ``sv7 swarm``: Locust's, with CURVE, a ZAP handler and every message checked.

**Who may join.** With a shared secret (``SV7_SWARM_SECRET`` or ``[swarm] secret`` in sv7.toml,
read by :func:`igestbench.config.load_swarm_secret`), master and workers speak ZeroMQ's CURVE
(CurveZMQ: Curve25519 keys, every message encrypted and authenticated, nonces that make a
replayed or injected frame fail): both derive the master's key pair and the workers' key pair
from the secret (scrypt, so a weak secret costs a guesser dearly), a worker must know the
master's public key to complete the handshake at all, and the master's ZAP handler admits only
the workers' public key. A peer without the secret cannot join, cannot send the master anything
its listener sees, cannot read what is said and cannot inject into a worker's connection; a
worker does not talk to a master without it either. What the secret does *not* protect
against: anyone who holds it (every worker host does — a compromised worker can join, send
figures of its own and speak for itself, though not for another worker's connection), and a
flood of connection attempts (each handshake costs the master a little CPU: keep the port
behind a firewall that admits the load hosts only). Without a secret the sockets are plain, and
``sv7 swarm`` binds only to loopback (see :mod:`igestbench.swarm.command`).

**What is read.** Whatever reaches the listener, secret or not, is decoded and checked by
:mod:`igestbench.swarm.wire` before Locust's runner sees it; what fails is dropped with one log
line (then one line per :data:`LOG_EVERY_S` when many come) and counted for the result file.

Locust builds, binds and connects each rpc socket in one constructor and offers no hook for
socket options (CURVE must be set before ``bind``/``connect``), so :func:`install` gives its
runners these subclasses of its Server and Client, in the swarm's own process only.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import gevent
import msgpack  # type: ignore[import-untyped]
import zmq.error as zmqerr
import zmq.green as zmq
from locust import runners
from locust.exception import RPCError
from locust.rpc import Message, zmqrpc
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

from igestbench.swarm import wire

__all__ = ["CurveKeys", "Refusals", "curve_keys", "install"]

log = logging.getLogger("igestbench.swarm")

#: The largest message a socket accepts (a step report is a few kB; the created ids of a burst
#: every half second some more); larger ones drop the connection inside ZeroMQ.
MAX_MESSAGE_BYTES = 32 * 1024 * 1024
ZAP_ENDPOINT = "inproc://zeromq.zap.01"  # RFC 27: where libzmq asks who may connect
ZAP_DOMAIN = b"sv7-swarm"
KDF_SALT = b"igestbench sv7 swarm CURVE key pairs, version 1"
#: Each kind of refusal is logged in full this many times, then once per LOG_EVERY_S.
LOG_FIRST = 5
LOG_EVERY_S = 10.0
_HANDSHAKE_FAILED = {
    zmq.EVENT_HANDSHAKE_FAILED_NO_DETAIL: "no detail",
    zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL: "protocol",
    zmq.EVENT_HANDSHAKE_FAILED_AUTH: "refused",
}


@dataclass(frozen=True)
class CurveKeys:
    """The master's and the workers' CURVE key pairs (Z85 text), derived from the secret."""

    server_public: bytes
    client_public: bytes
    server_secret: bytes = field(repr=False)
    client_secret: bytes = field(repr=False)


def curve_keys(secret: str) -> CurveKeys:
    """Both key pairs from ``secret``: the same secret gives the same keys on every host."""
    material = hashlib.scrypt(secret.encode(), salt=KDF_SALT, n=2**14, r=8, p=1, dklen=64)
    server, client = z85.encode(material[:32]), z85.encode(material[32:])
    return CurveKeys(zmq.curve_public(server), zmq.curve_public(client), server, client)


class Refusals:
    """Messages dropped and connections refused: counted, and logged one line each (the first
    :data:`LOG_FIRST` of a kind, then one line per :data:`LOG_EVERY_S` with the count since)."""

    def __init__(self) -> None:
        self.messages = 0
        self.handshakes = 0
        self.late_workers = 0
        self._seen: dict[str, int] = {}
        self._last: dict[str, float] = {}
        self._since: dict[str, int] = {}

    def _log(self, kind: str, line: str) -> None:
        n = self._seen[kind] = self._seen.get(kind, 0) + 1
        now = time.monotonic()
        if n > LOG_FIRST and now - self._last.get(kind, 0.0) < LOG_EVERY_S:
            self._since[kind] = self._since.get(kind, 0) + 1
            return
        more = self._since.pop(kind, 0)
        self._last[kind] = now
        log.warning("%s%s", line, f" (and {more} more like it since)" if more else "")

    def message(self, sender: bytes, why: str) -> None:
        self.messages += 1
        shown = sender[:40].decode("utf-8", "replace") if sender else "?"
        self._log("message", f"dropped a message from {shown!r}: {why}")

    def handshake(self, why: str) -> None:
        self.handshakes += 1
        self._log("handshake", f"refused a connection: {why}")

    def late(self, node: str) -> None:
        self.late_workers += 1
        self._log("late", f"worker {node[:60]} joined after the steps began: told to quit")

    def summary(self) -> str | None:
        """One line for the result file's notes; None when nothing was refused."""
        parts = []
        if self.messages:
            parts.append(f"dropped {self.messages} message(s) that were not a worker's "
                         "(malformed, unknown or naming another node)")  # fmt: skip
        if self.handshakes:
            parts.append(f"refused {self.handshakes} connection(s) that failed the handshake "
                         "(no or another SV7_SWARM_SECRET)")  # fmt: skip
        if self.late_workers:
            parts.append(f"told {self.late_workers} worker(s) that joined after the steps began "
                         "to quit")  # fmt: skip
        return "; ".join(parts) if parts else None


def _decode(payload: bytes) -> Any:
    # no object hook: sv7's messages carry no dates or ObjectIds (Locust's hook raises on an
    # ObjectId without bson installed)
    return msgpack.loads(payload, raw=False, strict_map_key=False)


def _handshake_watch(socket: Any, on_failure: Callable[[str], None]) -> gevent.Greenlet:
    monitor = socket.get_monitor_socket(sum(_HANDSHAKE_FAILED))

    def watch() -> None:
        while True:
            event = recv_monitor_message(monitor)
            on_failure(_HANDSHAKE_FAILED.get(event["event"], str(event["event"])))

    return gevent.spawn(watch)


#: Locust's message (an untyped class), as these sockets make them.
_message: Callable[[str, Any, str], Message] = Message


class _SecureServer(zmqrpc.Server):
    """The master's ROUTER socket: CURVE and ZAP with keys, and only checked messages out."""

    def __init__(self, host: str, port: int, *, keys: CurveKeys | None, refusals: Refusals,
                 gate: Callable[[str, str], bool]) -> None:  # fmt: skip
        zmqrpc.BaseSocket.__init__(  # type: ignore[no-untyped-call]
            self, zmq.ROUTER, self.ipv4_only(host, port)
        )
        self.refusals, self.gate = refusals, gate
        self.socket.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        self._greenlets: list[gevent.Greenlet] = []
        self._zap: Any = None
        if keys is not None:
            self._zap = self.socket.context.socket(zmq.REP)
            self._zap.bind(ZAP_ENDPOINT)
            self._greenlets.append(gevent.spawn(self._answer_zap, keys.client_public))
            self.socket.zap_domain = ZAP_DOMAIN
            self.socket.curve_server = True
            self.socket.curve_secretkey = keys.server_secret
            self.socket.curve_publickey = keys.server_public
        self._greenlets.append(_handshake_watch(self.socket, self._handshake_failed))
        try:
            if port == 0:
                self.port = self.socket.bind_to_random_port(f"tcp://{host}")
            else:
                self.socket.bind(f"tcp://{host}:{port}")
                self.port = port
        except zmqerr.ZMQError as exc:
            self.close(linger=0)
            raise RPCError(f"Socket bind failure: {exc}") from exc

    def _handshake_failed(self, how: str) -> None:
        if how != "refused":  # the ZAP handler said why, with the peer's address
            self.refusals.handshake(
                f"the ZeroMQ handshake failed ({how}): not a worker of this swarm — its "
                "SV7_SWARM_SECRET differs, or one side has none"
            )

    def _answer_zap(self, client_public: bytes) -> None:
        """RFC 27: admit a CURVE client whose key is the workers' (the secret's), none other."""
        allowed = z85.decode(client_public)
        while True:
            frames = self._zap.recv_multipart()
            version, request_id, address = frames[0], frames[1], frames[3]
            mechanism, credentials = frames[5], frames[6:]
            ok = version == b"1.0" and mechanism == b"CURVE" and credentials[:1] == [allowed]
            if not ok:
                self.refusals.handshake(
                    f"{address.decode('ascii', 'replace')} offered a key that is not the workers' "
                    "(another SV7_SWARM_SECRET)"
                )
            status = (b"200", b"OK") if ok else (b"400", b"not a worker of this swarm")
            self._zap.send_multipart([b"1.0", request_id, *status, b"", b""])

    def recv_from_client(self) -> tuple[str, Message]:
        while True:
            try:
                frames = self.socket.recv_multipart()
            except zmqerr.ZMQError as exc:
                raise RPCError("ZMQ network broken") from exc
            sender = frames[0] if frames else b""
            try:
                if len(frames) != 2:
                    raise wire.BadMessage(f"{len(frames)} frames, not 2")
                addr = frames[0].decode()
                kind, data, node = wire.from_worker(_decode(frames[1]), addr)
            except Exception as exc:  # whatever arrives: one line, dropped
                self.refusals.message(sender, _why(exc))
                continue
            if kind == "client_ready" and not self.gate(node, addr):
                # acknowledged, so that the worker stops asking, then told to quit
                self.send_to_client(_message("ack", {"index": -1}, node))
                self.send_to_client(_message("quit", None, node))
                continue
            return addr, _message(kind, data, node)

    def close(self, linger: int | None = None) -> None:
        gevent.killall(self._greenlets, block=False)
        if self._zap is not None:
            self._zap.close(linger=0)
        super().close(linger=linger)  # type: ignore[no-untyped-call]


class _SecureClient(zmqrpc.Client):
    """A worker's DEALER socket: CURVE with keys, only checked messages from the master."""

    def __init__(self, host: str, port: int, identity: str, *, keys: CurveKeys | None,
                 refusals: Refusals, on_refused: Callable[[str], None]) -> None:  # fmt: skip
        zmqrpc.BaseSocket.__init__(  # type: ignore[no-untyped-call]
            self, zmq.DEALER, self.ipv4_only(host, port)
        )
        self.identity, self.refusals = identity, refusals
        self.socket.setsockopt(zmq.IDENTITY, identity.encode())
        self.socket.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE_BYTES)
        if keys is not None:
            self.socket.curve_serverkey = keys.server_public
            self.socket.curve_publickey = keys.client_public
            self.socket.curve_secretkey = keys.client_secret
        self._watch = _handshake_watch(self.socket, on_refused)
        self.socket.connect(f"tcp://{host}:{port}")

    def recv(self) -> Message:
        while True:
            try:
                payload = self.socket.recv()
            except zmqerr.ZMQError as exc:
                raise RPCError("ZMQ network broken") from exc
            try:
                kind, data, node = wire.from_master(_decode(payload), self.identity)
            except Exception as exc:  # as the master's side
                self.refusals.message(b"master", _why(exc))
                continue
            return _message(kind, data, node)

    def close(self, linger: int | None = None) -> None:
        self._watch.kill(block=False)
        super().close(linger=linger)  # type: ignore[no-untyped-call]


def _why(exc: Exception) -> str:
    if isinstance(exc, wire.BadMessage):
        return str(exc)
    return f"not a message ({type(exc).__name__}: {str(exc)[:80]})"


def install(
    keys: CurveKeys | None,
    refusals: Refusals,
    *,
    gate: Callable[[str, str], bool] = lambda node, addr: True,
    on_refused: Callable[[str], None] = lambda how: None,
) -> None:
    """Make Locust's runners in this process use these sockets (its ``rpc.Server`` and
    ``rpc.Client``, looked up when a runner is made and when it resets a connection)."""
    secure = SimpleNamespace(
        Server=functools.partial(_SecureServer, keys=keys, refusals=refusals, gate=gate),
        Client=functools.partial(_SecureClient, keys=keys, refusals=refusals,
                                 on_refused=on_refused),
    )  # fmt: skip
    setattr(runners, "rpc", secure)  # noqa: B010 (a module attribute mypy would type as module)
