"""What the local catalogue accepts as a value of an object it stores, as ICAT judges it.

The checks the store makes of each attribute value before it writes it (strings within their
length and holding only characters XML can carry, enumerations by name, whole numbers in a
Java long), ICAT's check of a parameter's type, and per entity the plan of which attributes
need a look when a bean lacks them — worked out once, as a createMany stores 10,000 objects.
"""

from __future__ import annotations

import re
from typing import Any

from igestbench.icat.beans import Bean
from igestbench.icat.faults import IcatBadParameter, IcatValidation
from igestbench.icat.schema import DEFAULT_STRING_LENGTH, ENUMERATIONS, Entity, Field, RelType
from igestbench.mock.tables import column_name, to_sql

#: A Java long as Long.parseLong reads one: an optional sign and ASCII digits.
_JAVA_LONG = re.compile(r"[+-]?[0-9]+")
#: Digits of a Java long's largest value (9,223,372,036,854,775,807): fewer always fit.
_LONG_DIGITS = 19


def java_long(text: str) -> int | None:
    """``text`` as a Java long (a request's id: JAXB's xs:long, Jersey's long parameter), or
    None where Java reads no long: not a sign and digits only, or beyond 64 bits."""
    if len(text) < _LONG_DIGITS and text.isascii() and text.isdigit():
        return int(text)  # a plain id, what clients send: no pattern, no range to check
    if _JAVA_LONG.fullmatch(text) is None:
        return None
    # Java reads 0…01 as 1, however many zeros; a longer number is no long (and int() would
    # refuse one of over 4,300 digits)
    digits = text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > _LONG_DIGITS:
        return None
    value = -int(digits) if text[0] == "-" else int(digits)
    return value if -(2**63) <= value < 2**63 else None


#: What an absent attribute gets (see attribute_plan): nothing, its default, or a VALIDATION fault.
SKIP, DEFAULT, REFUSE = range(3)


#: Per entity (by identity: hashing a frozen Entity hashes every field, per call): its
#: attributes' plan and its many-to-one relations with their columns, worked out once — a
#: createMany stores 10,000 objects.
_AttributePlan = tuple[tuple[Field, int, Any], ...]
_OnesPlan = tuple[tuple[Field, str], ...]
_PLANS: dict[int, tuple[Entity, _AttributePlan, _OnesPlan]] = {}


def _plans(entity: Entity) -> tuple[_AttributePlan, _OnesPlan]:
    known = _PLANS.get(id(entity))
    if known is None or known[0] is not entity:
        attributes: list[tuple[Field, int, Any]] = []
        for f in entity.attributes:
            if f.default is not None:
                attributes.append((f, DEFAULT, f.default))
            elif f.type == "boolean":
                attributes.append((f, DEFAULT, False))  # absent on the wire means false
            else:
                attributes.append((f, REFUSE if f.not_null else SKIP, None))
        ones = tuple((f, column_name(f)) for f in entity.ones)
        known = _PLANS[id(entity)] = (entity, tuple(attributes), ones)
    return known[1], known[2]


#: How a present attribute value is checked and written (see value_check).
TEXT, WHOLE, OTHER = range(3)
#: Per entity: each attribute by name with its check, and the attributes an absent value
#: does not simply skip (their default, or a refusal).
_PresentPlan = tuple[dict[str, tuple[Field, int, int]], tuple[tuple[Field, int, Any], ...]]
_PRESENT: dict[int, tuple[Entity, _PresentPlan]] = {}


def present_plan(entity: Entity) -> _PresentPlan:
    """For :func:`present_values`: per attribute name, its field, check and string limit; and
    the attributes that need a look when absent, as in :func:`attribute_plan`."""
    known = _PRESENT.get(id(entity))
    if known is None or known[0] is not entity:
        by_name = {f.name: (f, *value_check(f)) for f, _, _ in attribute_plan(entity)}
        needed = tuple(p for p in attribute_plan(entity) if p[1] != SKIP)
        known = _PRESENT[id(entity)] = (entity, (by_name, needed))
    return known[1]


def value_check(f: Field) -> tuple[int, int]:
    """How a present value of the attribute ``f`` is checked: (TEXT, its longest length) for
    a string, (WHOLE, 0) for a Java long or int, (OTHER, 0) for the rest (by
    :func:`check_value`, then written by ``tables.to_sql``)."""
    if f.type == "String":
        return TEXT, f.string_length or DEFAULT_STRING_LENGTH
    if f.type in ("Long", "Integer"):
        return WHOLE, 0
    return OTHER, 0


