"""The local catalogue never sends an answer a client cannot parse, and hostile requests cost it
neither time, memory nor a traceback (issue 18.8).

* A character XML 1.0 forbids (NUL, control characters but tab/LF/CR, lone surrogates, U+FFFE)
  is refused at write time over both interfaces. A real ICAT 6.2.0 refuses it over SOAP (its
  XML reader does) but stores it when written over REST, and then sends it raw in every SOAP
  answer holding it, which no XML parser reads (the recordings below show both); so the local
  catalogue refuses it over REST too, with ICAT's fault for a bad value, BAD_PARAMETER.
* A chain of 20,000 ORs is refused at once (INTERNAL, as the real server's stack overflow gives
  from about 1,500), three at once too, and the server keeps no memory for them.
* An ``id`` no Java long holds and a 100,000-deep JSON login get ICAT's answers and one log
  line each, no traceback.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import time
from collections.abc import Iterator
from urllib.parse import quote

import psutil
import pytest
import requests
from lxml import etree

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatBadParameter
from igestbench.mock.catalogue import LocalCatalogue
from tests.benchmarks.served import served_catalogue
from tests.soap_helpers import call, login
from tests.test_icat62_recorded import Local, recording

BAD = ["\x00", "\x01", "\x1f", "\ufffe", "\ud800"]
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


@pytest.fixture()
def local() -> Iterator[Local]:
    with LocalCatalogue(ServeConfig()) as cat:
        yield Local(cat)


def rest_write(local: Local, entities: object) -> requests.Response:
    return requests.post(
        local.cat.rest_url + "/entityManager",
        data={"sessionId": local.sid, "entities": json.dumps(entities)},
        timeout=30,
    )


def all_facilities_parse(local: Local) -> list[str]:
    """The SOAP answer to a search of every Facility, parsed; the names in it."""
    r = call(
        local.cat.service_url,
        "search",
        f"<sessionId>{local.sid}</sessionId><query>SELECT f FROM Facility f</query>",
    )
    assert r.status_code == 200
    root = etree.fromstring(r.content)  # raises on a character XML forbids
    return [e.text or "" for e in root.iter("name")]


def test_the_real_server_stores_over_rest_what_its_soap_answers_cannot_carry() -> None:
    """Why the local catalogue refuses such values over REST too (recorded evidence)."""
    assert recording("rest-write-control-character")["status"] == 200
    answer = recording("soap-search-control-character")
    assert answer["status"] == 200 and "\x00" in answer["body"]
    with pytest.raises(etree.XMLSyntaxError):
        etree.fromstring(answer["body"].encode("utf-8"))


@pytest.mark.parametrize("char", BAD, ids=lambda c: f"U+{ord(c):04X}")
def test_rest_writes_of_characters_xml_forbids_are_refused(local: Local, char: str) -> None:
    r = rest_write(local, [{"Facility": {"name": f"bad-{char}-name"}}])
    body = r.json()
    assert (r.status_code, body["code"], body["offset"]) == (400, "BAD_PARAMETER", 0)
    assert f"U+{ord(char):04X}" in body["message"] and "XML 1.0" in body["message"]
    ok = rest_write(local, [{"Facility": {"name": "good", "description": "tab\tlf\ncr\r é"}}])
    assert ok.status_code == 200
    (fid,) = ok.json()
    r = rest_write(local, [{"Facility": {"id": fid, "fullName": f"x{char}"}}])  # an update
    assert (r.status_code, r.json()["code"]) == (400, "BAD_PARAMETER")
    assert all_facilities_parse(local) == ["good"]


def test_soap_writes_of_such_characters_fail_as_on_the_real_server(local: Local) -> None:
    for name in ("soap-create-character-reference", "soap-create-raw-control-character"):
        record, answer = local.replay(name)
        assert answer.status == record["status"] == 500
        ours, real = etree.fromstring(answer.body), etree.fromstring(record["body"].encode())
        assert ours.findtext(".//faultcode") == real.findtext(".//faultcode") == "S:Server"
        # the real message ends with Woodstox's position of the character
        first_line = (real.findtext(".//faultstring") or "").splitlines()[0]
        assert ours.findtext(".//faultstring") == first_line
        assert ours.find(".//detail") is None
    assert all_facilities_parse(local) == []


def test_python_callers_are_refused_too(local: Local) -> None:
    service = local.cat.service
    with pytest.raises(IcatBadParameter, match=r"U\+0000"):
        service.create(local.sid, Bean("Facility", {"name": "a\x00b"}))


# --- long chains ---------------------------------------------------------------------------------


def ors(n: int) -> str:
    return "SELECT f FROM Facility f WHERE " + " OR ".join(f"f.name = 'x{i}'" for i in range(n))


def soap_search(url: str, sid: str, query: str) -> requests.Response:
    return call(url, "search", f"<sessionId>{sid}</sessionId><query>{query}</query>")


def fault_type(r: requests.Response) -> str | None:
    return etree.fromstring(r.content).findtext(".//{http://icatproject.org}IcatException/type")


def test_a_chain_the_real_server_answers_is_answered(local: Local) -> None:
    record = recording("soap-search-1000-or")
    r = soap_search(local.cat.service_url, local.sid, ors(1000))
    assert r.status_code == record["status"] == 200


def test_long_or_chains_fail_fast_as_internal_and_keep_no_memory() -> None:
    """Three 20,000-OR searches at once against ``sv7 serve`` in its own process: each is
    INTERNAL, as on the real server (recorded for 20,000; it fails from 1,500 to 3,400 ORs as
    its JVM warms, and answered 2,000 in the recording), and the server's resident memory
    afterwards is what it was before (in CI's noise: within 16 MiB; it kept 120 MiB)."""
    assert fault_type_of_recording("soap-search-20000-or") == "INTERNAL"
    with served_catalogue() as (proc, url):
        sid = login(url)
        server = psutil.Process(proc.pid)
        soap_search(url, sid, ors(10))  # warm: the parser, the first statements
        before = server.memory_info().rss
        query = ors(20_000)
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            answers = list(pool.map(lambda _: soap_search(url, sid, query), range(3)))
        r = requests.get(
            url.replace("/ICATService/ICAT", "/icat/entityManager"),
            params={"sessionId": sid, "query": ors(2000)},
            timeout=60,
        )
        after = server.memory_info().rss
    for answer in answers:
        assert (answer.status_code, fault_type(answer)) == (500, "INTERNAL")
        assert b"more than the 1500" in answer.content
    assert (r.status_code, r.json()["code"]) == (500, "INTERNAL")
    assert after - before < 16 * 2**20, f"kept {(after - before) / 2**20:.1f} MiB"


def fault_type_of_recording(name: str) -> str | None:
    root = etree.fromstring(recording(name)["body"].encode("utf-8"))
    return root.findtext(".//{http://icatproject.org}IcatException/type")


# --- ids and deep JSON: ICAT's answers, one log line, no traceback -----------------------------


@pytest.mark.parametrize(
    "name",
    [
        "rest-get-id-too-large",
        "rest-get-id-not-a-number",
        "rest-login-deep-array",
        "rest-login-deep-object",
        "rest-write-deep",
        "soap-get-id-too-large",
        "soap-get-id-not-a-number",
    ],
)
def test_hostile_values_get_icats_answer_and_one_log_line(
    local: Local, name: str, caplog: pytest.LogCaptureFixture
) -> None:
    record = recording(name)
    request = record["request"]
    started = time.monotonic()
    with caplog.at_level(logging.INFO, logger="igestbench"):
        if request["body"].endswith("bytes"):  # too large to be kept: rebuilt as recorded
            deep = "[" * 100_000 + "]" * 100_000
            fields = {
                "rest-login-deep-array": {"json": deep},
                "rest-login-deep-object": {
                    "json": '{"plugin":"simple","credentials":' + "[" * 2000 + "]" * 2000 + "}"
                },
                "rest-write-deep": {"sessionId": local.sid, "entities": deep},
            }[name]
            body = "&".join(f"{k}={quote(v)}" for k, v in fields.items()).encode()
            answer = local.send("POST", request["path"], body, FORM)
        else:
            record, answer = local.replay(name)
    # promptly, not by a walk quadratic in the depth (hours at 100,000); generous: a busy
    # machine (load average 11) took 9 s
    assert time.monotonic() - started < 60
    assert answer.status == record["status"]
    if name.startswith("rest"):
        assert json.loads(answer.body) == json.loads(record["body"])
    else:
        ours, real = etree.fromstring(answer.body), etree.fromstring(record["body"].encode())
        for path in (".//faultstring", ".//{http://icatproject.org}IcatException/type"):
            assert ours.findtext(path) == real.findtext(path)
    assert not [r for r in caplog.records if r.exc_info], "a traceback in the server log"
    assert len(caplog.records) <= 1
