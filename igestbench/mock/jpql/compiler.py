"""Entry points: compile search, get and rule queries, each compiled once and cached.

The load benchmarks send the same query string thousands of times a second, so compiled queries
are kept in LRU caches keyed on the profile (hashed by its name), the text and the user (``:user``
is a bound parameter, so each user's compiled query differs only in its parameters). READ
restrictions are applied to a cached template in a second cache, keyed on the restriction too;
that is why a restriction must be hashable: a tuple of (entity name, (sql, params)) pairs.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from igestbench.icat.faults import IcatBadParameter, IcatInternal
from igestbench.icat.schema import Profile
from igestbench.mock.jpql import concise, includes, translate
from igestbench.mock.jpql import syntax as s
from igestbench.mock.jpql.model import CompiledGet, CompiledSearch, RestrictPairs, SearchTemplate
from igestbench.mock.jpql.parser import is_jpql, parse
from igestbench.mock.jpql.shapes import ShapeCache

Restrict = Mapping[str, tuple[str, tuple[Any, ...]]] | RestrictPairs

_CACHE_SIZE = 4096
#: Query texts longer than this are not cached (4,096 of them could otherwise hold gigabytes).
_CACHED_TEXT = 16 * 1024

#: Compiled searches by shape: the same search with other constants (shapes.py).
_SHAPES = ShapeCache()

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _nesting_guard(function: Callable[_P, _R]) -> Callable[_P, _R]:
    """Report a query nested too deeply for Python's recursion limit as ICAT would: INTERNAL
    (a real ICAT 6.2.0 overflows its stack from about 1,700 parentheses)."""

    @functools.wraps(function)
    def guarded(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return function(*args, **kwargs)
        except RecursionError:
            raise IcatInternal("Query is nested too deeply") from None

    return guarded


def compile_search(
    profile: Profile,
    text: str,
    user: str = "",
    restrict: Restrict | None = None,
    zone: dt.tzinfo = dt.UTC,
) -> CompiledSearch:
    """The search ``text`` (JPQL or concise syntax) as SQL for the store.

    ``restrict`` maps entity names to (SQL selecting the ids the user may read, params); the
    result objects (or, for values and aggregates, the FROM entity) are limited to those ids.
    ``zone``: the server's time zone, in which ``{ts …}`` and date strings without a zone are
    read (ICAT reads them in its JVM's default zone). Raises :class:`IcatBadParameter` for
    anything ICAT would refuse.
    """
    if isinstance(restrict, Mapping):
        restrict = tuple(sorted((k, (v[0], tuple(v[1]))) for k, v in restrict.items()))
    if len(text) > _CACHED_TEXT:
        # a huge generated query is compiled for its one use, not kept in the caches' memory
        template = _template.__wrapped__(profile, text, user, zone)
        return _apply(template, restrict) if restrict else template.search
    pairs = restrict or None

    def whole(text: str) -> CompiledSearch:
        if pairs is None:
            return _template(profile, text, user, zone).search
        return _restricted(profile, text, user, pairs, zone)

    # searches that differ only in their constants (another id, another name) share one
    # compilation (shapes.py): the text cache alone never hits when each call names another
    return _SHAPES.compile(text, (profile, user, pairs, zone), whole)


@functools.lru_cache(maxsize=_CACHE_SIZE)
@_nesting_guard
def compile_get(profile: Profile, text: str) -> CompiledGet:
    """A get() query string: ``Dataset``, ``Dataset INCLUDE 1``, ``Dataset INCLUDE Datafile``,
    ``Dataset ds INCLUDE ds.datafiles df, df.parameters``."""
    q: s.GetQuery = parse(text, "get")
    entity = profile.entities.get(q.entity.text)
    if entity is None:
        raise IcatBadParameter(f"{q.entity.text} is not an ICAT entity")
    if q.alias is None:
        included = includes.from_entity_names(profile, entity, q.include)
    else:
        included = includes.from_paths(profile, entity, q.alias.text, q.include)
    return CompiledGet(entity.name, *included)


@functools.lru_cache(maxsize=_CACHE_SIZE)
@_nesting_guard
def compile_ids(
    profile: Profile, text: str, user: str = "", zone: dt.tzinfo = dt.UTC
) -> tuple[str, str, tuple[Any, ...]]:
    """The entity a rule's ``what`` covers and SQL selecting the ids of the covered objects.

    ``what`` is a bare entity name, a concise query or ``SELECT var FROM …`` without ORDER BY,
    INCLUDE or LIMIT. The SQL uses aliases of its own (``r0`` …) so that it can be nested in the
    queries it restricts.
    """
    if is_jpql(text):
        return translate.compile_ids(profile, parse(text, "jpql"), user, zone)
    cq: s.ConciseQuery = parse(text, "concise")
    if cq.include is not None or cq.limit is not None or cq.order:
        raise IcatBadParameter("A rule's query may not have ORDER BY, INCLUDE or a range")
    q, _ = concise.rewrite(profile, cq)
    return translate.compile_ids(profile, q, user, zone)


@functools.lru_cache(maxsize=_CACHE_SIZE)
@_nesting_guard
def _template(profile: Profile, text: str, user: str, zone: dt.tzinfo) -> SearchTemplate:
    if is_jpql(text):
        return translate.compile_select(profile, parse(text, "jpql"), user, zone=zone)
    q, included = concise.rewrite(profile, parse(text, "concise"))
    return translate.compile_select(profile, q, user, included, zone)


@functools.lru_cache(maxsize=_CACHE_SIZE)
def _restricted(
    profile: Profile, text: str, user: str, restrict: RestrictPairs, zone: dt.tzinfo
) -> CompiledSearch:
    return _apply(_template(profile, text, user, zone), restrict)


def _apply(template: SearchTemplate, restrict: RestrictPairs) -> CompiledSearch:
    for name, (sql, params) in restrict:
        if name == template.restrict_entity:
            return template.restricted(sql, params)
    return template.search


def clear_caches() -> None:
    """Forget every compiled query (tests that time cold compilation use this)."""
    for cached in (compile_get, compile_ids, _template, _restricted):
        cached.cache_clear()
    _SHAPES.clear()
