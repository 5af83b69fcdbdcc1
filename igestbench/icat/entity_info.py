"""What ``getEntityInfo`` answers: an entity's comment, uniqueness constraint and fields.

The local catalogue builds it from the model; clients decode it from the wire with
:func:`decode_entity_info`, so the same value object travels both ways.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from igestbench.icat.schema import BASE_FIELD_NAMES, BASE_FIELDS, Entity, RelType


@dataclass(frozen=True)
class EntityFieldInfo:
    name: str
    #: Java simple type of an attribute, or the related entity's name.
    type: str
    rel: RelType
    not_null: bool
    string_length: int | None
    #: "" when the field has none (on the wire: no ``comment`` element at all).
    comment: str


@dataclass(frozen=True)
class EntityInfo:
    comment: str
    constraint: tuple[str, ...]
    fields: tuple[EntityFieldInfo, ...]

    def field(self, name: str) -> EntityFieldInfo:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(name)


#: A name getEntityInfo also answers for (icat.server 4.3 finds any class of its entity package
#: by name, 6.x lists it explicitly): the base of every entity, five fields.
BASE_ENTITY = "EntityBaseBean"


def base_entity_info() -> EntityInfo:
    """getEntityInfo("EntityBaseBean"): its fields, no comment, no constraint."""
    fields = tuple(
        EntityFieldInfo(f.name, f.type, f.rel, not_null=False, string_length=None, comment="")
        for f in BASE_FIELDS
    )
    return EntityInfo(comment="", constraint=(), fields=fields)


def entity_info(entity: Entity) -> EntityInfo:
    """The getEntityInfo answer for ``entity`` (every field, EntityBaseBean's included).

    EntityBaseBean's fields are described as a real ICAT 6.2 describes them: not NOT NULL (the
    server fills them in, a client never has to), without comment and without string length.
    The order of fields is ours; ICAT's changes between restarts, so clients cannot rely on any.
    """
    fields = []
    for f in entity.all_fields():
        base = f.name in BASE_FIELD_NAMES
        fields.append(
            EntityFieldInfo(
                name=f.name,
                type=f.type,
                rel=f.rel,
                not_null=f.not_null and not base,
                string_length=f.string_length if f.type == "String" and not base else None,
                comment="" if base else f.comment,
            )
        )
    return EntityInfo(comment=entity.comment, constraint=entity.constraint, fields=tuple(fields))


def decode_entity_info(element: etree._Element) -> EntityInfo:
    """An ``entityInfo`` element (the ``return`` of getEntityInfo) as an EntityInfo."""
    constraint: tuple[str, ...] = ()
    first = element.find("constraints")
    if first is not None:
        constraint = tuple(n.text or "" for n in first.findall("fieldNames"))
    fields = []
    for f in element.findall("fields"):
        length = f.findtext("stringLength")
        fields.append(
            EntityFieldInfo(
                name=f.findtext("name") or "",
                type=f.findtext("type") or "",
                rel=RelType(f.findtext("relType") or "ATTRIBUTE"),
                not_null=(f.findtext("notNullable") or "").strip() == "true",
                string_length=int(length) if length else None,
                comment=f.findtext("comment") or "",
            )
        )
    return EntityInfo(element.findtext("classComment") or "", constraint, tuple(fields))
