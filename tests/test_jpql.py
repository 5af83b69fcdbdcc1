"""The query compiler of the local catalogue: ICAT's query strings run against real SQLite tables.

Each query is compiled and then executed on an in-memory database laid out by
``igestbench.mock.tables`` and filled with a small catalogue (plain SQL below), and the test
checks the rows that come back, so the SQL is tested by what it does, not by how it reads.
"""

from __future__ import annotations

import contextlib
import random
import re
import zoneinfo
from collections.abc import Iterator
from typing import Any

import apsw
import pytest

from igestbench.icat.faults import IcatBadParameter, IcatInternal
from igestbench.icat.query import Condition, Query
from igestbench.icat.schema import get_profile
from igestbench.mock import tables
from igestbench.mock.jpql import (
    CompiledSearch,
    IncludeNode,
    compile_get,
    compile_ids,
    compile_search,
)

PROFILE = get_profile("6.2")
USER = "db/acord"
BASE = "'simple/root', '2024-03-03T10:00:00.000000Z', 'simple/root', '2024-03-03T10:00:00.000000Z'"

# (table, columns, rows): every row also gets the four base fields above.
DATA: list[tuple[str, str, list[str]]] = [
    ("Facility", "id, name", ["1, 'ESRF'"]),
    ("Instrument", "id, name, facility_id", ["1, 'ID01', 1"]),
    ("InvestigationType", "id, name, facility_id", ["1, 'experiment', 1"]),
    ("Investigation", 'id, name, "visitId", title, "startDate", facility_id, type_id', [
        "1, 'inv1', 'v1', 'O''Neil study', '2012-03-01T00:00:00.000000Z', 1, 1",
        "2, 'inv2', 'v1', 'Second', '2013-06-01T12:00:00.000000Z', 1, 1",
    ]),
    ("InvestigationInstrument", "id, investigation_id, instrument_id", ["1, 1, 1"]),
    ("DatasetType", "id, name, facility_id", ["1, 'raw', 1", "2, 'processed', 1"]),
    ("Dataset", "id, name, complete, investigation_id, type_id", [
        "1, 'ds1', 1, 1, 1", "2, 'ds2', 0, 1, 2", "3, 'ds3', 0, 2, 1", "4, 'empty', 0, 2, 2",
    ]),
    ("DatafileFormat", "id, name, version, facility_id", ["1, 'NeXus', '4.3', 1"]),
    ("Datafile", 'id, name, "fileSize", "datafileCreateTime", dataset_id, "datafileFormat_id"', [
        "1, 'a.nxs', 100, '2012-03-02T08:00:00.000000Z', 1, 1",
        "2, 'b.nxs', 200, '2012-03-03T08:00:00.000000Z', 1, 1",
        "3, 'c.dat', 300, NULL, 2, NULL",
        "4, 'd''q.dat', 400, '2013-06-02T08:00:00.000000Z', 3, NULL",
        "5, 'e_1.txt', 0, NULL, 3, NULL",
    ]),
    ("ParameterType", 'id, name, units, "valueType", facility_id, "applicableToDataset"', [
        "1, 'temperature', 'K', 'NUMERIC', 1, 1", "2, 'comment', 'N/A', 'STRING', 1, 1",
    ]),
    ("DatasetParameter", 'id, dataset_id, type_id, "numericValue", "stringValue"', [
        "1, 1, 1, 10.5, NULL", "2, 2, 1, 20.0, NULL", "3, 1, 2, NULL, 'hello'",
    ]),
    ("User", "id, name", ["1, 'simple/root'", "2, 'db/acord'"]),
    ("Grouping", "id, name", ["1, 'readers'"]),
    ("UserGroup", "id, user_id, grouping_id", ["1, 2, 1"]),
    ("InvestigationUser", "id, investigation_id, user_id, role", ["1, 1, 2, 'PI'"]),
    ("Rule", 'id, what, "crudFlags", grouping_id', [
        "1, 'Dataset', 'R', 1", "2, 'Datafile', 'CRUD', NULL",
    ]),
]


@pytest.fixture(scope="module")
def db() -> Iterator[apsw.Connection]:
    conn = apsw.Connection(":memory:")
    conn.execute("PRAGMA foreign_keys = ON")
    for statement in tables.schema_sql(PROFILE):
        conn.execute(statement)
    base = '"createId", "createTime", "modId", "modTime"'
    for table, columns, rows in DATA:
        for row in rows:
            conn.execute(f'INSERT INTO "{table}" ({columns}, {base}) VALUES ({row}, {BASE})')
    yield conn
    conn.close()


