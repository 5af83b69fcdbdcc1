"""The local catalogue on the wire: WSDL endpoints, faults, sessions and hostile input."""

from __future__ import annotations

import socket

import pytest
import requests
from lxml import etree

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from tests.soap_helpers import ENVELOPE, call, fault, login, post, returns


def test_wsdl_carries_the_url_the_client_used(catalogue: LocalCatalogue) -> None:
    for path in ("/ICATService/ICAT", "/icat/ICAT"):
        r = requests.get(f"{catalogue.url}{path}?wsdl", timeout=5)
        assert r.status_code == 200
        assert r.headers["Content-Type"].startswith("text/xml")
        wsdl = etree.fromstring(r.content)
        address = wsdl.find(".//{http://schemas.xmlsoap.org/wsdl/soap/}address")
        assert address is not None and address.get("location") == catalogue.url + path
        imp = wsdl.find(".//{http://www.w3.org/2001/XMLSchema}import")
        assert imp is not None and imp.get("schemaLocation") == f"{catalogue.url}{path}?xsd=1"
    localhost = catalogue.url.replace("127.0.0.1", "localhost")
    r = requests.get(localhost + "/ICATService/ICAT?wsdl", timeout=5)
    assert localhost.encode() in r.content
    xsd = requests.get(catalogue.url + "/ICATService/ICAT?xsd=1", timeout=5)
    assert etree.fromstring(xsd.content).get("targetNamespace") == "http://icatproject.org"
    assert requests.get(catalogue.url + "/nothing", timeout=5).status_code == 404


