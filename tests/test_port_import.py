"""``POST /icat/port`` of the local catalogue against what a real ICAT 6.2.0 answered to the same
imports (fixtures/icat-6.2/port/answers.json, recorded by record.py on a catalogue holding the
tree of tree-all.txt), and the one difference on purpose: an import is all or nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import requests

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from tests.port_helpers import Port, answers, body, fault, recorded, without_ids
from tests.test_port_export import ACCOUNTS

REAL = answers()
P = REAL["prefix"]
#: The session each recorded import was made with.
ROLE = {"non-root ALL": "reader", "non-root create": "writer"}


@pytest.fixture()
def port() -> Iterator[Port]:
    with LocalCatalogue(ServeConfig(accounts=ACCOUNTS)) as cat:
        yield Port(cat)


@pytest.fixture()
def tree(port: Port) -> str:
    """The catalogue the real server held: the tree, imported from its own ALL export."""
    sid = port.login()
    r = port.import_text(sid, recorded("tree-all.txt"), attributes="ALL")
    assert r.status_code == 204, r.text
    return sid


def _facilities(port: Port, sid: str) -> list[str]:
    return sorted(port.search(sid, "SELECT f.name FROM Facility f"))


def test_every_recorded_import_is_answered_as_the_real_server_answered(
    port: Port, tree: str
) -> None:
    """In the recorded order (OVERWRITE changes what a later CHECK compares with)."""
    sids = {"root": tree, "reader": port.login("reader"), "writer": port.login("writer")}
    cases = {k: v for k, v in REAL["imports"].items() if "file" in v}
    wrong = []
    for name, case in cases.items():
        sid = "nope" if name == "bad session" else sids[ROLE.get(name, "root")]
        r = port.import_text(sid, case["file"], **case["options"])
        if (r.status_code, r.content.decode()) != (case["status"], case["body"]):
            wrong.append((name, r.status_code, r.content.decode(), case["body"]))
        # ICAT's faults here are typed text/plain, a 204 has no type
        assert r.headers.get("Content-Type") == case["content_type"], name
        if name == "duplicate OVERWRITE":
            after = port.search(
                tree, f"SELECT f.fullName, f.url, f.daysUntilRelease FROM Facility f "
                f"WHERE f.name = '{P}'"
            )  # fmt: skip
            assert after == case["after"]
    assert wrong == []


def test_an_import_is_all_or_nothing_where_the_real_server_keeps_what_came_first(
    port: Port, tree: str
) -> None:
    case = REAL["imports"]["partial commit"]
    assert case["left in the catalogue"] == [f"{P}-p1", f"{P}-p2"]  # the real server's
    before = _facilities(port, tree)
    got = fault(port.import_text(tree, case["file"], **case["options"]))
    assert got[1:] == ("OBJECT_ALREADY_EXISTS", f"Facility exists with name = '{P}' at line 6", 6)
    assert _facilities(port, tree) == before  # nothing of it


def test_the_form_is_read_as_the_server_reads_it(port: Port, tree: str) -> None:
    url = f"{port.base}/port"
    for name, files in (
        ("unknown form field", {"other": (None, "x"), "file": ("f", b"1.0\n")}),
        ("file before json", [("file", ("f", b"1.0\n")), ("json", (None, "{}"))]),
    ):
        r = requests.post(url, files=files, timeout=30)
        case = REAL["imports"][name]
        assert (r.status_code, r.text) == (case["status"], case["body"]), name
    r = requests.post(url, data={"json": json.dumps({"sessionId": tree})}, timeout=30)
    case = REAL["imports"]["not multipart"]
    assert (r.status_code, r.text) == (case["status"], case["body"])
    assert r.headers.get("Content-Type") is None  # Jersey's own refusal: no type
    # no file at all: nothing happens, not even a look at the session (as there)
    r = requests.post(url, files={"json": (None, '{"sessionId": "nope"}')}, timeout=30)
    assert r.status_code == 204
    # two files: each with the options read before it
    spec = json.dumps({"sessionId": tree})
    two = [
        ("json", (None, spec)),
        ("file", ("a", f'1.0\n\nFacility(name:0)\n"{P}-a"\n'.encode())),
        ("file", ("b", f'1.0\n\nFacility(name:0)\n"{P}-b"\n'.encode())),
    ]
    assert requests.post(url, files=two, timeout=30).status_code == 204
    assert {f"{P}-a", f"{P}-b"} <= set(_facilities(port, tree))


def test_user_attributes_make_the_importer_the_creator(port: Port, tree: str) -> None:
    text = (
        f'1.0\n\nFacility(createId:0,createTime:1,name:2)\n"someone",2001-01-01T00:00:00Z,"{P}-u"\n'
    )
    assert port.import_text(tree, text).status_code == 204
    row = port.search(
        tree, f"SELECT f.createId, f.createTime FROM Facility f WHERE f.name = '{P}-u'"
    )
    assert row[0][0] == "simple/root"
    assert not row[0][1].startswith("2001")
    assert port.import_text(tree, text.replace("-u", "-v"), attributes="all").status_code == 204
    row = port.search(
        tree, f"SELECT f.createId, f.createTime FROM Facility f WHERE f.name = '{P}-v'"
    )
    assert row[0][0] == "someone" and row[0][1].startswith("2001-01-01T00:00:00")


def test_duplicates_ignored_checked_and_overwritten(port: Port, tree: str) -> None:
    same = f'1.0\n\nFacility(daysUntilRelease:0,name:1)\n3,"{P}"\nNULL,"{P}-new"\n'
    assert port.import_text(tree, same, duplicate="IGNORE").status_code == 204
    assert f"{P}-new" in _facilities(port, tree)
    # CHECK: every field the line sets (and those it does not: null) equals the stored one
    full = f'1.0\n\nFacility(daysUntilRelease:0,name:1,fullName:2)\n3,"{P}",NULL\n'
    got = fault(port.import_text(tree, full, duplicate="CHECK"))
    assert got[1:3] == (
        "VALIDATION",
        "Duplicate check fails for field fullName of Facility at line 4",
    )
    stored = body(port.export(tree, query=f"Facility [name='{P}']")).split("\n")[4]
    line = f"1.0\n\nFacility(daysUntilRelease:0,description:1,fullName:2,name:3,url:4)\n{stored}\n"
    assert port.import_text(tree, line, duplicate="CHECK").status_code == 204
    # a parameter's inherited field is named as declared in Parameter
    text = recorded("tree-user.txt")
    lines = text.split("\n")
    header = next(h for h in lines if h.startswith("DatasetParameter("))
    data = lines[lines.index(header) + 1]
    changed = data.replace("1.5E-5", "2.5E-5")
    got = fault(port.import_text(tree, f"1.0\n\n{header}\n{changed}\n", duplicate="CHECK"))
    assert got[2] == "Duplicate check fails for field numericValue of Parameter at line 4"
    assert (
        port.import_text(tree, f"1.0\n\n{header}\n{changed}\n", duplicate="OVERWRITE").status_code
        == 204
    )
    export = body(
        port.export(
            tree, query="DatasetParameter [numericValue > 2.4E-5 AND numericValue < 2.6E-5]"
        )
    )
    assert "2.5E-5" in export


def test_a_user_who_is_not_root_imports_what_rules_let_them_create(port: Port, tree: str) -> None:
    writer = port.login("writer")
    text = f'1.0\n\nFacility(name:0)\n"{P}-w"\n'
    assert fault(port.import_text(writer, text))[:2] == (403, "INSUFFICIENT_PRIVILEGES")
    rule = '1.0\n\nRule(crudFlags:0,what:1)\n"C","Facility"\n'
    assert port.import_text(tree, rule).status_code == 204
    assert port.import_text(writer, text).status_code == 204
    assert f"{P}-w" in _facilities(port, tree)


def test_what_ICAT_itself_exported_round_trips_apart_from_ids(port: Port, tree: str) -> None:
    """The real server's round trip of the tree (delete, import its own export, export again)
    gave the same file apart from ids; so does the local catalogue's."""
    real_again = recorded("tree-all-reimported.txt")
    assert without_ids(real_again) == without_ids(recorded("tree-all.txt"))
    ours = body(port.export(tree, query=REAL["tree query"], attributes="ALL"))
    assert without_ids(ours) == without_ids(real_again)


def test_a_character_no_soap_answer_could_carry_is_refused_at_its_line(
    port: Port, tree: str
) -> None:
    """The local catalogue's rule for every write (the README's "Every answer parses"): a real
    ICAT imports it and then cannot send it over SOAP; here the import fails, naming the line."""
    text = f'1.0\n\nFacility(name:0)\n"{P}-ok"\n"{P}-\x01"\n'
    status, code, message, offset = fault(port.import_text(tree, text))
    assert (status, code, offset) == (400, "BAD_PARAMETER", 5)
    assert "U+0001" in message and message.endswith(" at line 5")
    assert f"{P}-ok" not in _facilities(port, tree)
