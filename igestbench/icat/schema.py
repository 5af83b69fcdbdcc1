"""One model of ICAT's entities, shared by the local catalogue and our clients.

A :class:`Profile` is one generation of the ICAT API ("6.2" today, "4.3" for the catalogues of the
original SV7 campaign): its entity types with their fields, relations, NOT NULL fields and the
uniqueness constraint of each, the order in which fields travel on the wire, and the API version
string the server reports. The WSDL/XSD, ``getEntityInfo``, the SQLite tables of the local
catalogue and the XML codec are all derived from it, so they cannot disagree.

The entity tables themselves are data, written in a compact notation in
:mod:`igestbench.icat.entity_tables`.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from igestbench.errors import UsageError


class RelType(enum.StrEnum):
    """How a field relates to its entity (the values of ICAT's ``relType``)."""

    ATTRIBUTE = "ATTRIBUTE"
    ONE = "ONE"
    MANY = "MANY"


#: Java simple types ICAT reports for attributes, with the XML Schema type they travel as.
ATTRIBUTE_XSD_TYPES: Mapping[str, str] = MappingProxyType(
    {
        "String": "xs:string",
        "Long": "xs:long",
        "Integer": "xs:int",
        "Double": "xs:double",
        "boolean": "xs:boolean",
        "Boolean": "xs:boolean",
        "Date": "xs:dateTime",
        "ParameterValueType": "tns:parameterValueType",
        "StudyStatus": "tns:studyStatus",
    }
)

#: Enumerations of the entity model (name of the XSD simpleType → values, in XSD order).
ENUMERATIONS: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "ParameterValueType": ("DATE_AND_TIME", "NUMERIC", "STRING"),
        "StudyStatus": ("NEW", "IN_PROGRESS", "COMPLETE", "CANCELLED"),
    }
)

DEFAULT_STRING_LENGTH = 255


@dataclass(frozen=True)
class Field:
    """One field of an entity: an attribute, a many-to-one (ONE) or a one-to-many (MANY)."""

    name: str
    rel: RelType
    #: Java simple type of an attribute (``String``, ``Long``, ``Date`` …); entity of a relation.
    type: str
    not_null: bool = False
    #: Maximum length of a String attribute.
    string_length: int | None = None
    #: For MANY: the ONE field of the target entity that points back here.
    mapped_by: str | None = None
    comment: str = ""
    #: Value the server stores when a bean omits the field (ICAT 6.x: ``Datafile.fileSize`` 0).
    default: int | None = None

    @property
    def is_relation(self) -> bool:
        return self.rel is not RelType.ATTRIBUTE

    @property
    def xsd_type(self) -> str:
        if self.rel is RelType.ATTRIBUTE:
            return ATTRIBUTE_XSD_TYPES[self.type]
        return "tns:" + xml_name(self.type)


#: Fields every entity inherits from EntityBaseBean; the server sets all of them.
BASE_FIELDS: tuple[Field, ...] = (
    Field(
        "createId",
        RelType.ATTRIBUTE,
        "String",
        not_null=True,
        string_length=255,
        comment="Id of user who created this",
    ),
    Field("createTime", RelType.ATTRIBUTE, "Date", not_null=True, comment="Time of creation"),
    Field("id", RelType.ATTRIBUTE, "Long", comment="Unique identifier for the object"),
    Field(
        "modId",
        RelType.ATTRIBUTE,
        "String",
        not_null=True,
        string_length=255,
        comment="Id of user who last modified this",
    ),
    Field("modTime", RelType.ATTRIBUTE, "Date", not_null=True, comment="Time of last modification"),
)
BASE_FIELD_NAMES = frozenset(f.name for f in BASE_FIELDS)


