"""ICAT's IcatException types and our exception classes, mapped in exactly one place.

The catalogue side raises :class:`IcatError` subclasses and renders them with
:func:`fault_detail`; client flavours turn a received fault (type name, message, offset) into an
exception with :func:`error_from_fault`. Nothing else in the code base knows the table.
"""

from __future__ import annotations

import enum

from igestbench.errors import Sv7Error


class IcatExceptionType(enum.StrEnum):
    """The values of ICAT's ``icatExceptionType`` (NOT_IMPLEMENTED appeared around 4.6)."""

    BAD_PARAMETER = "BAD_PARAMETER"
    INTERNAL = "INTERNAL"
    INSUFFICIENT_PRIVILEGES = "INSUFFICIENT_PRIVILEGES"
    NO_SUCH_OBJECT_FOUND = "NO_SUCH_OBJECT_FOUND"
    OBJECT_ALREADY_EXISTS = "OBJECT_ALREADY_EXISTS"
    SESSION = "SESSION"
    VALIDATION = "VALIDATION"
    NOT_IMPLEMENTED = "NOT_IMPLEMENTED"


class IcatError(Sv7Error):
    """An IcatException: a fault the catalogue raised on purpose, with its type and offset.

    ``offset`` is the index of the failing bean in createMany/deleteMany and -1 otherwise, as on
    the wire.
    """

    fault_type: IcatExceptionType = IcatExceptionType.INTERNAL

    def __init__(self, message: str, offset: int = -1) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset

    def __str__(self) -> str:
        where = f" (at index {self.offset})" if self.offset >= 0 else ""
        return f"{self.fault_type.value}: {self.message}{where}"


class IcatBadParameter(IcatError):
    fault_type = IcatExceptionType.BAD_PARAMETER


class IcatInternal(IcatError):
    fault_type = IcatExceptionType.INTERNAL


class IcatInsufficientPrivileges(IcatError):
    fault_type = IcatExceptionType.INSUFFICIENT_PRIVILEGES


class IcatNoSuchObject(IcatError):
    fault_type = IcatExceptionType.NO_SUCH_OBJECT_FOUND


class IcatObjectAlreadyExists(IcatError):
    fault_type = IcatExceptionType.OBJECT_ALREADY_EXISTS


class IcatSession(IcatError):
    fault_type = IcatExceptionType.SESSION


class IcatValidation(IcatError):
    fault_type = IcatExceptionType.VALIDATION


class IcatNotImplemented(IcatError):
    fault_type = IcatExceptionType.NOT_IMPLEMENTED


FAULT_CLASSES: dict[IcatExceptionType, type[IcatError]] = {
    cls.fault_type: cls
    for cls in (
        IcatBadParameter,
        IcatInternal,
        IcatInsufficientPrivileges,
        IcatNoSuchObject,
        IcatObjectAlreadyExists,
        IcatSession,
        IcatValidation,
        IcatNotImplemented,
    )
}


def error_from_fault(type_name: str | None, message: str, offset: int | None = -1) -> IcatError:
    """The exception for a fault received on the wire; unknown types become INTERNAL."""
    try:
        cls = FAULT_CLASSES[IcatExceptionType(type_name or "")]
    except ValueError:
        cls = IcatInternal
    return cls(message, -1 if offset is None else offset)


def fault_detail(error: IcatError) -> tuple[str, str, int]:
    """(type, message, offset) of an error, in the form the fault detail carries them."""
    return error.fault_type.value, error.message, error.offset
