"""``sv7 run --interface soap,rest``: which interfaces a run measures, and why (issue 12)."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from igestbench.client import ClientConfig
from igestbench.config import RunConfig, ServeConfig
from igestbench.errors import UsageError
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.run.interfaces import RestProbe, choose, probe_rest
from tests.test_run import credentials_env, left_on_server, result_of, sv7

SMALL = ["--concurrency", "1", "--files", "20", "--queries", "10", "--batch-size", "10",
         "--max-rate", "20", "--duration", "0.5", "--warmup", "0.1", "--flavour", "lean"]


def test_a_target_serving_rest_is_measured_over_both(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        result = sv7("run", "--target", cat.service_url, "--site", "S",
                     "--parts", "single-query,burst,sweep", *SMALL, "--out", str(tmp_path),
                     env=credentials_env())
        assert result.returncode == 0, result.stderr
        assert left_on_server(cat) == 0  # what REST created was journaled and removed
    data: dict[str, Any] = result_of(tmp_path)
    assert data["run"]["interfaces"] == ["soap", "rest"]
    chosen = data["target"]["interfaces"]
    assert chosen["served"] == ["soap", "rest"] and chosen["rest"]["version"] == "6.2.0"
    assert "/icat/version answered version 6.2.0" in chosen["why"]
    assert "interfaces: soap, rest (GET " in result.stderr
    assert {(b["workload"], b["flavour"], b["interface"]) for b in data["benchmarks"]} == {
        (w, f, i) for w in ("single-query", "burst")
        for f, i in (("lean", "soap"), ("rest", "rest"))
    }
    assert all(not b["problems"] and all(op["ok"] == op["count"] for op in b["ops"].values())
               for b in data["benchmarks"])
    rest = next(b for b in data["benchmarks"] if b["interface"] == "rest"
                and b["workload"] == "burst")
    for mode in ("create", "createMany"):  # counted on the server afterwards
        assert rest["checks"][f"{mode}.found"] == rest["checks"][f"{mode}.expected"] == 20
    assert [(s["flavour"], s["interface"]) for s in data["sweeps"]] == [
        ("lean", "soap"), ("rest", "rest")]
    assert all(s["steps"] and s["connection_modes"] for s in data["sweeps"])
    assert {s["phase"] for s in data["samples"]} >= {"burst/rest/1", "sweep/rest/20"}
    assert data["cleanup"]["left"] == 0


def test_an_old_catalogue_is_measured_over_soap_only(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig(profile="4.3")) as cat:
        result = sv7("run", "--target", cat.service_url, "--site", "S", "--parts", "burst",
                     *SMALL, "--out", str(tmp_path), env=credentials_env(user="root",
                                                                          password="root"))
        assert result.returncode == 0, result.stderr
    data: dict[str, Any] = result_of(tmp_path)
    assert data["run"]["interfaces"] == ["soap"]
    assert data["target"]["interfaces"]["served"] == ["soap"]
    assert "SOAP only" in data["target"]["interfaces"]["why"]
    assert [b["interface"] for b in data["benchmarks"]] == ["soap"]


def test_interface_soap_leaves_rest_alone(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        result = sv7("run", "--target", cat.service_url, "--site", "S", "--parts", "burst",
                     "--interface", "soap", *SMALL, "--out", str(tmp_path),
                     env=credentials_env())
        assert result.returncode == 0, result.stderr
    data: dict[str, Any] = result_of(tmp_path)
    assert data["run"]["interfaces"] == ["soap"]
    assert data["target"]["interfaces"]["served"] == ["soap", "rest"]  # served, not measured
    assert [b["flavour"] for b in data["benchmarks"]] == ["lean"]


def test_bad_interface_options_are_usage_errors(tmp_path: Path) -> None:
    result = sv7("run", "--interface", "soap,corba", "--out", str(tmp_path))
    assert result.returncode == 2
    assert result.stderr.strip() == ("sv7 run: --interface: unknown interface 'corba'; "
                                     "choose from soap, rest")
    with pytest.raises(UsageError, match="--interface soap: --flavour names no SOAP client"):
        RunConfig(flavours=("rest",), interfaces=("soap",))
    assert not list(tmp_path.iterdir())


@pytest.fixture
def not_found_server() -> Iterator[str]:
    """A web server answering 404 to everything: ICAT behind a proxy that forwards only SOAP."""

    class NotFound(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_error(404)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/ICATService/ICAT"
    finally:
        server.shutdown()
        server.server_close()


def test_the_probe_says_why_there_is_no_rest(not_found_server: str) -> None:
    probe = probe_rest(ClientConfig(not_found_server))
    assert probe.version is None and probe.problem == "HTTP 404"
    assert probe.url.endswith("/icat/version")
    choice = choose(None, "6.2.0", probe)
    assert choice.measured == ("soap",) and "gave HTTP 404" in choice.why
    asked = choose(("soap", "rest"), "6.2.0", probe)  # asked for: measured, the finding noted
    assert asked.measured == ("soap", "rest") and "found none for rest" in asked.why
    refused = probe_rest(ClientConfig(unused_port_url(), connect_timeout=2))
    assert refused.version is None and (refused.problem or "").startswith("refused")


def test_the_choice_follows_the_versions() -> None:
    served = RestProbe("u", "6.2.0")
    assert choose(None, "6.2.0", served).measured == ("soap", "rest")
    assert choose(None, "4.3.2", served).measured == ("soap",)  # 4.x: SOAP only
    assert choose(None, "6.2.0", RestProbe("u", "4.10.0")).measured == ("soap",)
    assert choose(("rest",), "6.2.0", served).measured == ("rest",)


def unused_port_url() -> str:
    """A loopback URL whose port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/ICATService/ICAT"


def test_the_runs_checks_have_a_rest_part_unless_the_run_is_soap_only(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig(example_data=True)) as cat:
        for name, more in (("both", []), ("soap", ["--interface", "soap"])):
            out = tmp_path / name
            result = sv7("run", "--target", cat.service_url, "--site", "S", "--parts", "verify",
                         "--account", "reader=simple/reader", "--out", str(out), *more,
                         env={**credentials_env(), "SV7_PASSWORD_READER": "reader"})
            assert result.returncode == 0, result.stderr
            checks = result_of(out)["checks"]
            assert isinstance(checks, list)
            rest = [c for c in checks if c["part"] == "rest"]
            if name == "both":
                assert len(rest) >= 7 and all(c["outcome"] == "passed" for c in rest), rest
            else:
                assert rest == [] and checks  # the SOAP parts all the same
        assert left_on_server(cat) == 0
