"""createMany's fast path (mock/create_fast.py) against the usual way, on the same requests.

Each request goes to two fresh catalogues built alike, one with the fast path and one without
(its hook made to decline); the answers (ids, or the fault with its type, message and offset)
and the rows stored must be the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.icat.soapxml import ICAT_NS, SOAP_ENV_NS
from igestbench.mock import create_fast_xml, soap
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.store import Store

ENVELOPE = (
    f'<S:Envelope xmlns:S="{SOAP_ENV_NS}" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    f'xmlns:tns="{ICAT_NS}"><S:Body><tns:createMany><sessionId>{{sid}}</sessionId>{{beans}}'
    "</tns:createMany></S:Body></S:Envelope>"
)


def _ref(entity: str, obj_id: int) -> Bean:
    return Bean(entity, {"id": obj_id})


class Side:
    """One catalogue with two Datasets, a root and a member session (the member may read
    everything and create Datafiles in the first Dataset only)."""

    def __init__(self, cat: LocalCatalogue) -> None:
        self.cat = cat
        self.endpoint = soap.SoapEndpoint(cat.service, cat.config.max_elements)
        service = cat.service
        root = service.login("simple", {"username": "root", "password": "root"})
        fac = service.create(root, Bean("Facility", {"name": "F"}))
        it = service.create(root, Bean("InvestigationType",
                                       {"name": "x", "facility": _ref("Facility", fac)}))
        dst = service.create(root, Bean("DatasetType",
                                        {"name": "raw", "facility": _ref("Facility", fac)}))
        inv = service.create(root, Bean("Investigation", {
            "name": "inv", "visitId": "1", "title": "t", "facility": _ref("Facility", fac),
            "type": _ref("InvestigationType", it)}))
        self.parameter_type = service.create(root, Bean("ParameterType", {
            "name": "temperature", "units": "K", "valueType": "NUMERIC",
            "applicableToDatafile": True, "facility": _ref("Facility", fac)}))
        self.collection = service.create(root, Bean("DataCollection", {}))
        self.datasets = [
            service.create(root, Bean("Dataset", {
                "name": n, "type": _ref("DatasetType", dst),
                "investigation": _ref("Investigation", inv)}))
            for n in ("a", "b")
        ]
        service.create_many(root, [Bean("Rule", {"what": n, "crudFlags": "R"})
                                   for n in service.get_entity_names()])
        service.create(root, Bean("Rule", {
            "crudFlags": "C",
            "what": f"SELECT f FROM Datafile f WHERE f.dataset.id = {self.datasets[0]}"}))
        self.sids = {"root": root,
                     "member": service.login("simple", {"username": "reader",
                                                        "password": "reader"})}

    def create_many(self, user: str, beans: str) -> bytes:
        body = ENVELOPE.format(sid=self.sids[user], beans=beans).encode()
        status, answer = self.endpoint.handle(body)
        return f"{status} ".encode() + answer

    def fill(self, beans: str) -> str:
        """``beans`` with {0} and {1} the ids of the Datasets, {2} the ParameterType's, {3}
        the DataCollection's."""
        return beans.format(*self.datasets, self.parameter_type, self.collection)

    def rows(self) -> list[tuple[Any, ...]]:
        conn = self.cat.service.store.conn
        return [row for name in ("Dataset", "Datafile", "DatafileParameter",
                                 "DataCollectionDatafile")
                for row in conn.execute(f"SELECT * FROM {name} ORDER BY id").fetchall()]


@pytest.fixture()
def sides(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, str], tuple[bytes, bytes]]]:
    """Send one createMany to a catalogue with the fast path and one without; both answers."""
    with LocalCatalogue(ServeConfig()) as a, LocalCatalogue(ServeConfig()) as b:
        fast, slow = Side(a), Side(b)
        real = create_fast_xml.create_many_xml

        def send(user: str, beans: str) -> tuple[bytes, bytes]:
            fast_answer = fast.create_many(user, fast.fill(beans))
            monkeypatch.setattr(soap, "create_many_xml", lambda *args: None)
            try:
                slow_answer = slow.create_many(user, slow.fill(beans))
            finally:
                monkeypatch.setattr(soap, "create_many_xml", real)
            assert _without_times(fast.rows()) == _without_times(slow.rows())
            return fast_answer, slow_answer

        yield send


