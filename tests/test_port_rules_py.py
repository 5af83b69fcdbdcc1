"""``rules.py dump|load URL plugin credentials…`` (icat.server's src/main/scripts/rules.py at tag
v6.2.0) against the local catalogue, its requests replayed as the script makes them.

The script is not on PyPI and tests run offline, so :func:`rules_py` sends what it sends, with
http.client as it does: a login (``POST icat/session``, a form with ``json``), then for ``dump``
``GET icat/port?json={"sessionId", "query": "Rule", "attributes": "ALL"}`` whose body it prints
(``print`` adds a line break), for ``load`` a multipart body it builds by hand (boundary
``----------lImIt_of_THE_fIle_eW_$``, CRLF lines, the ``json`` part typed text/plain, the file
part ``file``) with its standard input as the file, expecting an empty answer. The same headers
(``Cache-Control``, ``Pragma``, Java's old ``Accept``, ``Connection: keep-alive``). A 2xx answer
goes on, anything else ends the script with ``CODE message`` from the JSON fault.

The script hands ``conn.send`` a ``str``: under Python 2, where it was written, that is bytes;
under Python 3 http.client refuses it (TypeError) and ``load`` fails before its body is sent,
whatever the server. The replay sends the bytes Python 2 sent.
"""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlencode, urlparse

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.mock.catalogue import LocalCatalogue
from tests.port_helpers import without_ids

LIMIT = "----------lImIt_of_THE_fIle_eW_$"
JAVA_ACCEPT = "text/html, image/gif, image/jpeg, *; q=.2, */*; q=.2"


class Fatal(Exception):
    """The script's fatal(): its message on stderr, exit status 1."""


def _connection(
    url: str, relative: str, method: str, parameters: str | None = None
) -> tuple[http.client.HTTPConnection, str]:
    o = urlparse(url)
    path = (o.path if o.path.endswith("/") else o.path + "/") + "icat/" + relative
    if parameters and method != "POST":
        path += "?" + parameters
    conn = http.client.HTTPConnection(o.netloc, timeout=60)
    conn.putrequest(method, path, skip_accept_encoding=True)
    conn.putheader("Cache-Control", "no-cache")
    conn.putheader("Pragma", "no-cache")
    conn.putheader("Accept", JAVA_ACCEPT)
    conn.putheader("Connection", "keep-alive")
    return conn, path


def _response(conn: http.client.HTTPConnection) -> bytes:
    try:
        response = conn.getresponse()
        content = response.read()
    finally:
        conn.close()  # the script leaves that to its exit
    if response.status // 100 != 2:
        try:
            fault = json.loads(content)
        except ValueError:
            raise Fatal("InternalException " + content.decode()) from None
        raise Fatal(fault["code"] + " " + fault["message"])
    return content


def rules_py(url: str, action: str, plugin: str, credentials: list[str], stdin: str = "") -> str:
    """What ``rules.py action url plugin credentials…`` prints (dump) or "" (load)."""
    pairs = [{credentials[i]: credentials[i + 1]} for i in range(0, len(credentials), 2)]
    parameters = urlencode({"json": json.dumps({"plugin": plugin, "credentials": pairs})})
    conn, _ = _connection(url, "session", "POST")
    conn.putheader("Content-Type", "application/x-www-form-urlencoded")
    conn.putheader("Content-Length", str(len(parameters)))
    conn.endheaders()
    conn.send(parameters.encode("ascii"))
    sid = json.loads(_response(conn))["sessionId"]
    if action == "dump":
        spec = urlencode(
            {"json": json.dumps({"sessionId": sid, "query": "Rule", "attributes": "ALL"})}
        )
        conn, _ = _connection(url, "port", "GET", spec)
        conn.endheaders()
        return _response(conn).decode() + "\n"  # print() adds one
    lines = [
        "--" + LIMIT,
        "Content-Type: text/plain",
        'Content-Disposition: form-data; name="json"',
        "",
        json.dumps({"sessionId": sid, "attributes": "ALL"}),
        "--" + LIMIT,
        "Content-Type: application/octet-stream",
        'Content-Disposition: form-data; name="file"; filename="file"',
        "",
        stdin,
        "--" + LIMIT + "--",
        "",
    ]
    body = "\r\n".join(lines).encode("utf-8")  # Python 2's str: bytes, their length
    conn, _ = _connection(url, "port", "POST")
    conn.putheader("content-length", str(len(body)))
    conn.putheader("Content-Type", "multipart/form-data; boundary=" + LIMIT)
    conn.endheaders()
    conn.send(body)
    if _response(conn):
        raise Fatal("Should have been no response")
    return ""


def test_rules_py_dumps_the_rules_of_one_catalogue_and_loads_them_into_another() -> None:
    root = ["username", "root", "password", "root"]
    with LocalCatalogue(ServeConfig(example_data=True)) as source:
        store = source.store
        group = store.create("simple/root", Bean("Grouping", {"name": 'admins, "all"'}))
        store.create(
            "simple/root",
            Bean("Rule", {"crudFlags": "CRUD", "what": "SELECT r FROM Rule r WHERE r.id > 0",
                          "grouping": Bean("Grouping", {"id": group})}),
        )  # fmt: skip
        dumped = rules_py(source.url, "dump", "simple", root)
    assert dumped.startswith("# ICAT Export file written by simple/root\n1.0\n\nRule(?:0,create")
    assert dumped.count("\n") == 4 + 54 + 1  # header lines, 53 READ rules and ours, print's
    with LocalCatalogue(ServeConfig()) as target:
        # a rule names its grouping by key: the grouping must be there already
        target.store.create("simple/root", Bean("Grouping", {"name": 'admins, "all"'}))
        assert rules_py(target.url, "load", "simple", root, stdin=dumped) == ""
        again = rules_py(target.url, "dump", "simple", root)
        reader = target.service.login("simple", {"username": "reader", "password": "reader"})
        assert target.service.search(reader, "SELECT COUNT(f) FROM Facility f").items == [0]
    assert without_ids(again) == without_ids(dumped)  # createId and times kept (ALL)


def test_rules_py_reports_a_refused_login_and_a_missing_grouping_as_icat_faults() -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        try:
            rules_py(cat.url, "dump", "simple", ["username", "root", "password", "wrong"])
        except Fatal as exc:
            assert str(exc) == "SESSION The username and password do not match "
        else:
            raise AssertionError("the login was not refused")
        text = '1.0\n\nRule(?:0,crudFlags:1,grouping(name:2),what:3)\n"1","R","nobody","Facility"\n'
        try:
            rules_py(cat.url, "load", "simple", ["username", "root", "password", "root"], text)
        except Fatal as exc:
            assert str(exc) == (
                "NO_SUCH_OBJECT_FOUND Import failed when looking up existing object for "
                "attribute grouping at line 4"
            )
        else:
            raise AssertionError("a rule of a missing grouping was loaded")
