"""The local ICAT Data Service (``/ids/`` of sv7 serve) as ids.server 2.1.1 answers.

What python-icat's own IDS tests do not check is checked here: status codes and error bodies,
the stored file and the Datafile's size, checksum and location, zip entries as ids.server names
them, ranges, the rules of ICAT deciding who may put and get, streaming outside the body limits,
prepared ids across a restart, and that nothing is left behind by a refused or broken upload.
"""

from __future__ import annotations

import functools
import io
import json
import os
import socket
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue

UUID_ZERO = "00000000-0000-0000-0000-000000000000"


class Ids:
    """Raw calls to one catalogue's IDS, with REST to set up what they need."""

    def __init__(self, cat: LocalCatalogue) -> None:
        self.cat = cat
        assert cat.ids_url is not None
        self.base = cat.ids_url + "/"
        self.rest = cat.rest_url + "/"

    def login(self, user: str = "root") -> str:
        spec = {"plugin": "simple", "credentials": [{"username": user}, {"password": user}]}
        r = requests.post(self.rest + "session", data={"json": json.dumps(spec)}, timeout=10)
        return str(r.json()["sessionId"])

    def write(self, sid: str, entities: Any) -> list[int]:
        r = requests.post(
            self.rest + "entityManager",
            data={"sessionId": sid, "entities": json.dumps(entities)},
            timeout=10,
        )
        assert r.status_code == 200, r.text
        return list(r.json())

    def search(self, sid: str, query: str) -> Any:
        r = requests.get(
            self.rest + "entityManager", params={"sessionId": sid, "query": query}, timeout=10
        )
        assert r.status_code == 200, r.text
        return r.json()

    def dataset(self, sid: str, name: str = "ds") -> tuple[int, int]:
        """A new Facility → Investigation → Dataset and a DatafileFormat: (dataset, format)."""
        (fac,) = self.write(sid, [{"Facility": {"name": f"F {name}"}}])
        ref = {"id": fac}
        itype, dtype, fmt = self.write(sid, [
            {"InvestigationType": {"name": "exp", "facility": ref}},
            {"DatasetType": {"name": "raw", "facility": ref}},
            {"DatafileFormat": {"name": "NeXus", "version": "1", "facility": ref}},
        ])  # fmt: skip
        (inv,) = self.write(sid, [{"Investigation": {
            "name": "INV 1", "visitId": "v/1", "title": "t", "facility": ref,
            "type": {"id": itype},
        }}])  # fmt: skip
        (ds,) = self.write(
            sid, [{"Dataset": {"name": name, "investigation": {"id": inv}, "type": {"id": dtype}}}]
        )
        return ds, fmt

    def put(
        self, sid: str, ds: int, fmt: int, data: Any, name: str = "f.nxs", **more: Any
    ) -> requests.Response:
        params = {"sessionId": sid, "name": name, "datasetId": ds, "datafileFormatId": fmt, **more}
        return requests.put(
            self.base + "put", params=params, data=data,
            headers={"Content-Type": "application/octet-stream"}, timeout=30,
        )  # fmt: skip

    def get(
        self, path: str, headers: dict[str, str] | None = None, **params: Any
    ) -> requests.Response:
        return requests.get(self.base + path, params=params, headers=headers, timeout=30)

    def delete(self, **params: Any) -> requests.Response:
        return requests.delete(self.base + "delete", params=params, timeout=10)

    def post(self, path: str, **form: Any) -> requests.Response:
        return requests.post(self.base + path, data=form, timeout=30)


@pytest.fixture()
def ids(fresh_catalogue: LocalCatalogue) -> Ids:
    return Ids(fresh_catalogue)


def error(r: requests.Response) -> tuple[int, str, str]:
    body = r.json()
    assert set(body) == {"code", "message"}, body
    return r.status_code, body["code"], body["message"]


