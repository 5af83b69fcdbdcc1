"""Clients of an ICAT Data Service (IDS, ``ids.server``, REST under ``/ids/``).

An IDS takes the ICAT session id of a logged-in catalogue client as a parameter of every call;
:func:`shared_session` is the one place a session id leaves a client, and it never goes into a
message (every error here is redacted). Two flavours satisfy :class:`DataService`:

* ``lean`` — on requests, with the same TLS policy, proxies and timeouts as the catalogue
  clients (:mod:`igestbench.client.transport`); bodies stream from and to files in 1 MiB
  blocks, never whole in memory;
* ``python-icat`` — an unmodified ``icat.ids.IDSClient`` (:mod:`.python_icat_ids`).

**Timeouts bound whole answers.** A transfer may take at most the read timeout plus one second
per MiB moved (:data:`MIN_RATE`): a server that trickles bytes cannot hold a client for longer,
and a stop (SIGTERM) interrupts a transfer between two blocks.

IDS errors become :class:`IdsFault` (its ``code`` is ids.server's exception class, e.g.
``InsufficientPrivilegesException``, its ``status`` the HTTP status); everything else is a
:class:`~igestbench.client.transport.TransportFailure` as for the catalogue clients.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol
from urllib.parse import urlsplit

import requests

from igestbench.client.base import ClientConfig
from igestbench.client.transport import (
    TransportCause,
    TransportFailure,
    http_session,
    redact,
    timeouts,
    transport_errors,
)
from igestbench.crc import crc32
from igestbench.errors import Sv7Error, UsageError
from igestbench.icat.endpoint import endpoint_of

#: Where an IDS answers beside its catalogue.
IDS_PATH = "/ids"
#: Bytes read or sent at a time.
BLOCK = 1024 * 1024
#: The slowest transfer tolerated beyond the read timeout, bytes per second (1 MiB/s).
MIN_RATE = 1024 * 1024


class IdsFault(Sv7Error):
    """An error answer of an IDS: ids.server's exception ``code``, HTTP ``status``, message."""

    def __init__(self, code: str, message: str, status: int | None = None) -> None:
        super().__init__(f"IDS {code}: {message}")
        self.code = code
        self.message = message
        self.status = status


@dataclass(frozen=True)
class Stored:
    """What the IDS answered a put: the Datafile's id, CRC-32 and size (and location)."""

    id: int
    checksum: int
    size: int
    location: str = ""


class Writable(Protocol):
    """Where a download goes: a file opened for writing, or anything that takes bytes."""

    def write(self, data: bytes, /) -> int: ...


class DataService(Protocol):
    """One client of one IDS, calling with the session of a logged-in catalogue client."""

    flavour: str

    def ping(self) -> str: ...

    def version(self) -> str: ...

    def put(self, path: Path, name: str, dataset_id: int, format_id: int) -> Stored: ...

    def get_data(self, datafile_ids: Sequence[int], out: Writable, expected: int) -> int:
        """Write the data (one file as it is, several zipped) to ``out``; the bytes written.
        ``expected`` (bytes) sets the deadline of the transfer."""

    def delete(self, datafile_ids: Sequence[int]) -> None: ...

    def close(self) -> None: ...


def ids_url_for(catalogue_url: str) -> str:
    """The IDS beside a catalogue (``https://host:8181/ids`` for ``…/ICATService/ICAT``)."""
    endpoint = endpoint_of(catalogue_url)
    netloc = urlsplit(endpoint.service_url).netloc
    return f"{endpoint.scheme}://{netloc}{IDS_PATH}"


def shared_session(catalogue: Any) -> str:
    """The ICAT session id of a logged-in catalogue client, for the IDS calls made with it.

    The flavours keep it private (``_session_id``; python-icat's ``Client.sessionId``), an
    :class:`~igestbench.run.outage.OutageGuard` wraps one (``inner``): it is read here only.
    """
    inner = getattr(catalogue, "inner", catalogue)
    sid = getattr(inner, "_session_id", None)
    if sid is None:
        sid = getattr(getattr(inner, "_client", None), "sessionId", None)
    if not sid:
        raise UsageError("the IDS needs a logged-in catalogue client")
    return str(sid)


class Deadline:
    """The end of a transfer: the read timeout plus one second per MiB."""

    def __init__(self, config: ClientConfig, nbytes: int, url: str) -> None:
        self.url = url
        self.at = time.monotonic() + config.read_timeout + nbytes / MIN_RATE

    def check(self) -> None:
        if time.monotonic() > self.at:
            raise TransportFailure(
                TransportCause.TIMEOUT, self.url, "the transfer took longer than its deadline"
            )