def _without_times(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    # createTime, modTime: the clock of each call (columns 2 and 4); one per call on both sides
    for row in rows:
        assert row[2] == row[4]
    return [row[:2] + row[3:4] + row[5:] for row in rows]


def _file(name: str, dataset: str = "{0}", extra: str = "") -> str:
    return (f'<beans xsi:type="tns:datafile"><name>{name}</name>'
            f"<dataset><id>{dataset}</id></dataset>{extra}</beans>")


#: a parameter as the scale part sends it: its type as sent says it applies to Datafiles
PARAMETER = ("<parameters><type><id>{2}</id><name>temperature</name><units>K</units>"
             "<valueType>NUMERIC</valueType><applicableToDatafile>true</applicableToDatafile>"
             "</type><numericValue>{n}</numericValue></parameters>")

COMMON = "".join(
    _file(f"f{i}", extra=f"<fileSize>{i * 1000}</fileSize><location>/d/f{i}</location>"
          "<checksum>abc</checksum><datafileCreateTime>2026-11-26T10:00:00Z"
          "</datafileCreateTime>" + "<fileSize/>" * (i == 3)
          + "<fileSize> </fileSize><description/>" * (i == 5)
          + PARAMETER.replace("{n}", str(i)) * (i % 4 == 0))
    for i in range(20)
)


@pytest.mark.parametrize("user", ["root", "member"])
def test_the_common_shape_stores_the_same_rows_and_ids(
    sides: Callable[[str, str], tuple[bytes, bytes]], user: str
) -> None:
    fast, slow = sides(user, COMMON)
    assert fast.startswith(b"200 ") and fast.count(b"<return>") == 20
    assert fast == slow


#: contained children of two relations (the store's usual way for them), or naming their parent
OTHER_SHAPES = {
    "two relations": _file("a", extra=PARAMETER.replace("{n}", "1") + "<dataCollectionDatafiles>"
                           "<dataCollection><id>{3}</id></dataCollection>"
                           "</dataCollectionDatafiles>") + _file("b"),
    "whole objects as references": "".join(
        f'<beans xsi:type="tns:datafile"><name>w{i}</name><dataset><id>{{0}}</id><name>a</name>'
        "<startDate>2026-01-01T00:00:00Z</startDate><type><id>1</id></type></dataset></beans>"
        for i in range(3)),
    "child names its parent": _file("a", extra=PARAMETER.replace("{n}", "1").replace(
        "<numericValue>", "<datafile><id>1</id></datafile><numericValue>")),
}


@pytest.mark.parametrize("case", sorted(OTHER_SHAPES))
def test_other_shapes_store_the_same(
    sides: Callable[[str, str], tuple[bytes, bytes]], case: str
) -> None:
    fast, slow = sides("member", OTHER_SHAPES[case])
    assert fast.startswith(b"200 ")
    assert fast == slow


FAULTS = {
    "bad type": _file("a") + _file("b", extra="<fileSize>big</fileSize>"),
    "long out of range": _file("a") + _file("b", extra=f"<fileSize>{2**63}</fileSize>"),
    "string too long": _file("a") + _file("b" * 256),
    "bad date": _file("a", extra="<datafileModTime>yesterday</datafileModTime>"),
    "missing required": _file("a") + '<beans xsi:type="tns:datafile"><location>x</location>'
                        "<dataset><id>{0}</id></dataset></beans>",
    "missing reference": _file("a") + '<beans xsi:type="tns:datafile"><name>b</name></beans>',
    "duplicate in the batch": _file("a") + _file("b") + _file("a"),
    "duplicate in the table": _file("t") + _file("t", dataset="{1}"),
    "reference to nothing": _file("a") + _file("b", dataset="999999"),
    "reference without id": _file("a") + '<beans xsi:type="tns:datafile"><name>b</name>'
                            "<dataset><name>x</name></dataset></beans>",
    "no create right": _file("a") + _file("b", dataset="{1}"),
"parameter not applicable": _file("a") + _file("b", extra=PARAMETER.replace(
        "true</applicable", "false</applicable").replace("{n}", "1")),
    "parameter without value type": _file("a", extra=PARAMETER.replace("{n}", "x")),
    "two parameters of one type": _file("a", extra=PARAMETER.replace("{n}", "1") * 2),
    "parameter type by id only": _file("a", extra="<parameters><type><id>{2}</id></type>"
                                                  "<numericValue>1</numericValue></parameters>"),
    "parameter type missing": _file("a", extra="<parameters><numericValue>1</numericValue>"
                                               "</parameters>"),
    "parameter type not found": _file("a", extra=PARAMETER.replace("{n}", "1").replace(
        "<id>{2}</id>", "<id>999999</id>")),
    "a reference holding a bad value": _file("a") + _file(
        "b", dataset="{0}</id><startDate>yesterday</startDate><id>{0}"),
    "an id": _file("a", extra="<id>5</id>"),
    "unknown element": _file("a", extra="<colour>red</colour>"),
    "nil": _file("a", extra='<location xsi:nil="true"/>'),
    "mixed types": _file("a") + '<beans xsi:type="tns:facility"><name>G</name></beans>',
    "nested children": '<beans xsi:type="tns:dataset"><name>n</name><type><id>1</id></type>'
                       '<investigation><id>1</id></investigation><datafiles><name>z</name>'
                       "</datafiles></beans>",
}


@pytest.mark.parametrize("user", ["root", "member"])
@pytest.mark.parametrize("case", sorted(FAULTS))
def test_every_fault_is_the_one_of_the_usual_way(
    sides: Callable[[str, str], tuple[bytes, bytes]], user: str, case: str
) -> None:
    beans = FAULTS[case]
    if case == "duplicate in the table":
        sides("root", _file("t", dataset="{1}"))  # the same name already in Dataset b
    fast, slow = sides(user, beans)
    assert fast == slow


def test_a_fault_in_the_fast_path_leaves_nothing_behind(
    sides: Callable[[str, str], tuple[bytes, bytes]],
) -> None:
    fast, _ = sides("root", _file("a") + _file("a"))
    assert b"OBJECT_ALREADY_EXISTS" in fast and b"<offset>1</offset>" in fast
    sides("root", "")  # the rows compared again: none on either side


def test_the_common_shape_takes_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        side = Side(cat)
        written = cat.service.store._written

        def refused(*args: Any, **kwargs: Any) -> list[int]:
            raise AssertionError("the usual way was taken")

        monkeypatch.setattr(Store, "create_many", refused)
        for user in ("root", "member"):
            answer = side.create_many(user, side.fill(COMMON.replace("<name>f", f"<name>{user}")))
            assert answer.startswith(b"200 ") and answer.count(b"<return>") == 20
        assert cat.service.store._written == written + 50  # and their 10 parameters
        for shape in ("two relations", "whole objects as references"):
            answer = side.create_many("root", side.fill(OTHER_SHAPES[shape]))
            assert answer.startswith(b"200 ") and answer.count(b"<return>") >= 2
