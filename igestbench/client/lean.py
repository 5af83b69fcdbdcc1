"""The lean load path: the cheapest client CPU per call, for load sweeps only.

Load sweeps measure the catalogue, so the client must stay out of the way: at a few hundred calls
a second a SOAP library's per-call cost (zeep: WSDL-driven serialisation; suds: more) would
saturate the client before the server. This path does as little as possible per call:

* request envelopes are rendered once per operation from the operation table of the server's
  profile, with placeholders that a call fills by ``str.format_map`` with escaped text (Beans are
  encoded by :func:`igestbench.icat.soapxml.encode_bean`);
* HTTP is one keep-alive ``http.client`` connection. Measured on loopback it costs ~70-110 µs of
  client CPU per small call against ~420-480 µs for a pooled ``requests.Session``, and it keeps
  separate connect and read timeouts (the socket's timeout is switched after connecting), inside
  the call's budget, which bounds the whole exchange (:mod:`igestbench.client.deadline`);
* answers are parsed with lxml and decoded by the same code as the zeep flavour's
  (:func:`igestbench.client.transport.decode_answer`), so both return equal results.

The lean path connects directly: proxies from the environment do not apply (a proxy in between
would become part of what a load sweep measures). TLS policy and timeouts are those of the
:class:`~igestbench.client.base.ClientConfig`, failures those of the other flavours.
"""

from __future__ import annotations

import http.client
import select
from collections.abc import Mapping, Sequence
from typing import Any

from igestbench import redaction
from igestbench.client.base import ClientConfig
from igestbench.client.deadline import BoundedHTTPConnection, BoundedHTTPSConnection
from igestbench.client.envelopes import envelope_template
from igestbench.client.transport import (
    SOAP_HEADERS,
    USER_AGENT,
    call_budget,
    decode_answer,
    profile_for_version,
    read_answer,
    ssl_context,
    transport_errors,
)
from igestbench.icat.beans import Bean
from igestbench.icat.endpoint import Endpoint, endpoint_of
from igestbench.icat.entity_info import EntityInfo
from igestbench.icat.operations import operations_for
from igestbench.icat.query import Query
from igestbench.icat.schema import DEFAULT_PROFILE, Profile, get_profile
from igestbench.icat.soapxml import encode_bean, escape


