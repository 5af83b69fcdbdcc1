"""The rendered WSDL/XSD: structurally equal to what a real ICAT 6.2.0 serves, and usable offline.

The structural comparison reads the reference documents fetched from a real server (recorded in
``fixtures/icat-6.2``) and compares meaning, not bytes: which global
elements, complexTypes, enumerations, messages and operations exist, and each complexType's
sequence in order with its occurrence. Every difference is listed in the assertion message.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pytest
import zeep
from lxml import etree
from suds.client import Client as SudsClient
from suds.transport import Transport as SudsTransport

from igestbench.icat import entity_tables
from igestbench.icat.operations import complex_types, operation, operations_for, simple_types
from igestbench.icat.schema import PROFILE_NAMES, Profile, xml_name
from igestbench.icat.wsdl import render_wsdl, render_xsd
from tests.soap_helpers import ICAT_62

REFERENCE = ICAT_62
REFERENCE_URL = "https://localhost:8181/ICATService/ICAT"
SERVICE_URL = "http://127.0.0.1:8080/ICATService/ICAT"

TNS = "http://icatproject.org"
XS = "{http://www.w3.org/2001/XMLSchema}"
WSDL = "{http://schemas.xmlsoap.org/wsdl/}"
SOAP = "{http://schemas.xmlsoap.org/wsdl/soap/}"
XS_BUILTINS = {
    "xs:string",
    "xs:long",
    "xs:int",
    "xs:double",
    "xs:boolean",
    "xs:dateTime",
    "xs:anyType",
}

T = TypeVar("T")

# Canonical prefixes, so that a document binding other prefixes (xsd:, ns2:) compares equal.
_PREFIXES = {
    TNS: "tns",
    XS[1:-1]: "xs",
    WSDL[1:-1]: "wsdl",
    SOAP[1:-1]: "soap",
    "http://www.w3.org/2007/05/addressing/metadata": "wsam",
}
#: Attributes of WSDL and XSD whose values are QNames.
_QNAME_ATTRIBUTES = {"type", "base", "element", "message", "binding"}


def _prefixed(clark: str) -> str:
    """A tag or attribute name in {namespace}local form, with the canonical prefix instead."""
    qname = etree.QName(clark)
    return f"{_PREFIXES[qname.namespace]}:{qname.localname}" if qname.namespace else clark


def _qname(node: etree._Element, attribute: str) -> str | None:
    """A QName-valued attribute, its prefix resolved and replaced by the canonical one."""
    value = node.get(attribute)
    if value is None or ":" not in value:
        return value
    prefix, local = value.split(":", 1)
    namespace = node.nsmap.get(prefix)
    assert namespace is not None, f"{attribute}={value!r}: prefix {prefix!r} is not bound"
    return f"{_PREFIXES.get(namespace, namespace)}:{local}"


# --- structure of an XSD -------------------------------------------------------------------------


@dataclass(frozen=True)
class Decl:
    """One element declaration of a sequence, with XSD's defaults made explicit."""

    name: str
    type: str | None
    min_occurs: str
    max_occurs: str
    nillable: str
    children: tuple[Decl, ...]

    def __str__(self) -> str:
        nested = f" {{{', '.join(map(str, self.children))}}}" if self.children else ""
        return (
            f"{self.name}: type={self.type} minOccurs={self.min_occurs} "
            f"maxOccurs={self.max_occurs} nillable={self.nillable}{nested}"
        )


@dataclass(frozen=True)
class ComplexType:
    abstract: bool
    base: str | None
    elements: tuple[Decl, ...]


def _sequence(parent: etree._Element) -> tuple[Decl, ...]:
    return tuple(_decl(e) for e in parent.iterfind(f"{XS}sequence/{XS}element"))


def _decl(element: etree._Element) -> Decl:
    anonymous = element.find(f"{XS}complexType")
    return Decl(
        name=element.get("name", ""),
        type=_qname(element, "type"),
        min_occurs=element.get("minOccurs", "1"),
        max_occurs=element.get("maxOccurs", "1"),
        nillable=element.get("nillable", "false"),
        children=_sequence(anonymous) if anonymous is not None else (),
    )


def _complex_types(schema: etree._Element) -> dict[str, ComplexType]:
    types = {}
    for node in schema.iterfind(f"{XS}complexType"):
        extension = node.find(f"{XS}complexContent/{XS}extension")
        body = node if extension is None else extension
        types[node.get("name", "")] = ComplexType(
            abstract=node.get("abstract") == "true",
            base=None if extension is None else _qname(extension, "base"),
            elements=_sequence(body),
        )
    return types


