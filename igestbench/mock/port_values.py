"""The values of a data line of an export file, read as icat.server 6.2.0 reads them (the
conversions of Porter.processTuple and Porter.getDate): each attribute's Java type asks for a
token of one type (``Expected an integer value for column 3``), numbers must fit Java's
``Integer``/``Long``, enumerations are names, a date without a zone is in the server's zone and
keeps three digits of its fraction.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from igestbench.icat.faults import IcatInternal
from igestbench.icat.schema import ENUMERATIONS, Field
from igestbench.mock.port_grammar import PortSyntaxError, Token, TokenType

_DATE = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(.*?)")
_JAVA_ENUMS = {"ParameterValueType", "StudyStatus"}


class Unforeseen(IcatInternal):
    """An error the server meets outside its own handling: no line number is added."""


class NumberFormat(Exception):
    """Java's NumberFormatException (an IllegalArgumentException: INTERNAL at the line)."""


def value_at(values: list[Token], column: int) -> Token:
    if column >= len(values):
        # not foreseen by the server: its list access fails outside its own error handling,
        # so the message has no line (seen on a real 6.2.0)
        raise Unforeseen(
            "class java.lang.IndexOutOfBoundsException "
            f"Index {column} out of bounds for length {len(values)}"
        )
    return values[column]


def java_integer(text: str, bits: int) -> int:
    value = int(text)
    if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
        raise NumberFormat(f'For input string: "{text}"')
    return value


def key_value(java_type: str, token: Token, column: int) -> Any:
    """A looked-up attribute's value: the server can look up only by strings and integers."""
    if java_type == "String":
        if token.type is not TokenType.STRING:
            raise PortSyntaxError(f"Expected a String value for column {column}")
        return token.value
    if java_type == "Integer":
        if token.type is not TokenType.INTEGER:
            raise PortSyntaxError(f"Expected an integer value for column {column}")
        return java_integer(token.value, 32)
    raise IcatInternal(f"Don't know how to process {java_type} as selection attribute")


def attribute_value(f: Field, token: Token, n: int, zone: dt.tzinfo) -> Any:
    """The value of attribute ``f`` from data column ``n``, the token's type checked."""
    t, kind = f.type, token.type
    if t == "String":
        if kind is not TokenType.STRING:
            raise PortSyntaxError(f"Expected a string value for column {n}")
        return token.value
    if t in ("Integer", "Long"):
        if kind is not TokenType.INTEGER:
            raise PortSyntaxError(f"Expected an integer value for column {n}")
        return java_integer(token.value, 32 if t == "Integer" else 64)
    if t in ("boolean", "Boolean"):
        if kind is not TokenType.BOOLEAN:
            raise PortSyntaxError(f"Expected a boolean value for column {n}")
        return token.value == "TRUE"
    if t == "Date":
        if kind is not TokenType.TIMESTAMP:
            raise PortSyntaxError(f"Expected a date value for column {n}")
        return date_value(token.value, zone)
    if t == "Double":
        if kind not in (TokenType.REAL, TokenType.INTEGER):
            raise PortSyntaxError(f"Expected a real or integer value for column {n}")
        return float(token.value)
    if t in _JAVA_ENUMS:
        if kind is not TokenType.NAME:
            # the server prints the Java array of the enumeration's values here
            raise PortSyntaxError(
                f"Expected a [Lorg.icatproject.core.entity.{t}; value for column {n}"
            )
        name = token.value.upper()
        if name not in ENUMERATIONS[t]:
            raise IcatInternal(
                f"IllegalArgumentException No enum constant org.icatproject.core.entity.{t}.{name}"
            )
        return name
    raise IcatInternal(f"Don't know how to process {t}")


def date_value(text: str, zone: dt.tzinfo) -> dt.datetime:
    """Porter.getDate: the zone of the text, else the server's; milliseconds truncated."""
    m = _DATE.fullmatch(text)
    try:
        if m is None:
            raise ValueError(text)
        value = dt.datetime.fromisoformat(m.group(1))
        suffix = m.group(3)
        if not suffix:
            value = value.replace(tzinfo=zone)
        else:
            value = value.replace(
                tzinfo=dt.UTC if suffix == "Z" else dt.datetime.strptime(suffix, "%z").tzinfo
            )
    except ValueError:
        raise IcatInternal(f"Unable to parse {text}") from None
    fraction = m.group(2)
    if fraction and len(fraction) > 1:
        value += dt.timedelta(milliseconds=int((fraction + "00")[1:4]))
    return value.astimezone(dt.UTC)
