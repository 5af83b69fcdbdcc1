"""ICAT's export format 1.0 as the local catalogue writes and reads it, piece by piece, against
what a real ICAT 6.2.0 wrote (fixtures/icat-6.2/port) and what its source does (icat.server
v6.2.0: EntityInfoHandler, EntityBeanManager.getRep, importParser.Tokenizer)."""

from __future__ import annotations

import datetime as dt
import json
import random
import zoneinfo

import pytest

from igestbench.icat.schema import get_profile
from igestbench.mock.port_export import java_hash_set_order
from igestbench.mock.port_format import (
    EXPORT_ORDER,
    export_order,
    java_date,
    java_double,
    null_key,
    quote_string,
    table_header,
)
from igestbench.mock.port_grammar import (
    PortSyntaxError,
    TokenType,
    _fast_tokens,
    _slow_tokens,
    parse_header,
    tokens,
)
from tests.port_helpers import recorded

PROFILE = get_profile("6.2")


def _headers(text: str) -> list[str]:
    return [line for line in text.split("\n") if line[:1].isupper() and line.endswith(")")]


@pytest.mark.parametrize("attributes", ["user", "all"])
def test_every_table_header_is_the_real_servers(attributes: str) -> None:
    """The 53 headers of a whole export, in ICAT's dependency order, USER and ALL."""
    real = _headers(recorded(f"whole-{attributes}.txt"))
    ours = [table_header(PROFILE, name, attributes == "all") for name in export_order(PROFILE)]
    assert ours == real
    assert len(ours) == 53


def test_the_export_order_names_every_entity_of_the_model_once() -> None:
    assert sorted(EXPORT_ORDER) == sorted(PROFILE.entities)


def test_rule_hides_the_fields_icat_marks_xml_transient() -> None:
    assert table_header(PROFILE, "Rule", False) == "Rule(?:0,crudFlags:1,grouping(name:2),what:3)"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("Grouping", "NULL"),
        ("Sample", "NULL,NA,NA,NA"),  # investigation(facility(name),name,visitId),name
        ("DatafileFormat", "NULL,NA,NA"),
        ("Instrument", "NULL,NA"),
        # a type without a key: no column at all (ICAT's exportNull), an empty column in a line
        ("DataCollection", ""),
    ],
)
def test_a_null_relation_is_null_and_one_na_per_further_key_attribute(name: str, text: str) -> None:
    assert null_key(PROFILE, name) == text


def test_the_servers_own_lines_show_null_relations_so() -> None:
    real = recorded("tree-user.txt")
    assert ',NULL,NA,NA,NULL,"' in real  # a Datafile without format (and datafileModTime null)
    assert '"reduce","1.0",NULL,,"' in recorded("jobs.txt")  # a Job without input


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (42.0, "42.0"),
        (-273.15, "-273.15"),
        (0.001, "0.001"),
        (1e-4, "1.0E-4"),
        (1.5e-5, "1.5E-5"),
        (1234567.0, "1234567.0"),
        (1e7, "1.0E7"),
        (123456789.0, "1.23456789E8"),
        (-2.5e-10, "-2.5E-10"),
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (float("nan"), "NaN"),
        (float("inf"), "Infinity"),
    ],
)
def test_doubles_are_written_as_java_writes_them(value: float, text: str) -> None:
    assert java_double(value) == text


def test_the_real_servers_doubles_match() -> None:
    real = recorded("tree-user.txt")
    for value in (1.5e-5, 1e7, 123456789.0, 0.001, 0.0001, -273.15, 42.0, 0.25):
        assert f",{java_double(value)}," in real


def test_dates_are_in_the_servers_zone_to_the_millisecond() -> None:
    instant = dt.datetime(2024, 1, 15, 10, 20, 30, 123456, tzinfo=dt.UTC)
    berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    assert java_date(instant, dt.UTC) == "2024-01-15T10:20:30.123Z"
    assert java_date(instant, berlin) == "2024-01-15T11:20:30.123+01:00"
    assert java_date(instant.replace(month=7), berlin) == "2024-07-15T12:20:30.123+02:00"
    # a zone whose offset is zero is written Z, as Java's XXX does
    assert java_date(instant, zoneinfo.ZoneInfo("Europe/London")) == "2024-01-15T10:20:30.123Z"


def test_strings_are_quoted_with_icats_escapes_and_nothing_else() -> None:
    text = "Say \"hi\", then\nnext\ttab \\ \r\f\b — Müller 日本 'q' \x01"
    assert quote_string(text) == (
        '"Say \\"hi\\", then\\nnext\\ttab \\\\ \\r\\f\\b — Müller 日本 \'q\' \x01"'
    )
    tricky = json.loads(recorded("answers.json"))["prefix"]
    assert tricky.startswith("port-")
    assert '"Say \\"hi\\", then\\nnext line\\ttab \\\\ back — Müller 日本 \'q\'"' in recorded(
        "tree-user.txt"
    )


def test_tokens_of_a_real_data_line() -> None:
    line = recorded("rules-all.txt").split("\n")[4]
    found = tokens(line)
    values = [t for t in found if t.type is not TokenType.COMMA]
    assert [t.type for t in values] == [
        TokenType.STRING,
        TokenType.STRING,
        TokenType.TIMESTAMP,
        TokenType.STRING,
        TokenType.TIMESTAMP,
        TokenType.STRING,
        TokenType.NULL,
        TokenType.STRING,
    ]
    assert values[2].value == "2026-11-26T03:53:11.000Z"


