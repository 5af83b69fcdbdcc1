"""The quicker ways createMany is encoded, decoded and stored (issue 21.6) give what the plain
ways gave: the same bytes, the same Beans, the same faults and defaults."""

from __future__ import annotations

import gc
import threading

import pytest
from lxml import etree

from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatNoSuchObject, IcatValidation
from igestbench.icat.schema import get_profile
from igestbench.icat.soapxml import XSI_NS, DecodeError, decode_bean, encode_bean
from igestbench.mock.gc_pause import collector_held
from igestbench.mock.store import Store

PROFILE = get_profile("6.2")


def element(xml: str) -> etree._Element:
    return etree.fromstring(
        f'<beans xmlns:xsi="{XSI_NS}" xmlns:tns="http://icatproject.org" '
        f'xsi:type="tns:datafile">{xml}</beans>'
    )


def test_a_bean_is_encoded_in_wire_order_whatever_the_order_of_its_values() -> None:
    ptype = Bean("ParameterType", {"applicableToDatafile": True, "name": "T & p", "id": 5})
    a = Bean("Datafile", {"name": "a<b", "dataset": Bean("Dataset", {"id": 3}), "fileSize": 7,
                          "parameters": [Bean("DatafileParameter",
                                              {"type": ptype, "numericValue": 1.5})],
                          "description": None})
    b = Bean("Datafile", {"parameters": a["parameters"], "fileSize": 7, "description": None,
                          "dataset": Bean("Dataset", {"id": 3}), "name": "a<b"})
    expected = (
        '<beans xsi:type="tns:datafile"><dataset><id>3</id></dataset><fileSize>7</fileSize>'
        "<name>a&lt;b</name><parameters><numericValue>1.5</numericValue><type>"
        "<id>5</id><applicableToDatafile>true</applicableToDatafile><name>T &amp; p</name>"
        "</type></parameters></beans>"
    )
    assert encode_bean(PROFILE, a, "beans") == encode_bean(PROFILE, b, "beans") == expected


def test_whole_numbers_strings_and_nulls_decode_as_before() -> None:
    bean = decode_bean(PROFILE, element(
        "<fileSize> 12 </fileSize><name>  spaced  </name><location/><doi xsi:nil='true'/>"
        "<dataset><id>+4</id></dataset><tns:description>q</tns:description><unknown>1</unknown>"
    ))  # fmt: skip
    assert bean.values == {"fileSize": 12, "name": "  spaced  ", "location": "", "doi": None,
                           "dataset": Bean("Dataset", {"id": 4}), "description": "q"}
    assert decode_bean(PROFILE, element("<fileSize> </fileSize>")).values == {"fileSize": None}
    for text in ("1.5", "x", "1 2"):
        with pytest.raises(DecodeError) as caught:
            decode_bean(PROFILE, element(f"<fileSize>{text}</fileSize>"))
        assert str(caught.value) == f"Datafile.fileSize: {text!r} is not a valid Long"


def test_a_store_s_defaults_and_refusals_are_those_of_icat(tmp_path: object) -> None:
    store = Store(PROFILE)
    try:
        fac = store.create("u", Bean("Facility", {"name": "f"}))
        itype = store.create("u", Bean("InvestigationType", {
            "name": "t", "facility": Bean("Facility", {"id": fac})}))  # fmt: skip
        inv = store.create("u", Bean("Investigation", {
            "name": "i", "visitId": "v", "title": "t", "facility": Bean("Facility", {"id": fac}),
            "type": Bean("InvestigationType", {"id": itype})}))  # fmt: skip
        dtype = store.create("u", Bean("DatasetType", {
            "name": "t", "facility": Bean("Facility", {"id": fac})}))  # fmt: skip
        ds = store.create("u", Bean("Dataset", {
            "name": "d", "investigation": Bean("Investigation", {"id": inv}),
            "type": Bean("DatasetType", {"id": dtype})}))  # fmt: skip
        (complete,) = store.conn.execute('SELECT "complete" FROM "Dataset" WHERE id = ?',
                                         (ds,)).fetchone()
        assert complete == 0  # a Java primitive boolean: absent is false
        ref = Bean("Dataset", {"id": ds})
        with pytest.raises(IcatValidation, match="Datafile: name cannot be null") as caught:
            store.create_many("u", [Bean("Datafile", {"name": "a", "dataset": ref}),
                                    Bean("Datafile", {"dataset": ref})])
        assert caught.value.offset == 1
        with pytest.raises(IcatValidation, match="dataset must refer to an existing Dataset"):
            store.create("u", Bean("Datafile", {"name": "b", "dataset": Bean("Dataset", {})}))
        with pytest.raises(IcatNoSuchObject, match=r"Dataset\[id:999\] not found"):
            store.create("u", Bean("Datafile", {"name": "b", "dataset": Bean("Dataset",
                                                                              {"id": 999})}))
        (fs,) = store.conn.execute('SELECT "fileSize" FROM "Datafile" WHERE "name" = ?',
                                   ("a",)).fetchone() or (None,)
        assert fs is None  # the failed createMany left nothing
    finally:
        store.close()


def test_the_collector_is_held_off_while_any_holder_runs_and_restored_after() -> None:
    assert gc.isenabled()
    entered, leave = threading.Event(), threading.Event()

    def hold() -> None:
        with collector_held():
            entered.set()
            leave.wait(10)

    other = threading.Thread(target=hold)
    other.start()
    entered.wait(10)
    with collector_held():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other holder still runs
    leave.set()
    other.join(10)
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_held():
            pass
        assert not gc.isenabled()  # a collector disabled before stays so
    finally:
        gc.enable()
