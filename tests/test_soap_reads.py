"""Plain search and get requests read without lxml (mock/soap_reads.py): the same answers.

Every request below is answered twice by the same catalogue, once as it comes (plain ones read
by the regular expression) and once with that reader switched off (lxml, as before); the two
answers must be the same bytes — for the shapes clients send, for what only looks like them,
and for thousands of random corruptions of them.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator

import pytest

from igestbench.config import ServeConfig
from igestbench.icat.soapxml import ICAT_NS, SOAP_ENV_NS, XSI_NS
from igestbench.mock import soap
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.soap import SoapEndpoint
from igestbench.mock.soap_reads import read_request


@pytest.fixture(scope="module")
def endpoint() -> Iterator[tuple[SoapEndpoint, str]]:
    with LocalCatalogue(ServeConfig(example_data=True)) as cat:
        sid = cat.service.login("simple", {"username": "root", "password": "root"})
        yield SoapEndpoint(cat.service), sid


def both(endpoint: SoapEndpoint, body: bytes, monkeypatch: pytest.MonkeyPatch
         ) -> tuple[tuple[int, bytes], tuple[int, bytes]]:
    """(answer as served, answer with every request parsed by lxml)."""
    served = endpoint.handle(body)
    with monkeypatch.context() as m:
        m.setattr(soap, "read_request", lambda body: None)
        parsed = endpoint.handle(body)
    return served, parsed


def _search(sid: str, query: str = "SELECT f FROM Facility f") -> str:
    return f"<sessionId>{sid}</sessionId><query>{query}</query>"


#: What clients send: (envelope with {sid}, what the reader must find)
CLIENTS = {
    # the lean client and the tests' helpers (igestbench/client/envelopes.py)
    "lean": f'<S:Envelope xmlns:S="{SOAP_ENV_NS}" xmlns:tns="{ICAT_NS}" xmlns:xsi="{XSI_NS}">'
            "<S:Body><tns:search>{inner}</tns:search></S:Body></S:Envelope>",
    # zeep
    "zeep": f"<?xml version='1.0' encoding='utf-8'?>\n<soap-env:Envelope xmlns:soap-env="
            f'"{SOAP_ENV_NS}"><soap-env:Body><ns0:search xmlns:ns0="{ICAT_NS}">{{inner}}'
            "</ns0:search></soap-env:Body></soap-env:Envelope>",
    # suds, which python-icat uses: an empty Header, the Body under another prefix
    "suds": f'<?xml version="1.0" encoding="UTF-8"?><SOAP-ENV:Envelope xmlns:ns0="{ICAT_NS}" '
            f'xmlns:ns1="{SOAP_ENV_NS}" xmlns:xsi="{XSI_NS}" xmlns:SOAP-ENV="{SOAP_ENV_NS}">'
            "<SOAP-ENV:Header/><ns1:Body><ns0:search>{inner}</ns0:search></ns1:Body>"
            "</SOAP-ENV:Envelope>",
    # pretty-printed, with an empty Header pair
    "pretty": f'<?xml version="1.0"?>\n<e:Envelope xmlns:e="{SOAP_ENV_NS}">\n  <e:Header>'
              f'</e:Header>\n  <e:Body>\n    <i:search xmlns:i="{ICAT_NS}">\n      {{inner}}\n'
              "    </i:search>\n  </e:Body>\n</e:Envelope>\n",
}


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_what_clients_send_is_read_plainly_and_answered_alike(
    client: str, endpoint: tuple[SoapEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ep, sid = endpoint
    query = "SELECT f FROM Facility f WHERE f.id &gt; 0 AND f.name &lt;&gt; 'a&amp;b'"
    body = CLIENTS[client].format(inner=_search(sid, query)).encode()
    plain = read_request(body)
    assert plain is not None and plain.op == "search" and plain.session_id == sid
    assert plain.query == "SELECT f FROM Facility f WHERE f.id > 0 AND f.name <> 'a&b'"
    served, parsed = both(ep, body, monkeypatch)
    assert served == parsed and served[0] == 200 and b"<return" in served[1]
    get = CLIENTS[client].replace("search", "get").format(
        inner=f"<sessionId>{sid}</sessionId><query>Facility</query><primaryKey>1</primaryKey>")
    read = read_request(get.encode())
    assert read is not None and read.op == "get" and read.primary_key == "1"
    assert both(ep, get.encode(), monkeypatch)[0] == both(ep, get.encode(), monkeypatch)[1]


LEAN = CLIENTS["lean"]
#: Requests that only look like plain ones: each must be answered as lxml reads it
LOOKALIKES = [
    LEAN.format(inner="<sessionId>{sid}</sessionId><query><![CDATA[Facility]]></query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><!-- x --><query>Facility</query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility&#32;</query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Faci\rlity</query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Faci\x01lity</query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>a ]]> b</query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>a \uffff b</query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>&nbsp;</query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query><query>User</query>"),
    LEAN.format(inner="<query>Facility</query><sessionId>{sid}</sessionId>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query/>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query><primaryKey>1"
                      "</primaryKey>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query a='1'>Facility</query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>").replace(
        "<tns:search>", '<tns:search xmlns="urn:x">'),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>").replace(
        "<tns:search>", '<tns:search xmlns:tns="urn:other">'),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>").replace(
        f'xmlns:tns="{ICAT_NS}"', 'xmlns:tns="urn:other"'),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>").replace(
        f'xmlns:xsi="{XSI_NS}"', f'xmlns:xsi="{XSI_NS}" xmlns:xsi="{XSI_NS}"'),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>").replace(
        "<S:Body>", "<S:Header><x/></S:Header><S:Body>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>") + "<!-- after -->",
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>") + "junk",
    "\ufeff" + LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>"),
    '<?xml version="1.0" encoding="ISO-8859-1"?>' + LEAN.format(
        inner="<sessionId>{sid}</sessionId><query>Facility</query>"),
    '<?xml version="1.0" standalone="yes"?>' + LEAN.format(
        inner="<sessionId>{sid}</sessionId><query>Facility</query>"),
    "<!DOCTYPE x []>" + LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>").replace(
        "</S:Body>", "</S:Body><S:Body/>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>").replace(
        "</tns:search>", "</tns:searc>"),
    LEAN.format(inner="<sessionId>{sid}</sessionId><query>Facility</query>").replace(
        "S:", "s:", 1),
]


@pytest.mark.parametrize("template", LOOKALIKES)
def test_what_only_looks_plain_is_answered_as_lxml_reads_it(
    template: str, endpoint: tuple[SoapEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ep, sid = endpoint
    body = template.replace("{sid}", sid).encode()
    served, parsed = both(ep, body, monkeypatch)
    assert served == parsed


def test_invalid_utf8_and_a_latin1_body_are_answered_as_lxml_reads_them(
    endpoint: tuple[SoapEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ep, sid = endpoint
    base = LEAN.format(inner=f"<sessionId>{sid}</sessionId><query>Facility é</query>")
    for body in (base.encode("latin-1"), base.encode().replace(b"\xc3\xa9", b"\xc3")):
        assert read_request(body) is None
        served, parsed = both(ep, body, monkeypatch)
        assert served == parsed


def test_random_corruptions_of_plain_requests_are_answered_as_lxml_reads_them(
    endpoint: tuple[SoapEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ep, sid = endpoint
    rng = random.Random(20261126)
    pieces = ["<", ">", "/", "&", ";", "amp", "lt", "'", '"', " ", "\n", "\r", ":", "=", "x",
              "xmlns", "xmlns:tns", "S", "tns", "?", "!", "-", "]]>", "\x00", "é", "\t", "1"]
    bases = [CLIENTS[c].format(inner=_search(sid)) for c in sorted(CLIENTS)] + [
        LEAN.replace("search", "get").format(
            inner=f"<sessionId>{sid}</sessionId><query>Facility</query>"
                  "<primaryKey>1</primaryKey>")]
    plain = 0
    for _ in range(3000):
        text = rng.choice(bases)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(text))
            if rng.random() < 0.5:
                text = text[:at] + rng.choice(pieces) + text[at:]
            else:
                text = text[:at] + text[at + rng.randint(1, 3):]
        body = text.encode()
        plain += read_request(body) is not None
        served, parsed = both(ep, body, monkeypatch)
        assert served == parsed, body
    assert plain > 200  # many corruptions still plain (a space, another text): both compared


def test_an_expired_session_is_refused_on_the_plain_path(
    endpoint: tuple[SoapEndpoint, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ep, _ = endpoint
    sessions = ep.service.sessions
    sid = ep.service.login("simple", {"username": "root", "password": "root"})
    body = LEAN.format(inner=f"<sessionId>{sid}</sessionId><query>"
                             "SELECT f FROM Facility f</query>").encode()
    assert read_request(body) is not None
    assert ep.handle(body)[0] == 200
    later = time.monotonic() + sessions.lifetime_s + 1
    monkeypatch.setattr(sessions, "_now", lambda: later)
    status, answer = ep.handle(body)
    assert status == 500 and b"<type>SESSION</type>" in answer and b"has expired" in answer
    unknown = body.replace(sid.encode(), b"00000000-0000-0000-0000-000000000000")
    status, answer = ep.handle(unknown)
    assert status == 500 and b"<type>SESSION</type>" in answer
