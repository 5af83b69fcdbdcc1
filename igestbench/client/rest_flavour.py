"""The ``rest`` flavour: ICAT's REST API (``/icat/...``, ICAT 4.4 and later) on a pooled
keep-alive ``requests.Session``, speaking Beans like the SOAP flavours.

Requests and answers go through :mod:`igestbench.icat.rest_json`, the same codec the local
catalogue's REST front uses; TLS policy, proxies and timeouts are those of every flavour
(:func:`igestbench.client.transport.http_session`), and so are the failures: an answer
``{"code": …, "message": …, "offset": …}`` is raised as the ICAT fault of that code
(:func:`igestbench.icat.faults.error_from_fault`), everything else as a
:class:`~igestbench.client.transport.TransportFailure` with its cause. A server without the REST
API (ICAT 4.3 and older, or a path a proxy does not forward) fails at connect with
``http-status``.

The REST API puts the session id in URLs (``/icat/session/<id>``, ``?sessionId=``), so every
failure message is scrubbed of it here, before it can reach a log or a report.

ICAT's REST API has no ``getEntityNames`` or ``getEntityInfo``. :meth:`RestCatalogue.entity_names`
asks the server for its version (so it is a real, session-less round trip, as the outage probe
needs) and answers with the entity names of the API profile that version selects, from our one
entity model; :meth:`RestCatalogue.entity_info` raises
:class:`~igestbench.icat.faults.IcatNotImplemented`, as ICAT answers for what it does not serve.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import requests

from igestbench import redaction
from igestbench.client.base import ClientConfig
from igestbench.client.transport import (
    TransportCause,
    TransportFailure,
    call_budget,
    fault_error,
    http_session,
    profile_for_version,
    redact,
    status_failure,
    timeouts,
    transport_errors,
)
from igestbench.icat import rest_json
from igestbench.icat.beans import Bean
from igestbench.icat.endpoint import endpoint_of
from igestbench.icat.entity_info import EntityInfo
from igestbench.icat.faults import IcatError, IcatNoSuchObject, IcatNotImplemented, IcatSession
from igestbench.icat.query import Query
from igestbench.icat.schema import Profile

#: Where ICAT's REST resources are, on the host and port of the SOAP service.
REST_PATH = "/icat"


def rest_base_url(url: str) -> str:
    """``https://host:port/icat`` for any address a user may give (see endpoint_of)."""
    parts = urlsplit(endpoint_of(url).service_url)
    return f"{parts.scheme}://{parts.netloc}{REST_PATH}"


