"""The model of the REST front's routes: which resource methods of icat.server's ``ICATRest``
the local catalogue serves, and what follows from it — dispatch, the ``Allow`` list of each
path, and the WADL document ``OPTIONS`` answers.

One :class:`Route` per resource method, with what Jersey publishes of it: its path template,
HTTP method, Java method name (the WADL's method id), its parameters and media types. A path
no route matches is one ICAT does not serve (501); a method no route of the path has is 405,
which ICAT's ThrowableExceptionMapper turns into INTERNAL. To serve a new resource, add its
routes to :data:`ROUTES` and a handler of that name to :class:`~igestbench.mock.rest.RestEndpoint`.

Jersey's own answers, as a real ICAT 6.2.0 (Jersey 3.1.5) gives them
(``fixtures/icat-6.2/exchanges/rest-options-*.json``):

* ``Allow`` lists the path's methods plus HEAD (where GET is) and OPTIONS, in the order of a
  Java ``HashSet`` of those names (``HEAD, DELETE, POST, GET, OPTIONS`` on entityManager);
* the WADL names the requested path itself (``session/<the id>``, not the template), each method
  with its id, its query parameters (or, for a form, the form's parameters inside a
  representation of its media type) and the media type it produces; void methods have no
  response element, methods with neither are empty elements;
* ``Last-modified`` is the time of the request, in RFC 1123 form with "UTC".
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import quoteattr

JSON = "application/json"
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
WADL = "application/vnd.sun.wadl+xml"


@dataclass(frozen=True)
class Param:
    """A query or form parameter of a resource method, with its XML Schema type."""

    name: str
    type: str = "xs:string"


@dataclass(frozen=True)
class Route:
    """One resource method of ICATRest that the local catalogue serves."""

    #: path template under /icat/, ``{name}`` for a path parameter (one segment)
    path: str
    method: str
    #: the RestEndpoint method answering it
    handler: str
    #: the ICATRest method's name: the WADL method id
    java: str
    #: query parameters, or with ``consumes`` the fields of the body
    params: tuple[Param, ...] = ()
    #: the media type of the request body (a form), None without one
    consumes: str | None = None
    #: the media type of the answer, None for a void method (204)
    produces: str | None = JSON

    def matches(self, parts: Sequence[str]) -> bool:
        pattern = _segments(self.path)
        return len(pattern) == len(parts) and all(
            p.startswith("{") or p == part for p, part in zip(pattern, parts, strict=True)
        )


@functools.cache
def _segments(path: str) -> tuple[str, ...]:
    """A route's path template in segments, split once (every request asks every route)."""
    return tuple(path.split("/"))


_SESSION = Param("sessionId")
#: In the order a real ICAT 6.2.0's WADL lists each path's methods.
ROUTES: tuple[Route, ...] = (
    Route("entityManager", "POST", "_write", "write", (_SESSION, Param("entities")), FORM),
    Route(
        "entityManager", "DELETE", "_delete", "delete", (_SESSION, Param("entities")), produces=None
    ),
    Route(
        "entityManager",
        "GET",
        "_search",
        "search",
        (_SESSION, Param("query"), Param("id", "xs:long")),
    ),
    # ICAT's export and import (igestbench.mock.port): a file, not JSON
    Route("port", "POST", "_import", "importData", consumes=MULTIPART, produces=None),
    Route("port", "GET", "_export", "exportData", (Param("json"),), produces="text/plain"),
    Route("properties", "GET", "_properties", "getProperties"),
    Route("session", "POST", "_login", "login", (Param("json"),), FORM),
    Route("session/{sessionId}", "DELETE", "_logout", "logout", produces=None),
    Route("session/{sessionId}", "GET", "_session", "getSession"),
    Route("session/{sessionId}", "PUT", "_refresh", "refresh", produces=None),
    Route("user/{userName}", "GET", "_logged_in", "isLoggedIn1"),
    Route("user/{mnemonic}/{userName}", "GET", "_logged_in", "isLoggedIn2"),
    Route("version", "GET", "_version", "getVersion"),
)


def routes_of(parts: Sequence[str], routes: Sequence[Route] = ROUTES) -> list[Route]:
    """The routes of the path ``parts`` (its segments under /icat/); empty: not served."""
    return [route for route in routes if route.matches(parts)]


def _java_hash(text: str) -> int:
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value


def allow(routes: Sequence[Route]) -> str:
    """The ``Allow`` header Jersey gives a path with these routes.

    Jersey collects the names in a ``java.util.HashSet`` (16 buckets for so few): its iteration
    order is the bucket order of each name's spread String hash, then insertion order.
    """
    names = [r.method for r in routes]
    if "GET" in names:
        names.append("HEAD")
    names.append("OPTIONS")
    buckets: dict[int, list[str]] = {}
    for name in dict.fromkeys(names):
        h = _java_hash(name)
        buckets.setdefault((h ^ (h >> 16)) & 15, []).append(name)
    return ", ".join(name for bucket in sorted(buckets) for name in buckets[bucket])


def _param(p: Param, indent: str) -> str:
    return (
        f'{indent}<param xmlns:xs="http://www.w3.org/2001/XMLSchema" name={quoteattr(p.name)} '
        f'style="query" type="{p.type}"/>\n'
    )


def _method(route: Route) -> str:
    pad = " " * 12
    head = f'{pad}<method id="{route.java}" name="{route.method}"'
    inner = ""
    if route.params or route.consumes:
        inner += f"{pad}    <request>\n"
        if route.consumes:
            if route.params:
                inner += f'{pad}        <representation mediaType="{route.consumes}">\n'
                inner += "".join(_param(p, pad + " " * 12) for p in route.params)
                inner += f"{pad}        </representation>\n"
            else:
                inner += f'{pad}        <representation mediaType="{route.consumes}"/>\n'
        else:
            inner += "".join(_param(p, pad + " " * 8) for p in route.params)
        inner += f"{pad}    </request>\n"
    if route.produces:
        inner += (
            f"{pad}    <response>\n"
            f'{pad}        <representation mediaType="{route.produces}"/>\n'
            f"{pad}    </response>\n"
        )
    if not inner:
        return head + "/>\n"
    return f"{head}>\n{inner}{pad}</method>\n"


def wadl(base: str, path: str, routes: Sequence[Route]) -> bytes:
    """The WADL document of one resource: ``path`` (as requested) under ``base`` (…/icat/)."""
    text = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<application xmlns="http://wadl.dev.java.net/2009/02">\n'
        '    <doc title="sv7 local catalogue"/>\n'
        "    <grammars/>\n"
        f"    <resources base={quoteattr(base)}>\n"
        f"        <resource path={quoteattr(path)}>\n"
        + "".join(_method(r) for r in routes)
        + "        </resource>\n"
        "    </resources>\n"
        "</application>\n"
    )
    return text.encode("utf-8")


def last_modified(now: dt.datetime | None = None) -> str:
    """``Thu, 26 Nov 2026 05:43:44 UTC``: the form of Jersey's ``Last-modified``."""
    now = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    months = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
    return (
        f"{days[now.weekday()]}, {now.day:02d} {months[now.month - 1]} {now.year} "
        f"{now:%H:%M:%S} UTC"
    )