@dataclass(frozen=True)
class Entity:
    """An ICAT entity type as one API profile exposes it."""

    name: str
    #: Own fields (not those of EntityBaseBean or of an abstract base), alphabetical as in the XSD.
    own_fields: tuple[Field, ...]
    #: Field names of the uniqueness constraint (empty if the entity has none).
    constraint: tuple[str, ...] = ()
    #: Name of an abstract base entity (``Parameter``) whose fields this one inherits.
    base: str | None = None
    abstract: bool = False
    #: JAXB ``@XmlRootElement``: the type also has a global element in the XSD.
    root_element: bool = False
    comment: str = ""
    #: Inherited fields of the abstract base, filled in by the profile.
    inherited: tuple[Field, ...] = ()
    #: Indexes a deployment of ICAT has beyond the unique key and the foreign keys' (JPA
    #: ``@Index`` and icat.server's ``indices.sql``): field names of each, in order.
    indexes: tuple[tuple[str, ...], ...] = ()
    _by_name: Mapping[str, Field] = field(default_factory=dict, repr=False, compare=False)

    def __hash__(self) -> int:
        # by name, not by every field: entities key the local catalogue's per-entity caches,
        # looked up on every request (equal entities have equal names)
        return hash(self.name)

    def __post_init__(self) -> None:
        by_name = {f.name: f for f in (*BASE_FIELDS, *self.inherited, *self.own_fields)}
        object.__setattr__(self, "_by_name", MappingProxyType(by_name))

    @property
    def xml_name(self) -> str:
        return xml_name(self.name)

    @property
    def fields(self) -> tuple[Field, ...]:
        """Every field but those of EntityBaseBean, in wire order (inherited first)."""
        return (*self.inherited, *self.own_fields)

    def field(self, name: str) -> Field:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"{self.name} has no field {name!r}") from None

    def has_field(self, name: str) -> bool:
        return name in self._by_name

    def all_fields(self) -> tuple[Field, ...]:
        """Every field including those of EntityBaseBean (what getEntityInfo lists)."""
        return tuple(self._by_name.values())

    # cached: the store asks for them once per object it writes (10,000 in one createMany)
    @functools.cached_property
    def attributes(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.rel is RelType.ATTRIBUTE)

    @functools.cached_property
    def ones(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.rel is RelType.ONE)

    @functools.cached_property
    def manys(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.rel is RelType.MANY)


@dataclass(frozen=True)
class Profile:
    """One generation of the ICAT API: its entities and wire conventions."""

    name: str
    #: What getApiVersion (and getVersion) answer.
    api_version: str
    entities: Mapping[str, Entity]
    #: Abstract entity types (``Parameter``) that getEntityInfo answers for but that have no table.
    abstract_entities: Mapping[str, Entity]
    #: Order of the EntityBaseBean elements on the wire (changed between 4.x and 6.x).
    base_field_order: tuple[str, ...]
    #: Names of the IcatException types this generation knows.
    fault_types: tuple[str, ...]

    @property
    def entity_names(self) -> tuple[str, ...]:
        """What getEntityNames answers: concrete entity names, alphabetical."""
        return tuple(sorted(self.entities))

    def entity(self, name: str) -> Entity:
        """The entity called ``name`` (concrete or abstract); KeyError if there is none."""
        found = self.entities.get(name) or self.abstract_entities.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def by_xml_name(self, xml_type: str) -> Entity:
        """The entity whose XSD type name is ``xml_type`` (``datafile`` → Datafile)."""
        return self._xml_names()[xml_type]

    @functools.cache  # noqa: B019 - profiles are immortal module-level singletons
    def _xml_names(self) -> Mapping[str, Entity]:
        return {e.xml_name: e for e in (*self.entities.values(), *self.abstract_entities.values())}

    def base_fields_in_wire_order(self) -> tuple[Field, ...]:
        by_name = {f.name: f for f in BASE_FIELDS}
        return tuple(by_name[n] for n in self.base_field_order)

    def __iter__(self) -> Iterator[Entity]:
        return iter(self.entities.values())

    def __hash__(self) -> int:
        return hash(self.name)


def xml_name(entity_name: str) -> str:
    """The XSD type name of an entity, first letter lower-cased: DatafileFormat → datafileFormat."""
    return entity_name[0].lower() + entity_name[1:]


# --- The compact notation of entity_tables --------------------------------------------------
#
#   Entity [base=Parameter] [abstract] [root] [U(field,field)]
#       name:String! location:String(511) fileSize:Long=0   attributes (! = NOT NULL, =N default)
#       dataset>Dataset!                                      many-to-one
#       datafiles*Datafile  parameters*DatafileParameter.datafile   one-to-many [.mappedBy]

_HEADER = re.compile(r"^(?P<name>\w+)(?P<opts>(?:\s+\S+)*)\s*$")
_TOKEN = re.compile(
    r"^(?P<name>\w+)(?:(?P<sep>[:>*])(?P<type>\w+))(?:\.(?P<mapped>\w+))?"
    r"(?:\((?P<len>\d+)\))?(?:=(?P<default>-?\d+))?(?P<nn>!)?$"
)