class RestCatalogue:
    """A :class:`~igestbench.client.base.Catalogue` over ICAT's REST API."""

    flavour = "rest"

    def __init__(self, config: ClientConfig) -> None:
        endpoint = endpoint_of(config.url)
        self._base = rest_base_url(config.url)
        self._timeouts = timeouts(config)
        self._budget = call_budget(config)
        self._http: requests.Session = http_session(config, endpoint)
        self._session_id: str | None = None
        try:
            answer = self._call("GET", "version")
            if not isinstance(answer, dict) or not isinstance(answer.get("version"), str):
                raise TransportFailure(
                    TransportCause.NOT_ICAT, self._base, "/version is not ICAT's answer"
                )
        except BaseException:
            self._http.close()  # a failed connect must not leave a socket behind
            raise
        self._api_version: str = answer["version"]
        self._profile: Profile = profile_for_version(self._api_version)

    def __repr__(self) -> str:
        return f"<RestCatalogue {self._base} ICAT {self._api_version}>"

    # --- the wire ------------------------------------------------------------------------

    @contextlib.contextmanager
    def _scrubbed(self) -> Iterator[None]:
        """Failures without the session id (it is in the URLs of this API)."""
        try:
            with transport_errors(self._base, timeout=self._budget):
                yield
        except TransportFailure as exc:
            detail = redact(exc.detail, self._session_id)
            # not chained: the original exception names the URL, session id included
            raise TransportFailure(exc.cause, exc.url, detail, exc.status) from None

    def _send(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
    ) -> tuple[int, bytes, str]:
        with self._scrubbed():
            response = self._http.request(
                method,
                f"{self._base}/{path}",
                params=params,
                data=form,
                timeout=self._timeouts,
            )
            content = response.content
        return response.status_code, content, response.headers.get("Content-Type", "")

    def _call(
        self,
        method: str,
        path: str,
        params: Mapping[str, str] | None = None,
        form: Mapping[str, str] | None = None,
    ) -> Any:
        status, content, _ = self._send(method, path, params, form)
        return self._decode(status, content)

    def _decode(self, status: int, content: bytes) -> Any:
        """The JSON of a successful answer; raises the fault or failure of any other."""
        if status == 204:
            return None
        try:
            data = json.loads(content) if content else None
        except ValueError:
            if status == 200:
                raise TransportFailure(
                    TransportCause.NOT_ICAT, self._base, "the answer is not JSON"
                ) from None
            raise status_failure(self._base, status) from None
        if status == 200:
            return data
        if isinstance(data, dict) and isinstance(data.get("code"), str):
            offset = data.get("offset")
            raise fault_error(
                data["code"],
                str(data.get("message", "")),
                offset if isinstance(offset, int) else -1,
                self._session_id,
            )
        raise status_failure(self._base, status)

    def _sid(self) -> str:
        return self._session_id or ""

    def _session_path(self) -> str:
        if not self._session_id:
            # /icat/session/ without an id is another resource (login): say what ICAT says
            # for a missing session id, as the SOAP flavours hear it
            raise IcatSession("Session Id cannot be null or empty.")
        return "session/" + quote(self._session_id, safe="")

    def _decoded(self, decode: Any, data: Any) -> Any:
        try:
            return decode(self._profile, data)
        except (IcatError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise TransportFailure(
                TransportCause.NOT_ICAT, self._base, f"an answer ICAT does not give: {exc}"
            ) from None

    # --- sessions ------------------------------------------------------------------------

    def login(self, authenticator: str, credentials: Mapping[str, str]) -> None:
        redaction.remember_login(credentials)
        spec = {
            "plugin": authenticator,
            "credentials": [{key: value} for key, value in credentials.items()],
        }
        answer = self._call("POST", "session", form={"json": json.dumps(spec)})
        sid = answer.get("sessionId") if isinstance(answer, dict) else None
        if not isinstance(sid, str):
            raise TransportFailure(TransportCause.NOT_ICAT, self._base, "no sessionId in answer")
        redaction.remember_session(sid)
        self._session_id = sid

    def logout(self) -> None:
        try:
            self._call("DELETE", self._session_path())
        finally:
            self._session_id = None

    def refresh(self) -> None:
        self._call("PUT", self._session_path())

    def user_name(self) -> str:
        answer = self._call("GET", self._session_path())
        return str(answer["userName"])

    def version(self) -> str:
        return self._api_version

    def entity_names(self) -> list[str]:
        answer = self._call("GET", "version")
        return list(profile_for_version(str(answer["version"])).entity_names)

    def entity_info(self, name: str) -> EntityInfo:
        raise IcatNotImplemented("ICAT's REST API has no getEntityInfo: use a SOAP flavour")

    # --- data ----------------------------------------------------------------------------

    def search(self, query: str | Query) -> list[Any]:
        return self.decode_search(self.search_raw(query))

    def search_raw(self, query: str | Query) -> bytes:
        """The search answer as it came (server and wire time), faults raised at once."""
        params = {"sessionId": self._sid(), "query": str(query)}
        status, content, _ = self._send("GET", "entityManager", params=params)
        if status != 200:
            self._decode(status, content)
        return content

    def decode_search(self, raw: bytes) -> list[Any]:
        """What :meth:`search_raw` fetched, decoded (client time)."""
        data = self._decode(200, raw)
        found: list[Any] = self._decoded(rest_json.search_from_answer, data)
        return found

    def get(self, query: str, obj_id: int) -> Bean:
        params = {"sessionId": self._sid(), "query": query, "id": str(int(obj_id))}
        data = self._call("GET", "entityManager", params=params)
        bean: Bean = self._decoded(rest_json.bean_from_answer, data)
        return bean

    def _write(self, entities: list[Any]) -> list[int]:
        form = {"sessionId": self._sid(), "entities": json.dumps(entities, ensure_ascii=False)}
        ids = self._call("POST", "entityManager", form=form)
        if not isinstance(ids, list):
            raise TransportFailure(TransportCause.NOT_ICAT, self._base, "write answered no ids")
        return [int(i) for i in ids]

    def create(self, bean: Bean) -> int:
        return self.create_many([bean])[0]

    def create_many(self, beans: Sequence[Bean]) -> list[int]:
        return self._write(rest_json.write_json(self._profile, beans))

    def update(self, bean: Bean) -> None:
        # ICAT's write would create an object without id: SOAP's update refuses it so
        if bean.id is None:
            raise IcatNoSuchObject(f"{bean.entity} has null primary key.")
        self._write(rest_json.write_json(self._profile, [bean], full=True))

    def delete(self, bean: Bean) -> None:
        self.delete_many([bean])

    def delete_many(self, beans: Sequence[Bean]) -> None:
        entities = json.dumps(rest_json.reference_json(beans))
        self._call(
            "DELETE", "entityManager", params={"sessionId": self._sid(), "entities": entities}
        )

    def close(self) -> None:
        self._http.close()
