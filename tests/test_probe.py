"""The probe: host facts, round-trip time, HTTP and TLS facts of a target."""

from __future__ import annotations

from pathlib import Path

import pytest

from igestbench.client import ClientConfig
from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.run.probe import host_facts, probe


def test_host_facts() -> None:
    facts = host_facts()
    assert facts["cores"] >= 1 and facts["memory_bytes"] > 0 and facts["python"]


def test_plain_http_target(catalogue: LocalCatalogue) -> None:
    target, facts = probe(ClientConfig(catalogue.service_url))
    assert target["scheme"] == "http" and target["port"] == catalogue.port
    assert facts["rtt"]["method"] in ("icmp", "tcp") and facts["rtt"]["median_ms"] is not None
    assert facts["http"]["wsdl_ok"] and facts["tls"] is None


@pytest.mark.parametrize(
    ("mode", "trusted", "self_signed", "expired"),
    [
        ("ca", True, False, False),
        ("self-signed", False, True, False),
        ("expired", False, False, True),
        ("wrong-host", False, False, False),
    ],
)
def test_tls_facts(mode: str, trusted: bool, self_signed: bool, expired: bool) -> None:
    with LocalCatalogue(ServeConfig(tls=mode)) as cat:
        assert cat.tls is not None
        ca = Path(cat.tls.ca) if mode != "self-signed" else None
        _, facts = probe(ClientConfig(cat.service_url, ca_file=ca))
        tls = facts["tls"]
        assert tls["verified"] is trusted, tls
        assert tls["self_signed"] is self_signed and tls["expired"] is expired
        assert tls["version"].startswith("TLS")
        assert facts["http"]["wsdl_ok"] is trusted
