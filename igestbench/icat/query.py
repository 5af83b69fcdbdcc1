"""ICAT search queries as immutable values, rendered to ICAT's JPQL syntax without a server.

A :class:`Query` names an entity and, optionally, selected attributes or an aggregate,
conditions, ordering, INCLUDEs and a LIMIT. Every method returns a new Query, so a base query
can be shared and refined freely::

    q = Query("Datafile").where({"dataset.name": "= 'e208945'", "name": Condition("LIKE", "e%")})
    str(q.limit(0, 100))
    # SELECT o FROM Datafile o JOIN o.dataset AS ds WHERE ds.name = 'e208945'
    #   AND o.name LIKE 'e%' LIMIT 0, 100

The rendering follows python-icat's ``Query`` so that the local catalogue sees what real clients
send: the result variable is ``o``; every relation a condition, ordering or attribute path walks
is JOINed under a conventional alias (``ds``, ``i``, ``t`` …, else ``s1``, ``s2`` …); clauses
come in the order SELECT, JOIN, WHERE (conditions sorted by path, joined by AND), ORDER BY,
INCLUDE, LIMIT. Given a :class:`~igestbench.icat.schema.Profile`, every path is checked against
the entity model and a bad one is reported by name.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from igestbench.errors import UsageError
from igestbench.icat.schema import Profile, RelType

#: Aggregates for :meth:`Query.aggregate`; ``:DISTINCT`` applies DISTINCT inside the function.
AGGREGATES = frozenset({
    "DISTINCT", "COUNT", "COUNT:DISTINCT", "MIN", "MAX", "AVG", "AVG:DISTINCT", "SUM",
    "SUM:DISTINCT",
})
JOIN_TYPES = frozenset({"JOIN", "INNER JOIN", "LEFT JOIN", "LEFT OUTER JOIN"})
#: Conventional JOIN/INCLUDE aliases of relation paths (python-icat's), for readable queries.
ALIASES: Mapping[str, str] = MappingProxyType({
    "datafileFormat": "dff", "dataset": "ds", "dataset.investigation": "i", "facility": "f",
    "grouping": "g", "instrumentScientists": "isc", "investigation": "i",
    "investigationGroups": "ig", "investigationInstruments": "ii", "investigationUsers": "iu",
    "parameters": "p", "parameters.type": "pt", "type": "t", "user": "u", "userGroups": "ug",
})

_KEY = re.compile(r"(?:(?P<fn>[A-Za-z_]+)\()?(?P<path>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?(fn)\))")
_OPERATORS = frozenset({
    "=", "<>", "!=", "<", "<=", ">", ">=", "LIKE", "NOT LIKE", "IN", "NOT IN", "BETWEEN",
    "NOT BETWEEN", "IS NULL", "IS NOT NULL", "IS EMPTY", "IS NOT EMPTY",
})


def literal(value: Any) -> str:
    """``value`` as a JPQL literal: strings quoted (quotes doubled), dates as ``{ts …}`` (UTC)."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise UsageError(f"{value} has no JPQL literal")
        return str(value)
    if isinstance(value, dt.datetime):
        when: dt.datetime = value if value.tzinfo is None else value.astimezone(dt.UTC)
        return "{ts " + when.strftime("%Y-%m-%d %H:%M:%S") + "}"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise UsageError(f"cannot write {value!r} ({type(value).__name__}) as a JPQL literal")


@dataclass(frozen=True)
class Condition:
    """A condition on one path, with its value quoted properly: ``Condition("=", "O'Neil")``.

    ``value`` is a single value, a sequence for IN / NOT IN, a (low, high) pair for BETWEEN and
    absent for IS [NOT] NULL / EMPTY.
    """

    op: str
    value: Any = None
    #: LIKE's escape character (``ESCAPE '!'``): the wildcards it precedes match themselves.
    escape: str | None = None

    def __post_init__(self) -> None:
        op = self.op.upper()
        if op not in _OPERATORS:
            raise UsageError(f"unknown condition operator {self.op!r}")
        if self.escape is not None and (not op.endswith("LIKE") or len(self.escape) != 1
                                        or self.escape == "'"):
            raise UsageError(f"ESCAPE {self.escape!r}: one character (not a quote), with LIKE")
        v = self.value
        if op.startswith("IS "):
            ok = v is None
        elif op.endswith("IN"):
            ok = isinstance(v, list | tuple | set | frozenset) and len(v) > 0
        elif op.endswith("BETWEEN"):
            ok = isinstance(v, list | tuple) and len(v) == 2
        else:
            ok = v is not None
        if not ok:
            raise UsageError(f"{op} does not take the value {v!r}")

    def __str__(self) -> str:
        op = self.op.upper()
        if op.startswith("IS "):
            return op
        if op.endswith("IN"):
            # A set has no order of its own: sort it so that equal queries render alike.
            values = self.value
            if isinstance(values, set | frozenset):
                values = sorted(values, key=repr)
            return f"{op} ({', '.join(literal(v) for v in values)})"
        if op.endswith("BETWEEN"):
            low, high = self.value
            return f"{op} {literal(low)} AND {literal(high)}"
        if self.escape is not None:
            return f"{op} {literal(self.value)} ESCAPE {literal(self.escape)}"
        return f"{op} {literal(self.value)}"


