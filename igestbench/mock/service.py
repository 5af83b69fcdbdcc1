"""ICAT's operations with their semantics, in Python terms (the SOAP layer is in soap.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager

from igestbench.icat.beans import Bean
from igestbench.icat.entity_info import BASE_ENTITY, EntityInfo, base_entity_info, entity_info
from igestbench.icat.faults import (
    IcatBadParameter,
    IcatError,
    IcatInsufficientPrivileges,
    IcatInternal,
    IcatValidation,
)
from igestbench.icat.schema import Entity, Profile
from igestbench.mock.auth import AuthenticatorInfo, Authenticators, Sessions
from igestbench.mock.authz import Authorizer
from igestbench.mock.reader import Reader, Restrictions, SearchResult
from igestbench.mock.store import AccessCheck, Store


class _Rollback(Exception):
    """Raised to undo the trial insert of isAccessAllowed(CREATE)."""


class IcatService:
    """One catalogue: store, readers, accounts, sessions and access rules."""

    def __init__(
        self,
        profile: Profile,
        store: Store,
        authenticators: Authenticators,
        sessions: Sessions,
        max_entities: int,
        lifetime_minutes: float,
        query_timeout_s: float = 30.0,
        zone: dt.tzinfo = dt.UTC,
    ) -> None:
        self.profile = profile
        self.store = store
        self.authenticators = authenticators
        self.sessions = sessions
        self.authz = Authorizer(store, authenticators.root_users, zone)
        self.reader = Reader(store, max_entities, zone)
        self.max_entities = max_entities
        self.lifetime_minutes = lifetime_minutes
        self.query_timeout_s = query_timeout_s
        #: The server's time zone: dates without a zone are read in it, answers are given in it.
        self.zone = zone
        #: Where the authenticators answer (getProperties' ``authn.<m>.url``): the catalogue's
        #: own URL, since they are built in; set once it listens.
        self.base_url = "https://localhost:8181"

    def time_budget(self, inline_s: float | None = None) -> AbstractContextManager[None]:
        """The SQL of one request stops after --query-timeout; SQLite errors become faults.

        ``inline_s``: the request runs on the event loop, see :meth:`Store.time_budget`.
        """
        return self.store.time_budget(self.query_timeout_s, inline_s)

    # --- sessions ------------------------------------------------------------------------

    def login(self, plugin: str, credentials: Mapping[str, str]) -> str:
        return self.sessions.open(self.authenticators.authenticate(plugin, credentials))

    def logout(self, sid: str | None) -> None:
        self.sessions.close(sid)

    def get_user_name(self, sid: str | None) -> str:
        return self.sessions.user(sid)

    def get_remaining_minutes(self, sid: str | None) -> float:
        return self.sessions.remaining_minutes(sid)

    def refresh(self, sid: str | None) -> None:
        self.sessions.refresh(sid)

    # --- metadata ------------------------------------------------------------------------

    def get_api_version(self) -> str:
        return self.profile.api_version

    def get_entity_names(self) -> tuple[str, ...]:
        return self.profile.entity_names

    def get_entity_info(self, bean_name: str | None) -> EntityInfo:
        if bean_name == BASE_ENTITY:
            return base_entity_info()  # icat.server answers for the base class too (4.3 and 6.2)
        try:
            entity = self.profile.entity(bean_name or "")
        except KeyError:
            raise IcatBadParameter(f"{bean_name} is not an ICAT entity") from None
        return entity_info(entity)

    def get_authenticator_info(self) -> tuple[AuthenticatorInfo, ...]:
        return self.authenticators.info

    def get_properties(self, sid: str | None) -> list[str]:
        user = self.sessions.user(sid)
        if not self.authz.is_root(user):
            raise IcatInsufficientPrivileges("user must be in rootUserNames")
        return deployment_properties(self)

    # --- writes --------------------------------------------------------------------------

    def _check(self, user: str) -> AccessCheck | None:
        if self.authz.restrictions(user, "CREATE") is None:
            return None  # a root user of ICAT >= 4.4 may do anything

        def check(access: str, entity: Entity, obj_id: int) -> None:
            self.authz.check(user, access, entity, obj_id)

        return check

    def create(self, sid: str | None, bean: Bean) -> int:
        user = self.sessions.user(sid)
        return self.store.create(user, bean, self._check(user))

    def create_many(self, sid: str | None, beans: Sequence[Bean]) -> list[int]:
        user = self.sessions.user(sid)
        self.check_batch_size(len(beans))
        return self.store.create_many(user, beans, self._check(user))

    def update(self, sid: str | None, bean: Bean) -> None:
        user = self.sessions.user(sid)
        self.store.update(user, bean, self._check(user))

    def delete(self, sid: str | None, bean: Bean) -> None:
        # ICAT reports offset 0 for a failing single delete (seen on 6.2)
        user = self.sessions.user(sid)
        self.store.delete_many([bean], self._check(user))

    def delete_many(self, sid: str | None, beans: Sequence[Bean]) -> None:
        user = self.sessions.user(sid)
        self.store.delete_many(beans, self._check(user))

    def check_batch_size(self, count: int) -> None:
        """Bound the work of one call: at most maxEntities objects in, as out (see search)."""
        if count > self.max_entities:
            raise IcatValidation(
                f"attempt to create more than {self.max_entities} entities in one call"
            )

    # --- reads ---------------------------------------------------------------------------

    def _reading(self, sid: str | None, query: str | None) -> tuple[str, str, Restrictions]:
        """The user of ``sid``, the query (ICAT refuses an empty one) and what the user may read."""
        user = self.sessions.user(sid)
        if not query:
            raise IcatBadParameter("query must not be empty")
        return user, query, self.authz.read_restrictions(user)

    def search(self, sid: str | None, query: str | None) -> SearchResult:
        return self.reader.search(*self._reading(sid, query))

    def search_xml(self, sid: str | None, query: str | None) -> str:
        """What :meth:`search` finds, as the ``return`` elements of ICAT's searchResponse.

        The SOAP face answers with this: rows go straight to XML text, with no Bean per row.
        """
        return self.reader.search_xml(*self._reading(sid, query))

    def search_json(self, sid: str | None, query: str | None) -> str:
        """What :meth:`search` finds, as ICAT's REST answer (a JSON array), from the rows."""
        return self.reader.search_json(*self._reading(sid, query))

    def get(self, sid: str | None, query: str | None, primary_key: int) -> Bean:
        user, text, restrict = self._reading(sid, query)
        return self.reader.get(user, text, primary_key, restrict)

    def get_xml(self, sid: str | None, query: str | None, primary_key: int) -> str:
        """What :meth:`get` finds, as the ``return`` element of ICAT's getResponse."""
        user, text, restrict = self._reading(sid, query)
        return self.reader.get_xml(user, text, primary_key, restrict)

    def get_json(self, sid: str | None, query: str | None, primary_key: int) -> str:
        """What :meth:`get` finds, as ICAT's REST answer (``{"Dataset":{…}}``), from the rows."""
        user, text, restrict = self._reading(sid, query)
        return self.reader.get_json(user, text, primary_key, restrict)

    def is_access_allowed(self, sid: str | None, bean: Bean, access: str) -> bool:
        user = self.sessions.user(sid)
        if access not in ("READ", "UPDATE", "DELETE", "CREATE"):
            raise IcatBadParameter(f"{access} is not an accessType")
        entity = self.profile.entities.get(bean.entity)
        if entity is None:
            raise IcatBadParameter(f"{bean.entity} is not an ICAT entity")
        if access != "CREATE":
            if bean.id is None:
                raise IcatBadParameter(f"{entity.name}: the bean has no id")
            self.store.require(entity, int(bean.id))
            return self.authz.allowed(user, access, entity, int(bean.id))
        # CREATE is judged as ICAT does: insert in a transaction, ask, roll back.
        allowed = True
        try:
            with self.store.transaction():
                new_id = self.store.create(user, bean)
                allowed = self.authz.allowed(user, "CREATE", entity, new_id)
                raise _Rollback
        except _Rollback:
            return allowed
        except IcatError:
            raise
        except Exception as exc:  # pragma: no cover - defensive: never leak internals
            raise IcatInternal(str(exc)) from exc