def test_service_calls_answer_as_ids_server(ids: Ids) -> None:
    root = ids.login()
    assert ids.get("ping").text == "IdsOK"
    assert ids.get("version").json() == {"version": "2.1.1"}
    assert ids.get("isReadOnly").text == "false"
    assert ids.get("isTwoLevel").text == "true"
    assert ids.get("getIcatUrl").text == ids.cat.url
    status = ids.get("getServiceStatus", sessionId=root).json()
    assert status == {"opsQueue": [], "lockCount": 0, "locks": [], "failures": []}
    r = ids.get("getServiceStatus", sessionId=ids.login("reader"))
    assert error(r) == (
        403, "InsufficientPrivilegesException",
        "simple/reader is not included in the ids rootUserNames set.",
    )  # fmt: skip
    r = ids.get("ping")
    assert r.headers["Access-Control-Allow-Origin"] == "*"
    assert r.headers["Access-Control-Allow-Headers"] == "Content-Type"


def test_put_stores_the_bytes_and_registers_the_datafile(ids: Ids) -> None:
    root = ids.login()
    ds, fmt = ids.dataset(root)
    data = os.urandom(300_001)
    r = ids.put(root, ds, fmt, data, description="d", datafileModTime="1213774271000")
    assert r.status_code == 201, r.text
    answer = r.json()
    assert list(answer) == ["id", "checksum", "location", "size"]
    assert answer["checksum"] == zlib.crc32(data) and answer["size"] == len(data)
    (df,) = ids.search(root, f"SELECT df FROM Datafile df WHERE df.id = {answer['id']}")
    df = df["Datafile"]
    assert df["fileSize"] == len(data)
    assert df["checksum"] == f"{zlib.crc32(data):x}"  # ids.server's CRC32 form: hex, no padding
    assert df["location"] == answer["location"]
    inv = ids.search(root, f"SELECT ds.investigation.id FROM Dataset ds WHERE ds.id = {ds}")[0]
    parts = df["location"].split("/")
    assert parts[:2] == [str(inv), str(ds)] and len(parts[2]) == 36  # ids.storage_file's
    assert df["description"] == "d" and df["datafileModTime"].startswith("2008-06-18T07:31:11")
    assert df["createId"] == "simple/root"
    stored = ids.cat.ids.storage.main.joinpath(*parts)  # type: ignore[union-attr]
    assert stored.read_bytes() == data
    got = ids.get("getData", sessionId=root, datafileIds=answer["id"])
    assert got.content == data
    assert got.headers["Content-Disposition"] == 'attachment; filename="f.nxs"'
    assert got.headers["Content-Length"] == str(len(data))


def test_put_refusals_leave_nothing_behind(ids: Ids) -> None:
    root, reader = ids.login(), ids.login("reader")
    ds, fmt = ids.dataset(root)
    storage = ids.cat.ids.storage  # type: ignore[union-attr]
    cases = [
        (ids.put(reader, ds, fmt, b"x"), 403, "InsufficientPrivilegesException"),
        (ids.put("nonsense", ds, fmt, b"x"), 400, "BadRequestException"),
        (ids.put(UUID_ZERO, ds, fmt, b"x"), 403, "InsufficientPrivilegesException"),
        (ids.put(root, 999999, fmt, b"x"), 404, "NotFoundException"),
        (ids.put(root, ds, fmt, b"x", datafileModTime="soon"), 400, "BadRequestException"),
        (ids.put(root, ds, 999999, b"x"), 404, "NotFoundException"),
    ]
    for r, status, code in cases:
        assert error(r)[:2] == (status, code), r.text
    r = requests.put(ids.base + "put", params={"sessionId": root}, data=b"x", timeout=10)
    assert error(r) == (400, "BadRequestException", "The name parameter must be set")
    # the same name twice in a dataset: ICAT's uniqueness, which ids.server reports as INTERNAL
    assert ids.put(root, ds, fmt, b"one").status_code == 201
    r = ids.put(root, ds, fmt, b"two")
    assert error(r)[:2] == (500, "InternalException") and "OBJECT_ALREADY_EXISTS" in r.text
    assert len(storage.files()) == 1  # only the first
    assert list(storage.incoming.iterdir()) == []


