"""A request's id as Java reads a long (mock/values.py ``java_long``): SOAP's ``primaryKey``
(JAXB's xs:long: what is no long is 0) and REST's ``id`` (Jersey: what is no long is its
QueryParamException). Plain ids take a fast path; every text must read as the general rule
reads it."""

from __future__ import annotations

import http.client
import re
from urllib.parse import urlencode

import pytest

from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.values import java_long
from tests.soap_helpers import call, fault, login

_LONG = re.compile(r"[+-]?[0-9]+")


def _as_java(text: str) -> int | None:
    """Long.parseLong's rule, without shortcuts: a sign and ASCII digits, within 64 bits."""
    if _LONG.fullmatch(text) is None:
        return None
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 25:  # far beyond a long (and beyond what int() reads past 4,300)
        return None
    value = int(text[0] + digits if text[0] == "-" else digits)
    return value if -(2**63) <= value <= 2**63 - 1 else None


NUMBERS = (0, 1, -1, 7, 2**31, 2**53, 2**53 + 1, 2**63 - 1, -(2**63), 2**63, -(2**63) - 1,
           10**17, 10**18 - 1, 10**18, 10**19, -(10**18))  # fmt: skip
EDGES = [
    *map(str, NUMBERS),
    "+1", "-0", "+0", "007", "-007", "0" * 30 + "42", "-" + "0" * 5000 + "5", "9" * 5000,
    "", " 1", "1 ", "+", "-", "+-1", "1e3", "0x10", "12a", "1_000", "1.0", "True", "true",
    # digits beyond ASCII: str.isdigit() takes them, Java does not
    "\u00b2", "\u0661\u0662", "\uff11\uff12",
]


@pytest.mark.parametrize("text", EDGES, ids=lambda t: repr(t[:24]))
def test_every_text_reads_as_java_reads_a_long(text: str) -> None:
    assert java_long(text) == _as_java(text)


def test_a_plain_id_is_an_int_not_a_bool() -> None:
    for text in ("0", "1"):
        assert type(java_long(text)) is int


def test_a_soap_primary_key_of_thousands_of_digits_is_0(catalogue: LocalCatalogue) -> None:
    """What is no long is 0 (JAXB), whatever its length: before, beyond 4,300 digits int()
    refused the text and the answer was an INTERNAL fault with a traceback in the log."""
    url = catalogue.service_url
    sid = login(url)
    for key in ("9" * 5000, "0" * 5000 + "1"):
        r = call(url, "get", f"<sessionId>{sid}</sessionId><query>Dataset</query>"
                             f"<primaryKey>{key}</primaryKey>")  # fmt: skip
        expected = "Dataset[id:0] not found." if key[0] == "9" else "Dataset[id:1] not found."
        assert fault(r)[:3] == ("S:Server", expected, "NO_SUCH_OBJECT_FOUND")


def test_a_rest_id_of_thousands_of_digits_is_jerseys_refusal(catalogue: LocalCatalogue) -> None:
    sid = login(catalogue.service_url)
    connection = http.client.HTTPConnection("127.0.0.1", catalogue.port, timeout=30)
    try:
        query = urlencode({"sessionId": sid, "query": "Facility", "id": "9" * 5000})
        connection.request("GET", f"/icat/entityManager?{query}")
        answer = connection.getresponse()
        body = answer.read()
    finally:
        connection.close()
    assert answer.status == 500
    assert b"QueryParamException HTTP 404 Not Found" in body


@pytest.mark.parametrize("text", ["1,9223372036854775808", "1," + "9" * 5000, "1,x", "1,٣"])
def test_the_ids_lists_of_longs_read_each_id_by_the_same_rule(text: str) -> None:
    # the IDS's datafileIds/datasetIds: before, an id of over 4,300 digits made int() raise
    # ValueError (an internal error) instead of ids.server's BadRequest
    from igestbench.mock.ids.errors import BadRequestException
    from igestbench.mock.ids.selection import parse_ids

    with pytest.raises(BadRequestException, match="comma separated list of longs"):
        parse_ids("datafileIds", text)
    assert parse_ids("datafileIds", "1, +2,007,-9223372036854775808") == [1, 2, 7, -2**63]
