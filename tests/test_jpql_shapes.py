"""Searches that differ only in their constants share one compilation (mock/jpql/shapes.py).

What must hold: a search answered through its shape is exactly what compiling its text gives
(same SQL, same parameters, same INCLUDEs), for every user and every set of rules apart; a
constant the compiler converts, folds or refuses keeps its shape out; and nothing is parsed
for a search whose shape is known.
"""

from __future__ import annotations

import contextlib
import dataclasses
import random
import re
from collections.abc import Iterator
from typing import Any

import pytest

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatBadParameter, IcatError
from igestbench.icat.schema import get_profile
from igestbench.mock.auth import Account
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.jpql import CompiledSearch, compile_search, compiler
from igestbench.mock.jpql.compiler import clear_caches
from igestbench.mock.jpql.shapes import MAX_CONSTANTS, shape_of
from igestbench.mock.service import IcatService

PROFILE = get_profile("6.2")


@pytest.fixture(autouse=True)
def fresh_caches() -> Iterator[None]:
    clear_caches()
    yield
    clear_caches()


@pytest.fixture()
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every text the compiler parses from now on."""
    seen: list[str] = []
    parse = compiler.parse

    def counting(text: str, start: str) -> Any:
        seen.append(text)
        return parse(text, start)

    monkeypatch.setattr(compiler, "parse", counting)
    return seen


def whole(text: str, **kw: Any) -> CompiledSearch:
    """``text`` compiled from scratch, no shape known."""
    clear_caches()
    try:
        return compile_search(PROFILE, text, **kw)
    finally:
        clear_caches()


#: (a search, the same with other constants)
PAIRS = [
    ("SELECT df FROM Datafile df WHERE df.dataset.id = 12 AND df.name = 'x_0001.nxs'",
     "SELECT df FROM Datafile df WHERE df.dataset.id = 907 AND df.name = 'it''s 7.nxs'"),
    ("SELECT df FROM Datafile df JOIN df.parameters p WHERE p.type.id = 3 "
     "AND p.numericValue BETWEEN 0 AND 76",
     "SELECT df FROM Datafile df JOIN df.parameters p WHERE p.type.id = 4 "
     "AND p.numericValue BETWEEN 80 AND 156"),
    ("SELECT ds FROM Dataset ds WHERE ds.id = 5 INCLUDE ds.datafiles",
     "SELECT ds FROM Dataset ds WHERE ds.id = 6 INCLUDE ds.datafiles"),
    ("Dataset INCLUDE Datafile [id = 5]", "Dataset INCLUDE Datafile [id = 2147483647]"),
    ("Dataset INCLUDE 1 [id = 5]", "Dataset INCLUDE 1 [id = 6]"),
    ("SELECT df FROM Datafile df WHERE df.dataset.investigation.id = 7 ORDER BY df.name "
     "LIMIT 0, 2000", "SELECT df FROM Datafile df WHERE df.dataset.investigation.id = 8 "
     "ORDER BY df.name LIMIT 2000, 10"),
    ("SELECT df FROM Datafile df WHERE df.name LIKE 'abc%'",
     "SELECT df FROM Datafile df WHERE df.name LIKE ''"),
    ("1,5 Dataset [id > 3]", "0,2 Dataset [id > 0]"),
    ("SELECT o.name FROM Dataset o WHERE o.name IN ('a', 'b') AND o.id <> 1",
     "SELECT o.name FROM Dataset o WHERE o.name IN ('c', 'd') AND o.id <> 2"),
    ("SELECT COUNT(o) FROM Datafile o WHERE o.fileSize > 10 AND o.name = :user",
     "SELECT COUNT(o) FROM Datafile o WHERE o.fileSize > 11 AND o.name = :user"),
    ("Datafile [name = 'a'] <-> Dataset [name = 'b'] <-> Investigation [id = 1]",
     "Datafile [name = 'x'] <-> Dataset [name = 'y'] <-> Investigation [id = 2]"),
    ("SELECT o FROM Investigation o WHERE o.startDate > {ts 2011-01-15 00:00:00} "
     "AND o.name = 'x'",
     "SELECT o FROM Investigation o WHERE o.startDate > {ts 2011-01-15 00:00:00} "
     "AND o.name = 'y'"),
]


@pytest.mark.parametrize(("first", "other"), PAIRS)
def test_a_known_shape_gives_what_its_text_compiles_to_without_a_parse(
    first: str, other: str, parses: list[str]
) -> None:
    expected = whole(other, user="simple/reader")
    compile_search(PROFILE, first, user="simple/reader")
    parses.clear()
    assert compile_search(PROFILE, other, user="simple/reader") == expected
    assert parses == []  # the shape was known: nothing parsed


@pytest.mark.parametrize(("first", "other"), [
    # a negative number is one literal (the sign folded into it)
    ("SELECT o FROM Dataset o WHERE o.id = -5", "SELECT o FROM Dataset o WHERE o.id = -7"),
    # a string compared with a date is converted to the stored form
    ("SELECT o FROM Investigation o WHERE o.startDate > '2012-01-01 00:00:00'",
     "SELECT o FROM Investigation o WHERE o.startDate > '2013-06-30 12:00:00'"),
    ("SELECT o FROM Investigation o WHERE '2012-01-01 00:00:00' < o.startDate",
     "SELECT o FROM Investigation o WHERE '2013-06-30 12:00:00' < o.startDate"),
])
def test_constants_the_compiler_converts_keep_their_shape_out(
    first: str, other: str, parses: list[str]
) -> None:
    expected = whole(other)
    compile_search(PROFILE, first)
    parses.clear()
    assert compile_search(PROFILE, other) == expected
    assert parses == [other]  # compiled whole


def test_a_constant_the_compiler_refuses_is_refused_after_its_shape_is_known() -> None:
    compile_search(PROFILE, "SELECT o FROM Dataset o LIMIT 0, 10")
    with pytest.raises(IcatBadParameter, match="too large for a LIMIT"):
        compile_search(PROFILE, "SELECT o FROM Dataset o LIMIT 0, 3000000000")
    compile_search(PROFILE, "SELECT o FROM Investigation o WHERE o.startDate > '2012-01-01'")
    with pytest.raises(IcatBadParameter, match="not one"):
        compile_search(PROFILE, "SELECT o FROM Investigation o WHERE o.startDate > 'soon'")
    compile_search(PROFILE, "Dataset INCLUDE 1 [id = 5]")
    with pytest.raises(IcatBadParameter, match="Only integer value allowed"):
        compile_search(PROFILE, "Dataset INCLUDE 2 [id = 5]")


def test_a_shape_is_never_shared_between_users_or_rules(parses: list[str]) -> None:
    text = "SELECT o FROM Dataset o WHERE o.name = :user AND o.id = {}"
    assert compile_search(PROFILE, text.format(1), user="a").params == ("a", 1)
    assert compile_search(PROFILE, text.format(2), user="b").params == ("b", 2)
    mine = (("Dataset", ('SELECT r0."id" FROM "Dataset" r0 WHERE r0."name" = ?', ("d1",))),)
    theirs = (("Dataset", ('SELECT r0."id" FROM "Dataset" r0 WHERE r0."name" = ?', ("d2",))),)
    ask = "SELECT o FROM Dataset o WHERE o.id = {}"
    compile_search(PROFILE, ask.format(3), user="a", restrict=mine)
    got = compile_search(PROFILE, ask.format(4), user="a", restrict=theirs)
    assert got.params == (4, "d2")
    assert got == whole(ask.format(4), user="a", restrict=theirs)
    assert compile_search(PROFILE, ask.format(5), user="a").params == (5,)  # no rules: root


def test_what_is_cut_out_of_a_text() -> None:
    shape = shape_of("SELECT o FROM Datafile o WHERE o.name = 'it''s' AND o.fileSize > 10 "
                     "AND o.id2 = 1.5 AND o.x = 1e3 AND o.d > {ts 2011-01-15 00:00:00}")
    assert shape is not None and shape.constants == ("it's", 10)
    assert shape_of("SELECT o FROM Dataset o") is None  # nothing to cut out
    assert shape_of("SELECT o FROM Dataset o WHERE o.id = 2147483648") is None
    many = ", ".join(str(i) for i in range(MAX_CONSTANTS + 1))
    assert shape_of(f"SELECT o FROM Dataset o WHERE o.id IN ({many})") is None
    assert shape_of("SELECT o FROM Dataset o WHERE o.name = '\x00' AND o.id = 1") is None


STRINGS = ["'y'", "''", "'it''s'", "'2012-02-03 04:05:06'", "'not a date'", "'%'", "'1'", "'x'"]
INTEGERS = ["0", "1", "7", "3", "2147483647", "2147483648", "99999999999999999999"]
#: Conditions on a Datafile ``df``; S and I stand for a string and an integer constant
CONDITIONS = [
    "df.name = S", "S = df.name", "df.id > I", "df.fileSize BETWEEN I AND I", "df.name LIKE S",
    "df.name LIKE S ESCAPE S", "df.name IN (S, S)", "df.id IN (I, I, I)", "df.id = -I",
    "df.datafileCreateTime > S", "S < df.datafileCreateTime", "df.datafileCreateTime < "
    "{ts 2011-01-15 00:00:00}", "MOD(df.id, I) = I", "df.fileSize + I > I", "ABS(df.id) = I",
    "df.location IS NULL", "LENGTH(df.name) = I", "SUBSTRING(df.name, I, I) = S",
    "df.name = :user", "LOCATE(S, df.name) > I", "df.dataset.name = S", "df.fileSize = 1.5",
    "df.fileSize * I < I", "CONCAT(df.name, S) = S", "UPPER(df.name) = S", "df.id = S",
    "df.dataset.id = I", "df.fileSize - -I = I", "TRIM(df.name) <> S",
]
TAILS = ["", " ORDER BY df.name", " ORDER BY df.fileSize DESC LIMIT I, I", " LIMIT I, I",
         " INCLUDE df.dataset", " INCLUDE 1", " ORDER BY df.id + I"]


def _condition(rng: random.Random, depth: int = 0) -> str:
    if depth < 2 and rng.random() < 0.4:
        joined = f" {rng.choice(['AND', 'OR'])} ".join(
            _condition(rng, depth + 1) for _ in range(rng.randint(2, 3)))
        return f"NOT ({joined})" if rng.random() < 0.2 else f"({joined})"
    return rng.choice(CONDITIONS)


def _constants(text: str, rng: random.Random) -> str:
    out = []
    for piece in re.split(r"(\bS\b|\bI\b)", text):
        out.append(rng.choice(STRINGS) if piece == "S" else rng.choice(INTEGERS)
                   if piece == "I" else piece)
    return "".join(out)


def _search(rng: random.Random) -> str:
    condition = _condition(rng)
    form = rng.random()
    if form < 0.6:
        select = rng.choice(["df", "COUNT(df)", "df.name", "DISTINCT df.fileSize", "MAX(df.id)"])
        tail = rng.choice(TAILS) if select == "df" else rng.choice(TAILS[:4])
        return f"SELECT {select} FROM Datafile df WHERE {condition}{tail}"
    concise = condition.replace("df.", "")
    if form < 0.8:
        return f"{rng.choice(['', 'I,I ', ',I '])}Datafile [{concise}]"
    return f"Datafile [{concise}] <-> Dataset [id = I]"


def _with_other_constants(text: str, rng: random.Random) -> str:
    shape = shape_of(text)
    assert shape is not None
    pieces = shape.text.split("\x00")
    out = [pieces[0]]
    for piece in pieces[1:]:
        out.append(rng.choice(STRINGS if piece[0] == "s" else INTEGERS))
        out.append(piece[1:])
    return "".join(out)


def _outcome(text: str) -> CompiledSearch | tuple[type[BaseException], str]:
    try:
        return compile_search(PROFILE, text, user="u")
    except IcatError as exc:
        return type(exc), exc.message


def test_fuzzed_searches_through_their_shape_are_what_their_text_compiles_to(
    parses: list[str],
) -> None:
    """Searches made of random conditions, each asked with other constants once its shape is
    known: the answer through the shape is what compiling the text from scratch gives, a
    fault included."""
    rng = random.Random(20261126)
    compared = bound = 0
    for _ in range(1500):
        text = _constants(_search(rng), rng)
        with contextlib.suppress(IcatError):
            compile_search(PROFILE, text, user="u")
            if shape_of(text) is None:
                continue
            for _ in range(3):
                other = _with_other_constants(text, rng)
                before = len(parses)
                through_shape = _outcome(other)
                bound += len(parses) == before  # answered through the shape, unparsed
                clear_caches()
                assert through_shape == _outcome(other), (text, other)
                compile_search(PROFILE, text, user="u")  # the shape known again
                compared += 1
    assert compared > 1000 and bound > 500  # enough of them compiled, compared, bound


# --- through the catalogue: members with other rules ask searches of one shape ---------------

ACCOUNTS = (Account("simple", "root", "root", root=True), Account("simple", "uo1", "uo1"),
            Account("simple", "uo2", "uo2"))


@pytest.fixture()
def service() -> Iterator[IcatService]:
    with LocalCatalogue(ServeConfig(accounts=ACCOUNTS)) as cat:
        yield cat.service


def _ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


def test_members_with_other_rules_see_their_own_through_one_shape(service: IcatService) -> None:
    root = service.login("simple", {"username": "root", "password": "root"})
    fac = service.create(root, Bean("Facility", {"name": "F"}))
    typ = service.create(root, Bean("InvestigationType", {"name": "t", "facility": _ref(
        "Facility", fac)}))
    inv = service.create(root, Bean("Investigation", {
        "name": "i", "visitId": "1", "title": "t", "facility": _ref("Facility", fac),
        "type": _ref("InvestigationType", typ)}))
    dst = service.create(root, Bean("DatasetType", {"name": "raw", "facility": _ref(
        "Facility", fac)}))
    ids = {name: service.create(root, Bean("Dataset", {
        "name": name, "investigation": _ref("Investigation", inv),
        "type": _ref("DatasetType", dst)})) for name in ("d1", "d2")}
    for user, name in (("uo1", "d1"), ("uo2", "d2")):
        group = service.create(root, Bean("Grouping", {"name": user}))
        person = service.create(root, Bean("User", {"name": f"simple/{user}"}))
        service.create(root, Bean("UserGroup", {"grouping": _ref("Grouping", group),
                                                "user": _ref("User", person)}))
        service.create(root, Bean("Rule", {
            "crudFlags": "R", "grouping": _ref("Grouping", group),
            "what": f"SELECT ds FROM Dataset ds WHERE ds.name = '{name}'"}))
    uo1 = service.login("simple", {"username": "uo1", "password": "uo1"})
    uo2 = service.login("simple", {"username": "uo2", "password": "uo2"})
    ask = "SELECT ds.name FROM Dataset ds WHERE ds.id = {}"
    assert service.search(uo1, ask.format(ids["d1"])).items == ["d1"]
    assert service.search(uo2, ask.format(ids["d1"])).items == []
    assert service.search(uo2, ask.format(ids["d2"])).items == ["d2"]
    assert service.search(uo1, ask.format(ids["d2"])).items == []
    assert "<name>d2</name>" in service.search_xml(uo2, ask.replace(".name", "").format(ids["d2"]))
    assert "<name>" not in service.search_xml(uo1, ask.replace(".name", "").format(ids["d2"]))


def test_with_params_is_replace_of_the_params_alone() -> None:
    """``CompiledSearch.with_params`` names every field (it is faster than replace()): a field
    added to CompiledSearch and not to it would be lost; each field has its own value here."""
    values: dict[str, Any] = {f.name: (f.name,) for f in dataclasses.fields(CompiledSearch)}
    compiled = CompiledSearch(**values)
    assert compiled.with_params((1, "x")) == dataclasses.replace(compiled, params=(1, "x"))