#: ICAT 6.2's default ``search.entitiesToIndex``, in the order its ``HashSet.toString()`` prints
#: it (icat.server PropertyHandler; Java's String hash codes and a 32-bucket table decide it).
_ENTITIES_TO_INDEX_6_2 = (
    "ParameterType, Datafile, User, Dataset, InvestigationType, Sample, InvestigationInstrument, "
    "DatasetType, InstrumentScientist, SampleParameter, DatafileParameter, DatasetParameter, "
    "InvestigationUser, Instrument, Investigation, DatasetTechnique, Facility, DatafileFormat, "
    "SampleType, InvestigationParameter"
)


def deployment_properties(service: IcatService) -> list[str]:
    """What getProperties lists: the lines ICAT's PropertyHandler formats, in its order.

    For 6.2 those of a deployment without notifications, call logging, search engine, cluster
    or IDS key (the digest key would be a secret anyway); for 4.3 the mandatory ones, with the
    empty notification and log lists that ICAT 4.3 required to be set.
    """
    auth = service.authenticators
    minutes = service.lifetime_minutes
    lifetime = f"{int(minutes)}" if minutes == int(minutes) else f"{minutes:g}"
    lines = [f"authn.list {' '.join(i.mnemonic for i in auth.info)}"]
    if service.profile.name == "4.3":
        return [
            *lines,
            f"lifetimeMinutes {lifetime}",
            f"rootUserNames {' '.join(auth.root_user_names)}",
            "notification.list ",
            "log.list ",
        ]
    for info in auth.info:
        lines.append(f"authn.{info.mnemonic}.url = {service.base_url}")
        if info.friendly:
            lines.append(f"authn.{info.mnemonic}.friendly {info.friendly}")
    return [
        *lines,
        f"lifetimeMinutes {lifetime}",
        f"rootUserNames {' '.join(auth.root_user_names)}",
        f"search.entitiesToIndex [{_ENTITIES_TO_INDEX_6_2}]",
        f"maxEntities {service.max_entities}",
        "importCacheSize 50",
        "exportCacheSize 50",
        "maxIdsInQuery 500",
        "jms.topicConnectionFactory java:comp/DefaultJMSConnectionFactory",
    ]
