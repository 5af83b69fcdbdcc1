"""SOAP calls that the :class:`~igestbench.client.base.Catalogue` protocol does not offer.

Checks need a few things no workload does: the authenticators a server offers, isAccessAllowed,
and calls with a session id chosen by the check (one already logged out, one made up). Clients
keep their session id to themselves, so these go through this small caller, which is built from
the lean client's parts (envelopes from the operation table, one keep-alive connection, answers
and faults read by :mod:`igestbench.client.transport`), and therefore fails the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lxml import etree

from igestbench import redaction
from igestbench.client.base import ClientConfig
from igestbench.client.envelopes import envelope_template
from igestbench.client.lean import KeepAliveConnection
from igestbench.client.transport import (
    decode_answer,
    endpoint_of,
    profile_for_version,
    read_answer,
)
from igestbench.icat.beans import Bean
from igestbench.icat.operations import operation
from igestbench.icat.schema import DEFAULT_PROFILE, get_profile
from igestbench.icat.soapxml import encode_bean, escape


@dataclass(frozen=True)
class AuthenticatorFacts:
    """One entry of getAuthenticatorInfo."""

    mnemonic: str
    friendly: str
    admin: bool


class RawSoap:
    """A caller of single ICAT operations with explicit session ids (no session of its own)."""

    def __init__(self, config: ClientConfig) -> None:
        self._endpoint = endpoint_of(config.url)
        self._http = KeepAliveConnection(self._endpoint, config)
        self._profile = get_profile(DEFAULT_PROFILE)
        try:
            self.api_version: str = self._call("getApiVersion")
        except BaseException:
            self._http.close()
            raise
        self._profile = profile_for_version(self.api_version)

    def __enter__(self) -> RawSoap:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _answer(self, name: str, params: dict[str, str], sid: str | None) -> etree._Element:
        op = operation(self._profile, name)
        body = envelope_template(op).format_map(params).encode("utf-8")
        status, content = self._http.post(body)
        return read_answer(self._endpoint.service_url, status, content, op, sid)

    def _call(self, name: str, sid: str | None = None, **params: str) -> Any:
        if sid is not None:
            params["sessionId"] = escape(sid)
        answer = self._answer(name, params, sid)
        return decode_answer(self._profile, operation(self._profile, name), answer)

    def login(self, authenticator: str, credentials: dict[str, str]) -> str:
        redaction.remember_login(credentials)
        entries = "".join(
            f"<entry><key>{escape(k)}</key><value>{escape(v)}</value></entry>"
            for k, v in credentials.items()
        )
        sid: str = self._call(
            "login",
            plugin=escape(authenticator),
            credentials=f"<credentials>{entries}</credentials>",
        )
        return sid

    def logout(self, sid: str) -> None:
        self._call("logout", sid)

    def user_name(self, sid: str) -> str:
        name: str = self._call("getUserName", sid)
        return name

    def is_access_allowed(self, sid: str, bean: Bean, access: str) -> bool:
        allowed: bool = self._call(
            "isAccessAllowed",
            sid,
            bean=encode_bean(self._profile, bean, "bean"),
            accessType=escape(access),
        )
        return allowed

    def authenticator_info(self) -> list[AuthenticatorFacts]:
        """What getAuthenticatorInfo (ICAT 4.9 and later) lists; decoded here because no
        client decodes ``authenticatorInfo``."""
        answer = self._answer("getAuthenticatorInfo", {}, None)
        return [
            AuthenticatorFacts(
                mnemonic=entry.findtext("mnemonic") or "",
                friendly=entry.findtext("friendly") or "",
                admin=(entry.findtext("admin") or "").strip() == "true",
            )
            for entry in answer.iterchildren("return")
        ]
