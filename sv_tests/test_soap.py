"""SOAP: the WSDL is served and is ICAT's, the API version is readable, authenticators listed."""

from __future__ import annotations

import re
import time

import pytest
from lxml import etree

from igestbench.client import ClientConfig, Endpoint, connect
from igestbench.client.transport import (
    TransportCause,
    TransportFailure,
    call_budget,
    http_session,
    status_failure,
    timeouts,
    transport_errors,
)
from igestbench.results import scoring
from igestbench.verify.diagnosis import CheckFailed
from igestbench.verify.options import VerifyOptions
from igestbench.verify.rawsoap import RawSoap
from sv_tests.conftest import Fact, elapsed_ms

pytestmark = pytest.mark.part("soap")

WSDL_NS = "http://schemas.xmlsoap.org/wsdl/"
#: Operations every ICAT since 4.3 offers (the ones these checks and the workloads use).
REQUIRED_OPERATIONS = frozenset(
    {
        "login", "logout", "getUserName", "refresh", "getApiVersion", "getEntityNames",
        "search", "get", "create", "createMany", "update", "delete", "deleteMany",
        "isAccessAllowed",
    }
)  # fmt: skip


def fetch_wsdl(endpoint: Endpoint, config: ClientConfig) -> tuple[etree._Element, float]:
    """The WSDL document and how long fetching it took (ms), fetched as a client would."""
    session = http_session(config, endpoint)
    try:
        start = time.perf_counter_ns()
        with transport_errors(endpoint.wsdl_url, timeout=call_budget(config)):
            response = session.get(endpoint.wsdl_url, timeout=timeouts(config))
        fetch_ms = elapsed_ms(start)
    finally:
        session.close()
    if response.status_code != 200:
        raise status_failure(endpoint.wsdl_url, response.status_code)
    try:
        root = etree.fromstring(response.content, etree.XMLParser(resolve_entities=False))
    except etree.XMLSyntaxError:
        raise TransportFailure(
            TransportCause.NOT_ICAT, endpoint.wsdl_url, "the WSDL address answers with no XML"
        ) from None
    if root.tag != f"{{{WSDL_NS}}}definitions":
        raise CheckFailed("not-icat", f"{endpoint.wsdl_url} answers <{root.tag}>, not a WSDL")
    return root, fetch_ms


def test_wsdl_served_and_parses(endpoint: Endpoint, config: ClientConfig, fact: Fact) -> None:
    root, fetch_ms = fetch_wsdl(endpoint, config)
    fact("wsdl_ms", fetch_ms)
    assert root.find(f"{{{WSDL_NS}}}service") is not None, "the WSDL names no service"


def test_wsdl_operations_present(endpoint: Endpoint, config: ClientConfig) -> None:
    root, _ = fetch_wsdl(endpoint, config)
    path = f"{{{WSDL_NS}}}portType/{{{WSDL_NS}}}operation"
    offered = {op.get("name") for op in root.iterfind(path)}
    missing = sorted(REQUIRED_OPERATIONS - offered)
    if missing:
        raise CheckFailed("not-icat", f"the WSDL lacks ICAT operations {', '.join(missing)}")


def test_api_version(config: ClientConfig, options: VerifyOptions, fact: Fact) -> None:
    # connecting with our client fetches and parses the WSDL and its schema, then asks the version
    catalogue = connect(config, options.flavour)
    catalogue.close()
    version = catalogue.version()
    fact("api_version", version)
    assert re.match(r"^\d+\.\d+", version), f"API version {version!r} is not a version number"


@pytest.mark.icat_version(">=4.9")
def test_authenticators_listed(config: ClientConfig, options: VerifyOptions, fact: Fact) -> None:
    with RawSoap(config) as soap:
        offered = [a.mnemonic for a in soap.authenticator_info()]
    fact(scoring.AUTHENTICATORS, offered)
    assert offered, "getAuthenticatorInfo lists no authenticator"
    for account in options.accounts:
        assert account.authenticator in offered, (
            f"the {account.role} account's authenticator {account.authenticator!r} is not "
            f"offered (offered: {', '.join(offered)})"
        )