def _simple_types(schema: etree._Element) -> dict[str, tuple[str | None, tuple[str, ...]]]:
    types = {}
    for node in schema.iterfind(f"{XS}simpleType"):
        restriction = node.find(f"{XS}restriction")
        assert restriction is not None, f"simpleType {node.get('name')} is not a restriction"
        values = tuple(e.get("value", "") for e in restriction.iterfind(f"{XS}enumeration"))
        types[node.get("name", "")] = (_qname(restriction, "base"), values)
    return types


def _global_elements(schema: etree._Element) -> dict[str, str | None]:
    return {e.get("name", ""): _qname(e, "type") for e in schema.iterfind(f"{XS}element")}


# --- structure of a WSDL -------------------------------------------------------------------------


def _flatten(node: etree._Element, path: str = "") -> dict[str, dict[str, str | None]]:
    """Every element below ``node`` by its path (``wsdl:operation[get]``) → its attributes.

    Siblings are told apart by their name attribute, so two documents compare equal whatever
    order they list messages and operations in, as they are equal to a WSDL reader.
    """
    name = node.get("name")
    here = f"{path}/{_prefixed(node.tag)}" + (f"[{name}]" if name else "")
    attributes = {
        _prefixed(key): _qname(node, key) if key in _QNAME_ATTRIBUTES else value
        for key, value in sorted(node.attrib.items())
    }
    flat = {here: attributes}
    for child in node.iterchildren(tag=etree.Element):  # not comments
        below = _flatten(child, here)
        assert not below.keys() & flat.keys(), f"ambiguous paths below {here}"
        flat.update(below)
    return flat


# --- differences ---------------------------------------------------------------------------------


def _diff_maps(
    what: str,
    expected: Mapping[str, T],
    actual: Mapping[str, T],
    compare: Callable[[str, T, T], list[str]] | None = None,
) -> list[str]:
    diffs = [f"missing {what} {n!r}: {expected[n]}" for n in expected if n not in actual]
    diffs += [f"unexpected {what} {n!r}: {actual[n]}" for n in actual if n not in expected]
    for name in expected.keys() & actual.keys():
        if compare is not None:
            diffs += compare(name, expected[name], actual[name])
        elif expected[name] != actual[name]:
            diffs.append(f"{what} {name!r}: expected {expected[name]}, got {actual[name]}")
    return sorted(diffs)


def _diff_sequences(where: str, expected: tuple[Decl, ...], actual: tuple[Decl, ...]) -> list[str]:
    want = {d.name: d for d in expected}
    got = {d.name: d for d in actual}
    diffs = [f"{where}: missing element {want[n]}" for n in want if n not in got]
    diffs += [f"{where}: unexpected element {got[n]}" for n in got if n not in want]
    common_want = [d.name for d in expected if d.name in got]
    common_got = [d.name for d in actual if d.name in want]
    if common_want != common_got:
        diffs.append(f"{where}: element order expected {common_want}, got {common_got}")
    for name in common_want:
        w, g = want[name], got[name]
        if (w.type, w.min_occurs, w.max_occurs, w.nillable) != (
            g.type,
            g.min_occurs,
            g.max_occurs,
            g.nillable,
        ):
            diffs.append(f"{where}: element expected {w}, got {g}")
        diffs += _diff_sequences(f"{where}/{name}", w.children, g.children)
    return diffs


def _diff_complex(name: str, expected: ComplexType, actual: ComplexType) -> list[str]:
    where = f"complexType {name!r}"
    diffs = []
    if expected.abstract != actual.abstract:
        diffs.append(f"{where}: abstract expected {expected.abstract}, got {actual.abstract}")
    if expected.base != actual.base:
        diffs.append(f"{where}: extension base expected {expected.base}, got {actual.base}")
    return diffs + _diff_sequences(where, expected.elements, actual.elements)


def _report(title: str, diffs: list[str]) -> str:
    return f"{title} ({len(diffs)} differences):\n  " + "\n  ".join(diffs)


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference() -> tuple[etree._Element, etree._Element]:
    wsdl, xsd = REFERENCE / "ICATService.wsdl", REFERENCE / "ICATService.xsd1.xsd"
    return etree.parse(str(wsdl)).getroot(), etree.parse(str(xsd)).getroot()


