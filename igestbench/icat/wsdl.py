"""The WSDL and XML Schema an ICAT server serves, rendered from the model.

A real ICAT (JAX-WS on Glassfish/Payara) answers ``?wsdl`` with a WSDL 1.1 document whose
``<types>`` only imports ``?xsd=1`` by absolute URL, and ``?xsd=1`` with the schema JAXB derives
from the Java classes. We produce the same structure (names, namespaces, types, element order and
occurrence) from :mod:`igestbench.icat.schema` and :mod:`igestbench.icat.operations`, so that
zeep, suds and python-icat treat the local catalogue exactly as they treat a real one.

Both functions are pure and cached: the local catalogue calls them on every ``?wsdl`` request.
"""

from __future__ import annotations

import functools

from lxml import etree

from igestbench.icat.operations import (
    UNBOUNDED,
    Element,
    Operation,
    complex_types,
    operations_for,
    profile_name,
    simple_types,
)
from igestbench.icat.schema import Entity, Field, Profile, RelType, get_profile, xml_name

TNS = "http://icatproject.org"
XS = "http://www.w3.org/2001/XMLSchema"
WSDL = "http://schemas.xmlsoap.org/wsdl/"
SOAP = "http://schemas.xmlsoap.org/wsdl/soap/"
WSAM = "http://www.w3.org/2007/05/addressing/metadata"
SOAP_OVER_HTTP = "http://schemas.xmlsoap.org/soap/http"

SERVICE = "ICATService"
PORT_TYPE = "ICAT"
BINDING = "ICATPortBinding"
PORT = "ICATPort"
FAULT = "IcatException"

# Java primitives cannot be null, so JAXB makes their elements required; ICAT's entity model only
# uses boolean, but the rule is JAXB's, not ICAT's.
_JAVA_PRIMITIVES = frozenset({"boolean", "int", "long", "double"})


def schema_url(service_url: str) -> str:
    """Where the WSDL says the schema is: JAX-WS appends ``?xsd=1`` to the endpoint URL."""
    return service_url + "?xsd=1"


def render_wsdl(profile: str | Profile, service_url: str) -> bytes:
    """The WSDL of ``profile``'s service at ``service_url`` (the endpoint, without ``?wsdl``)."""
    return _render_wsdl(profile_name(profile), service_url)


def render_xsd(profile: str | Profile) -> bytes:
    """The schema (``?xsd=1``) of ``profile``; it names no URL, so it is the same for any server."""
    return _render_xsd(profile_name(profile))


def _to_bytes(root: etree._Element) -> bytes:
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


# --- WSDL --------------------------------------------------------------------------------------


def _w(parent: etree._Element, tag: str, **attrib: str) -> etree._Element:
    return etree.SubElement(parent, f"{{{WSDL}}}{tag}", attrib)


def _soap(parent: etree._Element, tag: str, **attrib: str) -> etree._Element:
    return etree.SubElement(parent, f"{{{SOAP}}}{tag}", attrib)


def _action(name: str) -> str:
    """JAX-WS's default WS-Addressing action for an input, output or fault."""
    return f"{TNS}/{PORT_TYPE}/{name}"


@functools.lru_cache(maxsize=32)
def _render_wsdl(profile: str, service_url: str) -> bytes:
    ops = operations_for(profile)
    # WSDL is the default namespace, as ICAT serves it; lxml-stubs do not admit the None key.
    nsmap = {None: WSDL, "soap": SOAP, "tns": TNS, "xsd": XS, "wsam": WSAM}
    root = etree.Element(
        f"{{{WSDL}}}definitions",
        {"targetNamespace": TNS, "name": SERVICE},
        nsmap=nsmap,  # type: ignore[arg-type]
    )
    schema = etree.SubElement(_w(root, "types"), f"{{{XS}}}schema")
    etree.SubElement(
        schema, f"{{{XS}}}import", {"namespace": TNS, "schemaLocation": schema_url(service_url)}
    )

    for message in (*(n for op in ops for n in (op.name, op.response_name)), FAULT):
        part = "fault" if message == FAULT else "parameters"
        _w(_w(root, "message", name=message), "part", name=part, element=f"tns:{message}")

    port_type = _w(root, "portType", name=PORT_TYPE)
    for op in ops:
        _port_type_operation(port_type, op)

    binding = _w(root, "binding", name=BINDING, type=f"tns:{PORT_TYPE}")
    _soap(binding, "binding", transport=SOAP_OVER_HTTP, style="document")
    for op in ops:
        _bind_operation(binding, op)

    port = _w(_w(root, "service", name=SERVICE), "port", name=PORT, binding=f"tns:{BINDING}")
    _soap(port, "address", location=service_url)
    return _to_bytes(root)


