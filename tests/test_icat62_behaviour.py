"""The local catalogue does what a real ICAT 6.2.0 was seen to do (reference notes, appendix).

Each case is checked on the wire (raw SOAP, the fault's code, string and detail as a real server
sends them) and, where python-icat maps it, through an unmodified python-icat client. The real
answers compared with are in fixtures/icat-6.2 (recorded; see its README).
"""

from __future__ import annotations

import warnings
from typing import Any

import icat
import icat.exception
import pytest
from lxml import etree

from igestbench.config import ServeConfig
from igestbench.mock.auth import Account
from igestbench.mock.catalogue import LocalCatalogue
from tests.soap_helpers import ICAT_62, call, fault, login, returns

DATAFILE = "<query>SELECT d FROM Datafile d</query>"


def python_icat(cat: LocalCatalogue, user: str = "root") -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # suds' own
        client = icat.Client(cat.wsdl_url)
    client.login("simple", {"username": user, "password": user})
    return client


def create(url: str, sid: str, xml_type: str, inner: str) -> int:
    r = call(
        url, "create", f'<sessionId>{sid}</sessionId><bean xsi:type="tns:{xml_type}">{inner}</bean>'
    )
    assert r.status_code == 200, r.text
    return int(returns(r)[0].text or "")


def small_hierarchy(url: str, sid: str) -> dict[str, int]:
    """Facility → types → Investigation → Dataset → Datafile, created as root."""
    fac = create(url, sid, "facility", "<name>F</name>")
    f = f"<facility><id>{fac}</id></facility>"
    it = create(url, sid, "investigationType", f"{f}<name>exp</name>")
    dt = create(url, sid, "datasetType", f"{f}<name>raw</name>")
    inv = create(
        url, sid, "investigation",
        f"{f}<name>inv</name><title>t</title><type><id>{it}</id></type><visitId>1</visitId>",
    )  # fmt: skip
    ds = create(
        url, sid, "dataset",
        f"<investigation><id>{inv}</id></investigation><name>ds</name><type><id>{dt}</id></type>",
    )  # fmt: skip
    df = create(url, sid, "datafile", f"<dataset><id>{ds}</id></dataset><name>a.nxs</name>")
    return {"facility": fac, "dataset": ds, "datafile": df}


# --- a new database has no rules ---------------------------------------------------------------


def as_user(url: str, sid: str, op: str, inner: str) -> Any:
    """The call's ``return`` texts, or the fault response when it failed."""
    r = call(url, op, f"<sessionId>{sid}</sessionId>{inner}")
    return [e.text for e in returns(r)] if r.status_code == 200 else r


def bean(xml_type: str, obj_id: int) -> str:
    return f'<bean xsi:type="tns:{xml_type}"><id>{obj_id}</id></bean>'


def test_a_new_database_lets_an_ordinary_user_see_nothing(fresh_catalogue: LocalCatalogue) -> None:
    url = fresh_catalogue.service_url
    df = small_hierarchy(url, login(url))["datafile"]
    sid = login(url, "reader")
    assert as_user(url, sid, "search", DATAFILE) == []
    assert as_user(url, sid, "search", "<query>SELECT COUNT(d) FROM Datafile d</query>") == ["0"]
    r = as_user(url, sid, "get", f"<query>Datafile</query><primaryKey>{df}</primaryKey>")
    message = "READ access to this Datafile is not allowed."
    assert fault(r) == ("S:Server", message, "INSUFFICIENT_PRIVILEGES", -1)
    read = "<accessType>READ</accessType>"
    assert as_user(url, sid, "isAccessAllowed", bean("datafile", df) + read) == ["false"]
    client = python_icat(fresh_catalogue, "reader")
    try:
        assert client.search("SELECT d FROM Datafile d") == []
        with pytest.raises(icat.exception.ICATPrivilegesError):
            client.get("Datafile", df)
    finally:
        client.cleanup()