ConditionSpec = str | Condition | Sequence[str | Condition]


@dataclass(frozen=True)
class Query:
    """An ICAT search, immutable; ``str(query)`` is its JPQL text."""

    entity: str
    attributes: tuple[str, ...] = ()
    function: str | None = None
    #: (path, possibly wrapped in a JPQL function such as ``UPPER(name)``; rendered conditions).
    conditions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    ordering: tuple[tuple[str, str | None], ...] = ()
    includes: tuple[str, ...] = ()
    include_ones: bool = False
    #: LIMIT (skip, count).
    paging: tuple[int, int] | None = None
    join_specs: tuple[tuple[str, str], ...] = ()
    profile: Profile | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.profile is not None and self.entity not in self.profile.entities:
            raise UsageError(f"unknown entity {self.entity!r} in ICAT {self.profile.name}")
        if not re.fullmatch(r"[A-Z]\w*", self.entity):
            raise UsageError(f"invalid entity name {self.entity!r}")

    # --- building
    def select(self, *attributes: str) -> Query:
        """Return attribute values instead of objects (several → one fieldSet per row)."""
        for a in attributes:
            self._check(a)
        return dataclasses.replace(self, attributes=tuple(attributes))

    def aggregate(self, function: str | None) -> Query:
        """Apply COUNT, MIN, MAX, AVG, SUM (``:DISTINCT`` allowed) or DISTINCT; None: none."""
        if function is not None and function.upper() not in AGGREGATES:
            raise UsageError(f"unknown aggregate {function!r}: choose from {sorted(AGGREGATES)}")
        return dataclasses.replace(self, function=function.upper() if function else None)

    def count(self, distinct: bool = False) -> Query:
        return self.aggregate("COUNT:DISTINCT" if distinct else "COUNT")

    def where(self, conditions: Mapping[str, ConditionSpec] | None = None, /,
              **by_attribute: ConditionSpec) -> Query:
        """Add conditions: path (or ``FUNC(path)``) → condition text, Condition, or a list."""
        merged = {k: list(v) for k, v in self.conditions}
        for key, spec in {**(conditions or {}), **by_attribute}.items():
            self._check(_split_key(key)[1])
            specs = [spec] if isinstance(spec, str | Condition) else list(spec)
            merged.setdefault(key, []).extend(str(c) for c in specs)
        return dataclasses.replace(
            self, conditions=tuple((k, tuple(v)) for k, v in merged.items())
        )

    def order_by(self, *items: str | tuple[str, str]) -> Query:
        """Order by paths (or ``FUNC(path)``), each optionally with "ASC" or "DESC"."""
        ordering: list[tuple[str, str | None]] = []
        for item in items:
            key, direction = (item, None) if isinstance(item, str) else item
            if direction is not None and direction.upper() not in ("ASC", "DESC"):
                raise UsageError(f"invalid ordering direction {direction!r}")
            self._check(_split_key(key)[1])
            if any(k == key for k, _ in ordering):
                raise UsageError(f"cannot order by {key!r} twice")
            ordering.append((key, direction.upper() if direction else None))
        return dataclasses.replace(self, ordering=tuple(ordering))

    def include(self, *paths: str) -> Query:
        """Add related objects to return with the results; ``"1"``: all many-to-one ones."""
        if "1" in paths:
            return dataclasses.replace(self, include_ones=True)
        for p in paths:
            self._check(p, relations_only=True)
        return dataclasses.replace(self, includes=tuple(sorted({*self.includes, *paths})))

    def limit(self, skip: int, count: int) -> Query:
        if skip < 0 or count < 0:
            raise UsageError(f"invalid LIMIT {skip}, {count}")
        return dataclasses.replace(self, paging=(skip, count))

    def join(self, path: str, how: str) -> Query:
        """JOIN the relation ``path`` with ``how`` (e.g. "LEFT JOIN") instead of a plain JOIN."""
        if how.upper() not in JOIN_TYPES:
            raise UsageError(f"invalid join type {how!r}: choose from {sorted(JOIN_TYPES)}")
        self._check(path, relations_only=True)
        specs = dict(self.join_specs) | {path: how.upper()}
        return dataclasses.replace(self, join_specs=tuple(sorted(specs.items())))

    def _check(self, path: str, relations_only: bool = False) -> None:
        """Raise UsageError naming ``path`` if it is not a valid path from the entity."""
        if not re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", path):
            raise UsageError(f"invalid attribute path {path!r}")
        if self.profile is None:
            return
        entity = self.profile.entity(self.entity)
        names = path.split(".")
        for n, name in enumerate(names):
            if not entity.has_field(name):
                raise UsageError(f"invalid path {path!r} for {self.entity}: "
                                 f"{entity.name} has no field {name!r}")
            f = entity.field(name)
            last = n == len(names) - 1
            if f.rel is RelType.ATTRIBUTE and (not last or relations_only):
                raise UsageError(f"invalid path {path!r} for {self.entity}: "
                                 f"{entity.name}.{name} is not a relationship")
            if not last:
                entity = self.profile.entity(f.type)

    # --- rendering
    def _aliases(self, paths: Iterable[str]) -> dict[str, str]:
        """An alias for every relation prefix of ``paths`` (python-icat's choice of names)."""
        aliases: dict[str, str] = {}
        numbered = 0
        for path in sorted(paths):
            parts = path.split(".")[:-1]
            for n in range(1, len(parts) + 1):
                prefix = ".".join(parts[:n])
                if prefix in aliases:
                    continue
                wanted = ALIASES.get(prefix)
                if wanted is None or wanted in aliases.values():
                    numbered += 1
                    wanted = f"s{numbered}"
                aliases[prefix] = wanted
        return aliases

    def _join_aliases(self) -> dict[str, str]:
        keys = [_split_key(k)[1] for k, _ in (*self.conditions, *self.ordering)]
        return self._aliases([*keys, *self.attributes])

    @staticmethod
    def _render(path: str, aliases: Mapping[str, str]) -> str:
        head, _, last = path.rpartition(".")
        return f"{aliases[head]}.{last}" if head else f"o.{path}"

    @property
    def select_clause(self) -> str:
        aliases = self._join_aliases()
        what = ", ".join(self._render(a, aliases) for a in self.attributes) or "o"
        if self.function == "DISTINCT" and len(self.attributes) > 1:
            what = f"DISTINCT {what}"
        elif self.function:
            for fn in reversed(self.function.split(":")):
                what = f"{fn}({what})"
        return f"SELECT {what} FROM {self.entity} o"

    @property
    def join_clause(self) -> str | None:
        aliases = self._join_aliases()
        specs = dict(self.join_specs)
        joins = [
            f"{specs.get(p, 'JOIN')} {self._render(p, aliases)} AS {a}"
            for p, a in sorted(aliases.items())
        ]
        return " ".join(joins) or None

    @property
    def where_clause(self) -> str | None:
        aliases = self._join_aliases()
        terms = []
        for key, conds in sorted(self.conditions, key=lambda c: (_split_key(c[0])[1], c[0])):
            fn, path = _split_key(key)
            target = self._render(path, aliases)
            target = f"{fn}({target})" if fn else target
            terms += [f"{target} {c}" for c in conds]
        return "WHERE " + " AND ".join(terms) if terms else None

    @property
    def order_clause(self) -> str | None:
        aliases = self._join_aliases()
        terms = []
        for key, direction in self.ordering:
            fn, path = _split_key(key)
            target = self._render(path, aliases)
            target = f"{fn}({target})" if fn else target
            terms.append(f"{target} {direction}" if direction else target)
        return "ORDER BY " + ", ".join(terms) if terms else None

    @property
    def include_clause(self) -> str | None:
        if self.include_ones:
            return "INCLUDE 1"
        if not self.includes:
            return None
        aliases = self._aliases(self.includes)
        items = sorted({*self.includes, *aliases})
        rendered = [
            self._render(i, aliases) + (f" AS {aliases[i]}" if i in aliases else "") for i in items
        ]
        return "INCLUDE " + ", ".join(rendered)

    @property
    def limit_clause(self) -> str | None:
        return f"LIMIT {self.paging[0]}, {self.paging[1]}" if self.paging else None

    def __str__(self) -> str:
        clauses = (self.select_clause, self.join_clause, self.where_clause, self.order_clause,
                   self.include_clause, self.limit_clause)
        return " ".join(c for c in clauses if c)


def _split_key(key: str) -> tuple[str | None, str]:
    """``"UPPER(name)"`` → ("UPPER", "name"); ``"name"`` → (None, "name")."""
    m = _KEY.fullmatch(key)
    if m is None:
        raise UsageError(f"invalid attribute {key!r}")
    return m.group("fn"), m.group("path")
