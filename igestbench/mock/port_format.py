"""ICAT's export format 1.0, the writing side: what ``GET /icat/port`` sends and
``POST /icat/port`` reads back (its reading side is :mod:`igestbench.mock.port_grammar`).

A file, as icat.server 6.2.0 writes it (EntityBeanManager.export, EntityInfoHandler):

* ``# ICAT Export file written by <user>``, then the version line ``1.0``;
* per entity type, in ICAT's dependency order (:data:`EXPORT_ORDER`): an empty line, a header
  naming the columns, e.g. ``Rule(?:0,crudFlags:1,grouping(name:2),what:3)``, and one line per
  object;
* columns: ``?`` (a local id, only for types without a uniqueness constraint), with
  ``attributes=ALL`` the four create/mod fields, then every attribute and many-to-one relation in
  the alphabetical order of field names; a relation is written as the uniqueness key of the object
  it points to, nested where a key field is itself a relation
  (``dataset(investigation(facility(name:1),name:2,visitId:3),name:4)``), or as that object's
  ``?`` id when its type has no key;
* values: ``NULL``; strings quoted with ICAT's escapes; dates in the server's time zone to the
  millisecond (``2026-11-26T03:53:11.000Z``, ``…+01:00`` elsewhere); numbers as Java prints them
  (``1.0E-5``); booleans ``true``/``false``; enumerations by name. A null relation is written as
  many columns as its key has attributes: ``NULL`` then ``NA``…

The field lists are those of ICAT's EntityInfoHandler, which are the model's
(:mod:`igestbench.icat.schema`) less :data:`NOT_ENTITY_FIELDS`.
"""

from __future__ import annotations

import datetime as dt
import decimal
import functools
import math
from collections.abc import Mapping
from typing import Any

from igestbench.icat.schema import Entity, Field, Profile, RelType

FILE_VERSION = "1.0"
#: The first line of every file; the user name follows.
HEADER_PREFIX = "# ICAT Export file written by "
#: What the server puts in the Content-Disposition of an export.
FILE_NAME = "icat.export"

#: icat.server 6.2.0's EntityInfoHandler.ENTITIES: the order entity types are exported in, so
#: that each refers only to types before it (and Rule, PublicStep … first).
EXPORT_ORDER = (
    "User", "Grouping", "UserGroup", "Rule", "PublicStep", "Facility", "DatafileFormat",
    "Application", "Instrument", "InvestigationType", "DatasetType", "ParameterType",
    "SampleType", "Investigation", "Sample", "Dataset", "Datafile", "FacilityCycle",
    "DataCollection", "DataCollectionDatafile", "DataCollectionDataset",
    "DataCollectionInvestigation", "DataCollectionParameter", "DatafileParameter",
    "DatasetParameter", "InvestigationParameter", "Job", "Keyword", "Technique",
    "DatasetTechnique", "PermissibleStringValue", "Publication", "RelatedDatafile",
    "SampleParameter", "Shift", "Study", "DataPublicationType", "DataPublication", "Subject",
    "DataPublicationDate", "DataPublicationUser", "Affiliation", "RelatedItem",
    "FundingReference", "DataPublicationFunding", "InvestigationFunding", "InvestigationUser",
    "InvestigationGroup", "StudyInvestigation", "InvestigationInstrument",
    "InstrumentScientist", "DatasetInstrument", "InvestigationFacilityCycle",
)  # fmt: skip

#: Fields the WSDL shows (JAXB reads their public getters) but ICAT's EntityInfoHandler does not
#: know: their Java fields are ``@XmlTransient`` (Rule's compiled forms of ``what``). Neither
#: export nor import has them.
NOT_ENTITY_FIELDS: Mapping[str, frozenset[str]] = {
    "Rule": frozenset({"attribute", "searchJPQL"}),
}

#: The create/mod fields, in the order ``attributes=ALL`` writes them.
SYSTEM_FIELDS = ("createId", "createTime", "modId", "modTime")


def export_order(profile: Profile) -> tuple[str, ...]:
    """The entity types of ``profile`` in export order."""
    return tuple(name for name in EXPORT_ORDER if name in profile.entities)


@functools.cache
def entity_fields(entity: Entity) -> tuple[Field, ...]:
    """Every field EntityInfoHandler knows but the base ones, alphabetical (inherited included)."""
    hidden = NOT_ENTITY_FIELDS.get(entity.name, frozenset())
    return tuple(sorted((f for f in entity.fields if f.name not in hidden), key=lambda f: f.name))


@functools.cache
def export_fields(entity: Entity) -> tuple[Field, ...]:
    """The fields an export writes, in column order: attributes and many-to-one relations."""
    return tuple(f for f in entity_fields(entity) if f.rel is not RelType.MANY)