EXAMPLE_DATAFILES = (
    "<query>SELECT COUNT(d) FROM Datafile d JOIN d.dataset ds JOIN ds.investigation i "
    "JOIN i.facility f WHERE f.name = 'EXAMPLE'</query>"
)


def test_example_data_comes_with_rules_to_read_it() -> None:
    with LocalCatalogue(ServeConfig(example_data=True)) as cat:
        url = cat.service_url
        sid = login(url, "reader")
        assert as_user(url, sid, "search", EXAMPLE_DATAFILES) == ["6"]
        query = "<query>SELECT p.numericValue FROM DatasetParameter p</query>"
        assert sorted(as_user(url, sid, "search", query)) == ["293.0", "77.0"]
        # reading is all the example rules allow
        (facility,) = as_user(url, sid, "search", "<query>Facility.id</query>")
        r = as_user(url, sid, "delete", bean("facility", int(facility)))
        assert fault(r)[2] == "INSUFFICIENT_PRIVILEGES"


def test_the_4_3_profile_starts_with_root_users_only(catalogue_43: LocalCatalogue) -> None:
    url = catalogue_43.service_url
    small_hierarchy(url, login(url, "ingest"))  # root users get CRUD through rootUsers
    sid = login(url, "reader")
    assert returns(call(url, "search", f"<sessionId>{sid}</sessionId>{DATAFILE}")) == []
    with LocalCatalogue(ServeConfig(profile="4.3", example_data=True)) as cat:
        sid = login(cat.service_url, "reader")
        found = returns(call(cat.service_url, "search", f"<sessionId>{sid}</sessionId>{DATAFILE}"))
        assert len(found) == 6


# --- getEntityInfo -------------------------------------------------------------------------------


def entity_info_parts(info: etree._Element) -> tuple[list[Any], dict[str, list[tuple[str, str]]]]:
    """(the children of ``return`` that are not fields, each field's children by field name)."""
    head = [(e.tag, e.text, [(c.tag, c.text) for c in e]) for e in info if e.tag != "fields"]
    fields = {
        f.findtext("name") or "": [(c.tag, c.text or "") for c in f] for f in info.findall("fields")
    }
    return head, fields


def test_entity_info_of_facility_is_the_real_answer_but_for_field_order(
    catalogue: LocalCatalogue,
) -> None:
    recorded = etree.parse(str(ICAT_62 / "responses" / "getEntityInfo-Facility.xml"))
    (real,) = recorded.getroot().iter("return")
    (ours,) = returns(call(catalogue.service_url, "getEntityInfo", "<beanName>Facility</beanName>"))
    real_head, real_fields = entity_info_parts(real)
    our_head, our_fields = entity_info_parts(ours)
    assert our_head == real_head
    assert sorted(our_fields) == sorted(real_fields)
    for name, children in real_fields.items():
        assert our_fields[name] == children, name


@pytest.mark.parametrize(
    "name", ["Dataset", "Parameter", "Rule", "DatasetParameter", "EntityBaseBean"]
)
def test_entity_info_base_fields_and_comments(catalogue: LocalCatalogue, name: str) -> None:
    (info,) = returns(call(catalogue.service_url, "getEntityInfo", f"<beanName>{name}</beanName>"))
    assert all(c.text for c in info.iter("comment"))  # never an empty comment element
    fields = {f.findtext("name"): f for f in info.findall("fields")}
    for base in ("id", "createId", "createTime", "modId", "modTime"):
        assert [c.tag for c in fields[base]] == ["name", "notNullable", "relType", "type"], base
        assert fields[base].findtext("notNullable") == "false"
    if name == "EntityBaseBean":  # as icat.server 6.2 answers it: nothing but those five
        assert [c.tag for c in info] == ["fields"] * 5