@pytest.fixture(params=PROFILE_NAMES)
def profile(request: pytest.FixtureRequest) -> Profile:
    name: str = request.param
    if name not in entity_tables.PROFILES:
        pytest.skip(f"profile {name} is not defined in igestbench.icat.entity_tables yet")
    return entity_tables.PROFILES[name]


def _parse(document: bytes) -> etree._Element:
    assert document.startswith(b"<?xml version='1.0' encoding='UTF-8'?>")
    return etree.fromstring(document)


# --- (a) the 6.2 documents against the real server's ---------------------------------------------


def test_xsd_matches_real_icat_6_2(reference: tuple[etree._Element, etree._Element]) -> None:
    real = reference[1]
    ours = _parse(render_xsd("6.2"))
    # The schema's own attributes: targetNamespace, version, and no elementFormDefault.
    diffs = _diff_maps("schema attribute", dict(real.attrib), dict(ours.attrib))
    diffs += _diff_maps("global element", _global_elements(real), _global_elements(ours))
    diffs += _diff_maps("complexType", _complex_types(real), _complex_types(ours), _diff_complex)
    diffs += _diff_maps("simpleType", _simple_types(real), _simple_types(ours))
    assert not diffs, _report("rendered 6.2 XSD differs from ICAT 6.2.0's", diffs)


def test_wsdl_matches_real_icat_6_2(reference: tuple[etree._Element, etree._Element]) -> None:
    real = reference[0]
    ours = _parse(render_wsdl("6.2", REFERENCE_URL))
    # Messages and parts, portType operations with their input/output/fault and wsam:Action,
    # binding style/soapAction/use, service and port names, and both URLs.
    diffs = _diff_maps("WSDL element", _flatten(real), _flatten(ours))
    assert not diffs, _report("rendered 6.2 WSDL differs from ICAT 6.2.0's", diffs)


def test_wsdl_carries_the_service_url() -> None:
    wsdl = _parse(render_wsdl("6.2", SERVICE_URL))
    assert [a.get("location") for a in wsdl.iter(f"{SOAP}address")] == [SERVICE_URL]
    imports = [(i.get("namespace"), i.get("schemaLocation")) for i in wsdl.iter(f"{XS}import")]
    assert imports == [(TNS, SERVICE_URL + "?xsd=1")]


# --- (b) every profile: complete, self-consistent, loadable by SOAP libraries --------------------


def test_documents_are_well_formed(profile: Profile) -> None:
    assert _parse(render_wsdl(profile, SERVICE_URL)).tag == f"{WSDL}definitions"
    schema = _parse(render_xsd(profile))
    assert schema.tag == f"{XS}schema"
    assert schema.get("elementFormDefault") is None  # children travel unqualified


def test_every_entity_has_its_complex_type(profile: Profile) -> None:
    schema = _parse(render_xsd(profile))
    types, globals_ = _complex_types(schema), _global_elements(schema)
    for entity in (*profile.entities.values(), *profile.abstract_entities.values()):
        declared = types.get(entity.xml_name)
        assert declared is not None, f"no complexType for {entity.name}"
        base = "tns:" + (xml_name(entity.base) if entity.base else "entityBaseBean")
        assert (declared.abstract, declared.base) == (entity.abstract, base), entity.name
        assert [d.name for d in declared.elements] == [f.name for f in entity.own_fields]
        if entity.root_element:
            assert globals_.get(entity.xml_name) == f"tns:{entity.xml_name}"
    base_fields = [d.name for d in types["entityBaseBean"].elements]
    assert base_fields == list(profile.base_field_order)


def test_every_operation_has_its_wrappers(profile: Profile) -> None:
    schema = _parse(render_xsd(profile))
    types, globals_ = _complex_types(schema), _global_elements(schema)
    ops = operations_for(profile)
    for op in ops:
        for wrapper in (op.name, op.response_name):
            assert globals_.get(wrapper) == f"tns:{wrapper}", f"no global element {wrapper}"
        assert [d.name for d in types[op.name].elements] == [p.name for p in op.params]
        returns = [d.name for d in types[op.response_name].elements]
        assert returns == ([] if op.returns is None else ["return"]), op.name
    wsdl = _parse(render_wsdl(profile, SERVICE_URL))
    for section in ("portType", "binding"):
        declared = {o.get("name") for o in wsdl.iterfind(f"{WSDL}{section}/{WSDL}operation")}
        assert declared == {op.name for op in ops}, section