def test_reader_may_get_only_what_rules_let_it_read(ids: Ids) -> None:
    root, reader = ids.login(), ids.login("reader")
    ds, fmt = ids.dataset(root)
    df = ids.put(root, ds, fmt, b"secret").json()["id"]
    r = ids.get("getData", sessionId=reader, datafileIds=df)
    assert error(r)[:2] == (403, "InsufficientPrivilegesException")
    ids.write(root, [{"Rule": {"what": "Datafile", "crudFlags": "R"}},
                     {"Rule": {"what": "Dataset", "crudFlags": "R"}},
                     {"Rule": {"what": "Investigation", "crudFlags": "R"}},
                     {"Rule": {"what": "Facility", "crudFlags": "R"}}])  # fmt: skip
    assert ids.get("getData", sessionId=reader, datafileIds=df).content == b"secret"
    # READ is not CREATE: the reader still may not put, nor delete
    assert ids.put(reader, ds, fmt, b"x", name="r").status_code == 403
    r = ids.delete(sessionId=reader, datafileIds=df)
    assert error(r)[:2] == (403, "InsufficientPrivilegesException")


def test_zip_is_written_as_ids_server_writes_it(ids: Ids) -> None:
    root = ids.login()
    ds, fmt = ids.dataset(root, name="scan 1")
    one = os.urandom(70_000)
    a = ids.put(root, ds, fmt, one, name="a.nxs").json()["id"]
    b = ids.put(root, ds, fmt, b"b" * 1000, name="sub/b.dat").json()["id"]
    r = ids.get("getData", sessionId=root, datasetIds=ds, outname="mine")
    assert r.status_code == 200 and "Content-Length" not in r.headers
    assert r.headers["Content-Disposition"] == 'attachment; filename="mine.zip"'
    archive = zipfile.ZipFile(io.BytesIO(r.content))
    # ZipMapper: facility, investigation, visit and dataset percent-encoded as URLEncoder does
    prefix = "ids/F+scan+1/INV+1/v%2F1/scan+1/"
    assert archive.namelist() == [prefix + "a.nxs", prefix + "sub/b.dat"]  # datafile id order
    for info in archive.infolist():
        assert info.compress_type == zipfile.ZIP_DEFLATED and info.flag_bits & 0x08  # descriptor
    assert archive.read(prefix + "a.nxs") == one
    stored = archive.getinfo(prefix + "sub/b.dat").compress_size
    compressed = zipfile.ZipFile(io.BytesIO(ids.get(
        "getData", sessionId=root, datafileIds=f"{a},{b}", compress="true").content))
    assert compressed.getinfo(prefix + "sub/b.dat").compress_size < stored  # level 0 by default
    # one file asked for with zip=true is zipped too; a range skips bytes of the whole answer
    whole = ids.get("getData", sessionId=root, datafileIds=b, zip="true").content
    part = ids.get("getData", {"Range": "bytes=100-"}, sessionId=root, datafileIds=b, zip="true")
    assert part.status_code == 206 and part.content == whole[100:]
    r = ids.get("getData", {"Range": "bytes=5-9"}, sessionId=root, datafileIds=b)
    assert error(r) == (400, "BadRequestException", "The range must match bytes=(\\d+)-")


def test_prepared_ids_survive_a_restart_and_name_their_data(tmp_path: Path) -> None:
    config = ServeConfig(db=str(tmp_path / "cat.sqlite"), ids_storage=str(tmp_path / "ids"))
    with LocalCatalogue(config) as cat:
        ids = Ids(cat)
        root = ids.login()
        ds, fmt = ids.dataset(root)
        df = ids.put(root, ds, fmt, b"kept").json()["id"]
        prepared = ids.post("prepareData", sessionId=root, datafileIds=df).text
    with LocalCatalogue(config) as cat:
        ids = Ids(cat)
        assert ids.get("isPrepared", preparedId=prepared).text == "true"
        assert ids.get("getDatafileIds", preparedId=prepared).json() == {
            "zip": False, "compress": False, "ids": [df],
        }  # fmt: skip
        assert ids.get("getSize", preparedId=prepared).text == "4"
        assert ids.get("getStatus", preparedId=prepared).text == "ONLINE"
        assert ids.get("getData", preparedId=prepared).content == b"kept"
    with LocalCatalogue(config) as cat:
        r = Ids(cat).get("isPrepared", preparedId=UUID_ZERO)
        assert error(r) == (404, "NotFoundException", f"The preparedId {UUID_ZERO} is not known")


