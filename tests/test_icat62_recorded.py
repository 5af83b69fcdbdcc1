"""The local catalogue against what a real ICAT 6.2.0 answered the same requests.

Each recording in ``fixtures/icat-6.2/exchanges/`` (README there: server, date, how recorded)
is one request and the real server's status, headers and body. The tests send the same request
to a local catalogue and compare what a client sees: the status, the headers that carry meaning
(Content-Type, its absence, Content-Length, Allow) and the body (issue 20.3, issue 18.8).
Where the local catalogue differs on purpose, the test says so and why.
"""

from __future__ import annotations

import http.client
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import pytest
from lxml import etree

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from tests.soap_helpers import ICAT_62, login

EXCHANGES = ICAT_62 / "exchanges"
FORM = "application/x-www-form-urlencoded"
SID = "{sessionId}"


def recording(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EXCHANGES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def header(headers: list[list[str]] | list[tuple[str, str]], name: str) -> str | None:
    """The value of header ``name`` (None when absent)."""
    for key, value in headers:
        if key.lower() == name.lower():
            return value
    return None


class Answer:
    def __init__(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def header(self, name: str) -> str | None:
        return header(self.headers, name)

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


class Local:
    """Sends recorded requests to a local catalogue, with its own session id."""

    def __init__(self, cat: LocalCatalogue) -> None:
        self.cat = cat
        address = urlsplit(cat.url)
        self.host, self.port = address.hostname or "127.0.0.1", address.port or 80
        self.sid = login(cat.service_url)

    def send(
        self, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
    ) -> Answer:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, path, body=body or None, headers=headers or {})
            response = conn.getresponse()
            return Answer(response.status, response.getheaders(), response.read())
        finally:
            conn.close()

    def replay(self, name: str, **replace: str) -> tuple[dict[str, Any], Answer]:
        """The recording ``name`` and the local answer to its request (session id ours)."""
        record = recording(name)
        request = record["request"]
        path, body = request["path"], request["body"]
        for old, new in {SID: self.sid, **replace}.items():
            path = path.replace(quote(old, safe=""), quote(new, safe="")).replace(old, new)
            body = body.replace(quote(old, safe=""), quote(new, safe="")).replace(old, new)
        return record, self.send(request["method"], path, body.encode("utf-8"), request["headers"])


@pytest.fixture(scope="module")
def local() -> Iterator[Local]:
    with LocalCatalogue(ServeConfig()) as cat:
        yield Local(cat)


def facility(local: Local, name: str) -> int:
    form = f"sessionId={quote(local.sid)}&entities=" + quote(
        json.dumps([{"Facility": {"name": name}}])
    )
    answer = local.send("POST", "/icat/entityManager", form.encode(), {"Content-Type": FORM})
    assert answer.status == 200, answer.text
    return int(json.loads(answer.body)[0])


# --- 20.3: headers --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["rest-session-put", "rest-session-delete", "rest-entityManager-delete", "rest-not-served"],
)
def test_void_answers_and_unserved_paths_carry_no_content_type(local: Local, name: str) -> None:
    replace = {}
    if name == "rest-session-delete":
        replace = {SID: login(local.cat.service_url)}
    record, answer = local.replay(name, **replace)
    if name == "rest-entityManager-delete":  # the same request for an object of ours
        entities = json.dumps([{"Facility": {"id": facility(local, "to-delete")}}])
        path = f"/icat/entityManager?sessionId={quote(local.sid)}&entities={quote(entities)}"
        answer = local.send("DELETE", path)
    assert answer.status == record["status"]
    for name_ in ("Content-Type", "Content-Length"):  # a 204 has neither, a 501 its length
        assert answer.header(name_) == header(record["headers"], name_)
    assert answer.text == record["body"]
    assert answer.header("Access-Control-Allow-Origin") == "*"


