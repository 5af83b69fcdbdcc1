"""The thread side of an IDS upload: bytes to a file in the storage's incoming folder.

:class:`RawUpload` takes the body of ``PUT /ids/put`` as it is; :class:`FormUpload` reads the
multipart form of ``POST /ids/put`` (ids.server's ``putAsPost``), keeps its small fields and
streams its file part the same way (the multipart package's push parser). Both count the bytes
and compute ids.server's checksum, the CRC-32 of the content, while writing. In a storage that
is kept (``--ids-storage``) the file is synced to disk before the upload counts as complete, so
a 201 means the bytes are on disk; a temporary storage skips that, as the catalogue's temporary
database does (nothing in it outlives the server).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import multipart

from igestbench.crc import crc32
from igestbench.mock.ids.writeback import Writeback

#: The largest form field (sessionId, name, description …) of a POST put.
MAX_FIELD = 64 * 1024
#: The form fields ids.server's putAsPost knows.
FORM_FIELDS = frozenset({
    "sessionId", "name", "datafileFormatId", "datasetId", "description", "doi",
    "datafileCreateTime", "datafileModTime", "wrap", "padding",
})  # fmt: skip


@dataclass
class Upload:
    """A complete upload: where its bytes are, how many, their CRC-32, and any form fields."""

    path: Path | None
    size: int = 0
    crc32: int = 0
    #: The form fields sent before the file part (POST put); empty for PUT.
    fields: dict[str, str] = field(default_factory=dict)
    #: The file part's file name (POST put), used when no ``name`` field was sent.
    filename: str | None = None
    #: Why the form was refused (a field ids.server does not know, no multipart body …).
    refused: str | None = None


class _FileWriter:
    """Bytes to a file with their count and CRC-32; opened at the first byte, synced at the end
    (a durable one is written to disk as it arrives: :mod:`~igestbench.mock.ids.writeback`)."""

    def __init__(self, path: Path, durable: bool) -> None:
        self.path = path
        self.durable = durable
        self.size = 0
        self.crc = 0
        self._file: BinaryIO | None = None
        self._writeback = Writeback()

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if self._file is None:
            self._file = self.path.open("wb")
        self._file.write(data)
        self.crc = crc32(data, self.crc)
        self.size += len(data)
        if self.durable and self._writeback.due(self.size):
            self._file.flush()
            self._writeback.start(self._file.fileno(), self.size)

    def close(self) -> None:
        if self._file is None:
            self._file = self.path.open("wb")  # an empty file is a file too
        self._file.flush()
        if self.durable:
            os.fsync(self._file.fileno())
        self._file.close()

    def abort(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                self._file.close()
        with contextlib.suppress(OSError):
            self.path.unlink()


class RawUpload:
    """The body of PUT /ids/put, as it is."""

    def __init__(self, path: Path, durable: bool = True) -> None:
        self._writer = _FileWriter(path, durable)

    def write(self, chunk: bytes | bytearray) -> None:
        self._writer.write(chunk)

    def close(self) -> Upload:
        self._writer.close()
        return Upload(self._writer.path, self._writer.size, self._writer.crc)

    def abort(self) -> None:
        self._writer.abort()


class FormUpload:
    """The multipart body of POST /ids/put: its fields, and its (first) file part to a file."""

    def __init__(self, path: Path, content_type: str, durable: bool = True) -> None:
        self._writer = _FileWriter(path, durable)
        self.fields: dict[str, str] = {}
        self.before_file: dict[str, str] | None = None
        self.filename: str | None = None
        self.refused: str | None = None
        self._name = ""
        self._value = bytearray()
        self._in_file = False
        self._in_field = False
        kind, options = multipart.parse_options_header(content_type)
        boundary = options.get("boundary")
        self._parser: multipart.PushMultipartParser | None = None
        if kind != "multipart/form-data" or not boundary:
            self.refused = "Multipart content expected"  # ids.server's ServletException answer
            return
        self._parser = multipart.PushMultipartParser(boundary, max_header_size=MAX_FIELD)

    def write(self, chunk: bytes | bytearray) -> None:
        if self._parser is None or self.refused is not None or not chunk:
            return
        try:
            for event in self._parser.parse(chunk):
                self._event(event)
        except multipart.MultipartError:
            self.refused = "Multipart content expected"

    def _event(self, event: multipart.MultipartSegment | bytes | bytearray | None) -> None:
        if isinstance(event, multipart.MultipartSegment):
            self._name = event.name or ""
            self._value = bytearray()
            # ids.server stores the first part with a file name; later ones are not stored here
            self._in_file = event.filename is not None and self.before_file is None
            self._in_field = event.filename is None
            if self._in_file:
                self.before_file = dict(self.fields)
                self.filename = event.filename
        elif event is None:  # the end of a part
            if self._in_field:
                if self._name not in FORM_FIELDS and self.before_file is None:
                    # ids.server's message, its missing space included
                    self.refused = self.refused or f"Form field {self._name}is not recognised"
                self.fields[self._name] = self._value.decode("utf-8", "replace")
            self._in_file = self._in_field = False
        elif self._in_file:
            self._writer.write(event)
        elif self._in_field and len(self._value) < MAX_FIELD:
            self._value += event

    def close(self) -> Upload:
        if self._parser is not None and self.refused is None:
            try:
                for event in self._parser.parse(b""):  # the end of the input
                    self._event(event)
                self._parser.close()
            except multipart.MultipartError:
                self.refused = "Multipart content expected"
        if self.before_file is None:  # no file part: ids.server answers nothing (204)
            self._writer.abort()
            return Upload(None, fields=self.fields, refused=self.refused)
        self._writer.close()
        return Upload(
            self._writer.path, self._writer.size, self._writer.crc, self.before_file,
            self.filename, self.refused,
        )

    def abort(self) -> None:
        self._writer.abort()
