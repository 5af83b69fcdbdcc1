"""Who may do what in the local catalogue: ICAT's root users and access rules.

ICAT grants access through Rule objects: ``crudFlags`` (letters of "CRUD"), ``what`` (an entity
name or a query selecting the objects the rule covers) and an optional ``grouping`` (no grouping:
every authenticated user). A user may act on an object if any of their rules covers it. Users in
``rootUserNames`` may do anything in ICAT ≥ 4.4; in 4.3 only on the authorization tables (User,
Grouping, UserGroup, Rule, PublicStep) — the profile decides.

Rules are compiled to SQL selecting the permitted ids (the query translator does that), so a search
is filtered in SQL, and a create is checked inside its transaction after the insert, as ICAT does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from igestbench.icat.faults import IcatError, IcatInsufficientPrivileges
from igestbench.icat.schema import Entity
from igestbench.mock import db
from igestbench.mock.jpql import compile_ids
from igestbench.mock.jpql.model import RULE_SEPARATOR, correlated
from igestbench.mock.store import Store

ACCESS_LETTERS = {"CREATE": "C", "READ": "R", "UPDATE": "U", "DELETE": "D"}
ROOT_TABLES_4_3 = frozenset({"User", "Grouping", "UserGroup", "Rule", "PublicStep"})

_NOTHING = ('SELECT NULL AS "id" WHERE 0', ())
_RULES_SQL = (
    'SELECT r."what", r."crudFlags" FROM "Rule" r WHERE r."grouping_id" IS NULL '
    'OR r."grouping_id" IN (SELECT ug."grouping_id" FROM "UserGroup" ug '
    'JOIN "User" u ON ug."user_id" = u.id WHERE u."name" = ?)'
)

#: entity name → (SQL selecting permitted ids, params); None: no restriction at all.
Restrictions = dict[str, tuple[str, tuple[Any, ...]]]


class Authorizer:
    def __init__(
        self, store: Store, root_users: frozenset[str], zone: dt.tzinfo = dt.UTC
    ) -> None:
        self.store = store
        #: The server's time zone, in which dates without one in rules' queries are read.
        self.zone = zone
        self.root_users = root_users
        self.root_everywhere = store.profile.name != "4.3"
        self._cache: dict[tuple[str, str], tuple[int, Restrictions | None]] = {}

    def is_root(self, user: str) -> bool:
        return user in self.root_users

    def restrictions(self, user: str, access: str) -> Restrictions | None:
        """Per entity, the ids ``user`` may ``access`` (READ, CREATE …); None: unrestricted."""
        if user in self.root_users and self.root_everywhere:
            return None
        key = (user, access)
        generation = self.store.authz_generation
        cached = self._cache.get(key)
        if cached is not None and cached[0] == generation:
            return cached[1]
        result = self._compute(user, ACCESS_LETTERS[access])
        self._cache[key] = (generation, result)
        return result

    def _compute(self, user: str, letter: str) -> Restrictions:
        per_entity: dict[str, list[tuple[str, tuple[Any, ...]]]] = {}
        everything: set[str] = set()
        if user in self.root_users:
            everything |= ROOT_TABLES_4_3
        for what, flags in db.rows(self.store.conn, _RULES_SQL, (user,)):
            if letter not in (flags or "").upper():
                continue
            name = (what or "").strip()
            if name in self.store.profile.entities:
                everything.add(name)
                continue
            try:
                entity_name, sql, params = compile_ids(
                    self.store.profile, name, user=user, zone=self.zone
                )
            except IcatError:
                continue  # a rule ICAT would have refused; it grants nothing
            per_entity.setdefault(entity_name, []).append((sql, tuple(params)))
        result: Restrictions = {}
        for entity in self.store.profile.entities:
            if entity in everything:
                continue
            parts = per_entity.get(entity)
            if not parts:
                result[entity] = _NOTHING
            else:
                sql = RULE_SEPARATOR.join(p[0] for p in parts)
                params = tuple(v for p in parts for v in p[1])
                result[entity] = (sql, params)
        return result

    def check(self, user: str, access: str, entity: Entity, obj_id: int) -> None:
        """Raise INSUFFICIENT_PRIVILEGES unless ``user`` may ``access`` the object."""
        if not self.allowed(user, access, entity, obj_id):
            raise IcatInsufficientPrivileges(
                f"{access} access to this {entity.name} is not allowed."
            )

    def allowed(self, user: str, access: str, entity: Entity, obj_id: int) -> bool:
        restrictions = self.restrictions(user, access)
        if restrictions is None or entity.name not in restrictions:
            return True
        test, params = correlated("o", *restrictions[entity.name])
        row = self.store.conn.execute(
            f'SELECT 1 FROM (SELECT ? AS "id") AS o WHERE {test}', (obj_id, *params)
        )
        return row.fetchone() is not None

    def read_restrictions(self, user: str) -> Mapping[str, tuple[str, tuple[Any, ...]]] | None:
        return self.restrictions(user, "READ")
