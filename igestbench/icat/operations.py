"""The SOAP operations of each ICAT API profile, and the schema types that are not entities.

ICAT's SOAP endpoint is a JAX-WS class; its XSD follows from the Java signatures by JAXB's rules,
which this table spells out once: a parameter or return value of a Java reference type (String,
an entity, an enum) may be null and so is ``minOccurs="0"``; a primitive (``long``, ``int``,
``double``, ``boolean``) is required; a ``List`` is ``minOccurs="0" maxOccurs="unbounded"``, and
``nillable`` as well when it is a property of a bean rather than a method's parameter or result.

The WSDL/XSD renderer (:mod:`igestbench.icat.wsdl`), the local catalogue's dispatcher and our
clients all read this table, so an operation's name, parameter order and occurrence are written
down exactly once. Entity types come from :mod:`igestbench.icat.schema`, not from here.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from igestbench.errors import UsageError
from igestbench.icat.schema import ENUMERATIONS, PROFILE_NAMES, Profile, get_profile, xml_name

#: ``max_occurs`` of a repeated element.
UNBOUNDED = None


@dataclass(frozen=True)
class Element:
    """One element of an XSD sequence: a parameter, a ``return`` value or a property of a type."""

    name: str
    #: Qualified XSD type (``xs:string``, ``tns:entityBaseBean``); None for an anonymous type.
    type: str | None
    min_occurs: int = 1
    #: ``UNBOUNDED`` (None) for a repeated element.
    max_occurs: int | None = 1
    nillable: bool = False
    #: The sequence of the anonymous complexType when ``type`` is None (login's credentials).
    children: tuple[Element, ...] = ()

    @property
    def many(self) -> bool:
        return self.max_occurs != 1


@dataclass(frozen=True)
class Operation:
    """One SOAP operation: request wrapper ``name``, response wrapper ``name + 'Response'``."""

    name: str
    params: tuple[Element, ...] = ()
    #: The ``return`` element of the response; None for a void operation.
    returns: Element | None = None
    #: Whether the operation declares the IcatException fault (every one but ``dummy``).
    declares_fault: bool = True

    @property
    def response_name(self) -> str:
        return self.name + "Response"

    @property
    def returns_many(self) -> bool:
        return self.returns is not None and self.returns.many

    @property
    def needs_session(self) -> bool:
        # Every operation that takes a session id checks it; none of the others looks at one.
        return any(p.name == "sessionId" for p in self.params)

    def param(self, name: str) -> Element:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"operation {self.name} has no parameter {name!r}")


@dataclass(frozen=True)
class ComplexType:
    """A complexType of the schema that is not an entity (entityInfo, IcatException …)."""

    name: str
    elements: tuple[Element, ...]
    #: JAXB ``@XmlRootElement`` (or the fault bean): the type also has a global element.
    root_element: bool = False


@dataclass(frozen=True)
class SimpleType:
    """An enumeration of the schema: a restriction of xs:string to ``values``, in XSD order."""

    name: str
    values: tuple[str, ...]


def _opt(name: str, xsd_type: str) -> Element:
    """A Java reference type: may be null, so optional."""
    return Element(name, xsd_type, min_occurs=0)


def _req(name: str, xsd_type: str) -> Element:
    """A Java primitive: never null, so required."""
    return Element(name, xsd_type)


def _list(name: str, xsd_type: str, *, nillable: bool = False) -> Element:
    """A Java List (nillable when it is a bean property)."""
    return Element(name, xsd_type, min_occurs=0, max_occurs=UNBOUNDED, nillable=nillable)


_SESSION = _opt("sessionId", "xs:string")
_QUERY = _opt("query", "xs:string")
_BEAN = _opt("bean", "tns:entityBaseBean")
_BEANS = _list("beans", "tns:entityBaseBean")
_ENTITY_NAME = _opt("entityName", "xs:string")
_MAX_COUNT = _req("maxCount", "xs:int")
_STRING = _opt("return", "xs:string")
_STRINGS = _list("return", "xs:string")

# login's Map<String, String> travels as JAXB's map adapter: an anonymous credentials element
# (required: JAX-WS never declares it optional) holding entry{key, value} pairs.
_CREDENTIALS = Element(
    "credentials",
    None,
    children=(
        Element(
            "entry",
            None,
            min_occurs=0,
            max_occurs=UNBOUNDED,
            children=(_opt("key", "xs:string"), _opt("value", "xs:string")),
        ),
    ),
)

#: Every operation some profile has, but dummy (whose parameters differ per profile).
_OPERATIONS: Mapping[str, Operation] = MappingProxyType(
    {
        op.name: op
        for op in (
            Operation("login", (_opt("plugin", "xs:string"), _CREDENTIALS), _STRING),
            Operation("logout", (_SESSION,)),
            Operation("getUserName", (_SESSION,), _STRING),
            Operation("getRemainingMinutes", (_SESSION,), _req("return", "xs:double")),
            Operation("refresh", (_SESSION,)),
            Operation("getApiVersion", (), _STRING),
            Operation("getVersion", (), _STRING),
            Operation("getEntityNames", (), _STRINGS),
            Operation(
                "getEntityInfo", (_opt("beanName", "xs:string"),), _opt("return", "tns:entityInfo")
            ),
            Operation("getAuthenticatorInfo", (), _list("return", "tns:authenticatorInfo")),
            Operation("getProperties", (_SESSION,), _STRINGS),
            Operation("create", (_SESSION, _BEAN), _req("return", "xs:long")),
            Operation("createMany", (_SESSION, _BEANS), _list("return", "xs:long")),
            Operation("update", (_SESSION, _BEAN)),
            Operation("delete", (_SESSION, _BEAN)),
            Operation("deleteMany", (_SESSION, _BEANS)),
            Operation(
                "get",
                (_SESSION, _QUERY, _req("primaryKey", "xs:long")),
                _opt("return", "tns:entityBaseBean"),
            ),
            Operation("search", (_SESSION, _QUERY), _list("return", "xs:anyType")),
            Operation(
                "isAccessAllowed",
                (_SESSION, _BEAN, _opt("accessType", "tns:accessType")),
                _req("return", "xs:boolean"),
            ),
            # The Lucene operations of 4.3, gone since 4.6 (REST took over).
            Operation(
                "searchText",
                (_SESSION, _QUERY, _MAX_COUNT, _ENTITY_NAME),
                _list("return", "xs:anyType"),
            ),
            Operation("luceneSearch", (_SESSION, _QUERY, _MAX_COUNT, _ENTITY_NAME), _STRINGS),
            Operation("luceneClear", (_SESSION,)),
            Operation("luceneCommit", (_SESSION,)),
            Operation("luceneGetPopulating", (_SESSION,), _STRINGS),
            Operation("lucenePopulate", (_SESSION, _ENTITY_NAME)),
        )
    }
)

_LUCENE_4_3 = (
    "searchText", "luceneSearch", "luceneClear", "luceneCommit", "luceneGetPopulating",
    "lucenePopulate",
)

#: The operations of each profile, in a stable order (sessions, metadata, CRUD, search, dummy).
_PROFILE_OPERATIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "6.2": (
            "login", "logout", "getUserName", "getRemainingMinutes", "refresh", "getApiVersion",
            "getVersion", "getEntityNames", "getEntityInfo", "getAuthenticatorInfo",
            "getProperties", "create", "createMany", "update", "delete", "deleteMany", "get",
            "search", "isAccessAllowed", "dummy",
        ),
        "4.3": (
            "login", "logout", "getUserName", "getRemainingMinutes", "refresh", "getApiVersion",
            "getEntityNames", "getEntityInfo", "getProperties", "create", "createMany", "update",
            "delete", "deleteMany", "get", "search", "isAccessAllowed", *_LUCENE_4_3, "dummy",
        ),
    }
)

# The Java types of dummy's parameters, in the server's order (the enum StudyStatus included).
# dummy exists only so that JAXB puts these types into the XSD; types reachable from them through
# relations get there anyway, so the list need not name every entity.
_DUMMY_COMMON = (
    "Datafile", "DatafileFormat", "DatafileParameter", "Dataset", "DatasetParameter",
    "DatasetType", "Facility", "FacilityCycle", "InstrumentScientist", "User", "Instrument",
    "Investigation", "InvestigationType", "InvestigationUser", "Keyword", "ParameterType",
    "Publication", "RelatedDatafile", "Sample", "SampleParameter", "Shift", "Study",
    "StudyInvestigation", "StudyStatus", "Application", "Job", "DataCollection",
    "DataCollectionParameter", "DataCollectionDataset", "DataCollectionDatafile", "Grouping",
    "UserGroup",
)
_DUMMY_TYPES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "6.2": (*_DUMMY_COMMON, "PublicStep", "FieldSet"),
        "4.3": (*_DUMMY_COMMON, "Log", "PublicStep"),
    }
)

_ENTITY_FIELD = (
    _opt("comment", "xs:string"),
    _opt("name", "xs:string"),
    _req("notNullable", "xs:boolean"),
    _opt("relType", "tns:relType"),
    _opt("stringLength", "xs:int"),
    _opt("type", "xs:string"),
)

_COMPLEX_TYPES: Mapping[str, ComplexType] = MappingProxyType(
    {
        t.name: t
        for t in (
            ComplexType(
                "IcatException",
                (
                    _opt("message", "xs:string"),
                    _req("offset", "xs:int"),
                    _opt("type", "tns:icatExceptionType"),
                ),
                root_element=True,
            ),
            ComplexType(
                "entityInfo",
                (
                    _opt("classComment", "xs:string"),
                    _list("constraints", "tns:constraint", nillable=True),
                    _list("fields", "tns:entityField", nillable=True),
                ),
            ),
            ComplexType("constraint", (_list("fieldNames", "xs:string", nillable=True),)),
            ComplexType("entityField", _ENTITY_FIELD),
            ComplexType(
                "authenticatorInfo",
                (
                    _req("admin", "xs:boolean"),
                    _opt("friendly", "xs:string"),
                    _list("keys", "tns:authenticatorCredentialKey", nillable=True),
                    _opt("mnemonic", "xs:string"),
                ),
            ),
            ComplexType(
                "authenticatorCredentialKey",
                (
                    _req("hide", "xs:boolean"),
                    _opt("name", "xs:string"),
                    _opt("pattern", "xs:string"),
                ),
            ),
            # The rows of a multi-field SELECT (4.11+); a NULL column is a nil ``fields``.
            ComplexType("fieldSet", (_list("fields", "xs:anyType", nillable=True),), True),
        )
    }
)

#: 4.x entityInfo still reported ``cascaded`` per field (seen in the 4.2 XSD; gone by 6.2).
_ENTITY_FIELD_4_3 = ComplexType("entityField", (_opt("cascaded", "xs:boolean"), *_ENTITY_FIELD))

_PROFILE_COMPLEX_TYPES: Mapping[str, tuple[ComplexType, ...]] = MappingProxyType(
    {
        "6.2": tuple(_COMPLEX_TYPES.values()),
        "4.3": tuple(
            _ENTITY_FIELD_4_3 if t.name == "entityField" else t
            for t in _COMPLEX_TYPES.values()
            if t.name not in ("authenticatorInfo", "authenticatorCredentialKey", "fieldSet")
        ),
    }
)

# relType's values follow the Java enum's declaration order: MANY, ONE, ATTRIBUTE in the 4.2 XSD
# (taken for 4.3), alphabetical in 6.2.
_REL_TYPE_VALUES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"6.2": ("ATTRIBUTE", "MANY", "ONE"), "4.3": ("MANY", "ONE", "ATTRIBUTE")}
)
_ACCESS_TYPE_VALUES = ("READ", "UPDATE", "DELETE", "CREATE")


def profile_name(profile: str | Profile) -> str:
    """The name of ``profile``; UsageError if no such profile exists."""
    name = profile if isinstance(profile, str) else profile.name
    if name not in PROFILE_NAMES:
        raise UsageError(
            f"unknown ICAT API profile {name!r}: choose one of {', '.join(PROFILE_NAMES)}"
        )
    return name


@functools.cache
def _operations(name: str) -> Mapping[str, Operation]:
    dummy = Operation(
        "dummy",
        tuple(_opt(f"arg{i}", "tns:" + xml_name(t)) for i, t in enumerate(_DUMMY_TYPES[name])),
        declares_fault=False,
    )
    table = {**_OPERATIONS, "dummy": dummy}
    return MappingProxyType({op: table[op] for op in _PROFILE_OPERATIONS[name]})


def operations_for(profile: str | Profile) -> tuple[Operation, ...]:
    """The SOAP operations of ``profile`` ("6.2" or "4.3", or the Profile itself)."""
    return tuple(_operations(profile_name(profile)).values())


def operation(profile: str | Profile, name: str) -> Operation:
    """The operation called ``name`` in ``profile``; KeyError if the profile has none."""
    name_of_profile = profile_name(profile)
    try:
        return _operations(name_of_profile)[name]
    except KeyError:
        raise KeyError(f"ICAT {name_of_profile} has no operation {name!r}") from None


def complex_types(profile: str | Profile) -> tuple[ComplexType, ...]:
    """The complexTypes of ``profile`` that are neither entities nor operation wrappers."""
    return _PROFILE_COMPLEX_TYPES[profile_name(profile)]


def simple_types(profile: str | Profile) -> tuple[SimpleType, ...]:
    """The enumerations of ``profile``'s schema; the entity model's own come from schema.py."""
    model = get_profile(profile) if isinstance(profile, str) else profile
    name = profile_name(model)
    return (
        SimpleType("icatExceptionType", model.fault_types),
        *(SimpleType(xml_name(n), values) for n, values in ENUMERATIONS.items()),
        SimpleType("relType", _REL_TYPE_VALUES[name]),
        SimpleType("accessType", _ACCESS_TYPE_VALUES),
    )
