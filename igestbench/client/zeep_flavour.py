"""Our client: requests built by zeep from the server's WSDL, answers decoded with our model.

zeep 4.3 cannot be trusted with ICAT's answers: a search result whose INCLUDEd entity is nested in
another (``SELECT i FROM Investigation i INCLUDE i.facility``) is schema-valid, yet zeep stops at
it with "Unexpected element 'createId'" (and with ``strict=False`` silently drops the nested
fields); see ``shared/reference/icat/6.2/README.txt``. So zeep runs with ``raw_response=True``:
it serialises the request (from Beans via its type factory; createMany and deleteMany are
rendered with our model, because zeep takes ~100 µs per bean) and posts it through our pooled
session, and the answer is decoded by :mod:`igestbench.client.transport` with the schema model
of the profile the server reports (4.x → "4.3", else "6.2"). Faults and transport failures
therefore take the same path as in the lean client.

The WSDL and its schema are cached on disk between runs (zeep's SqliteCache, keyed by URL), so a
worker process does not download ~100 kB before its first call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import platformdirs
import requests
import zeep
import zeep.cache
import zeep.exceptions
import zeep.xsd
from lxml import etree

from igestbench import redaction
from igestbench.client.base import ClientConfig
from igestbench.client.envelopes import envelope_template
from igestbench.client.transport import (
    call_budget,
    decode_answer,
    http_session,
    profile_for_version,
    read_answer,
    timeouts,
    transport_errors,
)
from igestbench.icat.beans import Bean
from igestbench.icat.endpoint import endpoint_of
from igestbench.icat.entity_info import EntityInfo
from igestbench.icat.operations import operation
from igestbench.icat.query import Query
from igestbench.icat.schema import DEFAULT_PROFILE, Profile, RelType, get_profile
from igestbench.icat.soapxml import ICAT_NS, encode_bean, escape

#: How long a cached WSDL/XSD is trusted; and only for the ICAT version it was stored for
#: (:class:`WsdlCache`): requests are built from its types, which change with the version.
WSDL_CACHE_SECONDS = 24 * 3600
_BINDING = f"{{{ICAT_NS}}}ICATPortBinding"
#: What zeep raises when the WSDL it got is not one it can use (HTML page, other service …).
_NOT_ICAT = (zeep.exceptions.Error, etree.XMLSyntaxError, ValueError, LookupError)


class WsdlCache(zeep.cache.SqliteCache):
    """zeep's on-disk cache, which also knows what it answered from disk and for which ICAT
    version each WSDL was stored.

    A URL does not name one WSDL for ever: a facility upgrades its ICAT (4.x → 6.x adds
    Investigation.fileCount and more) and a port serves another catalogue later. A bean built
    from a stale WSDL's types then fails (zeep refuses the new fields), so a WSDL read from disk
    is used only for the version it was stored for.
    """

    _VERSION = "#igestbench-icat-version"

    def __init__(self, path: str, timeout: int) -> None:
        super().__init__(path=path, timeout=timeout)  # type: ignore[no-untyped-call]
        #: the URLs this instance answered from disk
        self.hits: list[str] = []

    def get(self, url: str) -> bytes | None:
        content: bytes | None = super().get(url)  # type: ignore[no-untyped-call]
        if content is not None:
            self.hits.append(url)
        return content

    def stored_version(self, wsdl_url: str) -> str | None:
        marker: bytes | None = super().get(wsdl_url + self._VERSION)  # type: ignore[no-untyped-call]
        return marker.decode("utf-8") if marker is not None else None

    def store_version(self, wsdl_url: str, version: str) -> None:
        self.add(wsdl_url + self._VERSION, version.encode("utf-8"))  # type: ignore[no-untyped-call]

    def forget_hits(self) -> None:
        """Drop what this instance answered from disk, so that the next load asks the server."""
        with self.db_connection() as conn:
            conn.executemany("DELETE FROM request WHERE url = ?", [(u,) for u in self.hits])
            conn.commit()
        self.hits.clear()


def wsdl_cache(config: ClientConfig) -> WsdlCache:
    """zeep's on-disk WSDL cache in ``config.cache_dir`` or the user's cache directory."""
    directory = config.cache_dir or Path(platformdirs.user_cache_dir("igestbench"))
    directory.mkdir(parents=True, exist_ok=True)
    return WsdlCache(str(directory / "zeep-wsdl.sqlite"), WSDL_CACHE_SECONDS)


class ZeepCatalogue:
    """A :class:`~igestbench.client.base.Catalogue` on zeep, with our decoding of answers."""

    flavour = "zeep"

    def __init__(self, config: ClientConfig) -> None:
        self._endpoint = endpoint_of(config.url)
        self._timeouts = timeouts(config)
        self._budget = call_budget(config)
        self._session: requests.Session = http_session(config, self._endpoint)
        self._session_id: str | None = None
        self._profile: Profile = get_profile(DEFAULT_PROFILE)
        # zeep ships py.typed but leaves these untyped, hence the ignores below.
        self._types: dict[str, tuple[Any, tuple[str, ...]]] = {}
        try:
            cache = wsdl_cache(config)
            self._client, self._service = self._load_wsdl(config, cache)
            self._api_version: str = self._call("getApiVersion")
            wsdl_url = self._endpoint.wsdl_url
            if cache.hits and cache.stored_version(wsdl_url) != self._api_version:
                # read from disk, but stored for another server at this URL: ask this one
                cache.forget_hits()
                self._client, self._service = self._load_wsdl(config, cache)
            cache.store_version(wsdl_url, self._api_version)
        except BaseException:
            self._session.close()  # a failed connect must not leave sockets behind
            raise
        self._profile = profile_for_version(self._api_version)

    def _load_wsdl(self, config: ClientConfig, cache: WsdlCache) -> tuple[zeep.Client, Any]:
        """The zeep client (WSDL from the cache or the server) and its service proxy."""
        # zeep ships py.typed but leaves these untyped, hence the ignores below.
        transport = zeep.Transport(  # type: ignore[no-untyped-call]
            cache=cache,
            timeout=timeouts(config),
            operation_timeout=timeouts(config),
            session=self._session,
        )
        settings = zeep.Settings(raw_response=True)
        with transport_errors(self._endpoint.wsdl_url, not_icat=_NOT_ICAT, timeout=self._budget):
            client = zeep.Client(  # type: ignore[no-untyped-call]
                self._endpoint.wsdl_url, transport=transport, settings=settings
            )
            # Our normalised URL, not the WSDL's soap:address: behind a proxy or NAT the server
            # may name itself by an address the client cannot reach.
            service = client.create_service(  # type: ignore[no-untyped-call]
                _BINDING, self._endpoint.service_url
            )
        return client, service

    def __repr__(self) -> str:
        return f"<ZeepCatalogue {self._endpoint.service_url} ICAT {self._api_version}>"

    # --- the wire ------------------------------------------------------------------------

    def _call(self, name: str, *args: Any) -> Any:
        status, content = self._post(name, *args)
        return self._decode(name, status, content)

    def _post(self, name: str, *args: Any) -> tuple[int, bytes]:
        with transport_errors(self._endpoint.service_url, timeout=self._budget):
            response: requests.Response = self._service[name](*args)
        return response.status_code, response.content

    def _decode(self, name: str, status: int, content: bytes) -> Any:
        op = operation(self._profile, name)
        url = self._endpoint.service_url
        answer = read_answer(url, status, content, op, self._session_id)
        return decode_answer(self._profile, op, answer)

    def _zeep_bean(self, bean: Bean) -> Any:
        """``bean`` as an object of zeep's type factory (relations recursively)."""
        entity = self._profile.entity(bean.entity)
        values: dict[str, Any] = {}
        for name, value in bean.values.items():
            rel = entity.field(name).rel
            if value is None or rel is RelType.ATTRIBUTE:
                values[name] = value
            elif rel is RelType.ONE:
                values[name] = self._zeep_bean(value)
            else:
                values[name] = [self._zeep_bean(child) for child in value]
        zeep_type, required = self._zeep_type(entity.xml_name)
        # zeep refuses to render a bean that lacks a required element (a Java primitive such as
        # Dataset.complete), but ICAT accepts one and leaves the field at its default, and a
        # reference to an existing object carries only its id: skip what the bean does not set.
        for name in required:
            if values.get(name) is None:
                values[name] = zeep.xsd.SkipValue
        return zeep_type(**values)

    def _zeep_type(self, xml_name: str) -> tuple[Any, tuple[str, ...]]:
        """zeep's type for an entity and the names of its required elements (cached)."""
        known = self._types.get(xml_name)
        if known is None:
            qname = f"{{{ICAT_NS}}}{xml_name}"
            zeep_type = self._client.get_type(qname)  # type: ignore[no-untyped-call]
            required = tuple(n for n, e in zeep_type.elements if not e.is_optional)
            known = self._types[xml_name] = (zeep_type, required)
        return known

    # --- sessions ------------------------------------------------------------------------

    def login(self, authenticator: str, credentials: Mapping[str, str]) -> None:
        redaction.remember_login(credentials)
        entries = [{"key": key, "value": value} for key, value in credentials.items()]
        self._session_id = self._call("login", authenticator, {"entry": entries})

    def logout(self) -> None:
        try:
            self._call("logout", self._session_id)
        finally:
            self._session_id = None

    def refresh(self) -> None:
        self._call("refresh", self._session_id)

    def user_name(self) -> str:
        name: str = self._call("getUserName", self._session_id)
        return name

    def version(self) -> str:
        return self._api_version

    def entity_names(self) -> list[str]:
        names: list[str] = self._call("getEntityNames")
        return names

    def entity_info(self, name: str) -> EntityInfo:
        info: EntityInfo = self._call("getEntityInfo", name)
        return info

    # --- data ----------------------------------------------------------------------------

    def search(self, query: str | Query) -> list[Any]:
        found: list[Any] = self._call("search", self._session_id, str(query))
        return found

    def search_raw(self, query: str | Query) -> bytes:
        """The search answer as it came (server and wire time), faults raised at once."""
        status, content = self._post("search", self._session_id, str(query))
        if status != 200:
            self._decode("search", status, content)
        return content

    def decode_search(self, raw: bytes) -> list[Any]:
        """What :meth:`search_raw` fetched, decoded (client time)."""
        found: list[Any] = self._decode("search", 200, raw)
        return found

    def get(self, query: str, obj_id: int) -> Bean:
        bean: Bean = self._call("get", self._session_id, query, obj_id)
        return bean

    def create(self, bean: Bean) -> int:
        new_id: int = self._call("create", self._session_id, self._zeep_bean(bean))
        return new_id

    def create_many(self, beans: Sequence[Bean]) -> list[int]:
        # zeep spends ~100 µs rendering each bean, more than the catalogue takes to store it,
        # which would make a burst measure zeep: bulk payloads are rendered with our model.
        ids: list[int] = self._call_rendered("createMany", beans)
        return ids

    def update(self, bean: Bean) -> None:
        self._call("update", self._session_id, self._zeep_bean(bean))

    def delete(self, bean: Bean) -> None:
        self._call("delete", self._session_id, self._zeep_bean(bean))

    def delete_many(self, beans: Sequence[Bean]) -> None:
        self._call_rendered("deleteMany", beans)

    def _call_rendered(self, name: str, beans: Sequence[Bean]) -> Any:
        """A ``beans`` operation whose envelope our codec renders, posted on zeep's session."""
        body = envelope_template(operation(self._profile, name)).format_map(
            {
                "sessionId": escape(self._session_id or ""),
                "beans": "".join(encode_bean(self._profile, b, "beans") for b in beans),
            }
        )
        url = self._endpoint.service_url
        with transport_errors(url, timeout=self._budget):
            response = self._session.post(
                url,
                data=body.encode("utf-8"),
                timeout=self._timeouts,
                headers={"Content-Type": "text/xml; charset=utf-8", "SOAPAction": '""'},
            )
        return self._decode(name, response.status_code, response.content)

    def close(self) -> None:
        self._session.close()