def test_head_has_the_headers_of_get_and_its_length(local: Local) -> None:
    record, answer = local.replay("rest-version-head")
    assert (answer.status, answer.body) == (record["status"], b"")
    for name in ("Content-Length", "Content-Type"):
        assert answer.header(name) == header(record["headers"], name)
    assert answer.header("Content-Length") == "19"
    # and the connection stays usable: the next answer is read whole
    _, get = local.replay("rest-version-get")
    assert get.text == recording("rest-version-get")["body"]


def _wadl_normalised(text: str, base: str) -> str:
    """A WADL with what differs by nature left out: the generator's doc line and the base."""
    text = re.sub(r"\n    <doc [^\n]*/>\n", "\n    <doc/>\n", text)
    return text.replace(base, "BASE/")


@pytest.mark.parametrize(
    "name", sorted(p.stem for p in EXCHANGES.glob("rest-options-*.json")), ids=str
)
def test_options_answers_the_resource_wadl_and_its_own_allow(local: Local, name: str) -> None:
    record, answer = local.replay(name)
    assert answer.status == record["status"]
    for name_ in ("Content-Type", "Allow"):
        assert answer.header(name_) == header(record["headers"], name_)
    if record["status"] != 200:
        return
    assert re.fullmatch(
        r"\w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d UTC", answer.header("Last-modified") or ""
    )
    real_base = re.search(r'<resources base="([^"]*)"', record["body"])
    assert real_base is not None
    ours = _wadl_normalised(
        answer.text.replace(local.sid, SID), f"http://{local.host}:{local.port}/icat/"
    )
    assert ours == _wadl_normalised(record["body"], real_base.group(1))
    assert int(answer.header("Content-Length") or 0) == len(answer.body)


def test_properties_are_the_real_servers(local: Local) -> None:
    """containerType "Glassfish", and no friendly name where none is configured."""
    record, answer = local.replay("rest-properties")
    assert answer.status == record["status"]
    assert json.loads(answer.body) == json.loads(record["body"])
    assert answer.text == record["body"]  # key order and spacing too


def test_a_friendly_name_is_given_only_when_configured() -> None:
    with LocalCatalogue(ServeConfig(friendly_names=(("simple", "Local"),))) as cat:
        answer = Local(cat).send("GET", "/icat/properties")
        (simple,) = json.loads(answer.body)["authenticators"]
        assert simple["friendly"] == "Local"


def test_soap_authenticator_info_has_no_friendly_element_without_one(local: Local) -> None:
    record, answer = local.replay("soap-getAuthenticatorInfo")
    ns = {"icat": "http://icatproject.org"}

    def returns(body: bytes) -> list[list[tuple[str, str | None]]]:
        found = etree.fromstring(body).findall(".//icat:getAuthenticatorInfoResponse/return", ns)
        return [[(e.tag, e.text) for e in r.iter() if e is not r] for r in found]

    assert answer.status == record["status"]
    assert returns(answer.body) == returns(record["body"].encode("utf-8"))


# --- 20.3: what Jersey answers before ICAT sees a request ------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "rest-session-post-no-form",
        "rest-session-post-empty-form",
        "rest-get-id-not-a-number",
        "rest-get-id-too-large",
    ],
)
def test_requests_jersey_refuses_are_answered_as_the_real_server(local: Local, name: str) -> None:
    record, answer = local.replay(name)
    assert (answer.status, answer.text) == (record["status"], record["body"])
    assert answer.header("Content-Type") == header(record["headers"], "Content-Type")


# --- a malformed login: Parsson's words, not Python's ------------------------------------------


MALFORMED_LOGINS = sorted(p.stem for p in EXCHANGES.glob("rest-login-malformed-*.json"))


def test_every_malformed_login_recorded_is_compared() -> None:
    assert len(MALFORMED_LOGINS) == 11, MALFORMED_LOGINS


