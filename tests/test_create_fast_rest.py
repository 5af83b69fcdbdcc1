"""REST's write through createMany's fast path (mock/create_fast_json.py) against its usual way
(rest_json.beans_from_write, then rest_write.write), on the same requests.

Each write goes to two fresh catalogues built alike, one with the fast path and one without
(its hook made to decline); the answers (status and body: the ids, or the fault with its code,
message and offset) and the rows stored must be the same.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.mock import create_fast, gc_pause, rest, rest_write
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.http_messages import Request
from igestbench.mock.store import Store
from tests.test_create_fast import Side
from tests.test_create_fast import _file as soap_file

FORM = "application/x-www-form-urlencoded"


class RestSide(Side):
    """The SOAP test's catalogue (two Datasets; the member may create Datafiles in the first
    only), with a second ParameterType that does not apply to Datafiles, spoken to in REST."""

    def __init__(self, cat: LocalCatalogue) -> None:
        super().__init__(cat)
        self.rest = rest.RestEndpoint(cat.service, cat.config.max_elements)
        service = cat.service
        facility = service.search(self.sids["root"], "SELECT f.id FROM Facility f")
        self.other_type = service.create(self.sids["root"], Bean("ParameterType", {
            "name": "pressure", "units": "Pa", "valueType": "NUMERIC",
            "applicableToDataset": True, "facility": Bean("Facility", {"id": facility.items[0]})}))

    def write(self, user: str, entities: Any) -> tuple[int, Any]:
        body = f"sessionId={self.sids[user]}&entities={quote(json.dumps(entities))}"
        request = Request("POST", "/icat/entityManager", "", {"content-type": FORM},
                          body.encode(), "http", None)  # fmt: skip
        answer = self.rest.handle(request)
        return answer.status, json.loads(answer.body)

    def rows(self) -> list[tuple[Any, ...]]:
        conn = self.cat.service.store.conn
        return [*super().rows(),
                *conn.execute("SELECT * FROM DatasetParameter ORDER BY id").fetchall()]

    @property
    def ids(self) -> dict[str, int]:
        return {"a": self.datasets[0], "b": self.datasets[1], "type": self.parameter_type,
                "other type": self.other_type, "collection": self.collection}


#: A write's entities, given the ids of the catalogue's objects (RestSide.ids).
Case = Callable[[dict[str, int]], Any]
#: (status, body) of a write
Answer = tuple[int, Any]
#: A write sent to both sides as a user: both answers, and whether the fast path answered
Send = Callable[[str, Case], tuple[Answer, Answer, bool]]


@pytest.fixture(params=["UTC", "Europe/Rome"])
def sides(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Send]:
    """Send one write to a catalogue with the fast path and one without; both answers."""
    config = ServeConfig(timezone=request.param)  # dates are read in the server's zone
    with LocalCatalogue(config) as a, LocalCatalogue(config) as b:
        fast, slow = RestSide(a), RestSide(b)
        assert fast.ids == slow.ids
        real = rest.create_many_json
        answered: list[bool] = []

        def recorded(*args: Any) -> list[int] | None:
            ids = real(*args)
            answered.append(ids is not None)
            return ids

        def send(user: str, case: Case) -> tuple[Answer, Answer, bool]:
            answered.clear()
            monkeypatch.setattr(rest, "create_many_json", recorded)
            fast_answer = fast.write(user, case(fast.ids))
            monkeypatch.setattr(rest, "create_many_json", lambda *args: None)
            try:
                slow_answer = slow.write(user, case(slow.ids))
            finally:
                monkeypatch.setattr(rest, "create_many_json", real)
            assert _without_times(fast.rows()) == _without_times(slow.rows())
            return fast_answer, slow_answer, answered == [True]

        yield send


def _without_times(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    # createTime, modTime (columns 2 and 4): the clock of each call, and of each object in
    # the usual way (one store.create each); an update changes modTime
    return [row[:2] + row[3:4] + row[5:] for row in rows]


def _file(name: str, dataset: int, **more: Any) -> dict[str, Any]:
    return {"Datafile": {"name": name, "dataset": {"id": dataset}, **more}}


def _parameter(type_id: int, value: Any = 1.5, **more: Any) -> dict[str, Any]:
    return {"type": {"id": type_id}, "numericValue": value, **more}


def common(ids: dict[str, int], prefix: str = "f") -> list[Any]:
    """Twenty Datafiles as a REST client populating a catalogue writes them: a parameter on
    one in four (its type by id: REST judges the type as stored), dates in two zones, nulls."""
    out = []
    for i in range(20):
        more: dict[str, Any] = {"fileSize": i * 1000, "location": f"/d/{prefix}{i}",
                                "checksum": "abc", "description": None}
        if i % 3 == 0:
            more["datafileCreateTime"] = "2026-11-26T10:00:00.000Z"
            more["datafileModTime"] = "2026-11-26T11:00:00.123+01:00"
        if i % 4 == 0:
            more["parameters"] = [_parameter(ids["type"], i + 0.5)]
        if i == 5:
            more["parameters"] = []
        out.append(_file(f"{prefix}{i}", ids["a"], **more))
    return out


@pytest.mark.parametrize("user", ["root", "member"])
def test_the_common_shape_stores_the_same_rows_and_ids(
    sides: Send, user: str
) -> None:
    fast, slow, went_fast = sides(user, common)
    assert fast[0] == 200 and len(fast[1]) == 20
    assert fast == slow
    assert went_fast


#: writes the fast path takes, or declines with the same outcome in the end
OTHER_SHAPES: dict[str, Case] = {
    "one object, not a list": lambda ids: _file("one", ids["a"], fileSize=3),
    "Datasets with their Datafiles": lambda ids: [{"Dataset": {
        "name": f"ds{i}", "type": {"id": 1}, "investigation": {"id": 1},
        "datafiles": [{"name": f"in{i}-{j}", "fileSize": j} for j in range(3)]}}
        for i in range(2)],
    "a create and an update": lambda ids: [_file("new", ids["a"]),
                                           {"Dataset": {"id": ids["a"], "location": "/x"}}],
    "two relations": lambda ids: [_file("two", ids["a"], parameters=[_parameter(ids["type"])],
                                        dataCollectionDatafiles=[
                                            {"dataCollection": {"id": ids["collection"]}}]),
                                  _file("plain", ids["a"])],
    "a reference naming more than its id": lambda ids: [
        _file("w", ids["a"]), {"Datafile": {"name": "x", "dataset": {"id": ids["a"],
                                                                     "name": "a"}}}],
    "a whole number as a float": lambda ids: [_file("f", ids["a"], fileSize=1000.0)],
    "a parameter type naming more than its id": lambda ids: [_file("p", ids["a"], parameters=[
        {"type": {"id": ids["type"], "name": "temperature"}, "numericValue": 1}])],
    "an empty list": lambda ids: [],
    "a parameter with a string and a date value": lambda ids: [_file("s", ids["a"], parameters=[
        {"type": {"id": ids["type"]}, "stringValue": "warm",
         "dateTimeValue": "2026-01-02T03:04:05.006-05:00"}])],
}


#: those of them the fast path takes (it declines the others before writing anything)
FAST_SHAPES = {"one object, not a list", "Datasets with their Datafiles",
               "a parameter with a string and a date value"}


@pytest.mark.parametrize("case", sorted(OTHER_SHAPES))
def test_other_shapes_store_the_same(
    sides: Send, case: str
) -> None:
    fast, slow, went_fast = sides("root", OTHER_SHAPES[case])
    assert fast[0] == 200
    assert fast == slow
    assert went_fast == (case in FAST_SHAPES)


def _more(**more: Any) -> Case:
    """A good Datafile, then one in Dataset a with ``more`` (the fault at offset 1)."""

    def case(ids: dict[str, int]) -> list[Any]:
        bad = _file("bad", ids["a"])
        bad["Datafile"].update(more)
        return [_file("good", ids["a"]), bad]

    return case


#: writes the fast path declines or finds a fault in (most at offset 1): a fault must be the
#: usual way's, and a few of them the usual way accepts (ROOT_MAY, a parameter naming its parent)
FAULTS: dict[str, Case] = {
    "bad type": _more(fileSize="big"),
    "a bool for a long": _more(fileSize=True),
    "a fraction for a long": _more(fileSize=1.5),
    "long out of range": _more(fileSize=2**63),
    "string too long": lambda ids: [_file("a", ids["a"]), _file("b" * 256, ids["a"])],
    "a character XML forbids": lambda ids: [_file("a", ids["a"]), _file("b\x01", ids["a"])],
    "a number for a string": _more(location=5),
    "bad date": _more(datafileModTime="yesterday"),
    "date without zone": _more(datafileModTime="2026-11-26T10:00:00.000"),
    "missing required": lambda ids: [_file("a", ids["a"]),
                                     {"Datafile": {"dataset": {"id": ids["a"]}}}],
    "null required": _more(name=None),
    "missing reference": lambda ids: [_file("a", ids["a"]), {"Datafile": {"name": "b"}}],
    "null reference": _more(dataset=None),
    "duplicate in the batch": lambda ids: [_file("a", ids["a"]), _file("b", ids["a"]),
                                           _file("a", ids["a"])],
    "duplicate in the table": lambda ids: [_file("t", ids["a"]), _file("t", ids["b"])],
    "reference to nothing": lambda ids: [_file("a", ids["a"]), _file("b", 999999)],
    "reference without id": _more(dataset={"name": "x"}),
    "reference id a string": _more(dataset={"id": "1"}),
    "reference not an object": _more(datafileFormat=5),
    "no create right": lambda ids: [_file("a", ids["a"]), _file("b", ids["b"])],
    "parameter type of Datasets": lambda ids: [_file("a", ids["a"]), _file(
        "b", ids["a"], parameters=[_parameter(ids["other type"])])],
    "parameter type not found": _more(parameters=[_parameter(999999)]),
    "parameter without type": _more(parameters=[{"numericValue": 1}]),
    "two parameters of one type": lambda ids: [_file("a", ids["a"]), _file(
        "b", ids["a"], parameters=[_parameter(ids["type"]), _parameter(ids["type"], 2)])],
    "a parameter with an id": lambda ids: [_file("a", ids["a"], parameters=[
        {**_parameter(ids["type"]), "id": 7}])],
    "a parameter naming its parent": lambda ids: [_file("a", ids["a"], parameters=[
        {**_parameter(ids["type"]), "datafile": {"id": 1}}])],
    "parameters not a list": _more(parameters={}),
    "a parameter not an object": _more(parameters=[5]),
    "unknown field": _more(colour="red"),
    "a field the server writes": _more(createId="me"),
    "mixed types": lambda ids: [_file("a", ids["a"]), {"Facility": {"name": "G"}}],
    "not an object": lambda ids: [_file("a", ids["a"]), 5],
    "two names": lambda ids: [_file("a", ids["a"]), {**_file("b", ids["a"]),
                                                     "Facility": {"name": "G"}}],
    "not an entity": lambda ids: [_file("a", ids["a"]), {"Colour": {"name": "red"}}],
    "an update of nothing": lambda ids: [_file("a", ids["a"]),
                                         {"Datafile": {"id": 999999, "name": "z"}}],
    "nested children": lambda ids: [{"Dataset": {
        "name": "n", "type": {"id": 1}, "investigation": {"id": 1},
        "datafiles": [{"name": "z", "parameters": [_parameter(ids["type"])]}]}}],
    "a Dataset in nothing": lambda ids: [{"Dataset": {"name": "n", "type": {"id": 1},
                                                      "investigation": {"id": 999999}}}],
}


#: what root may write, where the member may not (or what the usual way accepts as well)
ROOT_MAY = {"mixed types", "nested children", "no create right"}


@pytest.mark.parametrize("user", ["root", "member"])
@pytest.mark.parametrize("case", sorted(FAULTS))
def test_every_fault_is_the_one_of_the_usual_way(
    sides: Send, user: str, case: str
) -> None:
    if case == "duplicate in the table":
        sides("root", lambda ids: [_file("t", ids["b"])])  # the same name already in b
    fast, slow, went_fast = sides(user, FAULTS[case])
    assert fast == slow
    assert not went_fast or fast[0] == 200  # a fault is the usual way's, run again
    if case == "a parameter naming its parent":
        assert fast[0] == 200  # the usual way takes it too (its parent is the one it is in)
    elif user == "member" or case not in ROOT_MAY:
        assert fast[0] != 200


def test_a_fault_in_the_fast_path_leaves_nothing_behind(
    sides: Send,
) -> None:
    fast, _, _ = sides("root", lambda ids: [_file("a", ids["a"], parameters=[
        _parameter(ids["type"])]), _file("a", ids["a"])])
    assert fast[1]["code"] == "OBJECT_ALREADY_EXISTS"
    assert fast[1]["offset"] == 1
    sides("root", lambda ids: [])  # the rows compared again: none on either side


def test_the_common_shape_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        side = RestSide(cat)
        written = cat.service.store._written

        def refused(*args: Any, **kwargs: Any) -> Any:
            raise AssertionError("the usual way was taken")

        monkeypatch.setattr(rest, "write", refused)
        monkeypatch.setattr(rest_write, "write", refused)
        monkeypatch.setattr(Store, "create", refused)
        for user in ("root", "member"):
            status, ids = side.write(user, common(side.ids, prefix=user))
            assert status == 200 and len(ids) == 20
            assert ids == list(range(ids[0], ids[0] + 20))
        assert cat.service.store._written == written + 50  # and their 10 parameters
        status, ids = side.write("root", OTHER_SHAPES["Datasets with their Datafiles"](side.ids))
        assert status == 200 and len(ids) == 2


def test_a_write_is_decoded_with_the_collector_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """json.loads of 10,000 objects took twice as long with the collector walking them."""
    seen: list[bool] = []
    decode = rest.RestEndpoint._json

    def watched(text: str, offset: int = -1) -> Any:
        seen.append(gc.isenabled())
        return decode(text, offset)

    monkeypatch.setattr(rest.RestEndpoint, "_json", staticmethod(watched))
    with LocalCatalogue(ServeConfig()) as cat:
        side = RestSide(cat)
        assert gc.isenabled()
        status, _ = side.write("root", common(side.ids))
        assert status == 200 and seen == [False]
        assert gc.isenabled()


def test_each_front_holds_the_collector_once_over_its_create_many(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One hold covers a request's decoding, the fast path and the usual way (mock/gc_pause.py):
    nothing below the front holds the collector again, whichever way the request goes."""
    held: list[tuple[str, bool, int]] = []

    def watched(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            held.append((name, gc.isenabled(), gc_pause._holders))
            return real(*args)
        return call

    with LocalCatalogue(ServeConfig()) as cat:
        side = RestSide(cat)
        monkeypatch.setattr(create_fast, "store", watched("fast", create_fast.store))
        monkeypatch.setattr(rest, "write", watched("rest usual", rest.write))
        monkeypatch.setattr(Store, "create_many", watched("soap usual", Store.create_many))
        assert side.write("root", common(side.ids))[0] == 200  # the fast path
        update = [{"Dataset": {"id": side.ids["a"], "description": "x"}}]
        assert side.write("root", update) == (200, [])  # an update: the usual way
        assert side.create_many("root", side.fill(soap_file("s1"))).startswith(b"200 ")
        # a Datafile of the second Dataset, which the member may not create: the usual way
        assert side.create_many("member", side.fill(soap_file("s2", "{1}"))).startswith(b"500 ")
    assert held == [("fast", False, 1), ("rest usual", False, 1), ("fast", False, 1),
                    ("fast", False, 1), ("soap usual", False, 1)]
    assert gc.isenabled() and gc_pause._holders == 0
