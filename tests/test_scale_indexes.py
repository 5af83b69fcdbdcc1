"""The local catalogue indexes what ICAT's database indexes, and nothing else.

So each query of the scale part grows with the catalogue as it does on ICAT: a Datafile by
(dataset, name) is found through the unique key, one by name alone is a scan on both.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import apsw
import pytest

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.icat.schema import get_profile
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.jpql import compile_search
from igestbench.mock.store import Store
from igestbench.mock.tables import column_name

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "icat-6.2" / "indices.sql"
#: entity classes' JPA @Index annotations at icat.server v6.2.0 (the fixture's header says so)
JPA_INDEXES = {("Datafile", ("location",))}


def icat_indexes() -> set[tuple[str, tuple[str, ...]]]:
    """(entity, fields) of each index in icat.server's indices.sql (MariaDB's upper-case names
    of tables and columns matched to the model's, without case and underscores)."""
    entities = {e.name.upper(): e for e in get_profile("6.2")}
    found = set()
    for table, column in re.findall(r"create index \w+ on (\w+)\((\w+)\)", FIXTURE.read_text()):
        entity = entities[table]
        (field,) = [f.name for f in entity.all_fields()
                    if f.name.lower() == column.replace("_", "").lower()]  # fmt: skip
        found.add((entity.name, (field,)))
    return found


def sqlite_indexes(conn: apsw.Connection) -> set[tuple[str, tuple[str, ...], bool]]:
    out = set()
    for name, tbl in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'"
                                  " AND name NOT LIKE 'sqlite_%'"):  # fmt: skip
        columns = tuple(r[2] for r in conn.execute(f'PRAGMA index_info("{name}")'))
        unique = bool(conn.execute(f'PRAGMA index_list("{tbl}")').fetchall()
                      and next(r[2] for r in conn.execute(f'PRAGMA index_list("{tbl}")')
                               if r[1] == name))  # fmt: skip
        out.add((tbl, columns, unique))
    return out


def expected(profile_name: str) -> set[tuple[str, tuple[str, ...], bool]]:
    """ICAT's: unique keys, a foreign key's index unless the unique key starts with it (InnoDB),
    indices.sql, and (6.2) the JPA @Index annotations."""
    profile = get_profile(profile_name)
    extra = icat_indexes() | (JPA_INDEXES if profile_name == "6.2" else set())
    out = set()
    for e in profile:
        unique = tuple(column_name(e.field(n)) for n in e.constraint)
        if unique:
            out.add((e.name, unique, True))
        for f in e.ones:
            if not unique or unique[0] != column_name(f):
                out.add((e.name, (column_name(f),), False))
        out |= {(e.name, fields, False) for name, fields in extra if name == e.name}
    return out


@pytest.mark.parametrize("profile", ["6.2", "4.3"])
def test_the_tables_have_icat_s_indexes_and_no_others(profile: str) -> None:
    store = Store(get_profile(profile))
    try:
        assert sqlite_indexes(store.conn) == expected(profile)
    finally:
        store.close()


def test_the_fixture_is_icat_s_list() -> None:
    found = icat_indexes()
    assert len(found) == 16 and ("Dataset", ("startDate",)) in found
    assert ("DatafileParameter", ("numericValue",)) in found


def test_a_kept_database_loses_the_indexes_icat_does_not_have(tmp_path: Path) -> None:
    db = tmp_path / "old.sqlite"
    Store(get_profile("6.2"), str(db)).close()
    with sqlite3.connect(db) as conn:  # as an older sv7 serve left it: an index ICAT lacks
        conn.execute('CREATE INDEX "ix_Datafile_dataset" ON "Datafile" ("dataset_id")')
    store = Store(get_profile("6.2"), str(db))
    try:
        assert sqlite_indexes(store.conn) == expected("6.2")
    finally:
        store.close()


def test_a_parameter_range_walks_the_value_index_from_the_first_thousands_of_rows() -> None:
    """ICAT's database keeps statistics from a table's first rows, so a numeric range over a
    parameter beside its type reads the value's index at any size. Without statistics SQLite
    takes the type's index instead — every parameter of that type — which on a tree of a few
    thousand Datafiles (fewer rows written than a refresh used to wait for) cost 7x."""
    with LocalCatalogue(ServeConfig()) as cat:
        service = cat.service
        sid = service.login("simple", {"username": "root", "password": "root"})
        fac = service.create(sid, Bean("Facility", {"name": "f"}))
        ptype = service.create(sid, Bean("ParameterType", {
            "name": "temperature", "units": "K", "valueType": "NUMERIC",
            "applicableToDatafile": True, "facility": ref("Facility", fac)}))  # fmt: skip
        itype = service.create(sid, Bean("InvestigationType", {
            "name": "t", "facility": ref("Facility", fac)}))  # fmt: skip
        inv = service.create(sid, Bean("Investigation", {
            "name": "i", "visitId": "v", "title": "t", "facility": ref("Facility", fac),
            "type": ref("InvestigationType", itype)}))  # fmt: skip
        dtype = service.create(sid, Bean("DatasetType", {
            "name": "t", "facility": ref("Facility", fac)}))  # fmt: skip
        # ICAT checks the flag on the type as sent (mock/values.py: check_applicable)
        sent_type = Bean("ParameterType", {"id": ptype, "applicableToDatafile": True})
        for d in range(5):  # 5,000 Datafiles, a parameter on one in four: ~6,300 rows
            ds = service.create(sid, Bean("Dataset", {
                "name": f"d{d}", "investigation": ref("Investigation", inv),
                "type": ref("DatasetType", dtype)}))  # fmt: skip
            service.create_many(sid, [Bean("Datafile", {
                "name": f"df{i}", "dataset": ref("Dataset", ds),
                "parameters": [Bean("DatafileParameter", {
                    "type": sent_type, "numericValue": float(i)})]
                if i % 4 == 0 else []}) for i in range(1000)])  # fmt: skip
        query = ("SELECT df FROM Datafile df JOIN df.parameters p WHERE p.type.id = "
                 f"{ptype} AND p.numericValue BETWEEN 100 AND 140")  # fmt: skip
        compiled = compile_search(service.profile, query)
        steps = [row[3] for row in service.store.conn.execute(
            "EXPLAIN QUERY PLAN " + compiled.sql, compiled.params)]  # fmt: skip
        assert any("ix_DatafileParameter_numericValue" in s for s in steps), steps
        assert len(service.search(sid, query).items) == 5 * 11


def ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})