def test_errors_answer_ids_server_codes(ids: Ids) -> None:
    root = ids.login()
    r = ids.get("nothing")
    assert r.status_code == 501 and r.json() == {
        "code": "NOT_IMPLEMENTED", "message": "Operation not implemented by this IDS server.",
    }  # fmt: skip
    assert error(requests.post(ids.base + "ping", timeout=5)) == (
        500, "InternalException",
        "class jakarta.ws.rs.NotAllowedException HTTP 405 Method Not Allowed",
    )  # fmt: skip
    r = ids.get("getSize", sessionId=root, datasetIds="1,x")
    assert error(r) == (
        400, "BadRequestException",
        "The datasetIds parameter '1,x' is not a valid string representation of a comma "
        "separated list of longs",
    )  # fmt: skip
    assert error(ids.get("getStatus", sessionId=root, datasetIds=424242))[:2] == (
        404, "NotFoundException",
    )  # fmt: skip
    assert error(ids.get("isPrepared", preparedId="x"))[:2] == (400, "BadRequestException")
    assert error(ids.post("getLink", sessionId=root, datafileId=1, username="x")) == (
        501, "NotImplementedException", "Sorry getLink is not available on this IDS installation",
    )  # fmt: skip


def test_delete_removes_file_and_datafile_but_waits_for_no_download(ids: Ids) -> None:
    root = ids.login()
    ds, fmt = ids.dataset(root)
    big = os.urandom(32 * 1024 * 1024)  # more than the buffers between producer and client
    df = ids.put(root, ds, fmt, big).json()["id"]
    # a download in progress holds its dataset: a delete meanwhile is "Data is busy" (503)
    with requests.get(ids.base + "getData", params={"sessionId": root, "datafileIds": df},
                      stream=True, timeout=30) as download:  # fmt: skip
        first = download.raw.read(1024)
        r = ids.delete(sessionId=root, datafileIds=df)
        assert error(r) == (503, "DataNotOnlineException", "Data is busy")
        assert first + download.raw.read() == big
    deadline = time.monotonic() + 5
    while ids.get("getServiceStatus", sessionId=root).json()["lockCount"]:
        assert time.monotonic() < deadline, "the download's lock was never released"
        time.sleep(0.05)
    r = ids.delete(sessionId=root, datafileIds=df)
    assert r.status_code == 204 and r.content == b""
    assert ids.search(root, f"SELECT df FROM Datafile df WHERE df.id = {df}") == []
    assert ids.cat.ids.storage.files() == []  # type: ignore[union-attr]