def run(db: apsw.Connection, text: str, **kw: Any) -> tuple[CompiledSearch, list[Any]]:
    """Compile and execute; entity results as ids, single values unwrapped."""
    compiled = compile_search(PROFILE, text, user=kw.pop("user", USER), **kw)
    rows = db.execute(compiled.sql, compiled.params).fetchall()
    if compiled.kind == "entity" or not compiled.multi:
        return compiled, [r[0] for r in rows]
    return compiled, rows


def ids(db: apsw.Connection, text: str, **kw: Any) -> list[Any]:
    return run(db, text, **kw)[1]


# --- what python-icat, icatdump and ingestors send (notes §4.4) -------------------------------

@pytest.mark.parametrize(("query", "expected"), [
    ("SELECT o FROM Investigation o WHERE o.name = 'inv1'", [1]),
    ("SELECT o FROM Datafile o JOIN o.dataset AS ds JOIN ds.investigation AS i "
     "WHERE ds.name = 'ds1' AND i.name = 'inv1' AND o.name = 'b.nxs'", [2]),
    ("SELECT o FROM Dataset o JOIN o.investigation AS i WHERE i.id = 2 AND o.name = 'ds3' "
     "INCLUDE 1", [3]),
    ("SELECT o FROM Dataset o WHERE o.investigation.name = 'inv2'", [3, 4]),
    ("SELECT DISTINCT(o) FROM Dataset o JOIN o.datafiles AS df WHERE df.fileSize > 50", [1, 2, 3]),
    ("SELECT o FROM Dataset o JOIN o.datafiles AS df WHERE df.fileSize > 50", [1, 1, 2, 3]),
    ("SELECT o FROM Rule o LEFT JOIN o.grouping AS g ORDER BY g.name, o.what, o.id "
     "INCLUDE o.grouping", [2, 1]),
    ("SELECT o FROM DatasetType o JOIN o.facility AS f ORDER BY f.name, o.name "
     "INCLUDE o.facility", [2, 1]),
    ("SELECT o FROM Investigation o JOIN o.investigationUsers AS iu JOIN iu.user AS u "
     "WHERE u.name = :user", [1]),
    ("SELECT ds FROM Dataset ds JOIN ds.investigation i JOIN i.investigationUsers iu "
     "JOIN iu.user u WHERE u.name = :user AND ds.complete = TRUE", [1]),
    ("select O from Dataset o where O.name = 'ds1'", [1]),
    ("SELECT o FROM Dataset AS o, o.investigation AS i WHERE i.name = 'inv1'", [1, 2]),
    ("SELECT o.dataset FROM Datafile o WHERE o.fileSize >= 300", [2, 3]),
    ("SELECT ds.type FROM Dataset ds WHERE ds.name = 'ds2'", [2]),
    ("SELECT g FROM Rule r LEFT JOIN r.grouping g", [1]),
])
def test_entity_queries(db: apsw.Connection, query: str, expected: list[int]) -> None:
    assert ids(db, query) == expected


def test_entity_rows_turn_into_beans(db: apsw.Connection) -> None:
    compiled, _ = run(db, "SELECT o.dataset FROM Datafile o WHERE o.name = 'a.nxs'")
    assert compiled.kind == "entity" and compiled.entity == "Dataset"
    row = db.execute(compiled.sql, compiled.params).fetchone()
    bean = tables.row_decoder(PROFILE.entity("Dataset"))(row)
    assert bean["name"] == "ds1" and bean["complete"] is True and bean["investigation"].id == 1