class KeepAliveConnection:
    """One persistent HTTP(S) connection to a service URL, reopened when the server closed it."""

    #: http.client's connections on bounded sockets (:mod:`igestbench.client.deadline`)
    http_class: type[http.client.HTTPConnection] = BoundedHTTPConnection
    https_class: type[http.client.HTTPSConnection] = BoundedHTTPSConnection

    def __init__(self, endpoint: Endpoint, config: ClientConfig) -> None:
        self._endpoint = endpoint
        self._connect_timeout = config.connect_timeout
        self._read_timeout = config.read_timeout
        #: the budget of a call (None: none, which only the benchmark of its cost uses)
        self._budget: float | None = call_budget(config)
        self._tls = ssl_context(config) if endpoint.scheme == "https" else None
        self._headers = {**SOAP_HEADERS, "User-Agent": USER_AGENT}
        self._connection: http.client.HTTPConnection | None = None

    def _open(self) -> http.client.HTTPConnection:
        host, port = self._endpoint.host, self._endpoint.port
        connection: http.client.HTTPConnection
        if self._tls is not None:
            connection = self.https_class(
                host, port, timeout=self._connect_timeout, context=self._tls
            )
        else:
            connection = self.http_class(host, port, timeout=self._connect_timeout)
        connection.connect()
        if connection.sock is not None:
            connection.sock.settimeout(self._read_timeout)
        return connection

    def _reusable(self) -> http.client.HTTPConnection | None:
        """The open connection unless the server closed it while idle (as urllib3 checks)."""
        connection = self._connection
        if connection is None or connection.sock is None:
            return None
        # An idle keep-alive socket has nothing to read; readable means EOF or reset.
        readable, _, _ = select.select([connection.sock], [], [], 0)
        if readable:
            connection.close()
            return None
        return connection

    def post(self, body: bytes) -> tuple[int, bytes]:
        """(status, body) of a POST to the service URL; TransportFailure when that fails."""
        with transport_errors(self._endpoint.service_url, timeout=self._budget):
            connection = self._reusable() or self._open()
            self._connection = connection
            try:
                connection.request("POST", self._endpoint.path, body, self._headers)
                response = connection.getresponse()
                content = response.read()
            except BaseException:
                connection.close()
                self._connection = None
                raise
            if response.will_close:
                connection.close()
                self._connection = None
        return response.status, content

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class LeanCatalogue:
    """A :class:`~igestbench.client.base.Catalogue` with pre-rendered envelopes and lxml."""

    flavour = "lean"

    def __init__(self, config: ClientConfig) -> None:
        self._config = config
        self._endpoint = endpoint_of(config.url)
        self._http = KeepAliveConnection(self._endpoint, config)
        self._session_id: str | None = None
        self._sid_text = ""
        self._use_profile(get_profile(DEFAULT_PROFILE))
        try:
            self._api_version: str = self._call("getApiVersion")
        except BaseException:
            self._http.close()  # a failed connect must not leave a socket behind
            raise
        self._use_profile(profile_for_version(self._api_version))

    def _use_profile(self, profile: Profile) -> None:
        self._profile = profile
        self._operations = {op.name: op for op in operations_for(profile)}
        self._templates = {op.name: envelope_template(op) for op in operations_for(profile)}

    def sibling(self) -> LeanCatalogue:
        """Another connection in this client's session, made without a call: for queries sent
        side by side (a latency-bound cleanup). Close it when done; it does not log out."""
        twin = LeanCatalogue.__new__(LeanCatalogue)
        twin._config = self._config
        twin._endpoint = self._endpoint
        twin._http = KeepAliveConnection(self._endpoint, self._config)
        twin._session_id, twin._sid_text = self._session_id, self._sid_text
        twin._api_version = self._api_version
        twin._use_profile(self._profile)
        return twin

    def __repr__(self) -> str:
        return f"<LeanCatalogue {self._endpoint.service_url} ICAT {self._api_version}>"

    # --- the wire ------------------------------------------------------------------------

    def _call(self, name: str, **params: str) -> Any:
        status, content = self._post(name, **params)
        return self._decode(name, status, content)

    def _post(self, name: str, **params: str) -> tuple[int, bytes]:
        return self._http.post(self._templates[name].format_map(params).encode("utf-8"))

    def _decode(self, name: str, status: int, content: bytes) -> Any:
        op = self._operations[name]
        answer = read_answer(self._endpoint.service_url, status, content, op, self._session_id)
        return decode_answer(self._profile, op, answer)

    def _bean(self, bean: Bean, tag: str = "bean") -> str:
        return encode_bean(self._profile, bean, tag)

    def _beans(self, beans: Sequence[Bean]) -> str:
        return "".join(encode_bean(self._profile, b, "beans") for b in beans)

    # --- sessions ------------------------------------------------------------------------

    def login(self, authenticator: str, credentials: Mapping[str, str]) -> None:
        redaction.remember_login(credentials)
        entries = "".join(
            f"<entry><key>{escape(k)}</key><value>{escape(v)}</value></entry>"
            for k, v in credentials.items()
        )
        credentials_element = f"<credentials>{entries}</credentials>"
        sid: str = self._call(
            "login", plugin=escape(authenticator), credentials=credentials_element
        )
        self._session_id, self._sid_text = sid, escape(sid)

    def logout(self) -> None:
        try:
            self._call("logout", sessionId=self._sid_text)
        finally:
            self._session_id, self._sid_text = None, ""

    def refresh(self) -> None:
        self._call("refresh", sessionId=self._sid_text)

    def user_name(self) -> str:
        name: str = self._call("getUserName", sessionId=self._sid_text)
        return name

    def version(self) -> str:
        return self._api_version

    def entity_names(self) -> list[str]:
        names: list[str] = self._call("getEntityNames")
        return names

    def entity_info(self, name: str) -> EntityInfo:
        info: EntityInfo = self._call("getEntityInfo", beanName=escape(name))
        return info

    # --- data ----------------------------------------------------------------------------

    def search(self, query: str | Query) -> list[Any]:
        found: list[Any] = self._call("search", sessionId=self._sid_text, query=escape(str(query)))
        return found

    def search_raw(self, query: str | Query) -> bytes:
        """The search answer as it came (server and wire time), faults raised at once."""
        status, content = self._post("search", sessionId=self._sid_text, query=escape(str(query)))
        if status != 200:
            self._decode("search", status, content)
        return content

    def decode_search(self, raw: bytes) -> list[Any]:
        """What :meth:`search_raw` fetched, decoded (client time)."""
        found: list[Any] = self._decode("search", 200, raw)
        return found

    def get(self, query: str, obj_id: int) -> Bean:
        bean: Bean = self._call(
            "get", sessionId=self._sid_text, query=escape(query), primaryKey=str(int(obj_id))
        )
        return bean

    def create(self, bean: Bean) -> int:
        new_id: int = self._call("create", sessionId=self._sid_text, bean=self._bean(bean))
        return new_id

    def create_many(self, beans: Sequence[Bean]) -> list[int]:
        encoded = self._beans(beans)
        ids: list[int] = self._call("createMany", sessionId=self._sid_text, beans=encoded)
        return ids

    def update(self, bean: Bean) -> None:
        self._call("update", sessionId=self._sid_text, bean=self._bean(bean))

    def delete(self, bean: Bean) -> None:
        self._call("delete", sessionId=self._sid_text, bean=self._bean(bean))

    def delete_many(self, beans: Sequence[Bean]) -> None:
        self._call("deleteMany", sessionId=self._sid_text, beans=self._beans(beans))

    def close(self) -> None:
        self._http.close()
