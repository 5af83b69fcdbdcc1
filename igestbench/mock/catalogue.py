"""The local ICAT catalogue as a whole: composition root, HTTP routes, and start/stop.

``LocalCatalogue`` runs it in a background thread (for tests and ``sv7 run`` without a target)::

    with LocalCatalogue(ServeConfig(profile="6.2")) as cat:
        client = icat.Client(cat.wsdl_url)

``serve_forever`` runs it in the foreground (``sv7 serve``).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import socket
import tempfile
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

from igestbench.config import ServeConfig
from igestbench.errors import UsageError
from igestbench.icat.faults import IcatInternal
from igestbench.icat.schema import get_profile
from igestbench.icat.wsdl import render_wsdl, render_xsd
from igestbench.mock.auth import Authenticators, Sessions
from igestbench.mock.http import ConnectionFactory
from igestbench.mock.http_messages import BodySink, HttpLimits, Request, Response
from igestbench.mock.ids.server import LocalIds
from igestbench.mock.jpql import prepare_parser
from igestbench.mock.rest import REST_PREFIX, RestEndpoint, error_response
from igestbench.mock.seed import seed_new_database
from igestbench.mock.service import IcatService
from igestbench.mock.soap import SoapEndpoint, fault_envelope
from igestbench.mock.store import Store
from igestbench.mock.time_budget import RunElsewhere
from igestbench.mock.tls import TlsFiles, tls_from_option
from igestbench.mock.workers import LARGE_BODY, RequestWorkers

SERVICE_PATHS = ("/ICATService/ICAT", "/icat/ICAT")
#: Requests with bodies up to this size (bytes) are tried on the event loop first: decoding
#: and compiling so little costs well under a millisecond.
INLINE_BODY = 4096
#: How long a read may hold the event loop (seconds): one that held it longer runs in a worker
#: from then on (mock/plans.py: whether a read may run there is decided before it runs, and a
#: statement is never stopped to run again); a 2,000-row search (about 10 ms in all on a 2-core
#: machine, 4 of them fetching rows) stays on the loop.
INLINE_SQL_S = 0.05


class CatalogueApp:
    """Routes: WSDL and XSD on GET, SOAP on POST, both under /ICATService/ICAT and /icat/ICAT;
    the REST API under /icat/ (everything else there); the IDS under /ids/."""

    def __init__(
        self,
        config: ServeConfig,
        endpoint: SoapEndpoint,
        default_host: str,
        workers: RequestWorkers,
        ids: LocalIds | None = None,
    ) -> None:
        self.config = config
        self.ids = ids
        self.endpoint = endpoint
        self.rest = RestEndpoint(endpoint.service, endpoint.max_elements)
        self.workers = workers
        self.profile = endpoint.profile
        self.default_host = default_host
        self.knobs = config.knobs
        #: whether a knob asks for misbehaviour (fixed for the server's life: asked once here)
        self._misbehaving = self.knobs.active
        self._random = random.Random(self.knobs.seed)
        self._count = 0

    def body_sink(self, method: str, path: str, headers: dict[str, str]) -> BodySink | None:
        """Bodies that stream instead of being held: files uploaded to the IDS."""
        if self.ids is not None and self.ids.serves(path):
            return self.ids.body_sink(method, path, headers)
        return None

    def __call__(self, request: Request) -> Response | Awaitable[Response]:
        path = request.path.rstrip("/")
        if self.ids is not None and self.ids.serves(request.path):
            return self.ids.handle(request, self.workers)
        if path not in SERVICE_PATHS and path.startswith(REST_PREFIX):
            if not self._misbehaving:
                return self._rest(request)
            return self._misbehave(request)
        if path not in SERVICE_PATHS:
            return Response(
                404,
                b"not found: the ICAT service is at /ICATService/ICAT",
                "text/plain; charset=utf-8",
            )
        if request.method == "GET":
            return self._get(request, path)
        if request.method != "POST":
            return Response(
                405,
                b"use POST for SOAP, GET for ?wsdl",
                "text/plain; charset=utf-8",
                headers={"Allow": "GET, POST"},
            )
        if not self._misbehaving:
            return self._soap(request)
        return self._misbehave(request)

    def _rest(self, request: Request) -> Response | Awaitable[Response]:
        # the same two paths as a SOAP request: on the loop while quick, else in a worker
        if len(request.body) + len(request.query) <= INLINE_BODY:
            try:
                return self.rest.handle(request, inline_s=INLINE_SQL_S)
            except RunElsewhere:
                pass
        large = len(request.body) > LARGE_BODY
        return self.workers.run(self.rest.handle, request, large=large)

    def _get(self, request: Request, path: str) -> Response:
        query = request.query.lower()
        host = request.headers.get("host") or self.default_host
        service_url = f"{request.scheme}://{host}{path}"
        if query == "wsdl":
            return Response(200, render_wsdl(self.profile, service_url))
        if query.startswith("xsd="):
            if query == "xsd=1":
                return Response(200, render_xsd(self.profile))
            return Response(404, b"no such schema", "text/plain; charset=utf-8")
        page = (
            f"<html><body><h1>ICAT {self.profile.api_version} (sv7 local catalogue)</h1>"
            f'<p>WSDL: <a href="{service_url}?wsdl">{service_url}?wsdl</a></p></body></html>'
        )
        return Response(200, page.encode(), "text/html; charset=utf-8")

    def _soap(self, request: Request) -> Response | Awaitable[Response]:
        # A small request is answered on the event loop if its SQL is quick and waits for no
        # one: a hand-over to a thread would cost more than answering it. Anything else (a
        # larger body, a delete, a read that scans a big table or was slow before, a write
        # waiting for another) runs, whole, in a worker thread — decided before any of its SQL
        # runs — while the event loop keeps reading and answering other connections.
        if len(request.body) <= INLINE_BODY:
            try:
                status, body = self.endpoint.handle(request.body, inline_s=INLINE_SQL_S)
                return Response(status, body)
            except RunElsewhere:
                pass  # nothing of it ran (or it was rolled back): it runs in a worker
        return self.workers.run(self._answer, request, large=len(request.body) > LARGE_BODY)

    def _answer(self, request: Request) -> Response:
        status, body = self.endpoint.handle(request.body)
        return Response(status, body)

    def _misbehave(self, request: Request) -> Response | Awaitable[Response]:
        knobs = self.knobs
        self._count += 1
        if knobs.drop_rate and self._random.random() < knobs.drop_rate:
            return Response(0, b"", drop=True)
        delay = knobs.latency_ms / 1000.0
        if knobs.stall_every and self._count % knobs.stall_every == 0:
            delay += knobs.stall_seconds
        fail = bool(knobs.error_rate) and self._random.random() < knobs.error_rate

        rest = (
            request.path.startswith(REST_PREFIX) and request.path.rstrip("/") not in SERVICE_PATHS
        )
        if fail:
            error = IcatInternal("injected failure (sv7 serve --error-rate)")
            if rest:
                failure = error_response(error)
            else:
                failure = Response(500, fault_envelope("Server", error.message, error))
            if delay <= 0:
                return failure

        async def later() -> Response:
            if delay > 0:
                await asyncio.sleep(delay)
            if fail:
                return failure
            answer = self._rest(request) if rest else self._soap(request)
            return answer if isinstance(answer, Response) else await answer

        return later()


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class LocalCatalogue:
    """A running local catalogue on a loopback port, in a background thread."""

    def __init__(self, config: ServeConfig | None = None) -> None:
        self.config = config or ServeConfig()
        self.profile = get_profile(self.config.profile)
        prepare_parser()  # before any request: the first query would pay for it on the loop
        self.store = Store(self.profile, self.config.db)
        authenticators = Authenticators(self.config.accounts, self.config.friendly_names)
        self.service = IcatService(
            self.profile,
            self.store,
            authenticators,
            Sessions(self.config.lifetime_minutes),
            self.config.max_entities,
            self.config.lifetime_minutes,
            query_timeout_s=self.config.query_timeout_s,
            zone=self.config.zone,
        )
        if self.store.fresh:
            seed_new_database(self.service, example_data=self.config.example_data)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.tls: TlsFiles | None = None
        if self.config.tls:
            self._tmp = tempfile.TemporaryDirectory(prefix="sv7-tls-")
            try:
                self.tls = tls_from_option(self.config.tls, Path(self._tmp.name))
            except BaseException:
                self._tmp.cleanup()
                self.store.close()
                raise
        self.sock = _bind(self.config.host, self.config.port)
        self.port: int = self.sock.getsockname()[1]
        self.service.base_url = self.url
        self.loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._connections: ConnectionFactory | None = None
        self.workers = RequestWorkers()
        self.ids: LocalIds | None = None
        if self.config.ids and self.config.profile != "4.3":  # ids.server 2 pairs with ICAT 6
            try:
                self.ids = LocalIds(self.service, self.config.ids_storage,
                                    self.config.ids_two_level)
            except BaseException:  # its storage refused: nothing of the catalogue stays open
                self.sock.close()
                self.store.close()
                if self._tmp is not None:
                    self._tmp.cleanup()
                raise

    # --- addresses -----------------------------------------------------------------------

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def url(self) -> str:
        host = self.config.host
        host = f"[{host}]" if ":" in host else host
        return f"{self.scheme}://{host}:{self.port}"

    @property
    def service_url(self) -> str:
        return self.url + SERVICE_PATHS[0]

    @property
    def wsdl_url(self) -> str:
        return self.service_url + "?wsdl"

    @property
    def rest_url(self) -> str:
        """Base of the REST API (``…/icat``; 6.2 profile only)."""
        return self.url + REST_PREFIX.rstrip("/")

    @property
    def ids_url(self) -> str | None:
        """Base of the ICAT Data Service (``…/ids``), None when it is not served."""
        return self.url + "/ids" if self.ids is not None else None

    # --- running -------------------------------------------------------------------------

    async def _start_server(self) -> asyncio.base_events.Server:
        endpoint = SoapEndpoint(self.service, self.config.max_elements)
        app = CatalogueApp(
            self.config, endpoint, f"{self.config.host}:{self.port}", self.workers, self.ids
        )
        factory = ConnectionFactory(
            app,
            self.scheme,
            HttpLimits(
                max_body=self.config.max_body_bytes,
                max_header=self.config.max_header_bytes,
                max_bodies_in_flight=self.config.max_bodies_in_flight_bytes,
                idle_timeout=self.config.idle_timeout_s,
            ),
            date_header=self.config.date_header,
        )
        self._connections = factory
        ssl_ctx = self.tls.server_context() if self.tls else None
        loop = asyncio.get_running_loop()
        return await loop.create_server(factory, sock=self.sock, ssl=ssl_ctx, backlog=1024)

    def start(self) -> LocalCatalogue:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            self.loop = _new_loop()
            asyncio.set_event_loop(self.loop)
            try:
                self._server = self.loop.run_until_complete(self._start_server())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            self.loop.run_forever()
            self._shutdown(self.loop, self._server)

        self._thread = threading.Thread(target=run, name="sv7-local-catalogue", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def _shutdown(
        self, loop: asyncio.AbstractEventLoop, server: asyncio.base_events.Server
    ) -> None:
        """Stop listening, stop running SQL, close every open connection, close the loop."""
        server.close()
        self.store.interrupt()
        self.workers.shutdown()
        if self._connections is not None:
            self._connections.close_all()
        with contextlib.suppress(Exception):
            loop.run_until_complete(server.wait_closed())
            loop.run_until_complete(asyncio.sleep(0.01))  # let the aborted transports go
            # Requests still waiting for a worker thread end here, cancelled, rather than be
            # destroyed pending with the loop (their thread's late answer is then dropped).
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()

    def stop(self) -> None:
        if self.loop is not None and self._thread is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=10)
            self._thread = None
        self.workers.shutdown()
        self.store.close()
        if self.ids is not None:
            self.ids.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> LocalCatalogue:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def serve_forever(self, ready: Callable[[], None] | None = None) -> None:
        """Run in the calling thread until Ctrl-C or SIGTERM; ``ready()`` once it listens."""
        self.loop = _new_loop()
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(self._start_server())
        # Ctrl-C and a service manager's SIGTERM are a requested, clean stop
        for sig in (signal.SIGINT, signal.SIGTERM):
            self.loop.add_signal_handler(sig, self.loop.stop)
        if ready is not None:
            # from inside the running loop: a Ctrl-C right after the banner must find the loop
            # running (a stop() requested before run_forever() is lost with uvloop)
            self.loop.call_soon(ready)
        try:
            self.loop.run_forever()
        finally:
            self._shutdown(self.loop, server)
            self.store.close()
            if self.ids is not None:
                self.ids.close()
            if self._tmp is not None:
                self._tmp.cleanup()


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    address = "127.0.0.1" if host == "localhost" else host
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(1024)
    sock.setblocking(False)
    return sock