def test_a_body_beyond_the_soap_limit_streams_and_a_broken_one_leaves_nothing() -> None:
    with LocalCatalogue(ServeConfig(max_body_bytes=1024 * 1024)) as cat:
        ids = Ids(cat)
        root = ids.login()
        ds, fmt = ids.dataset(root)
        data = os.urandom(5 * 1024 * 1024)  # five times the body limit of SOAP and REST
        answer = ids.put(root, ds, fmt, (data[i : i + 65536] for i in range(0, len(data), 65536)))
        assert answer.status_code == 201 and answer.json()["size"] == len(data)  # chunked body
        r = requests.post(cat.service_url, data=b"<x/>" * 400_000, timeout=10)
        assert r.status_code == 413  # the limits stay for everything else
        # a client that dies in the middle of an upload: no file, no Datafile
        host, port = cat.url.split("//")[1].rsplit(":", 1)
        with socket.create_connection((host, int(port))) as sock:
            query = f"sessionId={root}&name=cut&datasetId={ds}&datafileFormatId={fmt}"
            sock.sendall(
                f"PUT /ids/put?{query} HTTP/1.1\r\nHost: x\r\nContent-Length: 10000000\r\n"
                "Content-Type: application/octet-stream\r\n\r\n".encode() + b"y" * 100_000
            )
            time.sleep(0.2)
        storage = cat.ids.storage  # type: ignore[union-attr]
        deadline = time.monotonic() + 5
        while list(storage.incoming.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(storage.incoming.iterdir()) == []
        assert len(storage.files()) == 1
        names = ids.search(root, "SELECT df.name FROM Datafile df")
        assert names == ["f.nxs"]


def test_put_as_post_takes_a_multipart_form(ids: Ids) -> None:
    root = ids.login()
    ds, fmt = ids.dataset(root)
    form = {"sessionId": root, "datasetId": str(ds), "datafileFormatId": str(fmt)}
    r = requests.post(ids.base + "put", data=form, files={"file": ("up.dat", b"form bytes")},
                      timeout=10)  # fmt: skip
    assert r.status_code == 201, r.text
    df = r.json()
    assert df["size"] == 10 and df["checksum"] == zlib.crc32(b"form bytes")
    names = ids.search(root, f"SELECT df.name FROM Datafile df WHERE df.id = {df['id']}")
    assert names == ["up.dat"]
    r = requests.post(ids.base + "put", data={**form, "bogus": "1"},
                      files={"file": ("x", b"x")}, timeout=10)  # fmt: skip
    assert error(r) == (400, "BadRequestException", "Form field bogusis not recognised")
    r = requests.post(ids.base + "put", data={**form, "wrap": "true"},
                      files={"file": ("w.dat", b"w")}, timeout=10)  # fmt: skip
    assert r.text.startswith("<html><script") and '"size":1' in r.text


@pytest.fixture()
def single_level() -> Iterator[Ids]:
    with LocalCatalogue(ServeConfig(ids_two_level=False)) as cat:
        yield Ids(cat)


def test_single_level_refuses_archive_as_ids_server(single_level: Ids) -> None:
    ids = single_level
    root = ids.login()
    ds, _ = ids.dataset(root)
    assert ids.get("isTwoLevel").text == "false"
    for call in ("archive", "restore", "write"):
        r = ids.post(call, sessionId=root, datasetIds=ds)
        assert error(r) == (
            501, "NotImplementedException",
            "This operation is unavailable for single level storage",
        ), call  # fmt: skip
    assert ids.post("reset", sessionId=root, datasetIds=ds).status_code == 204


def test_a_location_outside_the_storage_is_never_read(ids: Ids) -> None:
    root = ids.login()
    ds, _ = ids.dataset(root)
    (df,) = ids.write(root, [{"Datafile": {
        "name": "evil", "location": "../../../../etc/passwd", "dataset": {"id": ds},
    }}])  # fmt: skip
    r = ids.get("getData", sessionId=root, datafileIds=df)
    assert error(r)[:2] == (500, "InternalException") and "root:" not in r.text


def _answer(sock: socket.socket, data: bytes) -> tuple[bytes, bytes, bytes]:
    """(head, body, what followed) of the next Content-Length framed answer on ``sock``."""
    while True:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            if len(rest) >= length:
                return head, rest[:length], rest[length:]
        more = sock.recv(65536)
        assert more, "the connection was closed"
        data += more


def test_a_large_body_read_past_the_parser_is_stored_whole_and_a_cut_one_not(ids: Ids) -> None:
    """A put's body of known length is read into buffers used again and again (http_direct.py):
    every byte is stored in order, the request pipelined behind it is answered, and a client cut
    off in the middle of such a body leaves nothing."""
    root = ids.login()
    ds, fmt = ids.dataset(root)
    data = os.urandom(5 * 1024 * 1024 + 7)  # five buffers and a bit: the buffers are reused
    host, port = ids.cat.url.split("//")[1].rsplit(":", 1)
    query = f"sessionId={root}&name=big.nxs&datasetId={ds}&datafileFormatId={fmt}"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"PUT /ids/put?{query} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(data)}"
                     "\r\n\r\n".encode())  # fmt: skip
        time.sleep(0.05)  # the headers alone: the whole body comes after them
        for start in range(0, len(data) - 100_003, 100_003):  # pieces across buffer ends
            sock.sendall(data[start : start + 100_003])
        sock.sendall(data[start + 100_003 :] + b"GET /ids/ping HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body, rest = _answer(sock, b"")
        assert head.startswith(b"HTTP/1.1 201 "), head + body
        stored = json.loads(body)
        head, body, _ = _answer(sock, rest)
        assert head.startswith(b"HTTP/1.1 200 ") and body == b"IdsOK"
    assert stored["size"] == len(data) and stored["checksum"] == zlib.crc32(data)
    got = ids.get("getData", sessionId=root, datafileIds=stored["id"])
    assert got.status_code == 200 and got.content == data

    storage = ids.cat.ids.storage  # type: ignore[union-attr]
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(f"PUT /ids/put?{query.replace('big', 'cut')} HTTP/1.1\r\nHost: x\r\n"
                     f"Content-Length: {len(data)}\r\n\r\n".encode())  # fmt: skip
        time.sleep(0.05)
        sock.sendall(data[: 3 * 1024 * 1024])
        time.sleep(0.2)
    deadline = time.monotonic() + 5
    while list(storage.incoming.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(storage.incoming.iterdir()) == []
    assert ids.search(root, "SELECT df.name FROM Datafile df") == ["big.nxs"]


def _raw_put(sock: socket.socket, query: str, size: int) -> None:
    sock.sendall(f"PUT /ids/put?{query} HTTP/1.1\r\nHost: x\r\nContent-Length: {size}\r\n"
                 "Content-Type: application/octet-stream\r\n\r\n".encode())  # fmt: skip


def test_a_plain_put_body_is_read_from_the_socket_by_its_writer_thread(
    ids: Ids, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On plain TCP the rest of a put's body is read from the socket by the thread that writes
    it (ThreadSink.take_socket), not by the event loop (http_direct.py): one thread, no
    hand-over per chunk. Every byte is stored, in order, with its CRC-32; a keep-alive
    connection goes on with the next request; the transport was paused meanwhile."""
    import igestbench.mock.http as http

    made: list[object] = []
    real = http.DirectBody
    monkeypatch.setattr(http, "DirectBody", lambda *a, **k: made.append(real(*a, **k)))
    root = ids.login()
    ds, fmt = ids.dataset(root)
    data = os.urandom(3 * 1024 * 1024 + 5)
    host, port = ids.cat.url.split("//")[1].rsplit(":", 1)
    query = f"sessionId={root}&name=sock.nxs&datasetId={ds}&datafileFormatId={fmt}"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        _raw_put(sock, query, len(data))
        time.sleep(0.05)  # the headers alone: the body is read past the parser
        for start in range(0, len(data), 300_007):
            sock.sendall(data[start : start + 300_007])
        sock.sendall(b"GET /ids/ping HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body, rest = _answer(sock, b"")
        assert head.startswith(b"HTTP/1.1 201 "), head + body
        stored = json.loads(body)
        head, body, _ = _answer(sock, rest)
        assert head.startswith(b"HTTP/1.1 200 ") and body == b"IdsOK"
    assert made == []  # the event loop never read the body
    assert stored["size"] == len(data) and stored["checksum"] == zlib.crc32(data)
    assert ids.get("getData", sessionId=root, datafileIds=stored["id"]).content == data


def test_a_failed_write_mid_body_answers_an_ids_error_and_keeps_the_connection(
    ids: Ids, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills in the middle of a body read from the socket: the rest is still read
    (the connection stays in step), the answer is ids.server's InternalException, nothing is
    left in the storage and the next request on the connection is answered."""
    import errno

    from igestbench.mock.ids import upload

    real_write = upload._FileWriter.write

    def full_disk(self: Any, data: Any) -> None:
        if self.size >= 2 * 1024 * 1024:
            raise OSError(errno.ENOSPC, "No space left on device")
        real_write(self, data)

    monkeypatch.setattr(upload._FileWriter, "write", full_disk)
    root = ids.login()
    ds, fmt = ids.dataset(root)
    size = 6 * 1024 * 1024
    host, port = ids.cat.url.split("//")[1].rsplit(":", 1)
    query = f"sessionId={root}&name=full.nxs&datasetId={ds}&datafileFormatId={fmt}"
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        _raw_put(sock, query, size)
        time.sleep(0.05)
        sock.sendall(b"z" * size + b"GET /ids/ping HTTP/1.1\r\nHost: x\r\n\r\n")
        head, body, rest = _answer(sock, b"")
        assert head.startswith(b"HTTP/1.1 500 "), head + body
        assert json.loads(body)["code"] == "InternalException"
        assert "No space left on device" in json.loads(body)["message"]
        head, body, _ = _answer(sock, rest)
        assert head.startswith(b"HTTP/1.1 200 ") and body == b"IdsOK"
    storage = ids.cat.ids.storage  # type: ignore[union-attr]
    assert list(storage.incoming.iterdir()) == [] and storage.files() == []
    assert ids.search(root, "SELECT df.name FROM Datafile df") == []


def test_a_client_silent_mid_body_is_dropped_after_the_idle_time(tmp_path: Path) -> None:
    """While a writer thread reads the socket the event loop's idle timer is off; the socket's
    own timeout does its work: a client that stops sending is dropped, nothing kept."""
    with LocalCatalogue(ServeConfig(idle_timeout_s=0.5, ids_storage=str(tmp_path))) as cat:
        ids = Ids(cat)
        root = ids.login()
        ds, fmt = ids.dataset(root)
        host, port = cat.url.split("//")[1].rsplit(":", 1)
        query = f"sessionId={root}&name=silent&datasetId={ds}&datafileFormatId={fmt}"
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            _raw_put(sock, query, 10_000_000)
            time.sleep(0.05)
            sock.sendall(b"s" * 1_500_000)
            start = time.monotonic()
            assert sock.recv(100) == b""  # closed by the server, no answer
            assert time.monotonic() - start < 8
        storage = cat.ids.storage  # type: ignore[union-attr]
        deadline = time.monotonic() + 5
        while list(storage.incoming.iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list(storage.incoming.iterdir()) == [] and storage.files() == []


def test_a_stop_while_a_thread_reads_a_body_is_prompt_and_keeps_nothing(tmp_path: Path) -> None:
    """Stopping the server while a writer thread waits on a body's socket: the thread is woken
    (its socket shut down), the partial file removed, the stop does not wait for the client."""
    cat = LocalCatalogue(ServeConfig(ids_storage=str(tmp_path)))
    cat.__enter__()
    try:
        ids = Ids(cat)
        root = ids.login()
        ds, fmt = ids.dataset(root)
        host, port = cat.url.split("//")[1].rsplit(":", 1)
        query = f"sessionId={root}&name=stopped&datasetId={ds}&datafileFormatId={fmt}"
        sock = socket.create_connection((host, int(port)), timeout=10)
        _raw_put(sock, query, 10_000_000)
        time.sleep(0.05)
        sock.sendall(b"t" * 1_500_000)
        time.sleep(0.3)
        storage = cat.ids.storage  # type: ignore[union-attr]
        assert list(storage.incoming.iterdir())  # the upload is under way
    finally:
        start = time.monotonic()
        cat.__exit__(None, None, None)
        stopped = time.monotonic() - start
    try:
        deadline = time.monotonic() + 5
        while list((tmp_path / "cache" / "incoming").iterdir()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert list((tmp_path / "cache" / "incoming").iterdir()) == []
        assert stopped < 10
    finally:
        sock.close()


def test_a_put_over_tls_is_read_by_the_event_loop_and_stored_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over TLS the socket carries ciphertext: the body is read through the transport as before
    (http_direct.py), never from the socket by the writer thread."""
    import igestbench.mock.http as http

    made: list[object] = []
    real = http.DirectBody
    monkeypatch.setattr(http, "DirectBody", lambda *a, **k: made.append(real(*a, **k)))
    with LocalCatalogue(ServeConfig(tls="ca")) as cat:
        assert cat.tls is not None
        for name in ("post", "put", "get"):
            call = getattr(requests, name)
            monkeypatch.setattr(requests, name, functools.partial(call, verify=str(cat.tls.ca)))
        ids = Ids(cat)
        root = ids.login()
        ds, fmt = ids.dataset(root)
        data = os.urandom(2 * 1024 * 1024 + 3)
        answer = ids.put(root, ds, fmt, data)
        assert answer.status_code == 201, answer.text
        assert answer.json()["checksum"] == zlib.crc32(data)
        got = ids.get("getData", sessionId=root, datafileIds=answer.json()["id"])
        assert got.content == data
    assert len(made) == 1


def test_getdata_of_one_file_goes_by_sendfile_with_ranges_and_chunks(
    ids: Ids, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One unzipped file goes from the file to the socket (sendfile: FileAnswer.send), never
    through a buffer of the server: with its Content-Length, from a Range's offset (206), as
    one chunk where ids.server gives no length (a preparedId), empty files alike; the
    connection then answers the next request, and the file's lock is released (delete)."""
    from igestbench.mock.ids import transfer

    def no_buffered_read(self: Any, emit: Any) -> None:
        raise AssertionError("read through the server's buffers")

    monkeypatch.setattr(transfer.FileAnswer, "__call__", no_buffered_read)
    root = ids.login()
    ds, fmt = ids.dataset(root)
    data = os.urandom(3 * 1024 * 1024 + 11)
    df = ids.put(root, ds, fmt, data, name="big.nxs").json()["id"]
    empty = ids.put(root, ds, fmt, b"", name="empty.nxs").json()["id"]
    with requests.Session() as session:  # one keep-alive connection for all
        got = session.get(ids.base + "getData", params={"sessionId": root, "datafileIds": df},
                          timeout=30)  # fmt: skip
        assert got.status_code == 200 and got.content == data
        assert got.headers["Content-Length"] == str(len(data))
        part = session.get(ids.base + "getData", params={"sessionId": root, "datafileIds": df},
                           headers={"Range": "bytes=1000000-"}, timeout=30)  # fmt: skip
        assert part.status_code == 206 and part.content == data[1_000_000:]
        prepared = session.post(ids.base + "prepareData", timeout=10,
                                data={"sessionId": root, "datafileIds": df}).text  # fmt: skip
        chunked = session.get(ids.base + "getData", params={"preparedId": prepared}, timeout=30)
        assert chunked.headers.get("Transfer-Encoding") == "chunked"
        assert chunked.content == data
        nothing = session.get(ids.base + "getData", timeout=30,
                              params={"sessionId": root, "datafileIds": empty})  # fmt: skip
        assert nothing.status_code == 200 and nothing.content == b""
        assert session.get(ids.base + "ping", timeout=10).text == "IdsOK"
    _no_lock_left(ids, root)
    assert ids.delete(sessionId=root, datafileIds=f"{df},{empty}").status_code == 204
    assert ids.cat.ids.storage.files() == []  # type: ignore[union-attr]


def test_a_client_gone_mid_sendfile_frees_the_file(ids: Ids) -> None:
    """A client that stops reading a large getData and goes: the sending thread is stopped
    (the connection shut down), the file's lock released, the file can be deleted."""
    root = ids.login()
    ds, fmt = ids.dataset(root)
    data = os.urandom(24 * 1024 * 1024)
    df = ids.put(root, ds, fmt, data, name="big.nxs").json()["id"]
    host, port = ids.cat.url.split("//")[1].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(f"GET /ids/getData?sessionId={root}&datafileIds={df} HTTP/1.1\r\n"
                     "Host: x\r\n\r\n".encode())  # fmt: skip
        assert sock.recv(4096).startswith(b"HTTP/1.1 200 ")
        time.sleep(0.3)  # the server's thread blocks: the client reads no more
    _no_lock_left(ids, root)
    assert ids.delete(sessionId=root, datafileIds=df).status_code == 204
    assert ids.cat.ids.storage.files() == []  # type: ignore[union-attr]


def _no_lock_left(ids: Ids, sid: str, within: float = 10) -> None:
    deadline = time.monotonic() + within
    while ids.get("getServiceStatus", sessionId=sid).json()["lockCount"]:
        assert time.monotonic() < deadline, "a download's lock was never released"
        time.sleep(0.05)