def test_entity_base_bean_of_4_3_too(catalogue_43: LocalCatalogue) -> None:
    # ICAT 4.3 looked the name up as a class of its entity package: the base class is one
    r = call(catalogue_43.service_url, "getEntityInfo", "<beanName>EntityBaseBean</beanName>")
    (info,) = returns(r)
    assert sorted(f.findtext("name") or "" for f in info) == [
        "createId", "createTime", "id", "modId", "modTime",
    ]  # fmt: skip


# --- faults --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("op", "offset"), [("update", -1), ("delete", 0)])
def test_a_bean_without_id_has_a_null_primary_key(
    catalogue: LocalCatalogue, op: str, offset: int
) -> None:
    url = catalogue.service_url
    sid = login(url)
    r = call(
        url, op, f'<sessionId>{sid}</sessionId><bean xsi:type="tns:dataset"><name>x</name></bean>'
    )
    assert fault(r) == ("S:Server", "Dataset has null primary key.", "NO_SUCH_OBJECT_FOUND", offset)
    client = python_icat(catalogue)
    try:
        bean = client.new("Dataset", name="x", complete=False)
        with pytest.raises(icat.exception.ICATNoObjectError, match="Dataset has null primary key"):
            getattr(client, op)(bean)
    finally:
        client.cleanup()


def test_an_unknown_operation_is_a_null_pointer(catalogue: LocalCatalogue) -> None:
    r = call(catalogue.service_url, "dropTables", "<sessionId>x</sessionId>")
    assert fault(r) == ("S:Server", "java.lang.NullPointerException", None, None)
    # the Metro of ICAT 4.3's days said what it could not find, as a client fault
    with LocalCatalogue(ServeConfig(profile="4.3")) as cat:
        code, text, ftype, _ = fault(call(cat.service_url, "getVersion"))
    assert (code, ftype) == ("S:Client", None) and "getVersion" in text


