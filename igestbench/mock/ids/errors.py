"""The exceptions of ids.server and the answers its exception mappers give them.

Each IDS exception carries its HTTP status; ``IdsExceptionMapper`` answers
``{"code": <the class's simple name>, "message": <the short message>}``. ICAT faults met while
serving a call become IDS exceptions the way ids.server translates them, which differs a little
from call to call (:func:`from_icat` with the call's own choice for the rest).
"""

from __future__ import annotations

import json

from igestbench.icat.faults import IcatError, IcatExceptionType


class IdsError(Exception):
    """An ids.server exception: ``code`` (its Java class name), HTTP ``status`` and message."""

    status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def code(self) -> str:
        return type(self).__name__

    def body(self) -> bytes:
        return json.dumps(
            {"code": self.code, "message": self.message}, separators=(",", ":"),
            ensure_ascii=False,
        ).encode("utf-8")


class BadRequestException(IdsError):
    status = 400


class InsufficientPrivilegesException(IdsError):
    status = 403


class NotFoundException(IdsError):
    status = 404


class InternalException(IdsError):
    status = 500


class NotImplementedException(IdsError):
    status = 501


class DataNotOnlineException(IdsError):
    status = 503


class InsufficientStorageException(IdsError):
    status = 500


#: What ids.server's NotFoundExceptionMapper answers a path it does not serve (501).
NOT_SERVED_BODY = (
    b'{"code":"NOT_IMPLEMENTED","message":"Operation not implemented by this IDS server."}'
)


def from_icat(exc: IcatError, other: str = "type") -> IdsError:
    """The IDS exception ids.server raises for an ICAT fault in most of its calls.

    INSUFFICIENT_PRIVILEGES and SESSION are 403, NO_SUCH_OBJECT_FOUND 404; any other fault is
    an InternalException whose message starts with the fault type (``other="type"``, as in put
    and delete) or with the Java class of the fault (``other="class"``, as in the data
    selection of getData, prepareData …).
    """
    kind = exc.fault_type
    if kind in (IcatExceptionType.INSUFFICIENT_PRIVILEGES, IcatExceptionType.SESSION):
        return InsufficientPrivilegesException(exc.message)
    if kind is IcatExceptionType.NO_SUCH_OBJECT_FOUND:
        return NotFoundException(exc.message)
    if other == "class":
        return InternalException(f"class org.icatproject.IcatException_Exception {exc.message}")
    return InternalException(f"{kind.value} {exc.message}")
