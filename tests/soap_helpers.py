"""Raw SOAP requests for tests that need to see the wire exactly (no client library between)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests
from lxml import etree

from igestbench.icat.soapxml import ICAT_NS, SOAP_ENV_NS, escape
from igestbench.mock.catalogue import LocalCatalogue

#: What a real ICAT 6.2.0 served and answered, recorded (fixtures/icat-6.2/README.md says when).
ICAT_62 = Path(__file__).resolve().parents[1] / "fixtures" / "icat-6.2"

ENVELOPE = (
    f'<?xml version="1.0" encoding="UTF-8"?><S:Envelope xmlns:S="{SOAP_ENV_NS}" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    f'xmlns:tns="{ICAT_NS}"><S:Body>{{body}}</S:Body></S:Envelope>'
)


def post(url: str, body: str | bytes, **kwargs: Any) -> requests.Response:
    data = body if isinstance(body, bytes) else body.encode("utf-8")
    return requests.post(
        url, data=data, headers={"Content-Type": "text/xml; charset=utf-8"}, timeout=10, **kwargs
    )


def call(url: str, op: str, inner: str = "") -> requests.Response:
    return post(url, ENVELOPE.format(body=f"<tns:{op}>{inner}</tns:{op}>"))


def login(url: str, user: str = "root", password: str | None = None) -> str:
    pw = escape(password if password is not None else user)
    inner = (
        "<plugin>simple</plugin><credentials>"
        f"<entry><key>username</key><value>{escape(user)}</value></entry>"
        f"<entry><key>password</key><value>{pw}</value></entry></credentials>"
    )
    r = call(url, "login", inner)
    assert r.status_code == 200, r.text
    return str(returns(r)[0].text)


def issued_sessions(cat: LocalCatalogue) -> list[str]:
    """A list that fills with every session id ``cat`` issues from now on (also those a
    logout forgets): what a test checks no output of a client contains."""
    issued: list[str] = []
    open_session = cat.service.sessions.open

    def remember(user: str) -> str:
        sid = open_session(user)
        issued.append(sid)
        return sid

    cat.service.sessions.open = remember  # type: ignore[method-assign]
    return issued


def create(url: str, sid: str, xml_type: str, fields: str) -> int:
    """The id of a new object of ``xml_type`` (the XSD type name) with ``fields`` as its XML."""
    r = call(
        url,
        "create",
        f'<sessionId>{sid}</sessionId><bean xsi:type="tns:{xml_type}">{fields}</bean>',
    )
    assert r.status_code == 200, r.text
    return int(returns(r)[0].text or 0)


def returns(response: requests.Response) -> list[etree._Element]:
    root = etree.fromstring(response.content)
    body = root.find(f"{{{SOAP_ENV_NS}}}Body")
    assert body is not None
    wrapper = body[0]
    return [c for c in wrapper if c.tag == "return"]


def fault(response: requests.Response) -> tuple[str, str, str | None, int | None]:
    """(faultcode, faultstring, IcatException type, offset) of a fault response."""
    assert response.status_code == 500, response.text
    root = etree.fromstring(response.content)
    f = root.find(f".//{{{SOAP_ENV_NS}}}Fault")
    assert f is not None, response.text
    code = f.findtext("faultcode") or ""
    text = f.findtext("faultstring") or ""
    detail = f.find(f"detail/{{{ICAT_NS}}}IcatException")
    if detail is None:
        return code, text, None, None
    return code, text, detail.findtext("type"), int(detail.findtext("offset") or "0")