@pytest.mark.parametrize(("query", "expected", "types"), [
    ("SELECT COUNT(o) FROM Dataset o", [4], ("Long",)),
    ("SELECT COUNT(DISTINCT(o)) FROM Dataset o JOIN o.datafiles df", [3], ("Long",)),
    ("SELECT COUNT(o) FROM Dataset o JOIN o.datafiles df", [5], ("Long",)),
    ("SELECT COUNT(o.datafileFormat) FROM Datafile o", [2], ("Long",)),
    ("SELECT MIN(o.numericValue) FROM DatasetParameter o JOIN o.type AS t "
     "WHERE t.name = 'temperature'", [10.5], ("Double",)),
    ("SELECT MAX(o.fileSize) FROM Datafile o", [400], ("Long",)),
    ("SELECT SUM(o.fileSize) FROM Datafile o WHERE o.dataset.name = 'ds1'", [300], ("Long",)),
    ("SELECT AVG(o.fileSize) FROM Datafile o WHERE o.dataset.name = 'ds1'", [150.0],
     ("Double",)),
    ("SELECT SUM(DISTINCT o.fileSize) FROM Datafile o", [1000], ("Long",)),
    ("SELECT MIN(o.startDate) FROM Investigation o", ["2012-03-01T00:00:00.000000Z"],
     ("Date",)),
    ("SELECT o.name FROM Dataset o WHERE o.investigation.id = 2", ["ds3", "empty"],
     ("String",)),
    ("SELECT o.valueType FROM ParameterType o", ["NUMERIC", "STRING"],
     ("ParameterValueType",)),
    ("SELECT o.complete FROM Dataset o ORDER BY o.id", [1, 0, 0, 0], ("boolean",)),
    ("SELECT DISTINCT o.type.name FROM Dataset o", ["processed", "raw"], ("String",)),
    ("SELECT df.name FROM Dataset ds JOIN ds.datafiles df WHERE ds.id = 3", ["d'q.dat",
                                                                            "e_1.txt"],
     ("String",)),
])
def test_values_and_aggregates(
    db: apsw.Connection, query: str, expected: list[Any], types: tuple[str, ...]
) -> None:
    compiled, found = run(db, query)
    assert compiled.kind == "values" and compiled.value_types == types
    assert compiled.aggregate == bool(re.match(r"SELECT (COUNT|MIN|MAX|AVG|SUM)\(", query))
    assert found == expected


def test_several_items_make_field_sets(db: apsw.Connection) -> None:
    compiled, rows = run(db, "SELECT o.name, o.fileSize, o.dataset.name FROM Datafile o "
                             "WHERE o.fileSize < 250 ORDER BY o.fileSize DESC")
    assert compiled.multi and compiled.value_types == ("String", "Long", "String")
    assert rows == [("b.nxs", 200, "ds1"), ("a.nxs", 100, "ds1"), ("e_1.txt", 0, "ds3")]
    compiled, rows = run(db, "SELECT MIN(o.fileSize), MAX(o.fileSize) FROM Datafile o")
    assert compiled.multi and compiled.aggregate and rows == [(0, 400)]


def test_aggregates_over_no_rows(db: apsw.Connection) -> None:
    # COUNT gives 0; MIN/MAX/AVG/SUM give SQL NULL, which the store drops (ICAT: no result).
    assert ids(db, "SELECT COUNT(o) FROM Datafile o WHERE o.name = 'none'") == [0]
    for fn in ("MIN", "MAX", "AVG", "SUM"):
        compiled, found = run(db, f"SELECT {fn}(o.fileSize) FROM Datafile o WHERE o.id < 0")
        assert compiled.aggregate and found == [None]


# --- the concise syntax -----------------------------------------------------------------------

@pytest.mark.parametrize(("query", "expected"), [
    ("Dataset", [1, 2, 3, 4]),
    ("Dataset [name like 'ds%']", [1, 2, 3]),
    ("Dataset.name [type.name IN ('raw')]", ["ds1", "ds3"]),
    ("DISTINCT Dataset.investigation [complete = FALSE]", [1, 2]),
    ("Investigation <-> InvestigationUser <-> User [name = :user]", [1]),
    ("Grouping <-> UserGroup <-> User [name=:user]", [1]),
    ("Dataset [complete = TRUE]", [1]),
    ("ParameterType [valueType = NUMERIC]", [1]),
    ("ParameterType [valueType = org.icatproject.ParameterValueType.STRING]", [2]),
    ("Investigation [startDate > {ts 2013-01-01 00:00:00}]", [2]),
    ("Investigation [createTime > {ts 2011-01-15 00:00:00}]", [1, 2]),
    ("1,2 Datafile", [2, 3]),
    (",2 Datafile", [1, 2]),
    ("3, Datafile", [4, 5]),
    ("COUNT(Datafile) [fileSize > 150]", [3]),
    ("MAX(Datafile.fileSize) <-> Dataset [name = 'ds1']", [200]),
    ("Dataset INCLUDE Datafile [name = 'ds1']", [1]),
    ("Dataset ORDER BY name DESC [name LIKE 'ds%']", [3, 2, 1]),
    ("Dataset [investigation.name = 'inv2' AND NOT (name = 'empty')]", [3]),
    ("Datafile <-> Dataset [name = 'ds3'] <-> Investigation [name = 'inv2']", [4, 5]),
    ("Investigation <-> Datafile [name = 'a.nxs']", [1]),  # through Dataset: the one shortest way
    ("Dataset [name = 'x'' OR ''1''=''1']", []),
])
def test_concise_queries(db: apsw.Connection, query: str, expected: list[Any]) -> None:
    assert ids(db, query) == expected