def test_concise_include_after_a_condition_is_a_bad_parameter(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    sid = login(url)
    query = "<query>Dataset [name='x'] INCLUDE Datafile</query>"
    code, _, ftype, offset = fault(call(url, "search", f"<sessionId>{sid}</sessionId>{query}"))
    assert (code, ftype, offset) == ("S:Server", "BAD_PARAMETER", -1)
    r = call(
        url,
        "search",
        f"<sessionId>{sid}</sessionId><query>Dataset INCLUDE Datafile [name='x']</query>",
    )
    assert r.status_code == 200
    client = python_icat(catalogue)
    try:
        with pytest.raises(icat.exception.ICATParameterError):
            client.search("Dataset [name='x'] INCLUDE Datafile")
    finally:
        client.cleanup()


def test_a_parameter_type_is_judged_as_sent(fresh_catalogue: LocalCatalogue) -> None:
    url = fresh_catalogue.service_url
    sid = login(url)
    ids = small_hierarchy(url, sid)
    facility = f"<facility><id>{ids['facility']}</id></facility>"
    pt = create(
        url, sid, "parameterType",
        f"<applicableToDataset>true</applicableToDataset>{facility}"
        "<name>temp</name><units>K</units><valueType>NUMERIC</valueType>",
    )  # fmt: skip
    parent = f"<dataset><id>{ids['dataset']}</id></dataset><numericValue>1.5</numericValue>"
    id_only = f'<bean xsi:type="tns:datasetParameter">{parent}<type><id>{pt}</id></type></bean>'
    message = "Parameter of type null is not applicable to a Dataset"
    assert fault(as_user(url, sid, "create", id_only)) == ("S:Server", message, "VALIDATION", -1)
    named = id_only.replace("</id>", "</id><name>temp</name>")
    message = "Parameter of type temp is not applicable to a Dataset"
    assert fault(as_user(url, sid, "create", named))[1:3] == (message, "VALIDATION")
    many = "<beans" + id_only[len("<bean") : -len("</bean>")] + "</beans>"
    assert fault(as_user(url, sid, "createMany", many * 2))[2:] == ("VALIDATION", 0)
    client = python_icat(fresh_catalogue)
    try:
        ptype = client.get("ParameterType", pt)  # as read: the flag travels with it
        ds = client.get("Dataset", ids["dataset"])
        client.new("DatasetParameter", dataset=ds, type=ptype, numericValue=2.5).create()
        inv = client.search("Investigation")[0]
        with pytest.raises(icat.exception.ICATValidationError, match="to an Investigation"):
            client.new(
                "InvestigationParameter", investigation=inv, type=ptype, numericValue=1.0
            ).create()
    finally:
        client.cleanup()


# --- authenticators and properties -------------------------------------------------------------


def test_authenticator_info_has_configured_friendly_names_only() -> None:
    accounts = (Account("simple", "root", "root", root=True), Account("db", "ann", "pw"))
    with LocalCatalogue(ServeConfig(accounts=accounts)) as cat:
        infos = returns(call(cat.service_url, "getAuthenticatorInfo"))
        # as a real ICAT 6.2.0 without authn.<m>.friendly answers (no element at all:
        # fixtures/icat-6.2/exchanges/soap-getAuthenticatorInfo.json)
        assert [[c.tag for c in i] for i in infos] == [
            ["admin", "keys", "keys", "mnemonic"],
            ["admin", "keys", "keys", "mnemonic"],
        ]
        client = python_icat(cat)
        try:
            assert [getattr(a, "friendly", None) for a in client.getAuthenticatorInfo()] == [
                None,
                None,
            ]
        finally:
            client.cleanup()
    with LocalCatalogue(ServeConfig(accounts=accounts, friendly_names=(("db", "Db"),))) as cat:
        infos = returns(call(cat.service_url, "getAuthenticatorInfo"))
        assert [[c.tag for c in i] for i in infos] == [
            ["admin", "keys", "keys", "mnemonic"],  # no authn.simple.friendly: no element
            ["admin", "friendly", "keys", "keys", "mnemonic"],
        ]
    named = (("simple", "Local accounts"), ("db", "Database"))
    with LocalCatalogue(ServeConfig(accounts=accounts, friendly_names=named)) as cat:
        infos = returns(call(cat.service_url, "getAuthenticatorInfo"))
        assert [i.findtext("friendly") for i in infos] == ["Local accounts", "Database"]


def test_properties_are_those_a_6_2_server_lists(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    props = [
        e.text for e in returns(call(url, "getProperties", f"<sessionId>{login(url)}</sessionId>"))
    ]
    assert props == [
        "authn.list simple",
        f"authn.simple.url = {catalogue.url}",
        "lifetimeMinutes 120",
        "rootUserNames simple/root simple/ingest",
        "search.entitiesToIndex [ParameterType, Datafile, User, Dataset, InvestigationType, "
        "Sample, InvestigationInstrument, DatasetType, InstrumentScientist, SampleParameter, "
        "DatafileParameter, DatasetParameter, InvestigationUser, Instrument, Investigation, "
        "DatasetTechnique, Facility, DatafileFormat, SampleType, InvestigationParameter]",
        "maxEntities 10000",
        "importCacheSize 50",
        "exportCacheSize 50",
        "maxIdsInQuery 500",
        "jms.topicConnectionFactory java:comp/DefaultJMSConnectionFactory",
    ]
    r = call(url, "getProperties", f"<sessionId>{login(url, 'reader')}</sessionId>")
    assert fault(r) == ("S:Server", "user must be in rootUserNames", "INSUFFICIENT_PRIVILEGES", -1)


def test_properties_of_the_4_3_profile(catalogue_43: LocalCatalogue) -> None:
    url = catalogue_43.service_url
    props = [
        e.text or ""
        for e in returns(call(url, "getProperties", f"<sessionId>{login(url)}</sessionId>"))
    ]
    assert props == [
        "authn.list simple",
        "lifetimeMinutes 120",
        "rootUserNames simple/root simple/ingest",
        "notification.list ",
        "log.list ",
    ]