def present_values(
    entity: Entity, values: dict[str, Any], cols: list[str], params: list[Any]
) -> bool:
    """Append the columns and SQL values of the attributes ``values`` holds, checked as
    :func:`check_value` does; False (and nothing appended) where a value fails a check or an
    attribute that may not be absent is — the caller then goes through the attributes in the
    entity's order, which reports the same fault ICAT would, first.

    A bean of a createMany holds a few of its entity's attributes: going through what it
    holds, not through every attribute the entity has, halves the store's Python work per
    object (issue 21.6: createMany of 10,000 at 20,000 Datafiles/s).
    """
    by_name, needed = present_plan(entity)
    new_cols: list[str] = []
    new_params: list[Any] = []
    for name, value in values.items():
        plan = by_name.get(name)
        if plan is None or value is None:
            continue  # a relation, or absent (judged below)
        f, how, limit = plan
        if how == TEXT:
            if value.__class__ is not str or len(value) > limit or _NOT_XML.search(value):
                return False
        elif how == WHOLE:
            if value.__class__ is not int or not -(2**63) <= value < 2**63:
                return False
        else:
            try:
                check_value(entity, f, value)
            except (IcatValidation, IcatBadParameter):
                return False
            value = to_sql(f, value)
        new_cols.append(name)
        new_params.append(value)
    for f, when_absent, default in needed:
        if values.get(f.name) is None:
            if when_absent == REFUSE:
                return False
            new_cols.append(f.name)
            new_params.append(to_sql(f, default))
    cols += new_cols
    params += new_params
    return True


def attribute_plan(entity: Entity) -> _AttributePlan:
    """Per attribute, in the entity's order: the field, what it gets when absent (SKIP,
    DEFAULT, REFUSE), its default (a Java primitive boolean: false)."""
    return _plans(entity)[0]


def ones_plan(entity: Entity) -> _OnesPlan:
    """The many-to-one relations of ``entity`` with their columns."""
    return _plans(entity)[1]


def check_applicable(entity: Entity, parameter_type: Any) -> None:
    """ICAT's check before a parameter is stored: its type must apply to the parent's entity.

    ICAT reads the flag on the ParameterType *as sent* (not as stored), so a reference by id
    alone has the flag false and the name null (seen on a real 6.2; Parameter.preparePersist).
    """
    if not isinstance(parameter_type, Bean):
        raise IcatValidation("Type of parameter is not set")
    parent = entity.name.removesuffix("Parameter")
    if parameter_type.values.get(f"applicableTo{parent}") is not True:
        name = parameter_type.values.get("name") or "null"  # Java's string of a null
        article = "an" if parent[0] in "AEIOU" else "a"
        raise IcatValidation(
            f"Parameter of type {name} is not applicable to {article} {parent}"
        )


#: A character XML 1.0 forbids (outside its Char production): control characters but tab, LF
#: and CR, lone surrogates, U+FFFE and U+FFFF. A real ICAT 6.2.0 stores them when written over
#: REST and then sends them raw in SOAP answers that no XML parser reads (its SOAP front
#: refuses them on the way in, as ours does); the local catalogue refuses them at write time,
#: over both interfaces, so that every answer stays well-formed (issue 18).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def check_value(entity: Entity, f: Field, value: Any) -> None:
    if f.type == "String":
        if not isinstance(value, str):
            raise IcatValidation(f"{entity.name}: {f.name} must be a string")
        limit = f.string_length or 255
        if len(value) > limit:
            raise IcatValidation(f"{entity.name}: {f.name} cannot have length > {limit}")
        bad = _NOT_XML.search(value)
        if bad is not None:
            raise IcatBadParameter(
                f"{entity.name}: {f.name} holds U+{ord(bad.group()):04X} at position "
                f"{bad.start()}, a character XML 1.0 does not allow: no SOAP answer could carry it"
            )
    elif f.type in ENUMERATIONS and value not in ENUMERATIONS[f.type]:
        allowed = ", ".join(ENUMERATIONS[f.type])
        raise IcatBadParameter(f"{entity.name}: {f.name} must be one of {allowed}, not {value!r}")
    elif f.rel is RelType.ATTRIBUTE and f.type in ("Long", "Integer"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise IcatValidation(f"{entity.name}: {f.name} must be an integer")
        if not -(2**63) <= value < 2**63:
            raise IcatValidation(f"{entity.name}: {f.name} is out of range")