def test_concise_include_names_resolve_to_relations() -> None:
    compiled = compile_search(PROFILE, "Dataset INCLUDE Datafile, DatasetParameter, DatasetType")
    assert compiled.includes == (
        IncludeNode("datafiles", "Datafile"), IncludeNode("parameters", "DatasetParameter"),
        IncludeNode("type", "DatasetType"),
    )
    deep = compile_search(PROFILE, "Datafile INCLUDE Dataset, Investigation")
    assert deep.includes == (
        IncludeNode("dataset", "Dataset", (IncludeNode("investigation", "Investigation"),)),
    )
    assert compile_search(PROFILE, "Dataset INCLUDE 1").include_all_ones


# --- get ---------------------------------------------------------------------------------------

def test_get_forms() -> None:
    assert compile_get(PROFILE, "Dataset").includes == ()
    one = compile_get(PROFILE, "Dataset INCLUDE 1")
    assert one.entity == "Dataset" and one.include_all_ones and one.includes == ()
    new = compile_get(PROFILE, "Dataset ds INCLUDE ds.datafiles df, df.parameters, ds.type")
    assert new.includes == (
        IncludeNode("datafiles", "Datafile", (IncludeNode("parameters", "DatafileParameter"),)),
        IncludeNode("type", "DatasetType"),
    )
    shorthand = compile_get(PROFILE, "Dataset AS ds INCLUDE ds.datafiles.parameters")
    assert shorthand.includes == new.includes[:1]
    old = compile_get(PROFILE, "Dataset INCLUDE Datafile, DatasetParameter")
    assert [(n.field, n.entity) for n in old.includes] == [
        ("datafiles", "Datafile"), ("parameters", "DatasetParameter")]


def test_jpql_include_tree() -> None:
    compiled = compile_search(
        PROFILE, "SELECT o FROM Dataset o JOIN o.type AS t ORDER BY t.name "
                 "INCLUDE o.investigation, o.type AS t, t.facility, o.investigation.facility")
    assert compiled.includes == (
        IncludeNode("investigation", "Investigation", (IncludeNode("facility", "Facility"),)),
        IncludeNode("type", "DatasetType", (IncludeNode("facility", "Facility"),)),
    )


# --- operators, literals, dates, paging --------------------------------------------------------

@pytest.mark.parametrize(("where", "expected"), [
    ("o.name LIKE '%.nxs'", [1, 2]),
    ("o.name NOT LIKE '%.nxs'", [3, 4, 5]),
    ("o.name LIKE 'e\\_%' ESCAPE '\\'", [5]),
    ("o.name IN ('a.nxs', 'c.dat', 'zzz')", [1, 3]),
    ("o.name NOT IN ('a.nxs', 'c.dat')", [2, 4, 5]),
    ("o.fileSize BETWEEN 100 AND 300", [1, 2, 3]),
    ("o.fileSize NOT BETWEEN 100 AND 300", [4, 5]),
    ("o.datafileFormat IS NULL", [3, 4, 5]),
    ("o.datafileFormat IS NOT NULL", [1, 2]),
    ("o.datafileCreateTime IS NULL", [3, 5]),
    ("o.name = 'd''q.dat'", [4]),
    ("o.name = 'x'' OR ''1''=''1'", []),
    ("o.name = 'x''; DROP TABLE \"Datafile\"; --'", []),
    ("o.fileSize > 150 AND (o.name LIKE 'c%' OR o.name LIKE 'd%')", [3, 4]),
    ("NOT (o.fileSize > 150) OR o.id = 4", [1, 4, 5]),
    ("o.fileSize <> 100 AND o.fileSize != 200 AND o.fileSize >= 300", [3, 4]),
    ("LOWER(o.name) = 'a.nxs' OR UPPER(o.name) = 'B.NXS'", [1, 2]),
    ("LENGTH(o.name) = 7 AND TRIM(o.name) = o.name", [4, 5]),
    ("CONCAT(o.name, '!', 'x') = 'a.nxs!x'", [1]),
    ("ABS(o.fileSize - 250) < 60", [2, 3]),
    ("LOCATE('.', o.name) = 2 AND SUBSTRING(o.name, 3) = 'nxs'", [1, 2]),
    ("MOD(o.fileSize, 200) = 0 AND o.fileSize * 2 / 4 >= 0", [2, 4, 5]),
    ("o.fileSize + -100 = 0", [1]),
    ("o.datafileCreateTime > '2012-03-02'", [1, 2, 4]),
    ("o.datafileCreateTime > '2012-03-02T08:00:00Z'", [2, 4]),
    ("o.datafileCreateTime BETWEEN '2012-01-01' AND '2012-12-31 23:59:59'", [1, 2]),
    ("o.datafileCreateTime < {ts 2013-01-01 00:00:00}", [1, 2]),
    ("'2013-01-01' < o.datafileCreateTime", [4]),
    ("o.datafileCreateTime IN ('2012-03-02 08:00:00', '2013-06-02T10:00:00+02:00')", [1, 4]),
    ("o.createTime < CURRENT_TIMESTAMP AND o.createTime > CURRENT_DATE", []),
    ("o.createTime < CURRENT_TIMESTAMP", [1, 2, 3, 4, 5]),
    ("o.dataset.investigation.name = 'inv2'", [4, 5]),
    ("o.dataset.type.name = 'raw' AND o.dataset.complete = FALSE", [4, 5]),
    ("o.dataset.parameters IS EMPTY", [4, 5]),
    ("SIZE(o.dataset.datafiles) = 2", [1, 2, 4, 5]),
])
def test_conditions(db: apsw.Connection, where: str, expected: list[int]) -> None:
    assert ids(db, f"SELECT o FROM Datafile o WHERE {where}") == expected


