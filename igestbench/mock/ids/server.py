"""The local ICAT Data Service as a whole: storage, service, HTTP face, and its I/O threads.

:class:`LocalIds` is what :class:`~igestbench.mock.catalogue.LocalCatalogue` serves under
``/ids/``. The catalogue's worker threads run the calls (they ask the catalogue's SQL); the
bytes of an upload or a download move in the IDS's own threads (one per transfer while it
lasts), streamed through :mod:`igestbench.mock.http_stream`, so the event loop never waits on
the disk and memory stays flat whatever the size of a file.
"""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from collections.abc import Awaitable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from igestbench.errors import UsageError
from igestbench.mock.http_messages import BodySink, Request, Response
from igestbench.mock.http_stream import Consumer, ThreadSink, ThreadStream
from igestbench.mock.ids.front import CORS, IDS_PREFIX, OCTETS, Call, IdsFront, Params
from igestbench.mock.ids.service import Download, IdsService
from igestbench.mock.ids.storage import MainStorage, PreparedStore
from igestbench.mock.ids.upload import FormUpload, RawUpload, Upload
from igestbench.mock.service import IcatService
from igestbench.mock.workers import RequestWorkers

#: Transfers under way at once (each holds one thread while its bytes move).
IO_THREADS = 32


class LocalIds:
    """One IDS over one catalogue; files in ``storage`` or, without it, a temporary folder."""

    def __init__(
        self, catalogue: IcatService, storage: str | None = None, two_level: bool = True
    ) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if storage is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="sv7-ids-")
            root = Path(self._tmp.name)
        else:
            root = Path(storage).expanduser()
        self.root = root
        try:
            root.mkdir(parents=True, exist_ok=True)
            self.storage = MainStorage(root)
            prepared = PreparedStore(root)
        except OSError as exc:  # below a file, /proc, a read-only disk: one line, no traceback
            if self._tmp is not None:
                self._tmp.cleanup()
            raise UsageError(f"--ids-storage {storage}: cannot make the IDS's folders there "
                             f"({exc.strerror or exc}: {exc.filename})") from None
        self.service = IdsService(catalogue, self.storage, prepared, two_level)
        self.front = IdsFront(self.service, self._download)
        self.io = ThreadPoolExecutor(IO_THREADS, thread_name_prefix="sv7-ids-io")
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def temporary(self) -> bool:
        return self._tmp is not None

    # --- HTTP ----------------------------------------------------------------------------

    @staticmethod
    def serves(path: str) -> bool:
        return path == IDS_PREFIX.rstrip("/") or path.startswith(IDS_PREFIX)

    def body_sink(self, method: str, path: str, headers: dict[str, str]) -> BodySink | None:
        """A put's body streams to a file in the storage's incoming folder (see http.py)."""
        if path.rstrip("/") != IDS_PREFIX + "put" or method not in ("PUT", "POST"):
            return None
        target = self.storage.new_upload()
        consumer: Consumer
        durable = not self.temporary  # a kept storage syncs each file before answering
        if method == "PUT":
            consumer = RawUpload(target, durable)
        else:
            consumer = FormUpload(target, headers.get("content-type", ""), durable)
        return ThreadSink(consumer, self.io, asyncio.get_running_loop())

    def handle(self, request: Request, workers: RequestWorkers) -> Awaitable[Response]:
        return self._handle(request, workers)

    async def _handle(self, request: Request, workers: RequestWorkers) -> Response:
        call = Call(request, Params(request.query))
        if request.sink is not None:
            done = request.sink.done if isinstance(request.sink, ThreadSink) else None
            if done is not None:
                try:
                    call.upload = await asyncio.wrap_future(done)
                except Exception as exc:
                    call.failure = exc
        self._loop = asyncio.get_running_loop()  # where getData's streams are sent from
        try:
            return await workers.run(self.front.answer, call, large=False)
        finally:
            self._discard(call.upload)

    @staticmethod
    def _discard(upload: Upload | None) -> None:
        """An upload that was not stored (refused, failed) leaves nothing behind."""
        if upload is not None and upload.path is not None:
            with contextlib.suppress(OSError):
                upload.path.unlink()

    def _download(self, download: Download, lock: Any) -> Response:
        assert self._loop is not None
        stream = ThreadStream(download.produce, self.io, self._loop, finalize=lock.release)
        headers = {
            "Content-Disposition": f'attachment; filename="{download.filename}"',
            "Accept-Ranges": "bytes",
            **CORS,
        }
        status = 206 if download.partial else 200
        return Response(status, b"", OCTETS, headers=headers, stream=stream, length=download.length)

    def close(self) -> None:
        self.io.shutdown(wait=False, cancel_futures=True)
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
