"""TLS modes and fault injection of the local catalogue, seen by a plain HTTPS client."""

from __future__ import annotations

import time

import pytest
import requests

from igestbench.config import FaultKnobs, ServeConfig
from igestbench.errors import UsageError
from igestbench.mock.catalogue import LocalCatalogue
from tests.soap_helpers import call, fault, returns


def test_ca_signed_certificate_verifies_with_its_ca() -> None:
    with LocalCatalogue(ServeConfig(tls="ca")) as cat:
        assert cat.url.startswith("https://") and cat.tls is not None
        r = requests.get(cat.wsdl_url, verify=str(cat.tls.ca), timeout=5)
        assert r.status_code == 200 and b"https://127.0.0.1" in r.content
        with pytest.raises(requests.exceptions.SSLError, match="CERTIFICATE_VERIFY_FAILED"):
            requests.get(cat.wsdl_url, timeout=5)  # the system store does not know the CA


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("self-signed", "self.signed certificate"),
        ("expired", "certificate has expired"),
        ("wrong-host", "Hostname mismatch|doesn't match|IP address mismatch"),
    ],
)
def test_bad_certificates_are_refused_for_the_right_reason(mode: str, reason: str) -> None:
    with LocalCatalogue(ServeConfig(tls=mode)) as cat:
        assert cat.tls is not None
        verify = str(cat.tls.ca) if mode != "self-signed" else True
        with pytest.raises(requests.exceptions.SSLError, match=reason):
            requests.get(cat.wsdl_url, verify=verify, timeout=5)
        # what is wrong is the certificate, not the service behind it
        assert requests.get(cat.wsdl_url, verify=False, timeout=5).status_code == 200


def test_unknown_tls_mode_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown TLS mode"):
        LocalCatalogue(ServeConfig(tls="letsencrypt"))


def test_non_loopback_host_is_refused() -> None:
    with pytest.raises(UsageError, match="loopback only"):
        ServeConfig(host="0.0.0.0")


def test_latency_is_added() -> None:
    with LocalCatalogue(ServeConfig(knobs=FaultKnobs(latency_ms=200))) as cat:
        t0 = time.monotonic()
        assert returns(call(cat.service_url, "getApiVersion"))[0].text == "6.2.0"
        assert time.monotonic() - t0 >= 0.2


def test_every_nth_request_stalls_without_blocking_others() -> None:
    knobs = FaultKnobs(stall_every=2, stall_seconds=3.0)
    with LocalCatalogue(ServeConfig(knobs=knobs)) as cat:
        assert call(cat.service_url, "getApiVersion").status_code == 200
        with pytest.raises(requests.exceptions.ReadTimeout):
            requests.post(cat.service_url, data=b"", timeout=0.5)  # the 2nd request stalls
        assert call(cat.service_url, "getApiVersion").status_code == 200  # the 3rd does not


def test_error_rate_answers_internal_faults() -> None:
    with LocalCatalogue(ServeConfig(knobs=FaultKnobs(error_rate=1.0))) as cat:
        code, text, ftype, _ = fault(call(cat.service_url, "getApiVersion"))
        assert (code, ftype) == ("S:Server", "INTERNAL") and "injected" in text


def test_drop_rate_closes_connections_without_answer() -> None:
    with LocalCatalogue(ServeConfig(knobs=FaultKnobs(drop_rate=1.0))) as cat:
        with pytest.raises(requests.exceptions.ConnectionError):
            call(cat.service_url, "getApiVersion")
        assert requests.get(cat.wsdl_url, timeout=5).status_code == 200  # WSDL still served


def test_knob_values_are_checked() -> None:
    with pytest.raises(UsageError, match="error-rate must be between 0 and 1"):
        FaultKnobs(error_rate=1.5)