def test_collections_and_members(db: apsw.Connection) -> None:
    assert ids(db, "SELECT o FROM Dataset o WHERE o.datafiles IS EMPTY") == [4]
    assert ids(db, "SELECT o FROM Dataset o WHERE o.datafiles IS NOT EMPTY") == [1, 2, 3]
    assert ids(db, "SELECT o FROM Dataset o WHERE SIZE(o.parameters) > 1") == [1]
    member = ("SELECT ds FROM Datafile df, Dataset ds WHERE df MEMBER OF ds.datafiles "
              "AND df.name = 'c.dat'")
    with pytest.raises(IcatBadParameter):  # FROM may hold only one entity, plus JOINs
        compile_search(PROFILE, member)
    siblings = ("SELECT ds FROM Dataset ds JOIN ds.investigation i JOIN i.datasets other "
                "JOIN other.datafiles f WHERE f.name = 'c.dat' AND f {} ds.datafiles")
    assert ids(db, siblings.format("MEMBER OF")) == [2]
    assert ids(db, siblings.format("NOT MEMBER OF")) == [1]


def test_order_and_paging_are_stable(db: apsw.Connection) -> None:
    everything = ids(db, "SELECT o FROM Datafile o ORDER BY o.dataset.name DESC, o.name")
    assert everything == [4, 5, 3, 1, 2]
    pages = [ids(db, f"SELECT o FROM Datafile o ORDER BY o.dataset.name DESC, o.name "
                     f"LIMIT {skip}, 2") for skip in (0, 2, 4, 6)]
    assert pages == [[4, 5], [3, 1], [2], []]
    assert ids(db, "SELECT o FROM Datafile o INCLUDE 1 LIMIT 1, 2") == [2, 3]
    assert ids(db, "SELECT o FROM Datafile o LIMIT 1, 2 INCLUDE o.dataset") == [2, 3]
    # Without ORDER BY: id order; equal sort keys: id as the tie-break.
    assert ids(db, "SELECT o FROM Dataset o ORDER BY o.complete") == [2, 3, 4, 1]
    assert ids(db, "SELECT o.name FROM Datafile o ORDER BY LENGTH(o.name)") == [
        "a.nxs", "b.nxs", "c.dat", "d'q.dat", "e_1.txt"]


def test_restrictions_filter_results_and_counts(db: apsw.Connection) -> None:
    entity, sql, params = compile_ids(
        PROFILE, "SELECT ds FROM Dataset ds JOIN ds.investigation i "
                 "JOIN i.investigationUsers iu JOIN iu.user u WHERE u.name = :user", USER)
    assert entity == "Dataset" and params == (USER,)
    assert sorted(r[0] for r in db.execute(sql, params)) == [1, 2]
    restrict = {"Dataset": (sql, params), "Datafile": ("SELECT NULL WHERE 0", ())}
    assert ids(db, "SELECT o FROM Dataset o WHERE o.name LIKE 'ds%'", restrict=restrict) == [1, 2]
    assert ids(db, "SELECT COUNT(o) FROM Dataset o", restrict=restrict) == [2]
    assert ids(db, "Dataset [complete = FALSE]", restrict=tuple(restrict.items())) == [2]
    assert ids(db, "SELECT COUNT(o) FROM Datafile o", restrict=restrict) == [0]
    assert ids(db, "SELECT o.dataset FROM Datafile o WHERE o.id = 4", restrict=restrict) == []
    assert ids(db, "SELECT o FROM Investigation o", restrict=restrict) == [1, 2]
    assert compile_ids(PROFILE, "Dataset", "") == (
        "Dataset", 'SELECT r0."id" FROM "Dataset" r0', ())
    _, concise_sql, concise_params = compile_ids(
        PROFILE, "Grouping <-> UserGroup <-> User [name=:user]", USER)
    assert [r[0] for r in db.execute(concise_sql, concise_params)] == [1]


