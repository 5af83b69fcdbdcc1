"""``GET /icat/port`` of the local catalogue against what a real ICAT 6.2.0 exported and
answered (fixtures/icat-6.2/port, recorded by its record.py): the same catalogue content, put in
by importing the real server's own ALL export, exports to the same bytes apart from ids."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from igestbench.config import ServeConfig
from igestbench.mock.auth import Account
from igestbench.mock.catalogue import LocalCatalogue
from tests.port_helpers import Port, answers, body, fault, recorded, without_ids

ACCOUNTS = (
    Account("simple", "root", "root", root=True),
    Account("simple", "reader", "reader"),
    Account("simple", "writer", "writer"),
)
REAL = answers()


@pytest.fixture()
def port() -> Iterator[Port]:
    with LocalCatalogue(ServeConfig(accounts=ACCOUNTS)) as cat:
        yield Port(cat)


def _load(port: Port, name: str) -> str:
    """A fresh catalogue given the content of a real export (imported with ALL)."""
    sid = port.login()
    r = port.import_text(sid, recorded(name), attributes="ALL")
    assert r.status_code == 204, r.text
    return sid


def test_an_export_of_rules_is_the_real_servers(port: Port) -> None:
    sid = _load(port, "rules-all.txt")
    user = port.export(sid, query="Rule")
    everything = port.export(sid, query="Rule", attributes="ALL")
    assert without_ids(body(user)) == without_ids(recorded("rules-user.txt"))
    assert without_ids(body(everything)) == without_ids(recorded("rules-all.txt"))
    headers = json.loads(recorded("rules-all.headers.json"))
    assert everything.status_code == headers["status"]
    assert everything.headers["Content-Type"] == headers["content_type"]
    assert everything.headers["Content-Disposition"] == headers["disposition"]
    assert everything.headers["Accept-Ranges"] == "bytes"
    assert everything.headers["Access-Control-Allow-Origin"] == "*"


@pytest.mark.parametrize("attributes", ["USER", "ALL"])
def test_a_whole_export_is_the_real_servers(port: Port, attributes: str) -> None:
    """Every entity type in dependency order, each by id (the real catalogue held the tree of
    record.py and ICAT's 53 READ rules)."""
    sid = _load(port, "whole-all.txt")
    r = port.export(sid, attributes=attributes)
    assert r.status_code == 200
    assert without_ids(body(r)) == without_ids(recorded(f"whole-{attributes.lower()}.txt"))


@pytest.mark.parametrize("attributes", ["USER", "ALL"])
def test_an_export_of_a_query_with_includes_is_the_real_servers(
    port: Port, attributes: str
) -> None:
    """A Facility and all it INCLUDEs: every entity type but PublicStep, nested keys, NULL
    relations, escaped strings, non-ASCII, doubles, dates, enums, local ids of DataCollections,
    Jobs, Publications, Rules and Studies."""
    sid = _load(port, "tree-all.txt")
    r = port.export(sid, query=REAL["tree query"], attributes=attributes)
    assert r.status_code == 200
    assert without_ids(body(r)) == without_ids(recorded(f"tree-{attributes.lower()}.txt"))


def test_an_export_in_another_time_zone_writes_the_same_instants_in_it() -> None:
    config = ServeConfig(accounts=ACCOUNTS, timezone="Europe/Berlin")
    with LocalCatalogue(config) as cat:
        port = Port(cat)
        sid = _load(port, "tree-all.txt")
        text = body(port.export(sid, query=REAL["tree query"], attributes="ALL"))
    assert "2024-01-15T11:20:30.000+01:00" in text  # winter
    assert "2024-07-01T14:00:00.000+02:00" in text  # summer
    assert "Z," not in text
    real = recorded("tree-all.txt")
    assert without_ids(text, utc_dates=True) == without_ids(real, utc_dates=True)


def test_export_faults_are_the_real_servers(port: Port) -> None:
    sid = port.login()
    _load(port, "rules-all.txt")
    wrong = []
    for name, case in REAL["export faults"].items():
        if "method" in case:
            r = requests.request(case["method"], f"{port.base}/port", timeout=30)
        else:
            params = {k: v.replace("{sid}", sid) for k, v in case["params"].items()}
            r = port.get(params)
        got = (r.status_code, r.text)
        if got != (case["status"], case["body"]):
            wrong.append((name, got, (case["status"], case["body"])))
        # Jersey types ICAT's faults here text/plain; a 204 and a 405 carry no type at all
        assert r.headers.get("Content-Type") == case["content_type"], name
    assert wrong == []


def test_nothing_to_export_is_204_without_a_body(port: Port) -> None:
    sid = _load(port, "rules-all.txt")
    for query in ("Facility", "SELECT COUNT(r) FROM Rule r", "SELECT r.what FROM Rule r"):
        r = port.export(sid, query=query)
        assert (r.status_code, r.content) == (204, b""), query


def test_head_gives_the_headers_of_an_export_without_it(port: Port) -> None:
    sid = _load(port, "rules-all.txt")
    spec = json.dumps({"sessionId": sid, "query": "Rule"})
    r = requests.head(f"{port.base}/port", params={"json": spec}, timeout=30)
    assert r.status_code == 200
    assert r.headers["Content-Disposition"] == 'attachment; filename="icat.export"'
    assert r.content == b""


def _rules(port: Port, sid: str, *lines: str) -> None:
    text = "1.0\n\nRule(crudFlags:0,what:1)\n" + "\n".join(lines) + "\n"
    r = port.import_text(sid, text)
    assert r.status_code == 204, r.text


def test_a_user_who_is_not_root_exports_what_they_may_read(port: Port) -> None:
    """ICAT checks READ on each object of a whole export for a user who is not root, and writes
    the relations of what is exported by key whatever they point to; ALL is allowed to them."""
    root = _load(port, "tree-all.txt")
    _rules(port, root, '"R","Instrument"', "\"R\",\"Datafile [name IN ('df01', 'df02')]\"")
    reader = port.login("reader")
    text = body(port.export(reader, attributes="ALL"))
    lines = [line for line in text.split("\n") if line and not line[0].isupper()]
    assert lines[:2] == ["# ICAT Export file written by simple/reader", "1.0"]
    data = lines[2:]
    assert len(data) == 3, data  # one Instrument, two Datafiles
    prefix = REAL["prefix"]
    assert any(f'"{prefix}","Instrument, one","instr"' in line for line in data)  # by key
    assert sum(f'"{prefix}","inv, 1","v\\"1","ds1"' in line for line in data) == 2
    # no rule for Facility: none of its lines
    assert "Facility(" in text and f'"{prefix}",NULL\n' not in text
    # a query: only what the user may read (the search decides), nothing is 204
    assert port.export(reader, query="Facility").status_code == 204
    r = port.export(reader, query="Datafile")
    assert body(r).count('"ds1"') == 2


def test_an_export_by_a_user_who_is_not_root_with_all_is_allowed_as_on_the_real_server(
    port: Port,
) -> None:
    real = REAL["exports"]["export by a user who is not root, ALL"]
    assert real["status"] == 200 and "createId:0" in real["body"]
    root = _load(port, "tree-all.txt")
    _rules(port, root, '"R","Facility"')
    r = port.export(port.login("reader"), query=f"Facility [name='{REAL['prefix']}']",
                    attributes="ALL")  # fmt: skip
    assert without_ids(body(r))[1:] == without_ids(real["body"])[1:]  # but the user


def test_a_query_export_fails_as_the_search_would(port: Port) -> None:
    sid = port.login()
    status, code, message, _ = fault(port.export(sid, query="SELECT x FROM Nope x"))
    assert (status, code) == (400, "BAD_PARAMETER")
    assert message


def test_more_than_max_entities_is_refused_in_the_words_of_the_export() -> None:
    with LocalCatalogue(ServeConfig(accounts=ACCOUNTS, max_entities=10)) as cat:
        port = Port(cat)
        sid = _load(port, "rules-all.txt")
        got = fault(port.export(sid, query="Rule"))
    assert got == (412, "VALIDATION", "attempt to process more than 10 entities", None)


def _sections(text: str) -> dict[str, Any]:
    sections: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.split("\n"):
        if line[:1].isupper() and line.endswith(")"):
            current = sections.setdefault(line.split("(")[0], [])
        elif line and current is not None and not line.startswith("#") and line != "1.0":
            current.append(line)
    return sections


def test_a_query_export_has_only_the_tables_of_what_it_selects_and_includes(port: Port) -> None:
    sid = _load(port, "tree-all.txt")
    r = port.export(sid, query="SELECT ds FROM Dataset ds INCLUDE ds.datafiles, ds.parameters")
    sections = _sections(body(r))
    assert list(sections) == ["Dataset", "Datafile", "DatasetParameter"]
    assert [len(v) for v in sections.values()] == [2, 60, 3]