def test_tokens_read_icats_escapes_numbers_and_names() -> None:
    found = tokens(
        '"a\\"b\\n\\\\ \\\'", -12, 1.5e-5, 3.0E7, true, False, null, NUMERIC, '
        "2024-01-01T00:00:00+01:00"
    )
    values = [(t.type, t.value) for t in found if t.type is not TokenType.COMMA]
    assert values == [
        (TokenType.STRING, "a\"b\n\\ '"),
        (TokenType.INTEGER, "-12"),
        (TokenType.REAL, "1.5E-5"),
        (TokenType.REAL, "3.0E7"),
        (TokenType.BOOLEAN, "TRUE"),
        (TokenType.BOOLEAN, "FALSE"),
        (TokenType.NULL, "NULL"),
        (TokenType.NAME, "NUMERIC"),
        (TokenType.TIMESTAMP, "2024-01-01T00:00:00+01:00"),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '"unterminated',
            'Unexpected end of string in state INQUOTES for string: "unterminated',
        ),
        ('"a\0b"', 'Unexpected end of string in state INQUOTES for string: "a\0b"'),
        ('"\\x"', 'Unexpected character \'x\' near ""\\x"" in state ESCAPED for string: "\\x"'),
        ("1, %", "Unexpected character '%' near \"1, %\" in state NONE for string: 1, %"),
        ("2024-1-1T00:00:00", "Timestamp 2024-1-1T00:00:00 is not of required form"),
        ("-x", "Unexpected character 'x' near \"-x\" in state MINUS for string: -x"),
    ],
)
def test_lexer_errors_carry_the_servers_messages(line: str, message: str) -> None:
    with pytest.raises(PortSyntaxError) as caught:
        tokens(line)
    assert str(caught.value) == message


def test_a_header_says_what_each_column_holds() -> None:
    spec = parse_header(
        PROFILE,
        "Rule(?:0,createId:1,createTime:2,modId:3,modTime:4,crudFlags:5,grouping(name:6),what:7)",
    )
    kinds = [(c.kind, c.field.name if c.field else None, c.column) for c in spec.columns]
    assert kinds == [
        ("id", None, 0),
        ("value", "createId", 1),
        ("value", "createTime", 2),
        ("value", "modId", 3),
        ("value", "modTime", 4),
        ("value", "crudFlags", 5),
        ("key", "grouping", -1),
        ("value", "what", 7),
    ]
    key = spec.columns[6].key
    assert [(k.path, k.column, k.type) for k in key] == [(("name",), 6, "String")]
    nested = parse_header(PROFILE, _headers(recorded("whole-user.txt"))[15])  # Dataset
    sample = next(c for c in nested.columns if c.field and c.field.name == "sample")
    assert [k.path for k in sample.key] == [
        ("investigation", "facility", "name"),
        ("investigation", "name"),
        ("investigation", "visitId"),
        ("name",),
    ]


def test_every_header_the_server_writes_reads_back() -> None:
    for text in _headers(recorded("whole-all.txt")) + _headers(recorded("whole-user.txt")):
        spec = parse_header(PROFILE, text)
        assert spec.entity.name == text.split("(")[0]


def test_java_hash_set_order_is_the_real_servers_order_of_a_query_export() -> None:
    """13 Datafiles with ids 26..38: a HashSet of 32 buckets gives 32..38 first, then 26..31."""
    meta = json.loads(recorded("datafiles-hash-order.ids.json"))
    by_id = dict(zip(meta["ids_in_search_order"], meta["names"], strict=True))
    order = java_hash_set_order(meta["ids_in_search_order"])
    lines = recorded("datafiles-hash-order.txt").strip().split("\n")[4:]
    assert [by_id[i] for i in order] == [line.rsplit(",", 1)[1].strip('"') for line in lines]
    assert order != sorted(order)


def test_java_hash_set_order_of_small_and_large_sets() -> None:
    assert java_hash_set_order([3, 1, 2]) == [1, 2, 3]  # below the table size: by id
    # 13 ids need 32 buckets; 1020..1023 land in buckets 28..31, 1024..1032 in 0..8
    assert java_hash_set_order(range(1020, 1033)) == [*range(1024, 1033), *range(1020, 1024)]
    # an id beyond 32 bits is hashed as Java's Long.hashCode (high word XOR low word)
    assert java_hash_set_order([2**32 + 1, 2]) == [2**32 + 1, 2]


def test_the_fast_lexer_reads_what_the_servers_lexer_reads() -> None:
    """A well-formed line goes by regular expression; anything it is not sure of, and every
    error, by ICAT's state machine: where the fast way answers, both agree (random lines)."""
    rng = random.Random(20261126)
    alphabet = list('"\\aZ09.-+eET:,()? \t$_é\0nN')
    lines = [
        "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14))) for _ in range(20_000)
    ]
    lines += recorded("tree-all.txt").split("\n")
    fast_ones = 0
    for line in lines:
        fast = _fast_tokens(line)
        if fast is None:
            continue
        fast_ones += 1
        assert fast == _slow_tokens(line), line
    assert fast_ones > 2_000
