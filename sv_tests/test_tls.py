"""TLS: the certificate chain verifies, is in date, names the host and is not self-signed.

Each property is its own check, so that a certificate with two problems shows both. A plain
HTTP target skips them (the deployment score already says "no TLS").
"""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography import x509

from igestbench.client import Endpoint
from igestbench.errors import Sv7Error
from igestbench.results import scoring
from igestbench.verify import tls_probe
from igestbench.verify.diagnosis import CheckFailed
from igestbench.verify.options import VerifyOptions
from sv_tests.conftest import Fact

pytestmark = pytest.mark.part("tls")


@pytest.fixture(scope="module")
def certificate(endpoint: Endpoint, options: VerifyOptions) -> x509.Certificate:
    if endpoint.scheme != "https":
        pytest.skip(f"{endpoint.scheme} target: no TLS to check")
    return tls_probe.peer_certificate(endpoint, options.timeout)


def test_certificate_chain(
    endpoint: Endpoint, options: VerifyOptions, certificate: x509.Certificate, fact: Fact
) -> None:
    fact(scoring.ISSUER, certificate.issuer.rfc4514_string())
    system = tls_probe.verifying_context(None, check_hostname=False)
    try:
        tls_probe.handshake(endpoint, system, options.timeout)
        fact(scoring.SYSTEM_TRUSTED, True)
    except Sv7Error:
        fact(scoring.SYSTEM_TRUSTED, False)
        if options.ca_file is None:
            raise  # the system store is what this client trusts
    if options.ca_file is not None:
        # --ca-file replaces the system store, as it does for the clients
        chosen = tls_probe.verifying_context(options.ca_file, check_hostname=False)
        tls_probe.handshake(endpoint, chosen, options.timeout)


def test_certificate_in_date(endpoint: Endpoint, certificate: x509.Certificate) -> None:
    tls_probe.check_validity(endpoint, certificate, dt.datetime.now(dt.UTC))


def test_certificate_names_host(endpoint: Endpoint, certificate: x509.Certificate) -> None:
    tls_probe.check_host(endpoint, certificate)


# A self-signed certificate the user chose to trust (--ca-file) works, yet other clients fail:
# worth a warning in monitoring, not an alarm.
@pytest.mark.part("tls", severity="warning")
def test_certificate_not_self_signed(certificate: x509.Certificate, fact: Fact) -> None:
    self_signed = tls_probe.is_self_signed(certificate)
    fact(scoring.SELF_SIGNED, self_signed)
    if self_signed:
        raise CheckFailed(
            "tls-self-signed", f"{certificate.subject.rfc4514_string()} is its own issuer"
        )