def fault_of(status: int, text: str, url: str) -> Sv7Error:
    """ids.server's error body ``{"code", "message"}`` as an IdsFault; anything else is not an
    IDS answer."""
    try:
        body = json.loads(text)
        return IdsFault(str(body["code"]), str(body["message"]), status)
    except (ValueError, KeyError, TypeError):
        return TransportFailure(TransportCause.HTTP_STATUS, url, f"HTTP {status}", status)


class LeanDataService:
    """The IDS on requests (see the module docstring)."""

    flavour = "lean"

    def __init__(self, config: ClientConfig, url: str, session: Callable[[], str]) -> None:
        self.config = config
        self.url = url.rstrip("/") + "/"
        self._sid = session
        self._http = http_session(config, endpoint_of(config.url))

    def _request(
        self, method: str, call: str, stream: bool = False, **kwargs: Any
    ) -> requests.Response:
        url = self.url + call
        sid: str | None = None
        try:
            params = kwargs.pop("params", {})
            if params.pop("session", False):
                sid = self._sid()
                params["sessionId"] = sid
            with transport_errors(url):
                answer = self._http.request(
                    method, url, params=params, timeout=timeouts(self.config), stream=stream,
                    **kwargs,
                )  # fmt: skip
        except TransportFailure as exc:  # requests names the URL, the session id in it
            raise TransportFailure(exc.cause, url, redact(exc.detail, sid), exc.status) from None
        if answer.status_code >= 400:
            with answer:
                raise fault_of(answer.status_code, redact(answer.text, sid), url)
        return answer

    def ping(self) -> str:
        return self._request("GET", "ping").text

    def version(self) -> str:
        return str(self._request("GET", "version").json()["version"])

    def put(self, path: Path, name: str, dataset_id: int, format_id: int) -> Stored:
        size = path.stat().st_size
        deadline = Deadline(self.config, size, self.url + "put")
        params = {"session": True, "name": name, "datasetId": dataset_id,
                  "datafileFormatId": format_id}  # fmt: skip
        with path.open("rb") as source:
            body = _Body(source, size, deadline)
            answer = self._request(
                "PUT", "put", params=params, data=body,
                headers={"Content-Type": "application/octet-stream"},
            )  # fmt: skip
        stored = answer.json()
        if int(stored["checksum"]) != body.crc or int(stored["size"]) != size:
            raise IdsFault(
                "ChecksumMismatch",
                f"{name}: sent {size} bytes with CRC-32 {body.crc:x}, the IDS stored "
                f"{stored['size']} bytes with {int(stored['checksum']):x}",
            )
        return Stored(int(stored["id"]), int(stored["checksum"]), size, str(stored["location"]))

    def get_data(self, datafile_ids: Sequence[int], out: Writable, expected: int) -> int:
        url = self.url + "getData"
        deadline = Deadline(self.config, expected, url)
        params = {"session": True, "datafileIds": ",".join(map(str, datafile_ids))}
        answer = self._request("GET", "getData", stream=True, params=params)
        written = 0
        with answer, transport_errors(url):
            for block in answer.iter_content(BLOCK):
                out.write(block)
                written += len(block)
                deadline.check()
        return written

    def delete(self, datafile_ids: Sequence[int]) -> None:
        params = {"session": True, "datafileIds": ",".join(map(str, datafile_ids))}
        self._request("DELETE", "delete", params=params).close()

    def close(self) -> None:
        self._http.close()


class _Body:
    """A file sent in BLOCK-sized pieces (requests streams an iterable with a known length),
    its CRC-32 computed on the way, the deadline checked between pieces."""

    def __init__(self, source: BinaryIO, size: int, deadline: Deadline) -> None:
        self.source = source
        self.len = size  # requests sends a Content-Length of this
        self.deadline = deadline
        self.crc = 0

    def __iter__(self) -> Iterator[bytes]:
        while block := self.source.read(BLOCK):
            self.crc = crc32(block, self.crc)
            yield block
            self.deadline.check()


def connect_data_service(
    config: ClientConfig, url: str, catalogue: Any, flavour: str = "lean"
) -> DataService:
    """A client of the IDS at ``url`` with ``catalogue``'s session (``lean``, ``python-icat``)."""

    def session() -> str:
        return shared_session(catalogue)

    if flavour == "python-icat":
        from igestbench.client.python_icat_ids import PythonIcatDataService

        return PythonIcatDataService(config, url, session)
    if flavour != "lean":
        raise UsageError(f"no IDS client of flavour {flavour!r}: choose lean or python-icat")
    return LeanDataService(config, url, session)