def test_every_referenced_type_is_defined(profile: Profile) -> None:
    schema = _parse(render_xsd(profile))
    defined = {f"tns:{n}" for n in (*_complex_types(schema), *_simple_types(schema))}
    undefined = sorted(
        f"{node.get('name')}: {attribute}={_qname(node, attribute)}"
        for node in schema.iter()
        for attribute in ("type", "base")
        if node.get(attribute) is not None and _qname(node, attribute) not in defined | XS_BUILTINS
    )
    assert not undefined, f"types used but not defined in the {profile.name} XSD: {undefined}"


def _documents(profile: Profile) -> dict[str, bytes]:
    return {
        SERVICE_URL + "?wsdl": render_wsdl(profile, SERVICE_URL),
        SERVICE_URL + "?xsd=1": render_xsd(profile),
    }


def test_zeep_builds_a_client_offline(profile: Profile) -> None:
    documents = _documents(profile)

    class OfflineTransport(zeep.Transport):
        def load(self, url: str) -> bytes:
            assert url in documents, f"zeep asked for {url}"
            return documents[url]

    client = zeep.Client(SERVICE_URL + "?wsdl", transport=OfflineTransport())
    binding = client.wsdl.services["ICATService"].ports["ICATPort"].binding
    assert set(binding.all()) == {op.name for op in operations_for(profile)}

    # The two shapes every client sends: login's anonymous credentials, an xsi:typed bean.
    entry = {"key": "username", "value": "root"}
    login = client.create_message(
        client.service, "login", plugin="simple", credentials={"entry": [entry]}
    )
    assert login.findtext(".//credentials/entry/key") == "username"
    dataset = client.get_type("{http://icatproject.org}dataset")(name="ds1", complete=False)
    create = client.create_message(client.service, "create", sessionId="sid", bean=dataset)
    bean = create.find(".//bean")
    assert bean is not None
    assert bean.get("{http://www.w3.org/2001/XMLSchema-instance}type", "").endswith(":dataset")


def test_suds_builds_a_client_offline(profile: Profile) -> None:
    documents = _documents(profile)

    class OfflineTransport(SudsTransport):  # type: ignore[misc]
        def open(self, request: Any) -> io.BytesIO:
            assert request.url in documents, f"suds asked for {request.url}"
            return io.BytesIO(documents[request.url])

    client = SudsClient(SERVICE_URL + "?wsdl", transport=OfflineTransport(), cache=None)
    methods = client.wsdl.services[0].ports[0].methods
    assert set(methods) == {op.name for op in operations_for(profile)}
    # What python-icat asks the factory for: the credentials map and every entity type.
    assert hasattr(client.factory.create("credentials"), "entry")
    for entity in profile.entities.values():
        assert client.factory.create(entity.xml_name).__class__.__name__ == entity.xml_name


# --- the operation tables ------------------------------------------------------------------------


def test_operation_tables() -> None:
    assert len(operations_for("6.2")) == 20
    assert len(operations_for("4.3")) == 24
    assert not {"getVersion", "getAuthenticatorInfo"} & {op.name for op in operations_for("4.3")}
    with pytest.raises(KeyError, match="searchText"):
        operation("6.2", "searchText")
    login, search = operation("6.2", "login"), operation("6.2", "search")
    assert not login.needs_session and search.needs_session
    assert search.returns_many and search.returns is not None
    assert search.returns.type == "xs:anyType"
    assert operation("6.2", "logout").returns is None
    assert [p.name for p in operation("4.3", "searchText").params] == [
        "sessionId",
        "query",
        "maxCount",
        "entityName",
    ]
    assert operation("4.3", "searchText").param("maxCount").min_occurs == 1  # Java int
    assert [op.name for op in operations_for("6.2") if not op.declares_fault] == ["dummy"]

    names = {t.name for t in complex_types("4.3")}
    assert not names & {"fieldSet", "authenticatorInfo", "authenticatorCredentialKey"}


def test_icat_exception_types(profile: Profile) -> None:
    values = {t.name: t.values for t in simple_types(profile)}["icatExceptionType"]
    assert ("NOT_IMPLEMENTED" in values) == (profile.name != "4.3")  # it appeared in 4.6
    assert len(values) == (7 if profile.name == "4.3" else 8)
