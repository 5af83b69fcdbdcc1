"""Connectivity: the host name resolves and the port accepts a TCP connection."""

from __future__ import annotations

import socket
import time

import pytest

from igestbench.client import Endpoint
from igestbench.client.deadline import create_connection
from igestbench.client.transport import transport_errors
from igestbench.verify.options import VerifyOptions
from sv_tests.conftest import Fact, elapsed_ms

pytestmark = pytest.mark.part("connectivity")


def test_dns_resolves(endpoint: Endpoint, fact: Fact) -> None:
    with transport_errors(endpoint.service_url):
        addresses = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
    fact("addresses", sorted({a[4][0] for a in addresses}))
    assert addresses, f"{endpoint.host} resolves to no address"


def test_tcp_connects(endpoint: Endpoint, options: VerifyOptions, fact: Fact) -> None:
    start = time.perf_counter_ns()
    with transport_errors(endpoint.service_url):
        # the clients' own connect: a timeout here is a connect-timeout (a firewall), not a
        # slow answer
        create_connection((endpoint.host, endpoint.port), timeout=options.timeout).close()
    # the TCP handshake is one round trip: the monitoring probe reports it as rtt
    fact("rtt_ms", elapsed_ms(start))
