"""The IDS through an unmodified ``icat.ids.IDSClient`` — what facilities' own scripts use.

TLS as the other flavours (:func:`~igestbench.client.transport.ssl_context`); python-icat's
opener has no timeout of its own, so every call is given the read timeout, and a download is
bounded as the lean client's (read timeout plus one second per MiB). python-icat checks the
CRC-32 of a put itself; the size and checksum returned are the ones it sent.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import icat.exception
from icat.ids import DataSelection, IDSClient

from igestbench.client.base import ClientConfig
from igestbench.client.data_service import BLOCK, Deadline, IdsFault, Stored, Writable
from igestbench.client.transport import (
    TransportFailure,
    redact,
    ssl_context,
    transport_errors,
)
from igestbench.crc import crc32


class PythonIcatDataService:
    flavour = "python-icat"

    def __init__(self, config: ClientConfig, url: str, session: Callable[[], str]) -> None:
        self.config = config
        self.url = url.rstrip("/") + "/"
        self._sid = session
        with self._errors("version"):
            context = ssl_context(config) if url.startswith("https:") else None
            self._client = IDSClient(url, sslContext=context)
        # bound every call: python-icat passes no timeout to its opener
        self._client.opener.open = functools.partial(
            self._client.opener.open, timeout=config.read_timeout
        )

    @contextlib.contextmanager
    def _errors(self, call: str) -> Iterator[None]:
        url = self.url + call
        sid = getattr(getattr(self, "_client", None), "sessionId", None)
        try:
            with transport_errors(url):
                try:
                    yield
                except icat.exception.IDSResponseError as exc:
                    raise IdsFault("ChecksumMismatch", redact(str(exc), sid)) from None
                except icat.exception.IDSError as exc:
                    code = type(exc).__name__.replace("IDS", "", 1).replace("Error", "Exception")
                    status = getattr(exc, "status", None)
                    raise IdsFault(code, redact(str(exc), sid), status) from None
        except TransportFailure as exc:
            raise TransportFailure(exc.cause, url, redact(exc.detail, sid), exc.status) from None

    def _session(self) -> None:
        self._client.sessionId = self._sid()

    def ping(self) -> str:
        with self._errors("ping"):
            self._client.ping()
        return "IdsOK"

    def version(self) -> str:
        with self._errors("version"):
            return str(self._client.version()["version"])

    def put(self, path: Path, name: str, dataset_id: int, format_id: int) -> Stored:
        self._session()
        size = path.stat().st_size
        crc = 0
        with path.open("rb") as source:
            while block := source.read(BLOCK):
                crc = crc32(block, crc)
        with self._errors("put"), path.open("rb") as source:
            new_id = self._client.put(source, name, dataset_id, format_id)
        return Stored(int(new_id), crc, size)

    def get_data(self, datafile_ids: Sequence[int], out: Writable, expected: int) -> int:
        self._session()
        deadline = Deadline(self.config, expected, self.url + "getData")
        selection = DataSelection({"datafileIds": list(datafile_ids)})
        written = 0
        with self._errors("getData"):
            answer: Any = self._client.getData(selection)
            with answer:
                while block := answer.read(BLOCK):
                    out.write(block)
                    written += len(block)
                    deadline.check()
        return written

    def delete(self, datafile_ids: Sequence[int]) -> None:
        self._session()
        with self._errors("delete"):
            self._client.delete(DataSelection({"datafileIds": list(datafile_ids)}))

    def close(self) -> None:
        self._client.sessionId = None