def _port_type_operation(port_type: etree._Element, op: Operation) -> None:
    node = _w(port_type, "operation", name=op.name)
    action = f"{{{WSAM}}}Action"
    _w(node, "input", message=f"tns:{op.name}").set(action, _action(op.name + "Request"))
    _w(node, "output", message=f"tns:{op.response_name}").set(action, _action(op.response_name))
    if op.declares_fault:
        fault = _w(node, "fault", message=f"tns:{FAULT}", name=FAULT)
        fault.set(action, _action(f"{op.name}/Fault/{FAULT}"))


def _bind_operation(binding: etree._Element, op: Operation) -> None:
    node = _w(binding, "operation", name=op.name)
    _soap(node, "operation", soapAction="")
    for direction in ("input", "output"):
        _soap(_w(node, direction), "body", use="literal")
    if op.declares_fault:
        _soap(_w(node, "fault", name=FAULT), "fault", name=FAULT, use="literal")


# --- XSD ---------------------------------------------------------------------------------------


def _xs(parent: etree._Element, tag: str, **attrib: str) -> etree._Element:
    return etree.SubElement(parent, f"{{{XS}}}{tag}", attrib)


def _element(sequence: etree._Element, element: Element) -> None:
    # Attribute order as JAXB writes it: name, type, nillable, minOccurs, maxOccurs.
    node = _xs(sequence, "element", name=element.name)
    if element.type is not None:
        node.set("type", element.type)
    if element.nillable:
        node.set("nillable", "true")
    if element.min_occurs != 1:
        node.set("minOccurs", str(element.min_occurs))
    if element.max_occurs != 1:
        maximum = element.max_occurs
        node.set("maxOccurs", "unbounded" if maximum is UNBOUNDED else str(maximum))
    if element.type is None:
        _sequence(_xs(node, "complexType"), element.children)


def _sequence(parent: etree._Element, elements: tuple[Element, ...]) -> None:
    sequence = _xs(parent, "sequence")
    for element in elements:
        _element(sequence, element)


def field_element(field: Field) -> Element:
    """How an entity's field is declared: see the notes on JAXB in :mod:`.operations`."""
    if field.rel is RelType.MANY:
        return Element(field.name, field.xsd_type, 0, UNBOUNDED, nillable=True)
    required = field.rel is RelType.ATTRIBUTE and field.type in _JAVA_PRIMITIVES
    return Element(field.name, field.xsd_type, min_occurs=1 if required else 0)


def _entity_type(schema: etree._Element, entity: Entity) -> None:
    node = _xs(schema, "complexType", name=entity.xml_name)
    if entity.abstract:
        node.set("abstract", "true")
    base = "tns:" + (xml_name(entity.base) if entity.base else "entityBaseBean")
    extension = _xs(_xs(node, "complexContent"), "extension", base=base)
    _sequence(extension, tuple(field_element(f) for f in entity.own_fields))


@functools.lru_cache(maxsize=8)
def _render_xsd(profile: str) -> bytes:
    model = get_profile(profile)
    ops = operations_for(profile)
    entities = sorted(
        (*model.entities.values(), *model.abstract_entities.values()), key=lambda e: e.xml_name
    )
    others = complex_types(profile)

    root = etree.Element(
        f"{{{XS}}}schema",
        {"version": "1.0", "targetNamespace": TNS},
        nsmap={"tns": TNS, "xs": XS},
    )
    # Global elements: the operation wrappers and every @XmlRootElement type, sorted as JAXB does.
    globals_ = [n for op in ops for n in (op.name, op.response_name)]
    globals_ += [t.name for t in others if t.root_element]
    globals_ += [e.xml_name for e in entities if e.root_element]
    for name in sorted(globals_):
        _xs(root, "element", name=name, type=f"tns:{name}")

    for op in ops:
        _sequence(_xs(root, "complexType", name=op.name), op.params)
        returns = (op.returns,) if op.returns is not None else ()
        _sequence(_xs(root, "complexType", name=op.response_name), returns)

    base = _xs(root, "complexType", name="entityBaseBean", abstract="true")
    _sequence(base, tuple(field_element(f) for f in model.base_fields_in_wire_order()))
    for entity in entities:
        _entity_type(root, entity)

    for other in others:
        _sequence(_xs(root, "complexType", name=other.name), other.elements)
    for simple in simple_types(model):
        simple_type = _xs(root, "simpleType", name=simple.name)
        restriction = _xs(simple_type, "restriction", base="xs:string")
        for value in simple.values:
            _xs(restriction, "enumeration", value=value)
    return _to_bytes(root)