@functools.cache
def key_fields(entity: Entity) -> tuple[Field, ...]:
    """The fields of ``entity``'s uniqueness key in the order a key is written (alphabetical)."""
    return tuple(f for f in export_fields(entity) if f.name in entity.constraint)


@functools.cache
def table_header(profile: Profile, name: str, all_attributes: bool) -> str:
    """The header line of entity type ``name`` (``USER``: without the create/mod fields)."""
    entity = profile.entities[name]
    columns: list[str] = []
    n = 0
    if not entity.constraint:
        columns.append("?:0")
        n = 1
    if all_attributes:
        for system in SYSTEM_FIELDS:
            columns.append(f"{system}:{n}")
            n += 1
    for f in export_fields(entity):
        if f.rel is RelType.ATTRIBUTE:
            columns.append(f"{f.name}:{n}")
            n += 1
        else:
            text, n = _key_header(profile, profile.entities[f.type], n)
            columns.append(f"{f.name}({text})")
    return f"{name}({','.join(columns)})"


def _key_header(profile: Profile, target: Entity, n: int) -> tuple[str, int]:
    """The columns naming an object of ``target`` by its key, numbered from ``n``."""
    if not target.constraint:
        return f"?:{n}", n + 1
    parts: list[str] = []
    for f in key_fields(target):
        if f.rel is RelType.ONE:
            text, n = _key_header(profile, profile.entities[f.type], n)
            parts.append(f"{f.name}({text})")
        else:
            parts.append(f"{f.name}:{n}")
            n += 1
    return ",".join(parts), n


@functools.cache
def null_key(profile: Profile, name: str) -> str:
    """What stands for a null relation to entity type ``name``: ``NULL`` and an ``NA`` for each
    further attribute of its key.

    As ICAT computes it (EntityInfoHandler's ``exportNull``), a key part that is itself a type
    without a key (a ``?`` column) gets nothing, so a null Job.inputDataCollection is written as
    an empty column — a file the server's own import then refuses.
    """
    count = _key_attributes(profile, profile.entities[name])
    return ",".join(["NULL"] + ["NA"] * (count - 1)) if count else ""


def _key_attributes(profile: Profile, entity: Entity) -> int:
    count = 0
    for f in key_fields(entity):
        if f.rel is RelType.ONE:
            count += _key_attributes(profile, profile.entities[f.type])
        else:
            count += 1
    return count


# --- values ---------------------------------------------------------------------------------

_ESCAPES = str.maketrans(
    {"\\": "\\\\", '"': '\\"', "\t": "\\t", "\r": "\\r", "\n": "\\n", "\f": "\\f", "\b": "\\b"}
)


def quote_string(text: str) -> str:
    """A string value as ICAT writes it: in double quotes, with ``\\ " \\t \\r \\n \\f \\b``
    escaped (other characters, non-ASCII ones included, as they are)."""
    return '"' + text.translate(_ESCAPES) + '"'


def java_double(value: float) -> str:
    """``Double.toString``: ``1.0``, ``0.001``, ``1.0E7``, ``1.234E-5``, ``NaN``, ``Infinity``.

    Decimal notation from 10⁻³ up to 10⁷, computerized scientific notation outside. The digits
    are the shortest that read back as the same double (as Java ≥ 19 prints them; the server's
    Java 17 prints a 17th digit for a few values).
    """
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digit_tuple, exponent = decimal.Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    # value = 0.d1d2d3... * 10**point
    point = len(digit_tuple) + exponent
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{minus}0.{'0' * -point}{digits}"
        whole, fraction = digits[:point].ljust(point, "0"), digits[point:]
        return f"{minus}{whole}.{fraction or '0'}"
    return f"{minus}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def java_date(value: dt.datetime, zone: dt.tzinfo) -> str:
    """``yyyy-MM-dd'T'HH:mm:ss.SSSXXX`` in the server's zone: ``Z`` where its offset is zero."""
    local = value.astimezone(zone)
    text = (
        f"{local.year:04d}-{local.month:02d}-{local.day:02d}T"
        f"{local.hour:02d}:{local.minute:02d}:{local.second:02d}.{local.microsecond // 1000:03d}"
    )
    offset = local.utcoffset() or dt.timedelta(0)
    minutes = int(offset.total_seconds()) // 60
    if minutes == 0:
        return text + "Z"
    sign = "+" if minutes > 0 else "-"
    return f"{text}{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def attribute_text(f: Field, value: Any, zone: dt.tzinfo) -> str:
    """An attribute's value in a data line (ICAT's ``getRep``); None is ``NULL``."""
    if value is None:
        return "NULL"
    if f.type == "String":
        return quote_string(value)
    if f.type in ("boolean", "Boolean"):
        return "true" if value else "false"
    if f.type == "Double":
        return java_double(float(value))
    if f.type == "Date":
        return java_date(value, zone)
    return str(value)  # Integer, Long, and enumerations by name