def parse_table(text: str) -> dict[str, Entity]:
    """Parse the compact notation into entities (mapped_by not yet resolved)."""
    entities: dict[str, Entity] = {}
    current: dict[str, object] | None = None
    pending: list[dict[str, object]] = []
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if not line[0].isspace():
            m = _HEADER.match(line)
            if not m:
                raise ValueError(f"bad entity header: {line!r}")
            opts = m.group("opts").split()
            current = {"name": m.group("name"), "fields": [], "opts": opts}
            pending.append(current)
            continue
        if current is None:
            raise ValueError(f"field line before any entity: {line!r}")
        fields = current["fields"]
        assert isinstance(fields, list)
        for token in line.split():
            t = _TOKEN.match(token)
            if not t:
                raise ValueError(f"bad field {token!r} in {current['name']}")
            rel = {":": RelType.ATTRIBUTE, ">": RelType.ONE, "*": RelType.MANY}[t.group("sep")]
            length = t.group("len")
            ftype = t.group("type")
            fields.append(
                Field(
                    name=t.group("name"),
                    rel=rel,
                    type=ftype,
                    not_null=bool(t.group("nn")),
                    string_length=(int(length) if length else DEFAULT_STRING_LENGTH)
                    if ftype == "String"
                    else None,
                    mapped_by=t.group("mapped"),
                    default=int(t.group("default")) if t.group("default") else None,
                )
            )
    for spec in pending:
        opts = list(spec["opts"])  # type: ignore[call-overload]
        base = next((o.split("=", 1)[1] for o in opts if o.startswith("base=")), None)
        unique = next((o[2:-1] for o in opts if o.startswith("U(")), "")
        flist = spec["fields"]
        assert isinstance(flist, list)
        name = str(spec["name"])
        entities[name] = Entity(
            name=name,
            own_fields=tuple(sorted(flist, key=lambda f: f.name)),
            constraint=tuple(x for x in unique.split(",") if x),
            base=base,
            abstract="abstract" in opts,
            root_element="root" in opts,
        )
    return entities


def resolve(entities: dict[str, Entity]) -> dict[str, Entity]:
    """Fill in inherited fields and the mapped_by of every MANY field; check the table."""
    resolved: dict[str, Entity] = {}
    for name, entity in entities.items():
        inherited: tuple[Field, ...] = ()
        if entity.base:
            inherited = entities[entity.base].own_fields
        resolved[name] = Entity(
            name=entity.name,
            own_fields=entity.own_fields,
            constraint=entity.constraint,
            base=entity.base,
            abstract=entity.abstract,
            root_element=entity.root_element,
            comment=entity.comment,
            inherited=inherited,
            indexes=entity.indexes,
        )
    final: dict[str, Entity] = {}
    for name, entity in resolved.items():
        own: list[Field] = []
        for f in entity.own_fields:
            if f.rel is not RelType.ATTRIBUTE and f.type not in resolved:
                raise ValueError(f"{name}.{f.name} refers to unknown entity {f.type}")
            if f.rel is RelType.MANY and f.mapped_by is None:
                target = resolved[f.type]
                back = [g.name for g in target.ones if g.type in (name, entity.base)]
                if len(back) != 1:
                    raise ValueError(f"{name}.{f.name}: cannot tell the inverse field in {f.type}")
                f = dataclasses.replace(f, mapped_by=back[0])
            own.append(f)
        for c in (*entity.constraint, *(n for index in entity.indexes for n in index)):
            entity.field(c)  # raises on a typo in the table
        final[name] = Entity(
            name=entity.name,
            own_fields=tuple(own),
            constraint=entity.constraint,
            base=entity.base,
            abstract=entity.abstract,
            root_element=entity.root_element,
            comment=entity.comment,
            inherited=entity.inherited,
            indexes=entity.indexes,
        )
    return final


def build_profile(
    name: str,
    api_version: str,
    table: str,
    base_field_order: tuple[str, ...],
    fault_types: tuple[str, ...],
    comments: Mapping[str, tuple[str, Mapping[str, str]]] | None = None,
    indexes: Mapping[str, tuple[tuple[str, ...], ...]] | None = None,
) -> Profile:
    """A profile from its table in the compact notation, ICAT's documentation strings and the
    indexes of its deployments."""
    parsed = parse_table(table)
    for entity_name, wanted in (indexes or {}).items():
        parsed[entity_name] = dataclasses.replace(parsed[entity_name], indexes=wanted)
    for entity_name, (class_comment, field_comments) in (comments or {}).items():
        entity = parsed.get(entity_name)
        if entity is None:
            continue
        own = tuple(
            dataclasses.replace(f, comment=field_comments.get(f.name, f.comment))
            for f in entity.own_fields
        )
        parsed[entity_name] = dataclasses.replace(
            entity, own_fields=own, comment=class_comment, inherited=()
        )
    entities = resolve(parsed)
    concrete = {n: e for n, e in entities.items() if not e.abstract}
    abstract = {n: e for n, e in entities.items() if e.abstract}
    return Profile(
        name=name,
        api_version=api_version,
        entities=MappingProxyType(concrete),
        abstract_entities=MappingProxyType(abstract),
        base_field_order=base_field_order,
        fault_types=fault_types,
    )


PROFILE_NAMES = ("6.2", "4.3")
DEFAULT_PROFILE = "6.2"


def get_profile(name: str = DEFAULT_PROFILE) -> Profile:
    """The profile called ``name`` ("6.2" or "4.3")."""
    from igestbench.icat import entity_tables

    try:
        return entity_tables.PROFILES[name]
    except KeyError:
        raise UsageError(
            f"unknown ICAT API profile {name!r}: choose one of {', '.join(PROFILE_NAMES)}"
        ) from None
