"""The zeep flavour's WSDL cache never serves one ICAT's WSDL to another at the same URL.

A facility upgrades its ICAT in place (4.x → 6.x adds Investigation.fileCount and fileSize),
and a loopback port serves another catalogue later (seen in CI: a 4.3 catalogue's WSDL, cached
for 24 h, was used against a 6.2 catalogue that got the same port, and zeep refused to build an
Investigation holding ``fileCount``: the service check of an update failed).
"""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path

import pytest

from igestbench.client import ClientConfig, connect
from igestbench.client.zeep_flavour import WsdlCache, wsdl_cache
from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.icat.endpoint import endpoint_of
from igestbench.mock.catalogue import LocalCatalogue

ROOT = {"username": "root", "password": "root"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_wsdl_cached_from_another_icat_at_the_same_url_is_not_used(tmp_path: Path) -> None:
    port, cache = free_port(), tmp_path / "cache"
    with LocalCatalogue(ServeConfig(port=port, profile="4.3")) as old:
        connect(ClientConfig(old.service_url, cache_dir=cache), "zeep").close()
    with LocalCatalogue(ServeConfig(port=port)) as new:
        config = ClientConfig(new.service_url, cache_dir=cache)
        with contextlib.closing(connect(config, "zeep")) as client:
            client.login("simple", ROOT)
            facility = client.create(Bean("Facility", {"name": "upgraded"}))
            kind = client.create(Bean("InvestigationType", {
                "name": "t", "facility": Bean("Facility", {"id": facility})}))  # fmt: skip
            investigation = client.create(Bean("Investigation", {
                "name": "i", "visitId": "1", "title": "before",
                "facility": Bean("Facility", {"id": facility}),
                "type": Bean("InvestigationType", {"id": kind})}))  # fmt: skip
            bean = client.get("Investigation i INCLUDE i.facility, i.type", investigation)
            assert "fileCount" in bean.values  # what a 4.3 WSDL has no place for
            bean["title"] = "after"
            client.update(bean)
            assert client.get("Investigation", investigation).get("title") == "after"
        # the cache now holds this server's WSDL, marked with its version, and uses it
        assert wsdl_cache(config).stored_version(endpoint_of(config.url).wsdl_url) == "6.2.0"


def test_a_wsdl_of_the_same_version_is_read_from_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    hits: list[list[str]] = []
    with LocalCatalogue(ServeConfig()) as cat:
        config = ClientConfig(cat.service_url, cache_dir=cache)
        connect(config, "zeep").close()  # downloads and stores it
        real_init = WsdlCache.__init__

        def spying_init(self: WsdlCache, path: str, timeout: int) -> None:
            real_init(self, path, timeout)
            hits.append(self.hits)

        monkeypatch.setattr(WsdlCache, "__init__", spying_init)
        monkeypatch.setattr(WsdlCache, "forget_hits", lambda self: pytest.fail("re-downloaded"))
        with contextlib.closing(connect(config, "zeep")) as client:
            client.login("simple", ROOT)
    assert hits and endpoint_of(config.url).wsdl_url in hits[0]  # read from disk, kept
