"""The Query value object: JPQL rendering like python-icat's, immutability, and path validation."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from igestbench.errors import UsageError
from igestbench.icat.query import Condition, Query, literal
from igestbench.icat.schema import get_profile
from igestbench.mock.jpql import compile_search

PROFILE = get_profile("6.2")


# Aliases are keyed by the whole relation path, as python-icat's are: "dataset" is ds but
# "investigationUsers.user" is numbered.
@pytest.mark.parametrize(("query", "jpql"), [
    (Query("Investigation").where(name="= '10100601-ST'"),
     "SELECT o FROM Investigation o WHERE o.name = '10100601-ST'"),
    (Query("Datafile").where({"dataset.name": "= 'e208945'", "name": "= 'e208945.nxs'",
                              "dataset.investigation.name": "= '12100409-ST'"}),
     "SELECT o FROM Datafile o JOIN o.dataset AS ds JOIN ds.investigation AS i "
     "WHERE i.name = '12100409-ST' AND ds.name = 'e208945' AND o.name = 'e208945.nxs'"),
    (Query("Dataset").where({"investigation.id": "= 12", "name": "= 'ds1'"}).include("1"),
     "SELECT o FROM Dataset o JOIN o.investigation AS i WHERE i.id = 12 AND o.name = 'ds1' "
     "INCLUDE 1"),
    (Query("Dataset").count(), "SELECT COUNT(o) FROM Dataset o"),
    (Query("Dataset").count(distinct=True), "SELECT COUNT(DISTINCT(o)) FROM Dataset o"),
    (Query("DatasetParameter").select("numericValue").aggregate("MIN")
     .where({"type.name": "= 'temperature'", "dataset.name": "= 'ds1'"}),
     "SELECT MIN(o.numericValue) FROM DatasetParameter o JOIN o.dataset AS ds "
     "JOIN o.type AS t WHERE ds.name = 'ds1' AND t.name = 'temperature'"),
    (Query("Rule").join("grouping", "LEFT JOIN").order_by("grouping.name", "what", "id")
     .include("grouping"),
     "SELECT o FROM Rule o LEFT JOIN o.grouping AS g ORDER BY g.name, o.what, o.id "
     "INCLUDE o.grouping"),
    (Query("Dataset").include("type.facility", "investigation"),
     "SELECT o FROM Dataset o INCLUDE o.investigation, o.type AS t, t.facility"),
    (Query("Dataset").include("datafiles.parameters.type").limit(100, 50),
     "SELECT o FROM Dataset o INCLUDE o.datafiles AS s1, s1.parameters AS s2, s2.type "
     "LIMIT 100, 50"),
    (Query("Dataset").select("name", "type.name").aggregate("DISTINCT"),
     "SELECT DISTINCT o.name, t.name FROM Dataset o JOIN o.type AS t"),
    (Query("Dataset").select("name").aggregate("DISTINCT"),
     "SELECT DISTINCT(o.name) FROM Dataset o"),
    (Query("Investigation").where({"UPPER(title)": Condition("LIKE", "%DATA%")})
     .order_by(("LENGTH(title)", "desc"), "name"),
     "SELECT o FROM Investigation o WHERE UPPER(o.title) LIKE '%DATA%' "
     "ORDER BY LENGTH(o.title) DESC, o.name"),
    (Query("Datafile").where({"dataset.investigation.facility.name": "= 'ESRF'",
                              "datafileFormat.name": "= 'NeXus'"}),
     "SELECT o FROM Datafile o JOIN o.datafileFormat AS dff JOIN o.dataset AS ds "
     "JOIN ds.investigation AS i JOIN i.facility AS s1 "
     "WHERE dff.name = 'NeXus' AND s1.name = 'ESRF'"),
    (Query("Investigation").where({"investigationUsers.user.name": "= :user"}),
     "SELECT o FROM Investigation o JOIN o.investigationUsers AS iu JOIN iu.user AS s1 "
     "WHERE s1.name = :user"),
])
def test_renders_python_icat_jpql(query: Query, jpql: str) -> None:
    assert str(query) == jpql
    compile_search(PROFILE, jpql)  # and the local catalogue understands it


@pytest.mark.parametrize(("condition", "text"), [
    (Condition("=", "O'Neil"), "= 'O''Neil'"),
    (Condition("=", "x' OR '1'='1"), "= 'x'' OR ''1''=''1'"),
    (Condition("like", "a%"), "LIKE 'a%'"),
    (Condition("IN", ["a", "b'c"]), "IN ('a', 'b''c')"),
    (Condition("NOT IN", (1, 2)), "NOT IN (1, 2)"),
    (Condition("IN", {"b", "a"}), "IN ('a', 'b')"),
    (Condition("BETWEEN", (1.5, 2)), "BETWEEN 1.5 AND 2"),
    (Condition("IS NULL"), "IS NULL"),
    (Condition("is not empty"), "IS NOT EMPTY"),
    (Condition(">", dt.datetime(2011, 1, 15, 1, 0, tzinfo=dt.timezone(dt.timedelta(hours=1)))),
     "> {ts 2011-01-15 00:00:00}"),
    (Condition("=", True), "= TRUE"),
])
def test_conditions_quote_their_values(condition: Condition, text: str) -> None:
    assert str(condition) == text


def test_literals_and_bad_values() -> None:
    assert literal("it's") == "'it''s'" and literal(False) == "FALSE" and literal(7) == "7"
    assert literal(dt.datetime(2024, 3, 3, 10, 0)) == "{ts 2024-03-03 10:00:00}"
    with pytest.raises(UsageError):
        literal(object())
    for op, value in (("==", 1), ("IN", "ab"), ("IN", []), ("BETWEEN", (1,)), ("IS NULL", 1),
                      ("=", None)):
        with pytest.raises(UsageError):
            Condition(op, value)
    with pytest.raises(UsageError):
        literal(float("nan"))


def test_injection_through_a_condition_value_stays_a_string() -> None:
    jpql = str(Query("Dataset").where(name=Condition("=", "x' OR '1'='1")))
    compiled = compile_search(PROFILE, jpql)
    assert compiled.params == ("x' OR '1'='1",)


def test_queries_are_immutable_values() -> None:
    base = Query("Dataset", profile=PROFILE)
    narrowed = base.where(name="= 'x'")
    assert str(base) == "SELECT o FROM Dataset o"
    assert narrowed is not base and narrowed != base
    assert narrowed.where(complete="= TRUE").conditions == (
        ("name", ("= 'x'",)), ("complete", ("= TRUE",)))
    assert narrowed.where(name="<> 'y'").conditions == (("name", ("= 'x'", "<> 'y'")),)
    assert base.limit(0, 10).paging == (0, 10) and base.paging is None
    assert Query("Dataset").where(name="= 'x'") == Query("Dataset", profile=PROFILE).where(
        name="= 'x'")
    assert hash(narrowed) == hash(Query("Dataset").where(name="= 'x'"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.entity = "Datafile"  # type: ignore[misc]


@pytest.mark.parametrize(("build", "message"), [
    (lambda: Query("Nothing", profile=PROFILE), "unknown entity 'Nothing'"),
    (lambda: Query("dataset"), "invalid entity name"),
    (lambda: Query("Datafile", profile=PROFILE).where({"dataset.nmae": "= 'x'"}),
     "invalid path 'dataset.nmae' for Datafile: Dataset has no field 'nmae'"),
    (lambda: Query("Datafile", profile=PROFILE).where({"name.x": "= 'x'"}),
     "Datafile.name is not a relationship"),
    (lambda: Query("Dataset", profile=PROFILE).select("investigation.title", "nope"),
     "invalid path 'nope' for Dataset"),
    (lambda: Query("Dataset", profile=PROFILE).include("name"),
     "Dataset.name is not a relationship"),
    (lambda: Query("Dataset", profile=PROFILE).order_by("type.nope"), "no field 'nope'"),
    (lambda: Query("Dataset").order_by("name", ("name", "ASC")), "twice"),
    (lambda: Query("Dataset").order_by(("name", "UP")), "direction"),
    (lambda: Query("Dataset").where({"name; DROP": "= 1"}), "invalid attribute"),
    (lambda: Query("Dataset").aggregate("MEDIAN"), "unknown aggregate"),
    (lambda: Query("Dataset").join("type", "CROSS JOIN"), "invalid join type"),
    (lambda: Query("Dataset").limit(-1, 10), "invalid LIMIT"),
])
def test_validation_names_the_bad_part(build: object, message: str) -> None:
    assert callable(build)
    with pytest.raises(UsageError) as info:
        build()
    assert message in str(info.value)


def test_many_relations_in_conditions_are_joined() -> None:
    q = Query("Investigation", profile=PROFILE).where(
        {"datasets.datafiles.name": "LIKE '%.nxs'", "datasets.name": "= 'ds1'"})
    assert q.join_clause == "JOIN o.datasets AS s1 JOIN s1.datafiles AS s2"
    assert q.where_clause == "WHERE s2.name LIKE '%.nxs' AND s1.name = 'ds1'"
    compile_search(PROFILE, str(q))


def test_clauses_are_available_separately() -> None:
    q = Query("Dataset").where(name="= 'x'").order_by("name").include("1").limit(0, 5)
    assert q.select_clause == "SELECT o FROM Dataset o"
    assert q.join_clause is None
    assert (q.where_clause, q.order_clause, q.include_clause, q.limit_clause) == (
        "WHERE o.name = 'x'", "ORDER BY o.name", "INCLUDE 1", "LIMIT 0, 5")
