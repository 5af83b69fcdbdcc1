"""A REST request's form, decoded in C (mock/rest.py unquote_bytes, _Params.of_form): the same
bytes and fields as urllib's decoding, on random bodies full of what could tell them apart."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace
from typing import Any
from urllib.parse import parse_qs, quote, unquote_to_bytes

import pytest

from igestbench.mock import rest
from igestbench.mock.http_messages import Request

#: pieces a body is made of: escapes (good, lone, of UTF-8, of = and %), quoted-printable's
#: own marks (=, soft line breaks, _), pluses, raw non-ASCII bytes, separators
PIECES = [b"%", b"=", b"&", b"+", b"_", b"\r", b"\n", b" ", b"\t", b"x", b"G", b"g", b"0",
          b"9", b"a", b"f", b"A", b"F", b"3", b"D", b"%3D", b"%3d", b"%25", b"%41", b"%0A",
          b"%00", b"%e2%82%ac", b"%C3", b"%zz", b"%4", b"\xc3\xa9", b"\xff", b"=\r\n", b"=3D",
          b"{", b"%7B", b"%7b", b"%257B", b"%%7B"]


def _bodies(count: int) -> list[bytes]:
    rng = random.Random(21)
    return [b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 14)))
            for _ in range(count)]  # fmt: skip


def test_unquote_bytes_is_urllibs() -> None:
    for body in _bodies(30_000):
        assert rest.unquote_bytes(body) == unquote_to_bytes(body.replace(b"+", b" ")), body


def test_a_forms_fields_are_parse_qs_ones() -> None:
    for body in _bodies(30_000):
        expected = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        assert rest._Params.of_form(body)._values == expected, body


def test_a_write_of_many_objects_is_decoded_without_urllibs_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entities: list[Any] = [{"Datafile": {"name": f"f{i} é/€", "dataset": {"id": 1}}}
                           for i in range(100)]  # fmt: skip
    body = f"sessionId=a-b&entities={quote(json.dumps(entities, ensure_ascii=False))}".encode()

    def refused(*args: Any) -> Any:
        raise AssertionError("urllib's loop decoded the form")

    monkeypatch.setattr(rest, "unquote_to_bytes", refused)
    monkeypatch.setattr(rest, "parse_qs", refused)
    # 300 braces, within a budget of 400 objects: not counted again outside strings
    monkeypatch.setattr(rest, "_JSON_STRING", SimpleNamespace(sub=refused))
    endpoint = SimpleNamespace(max_objects=400)
    request = Request("POST", "/icat/entityManager", "",
                      {"content-type": "application/x-www-form-urlencoded"}, body, "http", None)
    assert len(body) > 2 * endpoint.max_objects
    params = rest.RestEndpoint._form(endpoint, request)  # type: ignore[arg-type]
    assert params.get("sessionId") == "a-b"
    assert json.loads(params.get("entities") or "") == entities
    assert json.loads(rest.unquote_bytes(body).partition(b"entities=")[2]) == entities


def test_the_braces_counted_before_decoding_bound_those_after() -> None:
    for body in _bodies(30_000):
        decoded = unquote_to_bytes(body.replace(b"+", b" "))
        assert rest._braces(body) == decoded.count(b"{"), body
    assert rest._braces(b"entities=%5B%7b%22a%22%3A%7B%7D%7D%5D{") == 3