@pytest.mark.parametrize("query", [
    "SELECT o FROM Dataset o ORDER BY o.name", "SELECT o FROM Dataset o INCLUDE 1",
    "SELECT o.name FROM Dataset o", "SELECT COUNT(o) FROM Dataset o", "Dataset INCLUDE 1",
    "1,2 Dataset", "Dataset.name",
])
def test_rule_queries_select_whole_objects_only(query: str) -> None:
    with pytest.raises(IcatBadParameter):
        compile_ids(PROFILE, query)


@pytest.mark.parametrize(
    ("literal", "stored"),
    [
        ("{ts 2011-01-01 00:00:00}", "2010-12-31T23:00:00.000000Z"),
        ("{ts 2011-07-01 00:00:00}", "2011-06-30T22:00:00.000000Z"),  # summer time
        # the wall time the end of summer time repeats: its first (summer) instant, as Java
        ("{ts 2023-10-29 02:30:00}", "2023-10-29T00:30:00.000000Z"),
        ("'2011-01-01 00:00:00'", "2010-12-31T23:00:00.000000Z"),
        ("'2011-01-01T00:00:00Z'", "2011-01-01T00:00:00.000000Z"),  # a zone of its own
    ],
)
def test_dates_without_zone_are_read_in_the_server_zone(literal: str, stored: str) -> None:
    query = f"SELECT o FROM Investigation o WHERE o.startDate > {literal}"
    berlin = compile_search(PROFILE, query, user=USER, zone=zoneinfo.ZoneInfo("Europe/Berlin"))
    assert berlin.params == (stored,)
    assert compile_ids(PROFILE, query, zone=zoneinfo.ZoneInfo("Europe/Berlin"))[2] == (stored,)


def test_a_utc_server_reads_ts_literals_in_utc() -> None:
    query = "SELECT o FROM Investigation o WHERE o.startDate > {ts 2011-07-01 00:00:00}"
    assert compile_search(PROFILE, query, user=USER).params == ("2011-07-01T00:00:00.000000Z",)


# --- bound parameters only ---------------------------------------------------------------------

@pytest.mark.parametrize("query", [
    "SELECT o FROM Datafile o WHERE o.name = 'needle4711' AND o.fileSize > 987654",
    "SELECT o FROM Datafile o WHERE o.name IN ('needle4711', 'other0815') OR o.id = 987654",
    "SELECT o FROM Investigation o WHERE o.startDate > {ts 2031-07-09 11:22:33} "
    "AND o.title LIKE 'needle4711%' ESCAPE '!'",
    "Investigation [startDate BETWEEN '2031-07-09' AND '2032-07-09' AND name = 'needle4711']",
    "SELECT COUNT(o) FROM Dataset o WHERE o.name = :user AND o.complete = TRUE LIMIT 987654, 5",
    "ParameterType [valueType = DATE_AND_TIME AND minimumNumericValue > 987654.25]",
    "SELECT o FROM Datafile o WHERE CONCAT(o.name, 'needle4711') = 'other0815' LIMIT 3, 987654",
])
def test_sql_holds_no_literal_values(query: str) -> None:
    compiled = compile_search(PROFILE, query, user="needle4711")
    for needle in ("needle4711", "other0815", "987654", "2031", "2032", "DATE_AND_TIME", "!"):
        assert needle not in compiled.sql
    assert compiled.sql.count("?") == len(compiled.params) > 0
    assert not re.search(r"'[^']*'", compiled.sql.replace("'%Y-%m-%dT%H:%M:%f', 'now'", ""))