@pytest.mark.parametrize("name", [*MALFORMED_LOGINS, "rest-login-top-level-array"])
def test_a_malformed_login_is_refused_as_the_real_server_refuses_it(
    local: Local, name: str
) -> None:
    """INTERNAL (500), the Java exception's class and its message — where Parsson meets the
    error, in its words, at the location it counts (also its odd offsets at the end of the
    text) — and never a Python message dressed in a Java class name."""
    record, answer = local.replay(name)
    assert (answer.status, answer.text) == (record["status"], record["body"])
    assert answer.header("Content-Type") == header(record["headers"], "Content-Type")


# --- 20.3: an unknown entity name ----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "rest-search-unknown-entity-jpql",
        "rest-search-unknown-entity-concise",
        "rest-search-unknown-entity-include",
        "rest-get-unknown-entity",
        "rest-get-unknown-entity-include",
        "rest-write-unknown-entity",
        "rest-delete-unknown-entity",
    ],
)
def test_an_unknown_entity_over_rest_is_named_as_icat_names_it(local: Local, name: str) -> None:
    record, answer = local.replay(name)
    if name == "rest-get-unknown-entity-include":  # the same request for an object of ours
        query = quote("Facility INCLUDE Nothing")
        path = f"/icat/entityManager?sessionId={quote(local.sid)}&query={query}"
        answer = local.send("GET", f"{path}&id={facility(local, 'for-get')}")
    assert (answer.status, answer.text) == (record["status"], record["body"])


def _fault(body: bytes) -> tuple[str | None, str | None, str | None, str | None]:
    root = etree.fromstring(body)
    return (
        root.findtext(".//faultcode"),
        root.findtext(".//faultstring"),
        root.findtext(".//{http://icatproject.org}IcatException/message"),
        root.findtext(".//{http://icatproject.org}IcatException/type"),
    )


@pytest.mark.parametrize(
    "name",
    [
        "soap-search-unknown-entity-concise",
        "soap-search-unknown-entity-include",
        "soap-get-unknown-entity",
        "soap-get-unknown-entity-include",
    ],
)
def test_an_unknown_entity_over_soap_is_named_as_icat_names_it(local: Local, name: str) -> None:
    replace = {}
    if name == "soap-get-unknown-entity-include":
        real_id = re.search(r"<primaryKey>(\d+)<", recording(name)["request"]["body"])
        assert real_id is not None
        replace = {real_id.group(0): f"<primaryKey>{facility(local, 'for-soap-get')}<"}
    record, answer = local.replay(name, **replace)
    assert answer.status == record["status"] == 500
    assert _fault(answer.body) == _fault(record["body"].encode("utf-8"))


# --- 20.3: dates ----------------------------------------------------------------------------------


def test_dates_differ_from_a_mariadb_server_only_in_their_milliseconds(local: Local) -> None:
    """The real server on MariaDB answers whole seconds (DATETIME truncates: a startDate
    written as .700 reads back .000); that is its database's doing, not ICAT's (on Oracle or
    PostgreSQL the milliseconds stay). The local catalogue keeps milliseconds, as those do: the
    form and the fields are the same, and no client may rely on either precision."""
    record = recording("rest-search-dates")
    (real,) = json.loads(record["body"])
    facility(local, "sv7-dates")
    answer = local.send(
        "GET",
        "/icat/entityManager?sessionId="
        + quote(local.sid)
        + "&query="
        + quote("SELECT f FROM Facility f WHERE f.name = 'sv7-dates'"),
    )
    (ours,) = json.loads(answer.body)
    assert list(ours["Facility"]) == list(real["Facility"])
    date = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.(\d{3})Z")
    for key in ("createTime", "modTime"):
        real_match = date.fullmatch(real["Facility"][key])
        our_match = date.fullmatch(ours["Facility"][key])
        assert real_match is not None and real_match.group(1) == "000"
        assert our_match is not None


def test_recordings_name_their_server() -> None:
    for path in EXCHANGES.glob("*.json"):
        record = recording(path.stem)
        assert record["server"] == "6.2.0" and record["recorded"].startswith("2026-"), path