def test_session_lifecycle(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    sid = login(url, "reader")
    assert returns(call(url, "getUserName", f"<sessionId>{sid}</sessionId>"))[0].text == (
        "simple/reader"
    )
    minutes = float(
        returns(call(url, "getRemainingMinutes", f"<sessionId>{sid}</sessionId>"))[0].text or 0
    )
    assert 119 < minutes <= 120
    assert call(url, "refresh", f"<sessionId>{sid}</sessionId>").status_code == 200
    assert call(url, "logout", f"<sessionId>{sid}</sessionId>").status_code == 200
    code, text, ftype, offset = fault(call(url, "getUserName", f"<sessionId>{sid}</sessionId>"))
    assert (code, ftype, offset) == ("S:Server", "SESSION", -1)
    assert text == f"Unable to find user by sessionid: {sid}"


def test_expired_session_is_refused() -> None:
    with LocalCatalogue(ServeConfig(lifetime_minutes=0.0005)) as cat:  # 30 ms
        sid = login(cat.service_url)
        import time

        time.sleep(0.1)
        _, text, ftype, _ = fault(
            call(cat.service_url, "search", f"<sessionId>{sid}</sessionId><query>Facility</query>")
        )
        assert ftype == "SESSION" and "expired" in text


@pytest.mark.parametrize(
    ("user", "password", "message"),
    [
        ("root", "wrong", "The username and password do not match "),
        ("nobody", "x", "The username and password do not match "),
        ("", "x", "Username cannot be null or empty."),
        ("root", "", "Password cannot be null or empty."),
    ],
)
def test_bad_credentials(catalogue: LocalCatalogue, user: str, password: str, message: str) -> None:
    inner = (
        "<plugin>simple</plugin><credentials>"
        f"<entry><key>username</key><value>{user}</value></entry>"
        f"<entry><key>password</key><value>{password}</value></entry></credentials>"
    )
    assert fault(call(catalogue.service_url, "login", inner))[1:3] == (message, "SESSION")


def test_unknown_authenticator(catalogue: LocalCatalogue) -> None:
    r = call(catalogue.service_url, "login", "<plugin>ldap</plugin><credentials/>")
    assert fault(r)[1:3] == ("Authenticator mnemonic ldap not recognised", "SESSION")


def test_metadata_operations(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    assert returns(call(url, "getApiVersion"))[0].text == "6.2.0"
    assert returns(call(url, "getVersion"))[0].text == "6.2.0"
    names = [e.text for e in returns(call(url, "getEntityNames"))]
    assert len(names) == 53 and names == sorted(names) and "Subject" in names
    (info,) = returns(call(url, "getEntityInfo", "<beanName>Parameter</beanName>"))
    assert {f.findtext("name") for f in info.findall("fields")} >= {"stringValue", "type"}
    (info,) = returns(call(url, "getEntityInfo", "<beanName>Dataset</beanName>"))
    assert [n.text for n in info.findall("constraints/fieldNames")] == ["investigation", "name"]
    fields = {f.findtext("name"): f for f in info.findall("fields")}
    assert fields["investigation"].findtext("relType") == "ONE"
    assert fields["investigation"].findtext("notNullable") == "true"
    assert fields["datafiles"].findtext("type") == "Datafile"
    assert fields["location"].findtext("stringLength") == "511"
    r = call(url, "getEntityInfo", "<beanName>Nothing</beanName>")
    assert fault(r)[1:3] == ("Nothing is not an ICAT entity", "BAD_PARAMETER")


def test_properties_are_for_root_users_only(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    root = login(url)
    props = [e.text for e in returns(call(url, "getProperties", f"<sessionId>{root}</sessionId>"))]
    assert "maxEntities 10000" in props
    reader = login(url, "reader")
    r = call(url, "getProperties", f"<sessionId>{reader}</sessionId>")
    assert fault(r)[2] == "INSUFFICIENT_PRIVILEGES"


BAD_REQUESTS = {
    "not xml": b"this is not XML",
    "empty": b"",
    "not soap": b"<hello/>",
    "no body": ENVELOPE.replace("<S:Body>{body}</S:Body>", "").encode(),
    "billion laughs": (
        b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
        b'<!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">'
        b'<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>'
        b'<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body>'
        b'<ns:login xmlns:ns="http://icatproject.org"><plugin>&lol3;</plugin></ns:login>'
        b"</S:Body></S:Envelope>"
    ),
    "external entity": (
        b'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]>'
        b'<S:Envelope xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><S:Body>'
        b'<ns:getEntityInfo xmlns:ns="http://icatproject.org"><beanName>&e;</beanName>'
        b"</ns:getEntityInfo></S:Body></S:Envelope>"
    ),
    "foreign namespace": ENVELOPE.format(body='<x:login xmlns:x="urn:other"/>').encode(),
}


@pytest.mark.parametrize("name", sorted(BAD_REQUESTS))
def test_malformed_requests_get_client_faults(catalogue: LocalCatalogue, name: str) -> None:
    r = post(catalogue.service_url, BAD_REQUESTS[name])
    code, text, ftype, _ = fault(r)
    assert code == "S:Client" and ftype is None and text
    assert b"root:" not in r.content  # no file content leaked by entity expansion
    # and the server is still serving
    assert returns(call(catalogue.service_url, "getApiVersion"))[0].text == "6.2.0"


def test_wrong_types_and_missing_xsi_type(catalogue: LocalCatalogue) -> None:
    url = catalogue.service_url
    sid = login(url)
    r = call(
        url,
        "get",
        f"<sessionId>{sid}</sessionId><query>Dataset</query><primaryKey>abc</primaryKey>",
    )
    # JAXB reads what is no xs:long as 0, as a real ICAT 6.2.0 does
    # (fixtures/icat-6.2/exchanges/soap-get-id-not-a-number.json)
    assert fault(r)[:3] == ("S:Server", "Dataset[id:0] not found.", "NO_SUCH_OBJECT_FOUND")
    r = call(url, "create", f"<sessionId>{sid}</sessionId><bean><name>x</name></bean>")
    code, _, ftype, _ = fault(r)
    assert code == "S:Server" and ftype is None
    r = call(
        url,
        "create",
        f'<sessionId>{sid}</sessionId><bean xsi:type="tns:datafile">'
        "<fileSize>many</fileSize></bean>",
    )
    assert fault(r)[0] == "S:Client"


def test_oversized_body_is_refused() -> None:
    with LocalCatalogue(ServeConfig(max_body_bytes=10_000)) as cat:
        r = post(cat.service_url, b"<x>" + b"a" * 20_000 + b"</x>")
        assert r.status_code == 413
        assert returns(call(cat.service_url, "getApiVersion"))[0].text == "6.2.0"


def test_malformed_http_is_refused(catalogue: LocalCatalogue) -> None:
    with socket.create_connection(("127.0.0.1", catalogue.port), timeout=5) as s:
        s.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400")


def test_quotes_and_sql_in_strings_are_data(fresh_catalogue: LocalCatalogue) -> None:
    url = fresh_catalogue.service_url
    sid = login(url)
    name = "O'Brien\"; DROP TABLE Facility; --"
    from igestbench.icat.soapxml import escape

    r = call(
        url,
        "create",
        f'<sessionId>{sid}</sessionId><bean xsi:type="tns:facility">'
        f"<name>{escape(name)}</name></bean>",
    )
    assert r.status_code == 200, r.text
    query = "SELECT f FROM Facility f WHERE f.name = 'O''Brien\"; DROP TABLE Facility; --'"
    r = call(url, "search", f"<sessionId>{sid}</sessionId><query>{escape(query)}</query>")
    (found,) = returns(r)
    assert found.findtext("name") == name
    # the classic injection, quoted as a JPQL string literal: it is a name, not a condition
    evil = "SELECT f FROM Facility f WHERE f.name = 'x'' OR ''1''=''1'"
    r = call(url, "search", f"<sessionId>{sid}</sessionId><query>{escape(evil)}</query>")
    assert len(returns(r)) == 0
    r = call(url, "search", f"<sessionId>{sid}</sessionId><query>SELECT f FROM</query>")
    assert fault(r)[2] == "BAD_PARAMETER"
    r = call(
        url, "search", f"<sessionId>{sid}</sessionId><query>SELECT COUNT(f) FROM Facility f</query>"
    )
    assert returns(r)[0].text == "1"


def test_profile_4_3_operations(catalogue_43: LocalCatalogue) -> None:
    url = catalogue_43.service_url
    assert returns(call(url, "getApiVersion"))[0].text == "4.3.3"
    assert fault(call(url, "getVersion"))[0] == "S:Client"  # came with ICAT 4.9
    assert fault(call(url, "getAuthenticatorInfo"))[0] == "S:Client"
    sid = login(url, "reader")
    r = call(
        url,
        "searchText",
        f"<sessionId>{sid}</sessionId><query>x</query>"
        "<maxCount>10</maxCount><entityName>Dataset</entityName>",
    )
    assert fault(r)[2] == "INTERNAL"  # free text needs Lucene, which is not there
    r = call(url, "luceneClear", f"<sessionId>{sid}</sessionId>")
    assert fault(r)[2] == "INSUFFICIENT_PRIVILEGES"
    names = [e.text for e in returns(call(url, "getEntityNames"))]
    assert len(names) == 38 and "Log" in names and "InvestigationGroup" not in names
