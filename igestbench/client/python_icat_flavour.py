"""The python-icat flavour: an unmodified ``icat.Client`` behind our Catalogue protocol.

It is the reference point of the benchmark (what most facilities' scripts use) and a second,
independent reading of every answer: its suds parser and entity classes share no code with our
decoder, so when both flavours return the same Beans the answer was read correctly.

Beans become python-icat entity objects through ``client.new`` (relations recursively), and
results become Beans by walking the entity objects along the fields of the server's profile.
TLS policy is that of the other flavours (:func:`~igestbench.client.transport.ssl_context`,
given to python-icat as its ``sslContext``); the proxies are the ones
:func:`~igestbench.client.transport.environment_proxies` resolves for them. suds has a single
timeout for connecting and each read; the whole call is bounded by its budget
(:mod:`igestbench.client.deadline`), through the SSL context and, for ``http://``, through a
transport of ours: python-icat makes its transport itself, from ``icat.client.HTTPSTransport``,
which is therefore ours while a client is made (:func:`_bounded_transport`).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import urllib.request
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import icat
import icat.client
import icat.entity
import icat.exception
import icat.sslcontext
import suds
import suds.transport

from igestbench import redaction
from igestbench.client.base import ClientConfig
from igestbench.client.deadline import BoundedHTTPHandler, BoundedHTTPSHandler
from igestbench.client.transport import (
    call_budget,
    environment_proxies,
    fault_error,
    profile_for_version,
    ssl_context,
    status_failure,
    transport_errors,
)
from igestbench.icat.beans import Bean
from igestbench.icat.endpoint import endpoint_of
from igestbench.icat.entity_info import EntityFieldInfo, EntityInfo
from igestbench.icat.query import Query
from igestbench.icat.schema import BASE_FIELD_NAMES, Profile, RelType

#: Set by the server and read-only in python-icat's entities (ICAT ignores them in requests).
_SERVER_SET = BASE_FIELD_NAMES - {"id"}
#: What python-icat's constructor raises when the WSDL is not ICAT's, besides parse errors:
#: suds builds a client from any XML and fails later with a bare ``Exception("No services
#: defined")``. Only the constructor is guarded with it; network errors are classified first.
_NOT_ICAT = (Exception,)


class _BoundedTransport(icat.sslcontext.HTTPSTransport):  # type: ignore[misc]
    """python-icat's transport on bounded connections, for ``http://`` as for ``https://``."""

    def u2handlers(self) -> list[urllib.request.BaseHandler]:
        # suds' own list is the proxy handler alone; python-icat adds HTTPS with its context
        return [
            urllib.request.ProxyHandler(self.proxy),
            BoundedHTTPHandler(),
            BoundedHTTPSHandler(self.ssl_context),
        ]


_TRANSPORT_SWAP = threading.Lock()


@contextlib.contextmanager
def _bounded_transport() -> Iterator[None]:
    """While a client is made, python-icat makes a :class:`_BoundedTransport` (it takes no
    transport from outside); one client at a time, and its own class again afterwards."""
    with _TRANSPORT_SWAP:
        original = icat.client.HTTPSTransport
        icat.client.HTTPSTransport = _BoundedTransport
        try:
            yield
        finally:
            icat.client.HTTPSTransport = original