# --- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("query", "message"), [
    ("SELECT o FROM Nothing o", "No information to determine type of Nothing in the FROM clause"),
    ("SELECT o FROM Dataset o WHERE o.nmae = 'x'", "Dataset has no field 'nmae'"),
    ("SELECT o FROM Investigation o WHERE o.datasets.name = 'x'", "use a JOIN"),
    ("SELECT o FROM Dataset o WHERE o.name.x = 'x'", "not a relationship"),
    ("SELECT x FROM Dataset o", "'x'"),
    ("SELECT o FROM Dataset o WHERE o.name = 'x", "position 39"),
    ("SELECT o FROM Dataset o WHERE o.name = ", "end of query"),
    ("SELECT o FROM Dataset o WHERE o.name == 'x'", "Unexpected token '='"),
    ("SELECT o FROM Dataset o GROUP BY o.name", "GROUP"),
    ("SELECT o FROM Dataset o WHERE o.name = :other", ":other"),
    ("SELECT o FROM Dataset o LIMIT 10", "end of query"),
    ("SELECT o FROM Dataset o INCLUDE 2", "Only integer value allowed in the INCLUDE list is 1"),
    ("SELECT o.name FROM Dataset o INCLUDE o.type", "INCLUDE is only valid"),
    ("SELECT o FROM Dataset o INCLUDE o.name", "not a relationship"),
    ("SELECT o FROM Dataset o INCLUDE x.type", "not defined"),
    ("SELECT o FROM Dataset o INCLUDE type", "must contain a '.'"),
    ("SELECT MIN(o) FROM Dataset o", "needs an attribute"),
    ("SELECT SUM(o.name) FROM Dataset o", "numeric"),
    ("SELECT o, o.name FROM Dataset o", "combined"),
    ("SELECT o.name, COUNT(o) FROM Dataset o", "GROUP BY"),
    ("SELECT o FROM Dataset o JOIN o.datafiles o", "already been defined"),
    ("SELECT o FROM Dataset o JOIN o.name n", "must end in a relationship"),
    ("SELECT o.datafiles FROM Dataset o", "one-to-many"),
    ("SELECT o FROM Dataset o WHERE o.datafiles = 1", "one-to-many"),
    ("SELECT o FROM Dataset o WHERE o.name", "Expected a condition"),
    ("SELECT o FROM Dataset o WHERE o.name IS EMPTY", "one-to-many"),
    ("SELECT o FROM Dataset o WHERE LOWER(o.name, o.name) = 'x'", "LOWER takes 1"),
    ("SELECT o FROM Dataset o WHERE o.startDate > 'yesterday'", "not one"),
    ("SELECT o FROM ParameterType o WHERE o.valueType = org.icatproject.ParameterValueType.X",
     "not a known value"),
    ("SELECT o FROM Dataset o ORDER BY o.datafiles", "one-to-many"),
    ("SELECT o FROM Dataset o WHERE o.name = 'a' ; DELETE", "Unexpected character ';'"),
    ('SELECT o FROM Dataset o WHERE o."name" = 1', "Unexpected character"),
    ("Nothing", "Nothing is not an ICAT entity"),
    ("Dataset [0,3]", "Unexpected token ','"),
    ("Dataset [nmae = 'x']", "Dataset has no field 'nmae'"),
    ("Dataset [valueType = NUMERIC]", "no field 'valueType'"),
    ("ParameterType [valueType = NOPE]", "no field 'NOPE'"),
    ("Dataset [name = 'x'] <-> Dataset", "named twice"),
    ("Datafile <-> RelatedDatafile", "ambiguous"),
    ("Dataset INCLUDE Nothing", "Nothing is not an ICAT entity"),
    ("Dataset INCLUDE Facility", "Unable to reach Facility"),
    ("Dataset.name INCLUDE Datafile", "INCLUDE needs whole Dataset objects"),
    ("Dataset ORDER BY name ORDER BY id", "Unexpected token 'ORDER' at position 22"),
    ("Dataset ORDER BY name [id > 0] ORDER BY id", "Unexpected token 'ORDER'"),
    # ICAT 6.2 (seen, and its OldSearchQuery): ORDER BY and INCLUDE only right after the entity
    ("Dataset [name = 'x'] INCLUDE Datafile", "Unexpected token 'INCLUDE'"),
    ("Dataset [name LIKE 'ds%'] ORDER BY name DESC", "Unexpected token 'ORDER'"),
    ("Dataset <-> Investigation [name = 'x'] INCLUDE Datafile", "Unexpected token 'INCLUDE'"),
    ("", "end of query"),
    ("   ", "end of query"),
    ("SELECT", "end of query"),
])
def test_bad_queries_are_bad_parameter(query: str, message: str) -> None:
    with pytest.raises(IcatBadParameter) as info:
        compile_search(PROFILE, query)
    assert message in info.value.message