class PythonIcatCatalogue:
    """A :class:`~igestbench.client.base.Catalogue` on python-icat (suds underneath)."""

    flavour = "python-icat"

    def __init__(self, config: ClientConfig) -> None:
        self._endpoint = endpoint_of(config.url)
        self._budget = call_budget(config)
        tls = ssl_context(config)  # checks the TLS options, too
        with (
            self._library_errors(self._endpoint.wsdl_url, not_icat=_NOT_ICAT),
            warnings.catch_warnings(),
            _bounded_transport(),
        ):
            # suds' WSDL reader uses deprecated stdlib calls; not ours to fix.
            warnings.simplefilter("ignore", DeprecationWarning)
            self._client: Any = icat.Client(
                self._endpoint.wsdl_url,
                sslContext=tls,
                proxy=environment_proxies(self._endpoint.service_url),
                # suds applies its options in keyword order, and ``timeout`` lives in the
                # transport's options: python-icat fills in ``transport`` (its HTTPS transport)
                # in place of this None, so the timeout lands on the transport actually used.
                transport=None,
                timeout=config.read_timeout,
            )
        # python-icat would log out in close() and at interpreter exit; the other flavours leave
        # that to logout(), and an exit hook must not wait on an unreachable server.
        self._client.autoLogout = False
        self._api_version = str(self._client.apiversion)
        self._profile: Profile = profile_for_version(self._api_version)

    def __repr__(self) -> str:
        return f"<PythonIcatCatalogue {self._endpoint.service_url} ICAT {self._api_version}>"

    # --- errors --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _library_errors(
        self, url: str, not_icat: tuple[type[BaseException], ...] = ()
    ) -> Iterator[None]:
        """python-icat's and suds' exceptions as ours: ICAT faults, then transport failures."""
        with transport_errors(url, not_icat=not_icat, timeout=self._budget):
            try:
                yield
            except icat.exception.ICATError as exc:
                session_id = getattr(self, "_client", None) and self._client.sessionId
                type_name = str(exc.type) if exc.type is not None else None
                raise fault_error(type_name, exc.message, exc.offset, session_id) from None
            except suds.transport.TransportError as exc:
                if exc.fp is not None:  # the unread answer, which holds the socket open
                    exc.fp.close()
                raise status_failure(url, int(exc.httpcode)) from exc

    def _call(self, method: str, *args: Any) -> Any:
        with self._library_errors(self._endpoint.service_url):
            return getattr(self._client, method)(*args)

    # --- conversions ---------------------------------------------------------------------

    def _entity(self, bean: Bean) -> Any:
        """``bean`` as a python-icat entity object (relations recursively)."""
        entity = self._profile.entity(bean.entity)
        values: dict[str, Any] = {}
        for name, value in bean.values.items():
            if name in _SERVER_SET:
                continue
            rel = entity.field(name).rel
            if value is None or rel is RelType.ATTRIBUTE:
                values[name] = value
            elif rel is RelType.ONE:
                values[name] = self._entity(value)
            else:
                values[name] = [self._entity(child) for child in value]
        obj = self._client.new(bean.entity, **values)
        # suds renders every required element, unset ones empty (``<complete/>`` in a reference
        # to a Dataset), which is not a valid boolean; send only what the bean sets, as the
        # other flavours do.
        instance = obj.instance
        for name, value in list(instance):
            if value is None:
                delattr(instance, name)
        return obj

    def _bean(self, obj: Any) -> Bean:
        """A python-icat entity object as a Bean, walking the fields of our profile."""
        entity = self._profile.entity(type(obj).BeanName)
        values: dict[str, Any] = {}
        for f in (*self._profile.base_fields_in_wire_order(), *entity.fields):
            value = getattr(obj, f.name, None)
            if value is None:
                continue
            if f.rel is RelType.ONE:
                values[f.name] = self._bean(value)
            elif f.rel is RelType.MANY:
                # python-icat shows a relation that was not INCLUDEd as an empty list.
                if len(value):
                    values[f.name] = [self._bean(child) for child in value]
            else:
                values[f.name] = self._value(value)
        return Bean(entity.name, values)

    def _value(self, value: Any) -> Any:
        """A search result item or attribute as the other flavours give it."""
        if isinstance(value, icat.entity.Entity):
            return self._bean(value)
        if isinstance(value, tuple):
            return tuple(self._value(v) for v in value)
        if isinstance(value, dt.datetime):
            aware = value if value.tzinfo is not None else value.replace(tzinfo=dt.UTC)
            return aware.astimezone(dt.UTC)
        if isinstance(value, str):
            return str(value)  # suds' Text subclass
        return value

    # --- sessions ------------------------------------------------------------------------

    def login(self, authenticator: str, credentials: Mapping[str, str]) -> None:
        redaction.remember_login(credentials)
        self._call("login", authenticator, dict(credentials))
        # suds logs the answer before this line; its pattern covers that, this the rest
        redaction.remember_session(self._client.sessionId)

    def logout(self) -> None:
        self._call("logout")

    def refresh(self) -> None:
        self._call("refresh")

    def user_name(self) -> str:
        return str(self._call("getUserName"))

    def version(self) -> str:
        return self._api_version

    def entity_names(self) -> list[str]:
        return [str(name) for name in self._call("getEntityNames")]

    def entity_info(self, name: str) -> EntityInfo:
        info = self._call("getEntityInfo", name)
        constraints = getattr(info, "constraints", None) or []
        fields = tuple(
            EntityFieldInfo(
                name=str(f.name),
                type=str(f.type),
                rel=RelType(str(f.relType)),
                not_null=bool(f.notNullable),
                string_length=int(f.stringLength) if getattr(f, "stringLength", None) else None,
                comment=str(getattr(f, "comment", None) or ""),
            )
            for f in getattr(info, "fields", None) or []
        )
        constraint = tuple(str(n) for n in constraints[0].fieldNames) if constraints else ()
        return EntityInfo(str(getattr(info, "classComment", None) or ""), constraint, fields)

    # --- data ----------------------------------------------------------------------------

    def search(self, query: str | Query) -> list[Any]:
        return [self._value(item) for item in self._call("search", str(query))]

    def get(self, query: str, obj_id: int) -> Bean:
        return self._bean(self._call("get", query, obj_id))

    def create(self, bean: Bean) -> int:
        return int(self._call("create", self._entity(bean)))

    def create_many(self, beans: Sequence[Bean]) -> list[int]:
        return [int(i) for i in self._call("createMany", [self._entity(b) for b in beans])]

    def update(self, bean: Bean) -> None:
        self._call("update", self._entity(bean))

    def delete(self, bean: Bean) -> None:
        self._call("delete", self._entity(bean))

    def delete_many(self, beans: Sequence[Bean]) -> None:
        self._call("deleteMany", [self._entity(b) for b in beans])

    def close(self) -> None:
        with self._library_errors(self._endpoint.service_url):
            self._client.cleanup()