@pytest.mark.parametrize(("query", "message"), [
    ("Nothing", "Nothing is not an ICAT entity"),
    ("Dataset INCLUDE ds.datafiles", "is not an ICAT entity"),
    ("Dataset ds INCLUDE ds.nothing", "nothing is not a relationship of Dataset"),
    ("Dataset ds INCLUDE ds.datafiles df, df.parameters df", "must be a new plain name"),
    ("Dataset ds extra", "Unexpected token 'extra'"),
])
def test_bad_get_queries_are_bad_parameter(query: str, message: str) -> None:
    with pytest.raises(IcatBadParameter) as info:
        compile_get(PROFILE, query)
    assert message in info.value.message


def test_random_token_soup_raises_only_bad_parameter() -> None:
    """Whatever arrives over the wire, the compiler answers with a result or BAD_PARAMETER."""
    words = ["SELECT", "o", "FROM", "Dataset", "Datafile", "JOIN", "o.datafiles", "df", "WHERE",
             "o.name", "=", "'x'", "AND", "OR", "NOT", "(", ")", ",", "[", "]", "<->", "IN",
             "IS", "NULL", "EMPTY", "COUNT", "INCLUDE", "1", "LIMIT", "ORDER", "BY", "DESC",
             "{ts 2011-01-15 00:00:00}", ":user", "LIKE", "BETWEEN", "df.name", "o.id", "3",
             "DISTINCT", "SIZE", "MEMBER", "OF", "AS", "LEFT", "'", "<", "-", "*", "."]
    rng = random.Random(20240303)
    for _ in range(3000):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(0, 14)))
        for compile_ in (compile_search, compile_get, compile_ids):
            with contextlib.suppress(IcatBadParameter):
                compile_(PROFILE, text)


def test_deep_nesting_and_long_chains_are_internal_as_on_icat_not_a_crash() -> None:
    """A real ICAT 6.2.0 overflows its stack (INTERNAL) from about 1,400 NOTs or 1,500-3,400
    ORs (fixtures/icat-6.2/exchanges/soap-search-20000-or.json); the local catalogue refuses
    more than 1,500 AND/OR/NOT before parsing, with the same fault type."""
    deep = "SELECT o FROM Dataset o WHERE " + "(" * 3000 + "o.id = 1" + ")" * 3000
    compile_search(PROFILE, deep)  # parentheses alone nest nothing in the tree
    nots = "SELECT o FROM Dataset o WHERE " + "NOT (" * 3000 + "o.id = 1" + ")" * 3000
    with pytest.raises(IcatInternal, match="3000 AND/OR/NOT"):
        compile_search(PROFILE, nots)
    many = " OR ".join(f"o.id = {i}" for i in range(3000))
    with pytest.raises(IcatInternal, match="2999 AND/OR/NOT, more than the 1500"):
        compile_search(PROFILE, f"SELECT o FROM Dataset o WHERE {many}")
    many = " OR ".join(f"o.id = {i}" for i in range(1001))
    assert compile_search(PROFILE, f"SELECT o FROM Dataset o WHERE {many}").params[-1] == 1000
    words = " OR ".join(f"o.name = 'and or not {i}'" for i in range(1001))  # data, not counted
    assert len(compile_search(PROFILE, f"SELECT o FROM Dataset o WHERE {words}").params) == 1001


# --- caching and the client's Query ------------------------------------------------------------

def test_compiled_queries_are_cached() -> None:
    text = "SELECT o FROM Dataset o WHERE o.name = :user"
    first = compile_search(PROFILE, text, user="a")
    assert compile_search(PROFILE, text, user="a") is first
    assert compile_search(PROFILE, text, user="b").params == ("b",)
    restrict = (("Dataset", ("SELECT 1", ())),)
    assert compile_search(PROFILE, text, user="a", restrict=restrict) is compile_search(
        PROFILE, text, user="a", restrict=restrict)
    assert compile_get(PROFILE, "Dataset INCLUDE 1") is compile_get(PROFILE, "Dataset INCLUDE 1")


@pytest.mark.parametrize("query", [
    Query("Datafile").where({"dataset.name": "= 'ds1'", "dataset.investigation.name":
                             Condition("=", "inv1")}).order_by(("name", "DESC")),
    Query("Dataset").count(distinct=True).where({"datafiles.fileSize": Condition(">", 50)}),
    Query("Rule").join("grouping", "LEFT JOIN").order_by("grouping.name", "what", "id")
    .include("grouping"),
    Query("Dataset").select("name", "type.name").aggregate("DISTINCT"),
    Query("Dataset").include("datafiles.parameters", "type").limit(0, 2),
    Query("DatasetParameter").select("numericValue").aggregate("AVG:DISTINCT"),
])
def test_rendered_queries_run(db: apsw.Connection, query: Query) -> None:
    compiled, found = run(db, str(query))
    assert found and compiled.sql

