"""The ``rest`` part of the service checks and of ``sv7 check`` (issue 12): it passes where
REST answers, is skipped on ICAT 4.x, names ``rest-missing`` behind a proxy that forwards only
SOAP, writes over REST under the run tag and removes what it wrote, and never writes in
``sv7 check``."""

from __future__ import annotations

import http.server
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.verify import (
    Account,
    VerificationResult,
    VerifyOptions,
    run_check,
    run_verification,
)

READER = Account("simple", "reader", "reader", role="reader")
WRITER = Account("simple", "ingest", "ingest", role="writer")
WRITES = {"test_rest_write_read_back_over_soap", "test_rest_reader_cannot_write",
          "test_rest_cleanup_leaves_nothing"}


def verify(target: str, **options: Any) -> VerificationResult:
    options = {"accounts": (READER, WRITER), "parts": ("rest",), **options}
    return run_verification(VerifyOptions(target=target, timeout=5.0, **options), quiet=True)


def outcomes(result: VerificationResult) -> dict[str, tuple[str, str | None]]:
    return {c.id.split("::")[-1]: (c.outcome, c.cause) for c in result.checks}


def sv7_facilities(cat: LocalCatalogue) -> int:
    sid = cat.service.login("simple", {"username": "root", "password": "root"})
    found = cat.service.search(sid, "SELECT COUNT(f) FROM Facility f WHERE f.name LIKE 'sv7-%'")
    return int(found.items[0])


@pytest.fixture(scope="module")
def catalogue() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(example_data=True)) as cat:
        yield cat


def test_every_rest_check_passes_and_leaves_nothing(catalogue: LocalCatalogue) -> None:
    result = verify(catalogue.service_url, site="TEST")
    assert {name: o for name, o in outcomes(result).items() if o[0] != "passed"} == {}
    assert {c.id.split("::")[-1].split("[")[0] for c in result.checks} == {
        "test_rest_version", "test_rest_login", "test_rest_session_refresh_and_logout",
        "test_rest_query_answers_as_soap", *WRITES}
    assert result.facts["rest_version"] == "6.2.0"
    assert result.facts["rest_cleanup"]["deleted"] >= 7  # the hierarchy, removed over REST
    assert sv7_facilities(catalogue) == 0


def test_sv7_check_reports_rest_and_writes_nothing(catalogue: LocalCatalogue) -> None:
    result = verify(catalogue.service_url, read_only=True)
    assert WRITES.isdisjoint(outcomes(result)) and "test_rest_version" in outcomes(result)
    code, line = run_check(catalogue.service_url, 5.0, None, False, [READER, WRITER])
    assert code == 0, line
    assert line.startswith("ICAT OK - 6.2.0, login ok, REST ok, IDS ok | "), line
    assert " rest_login=" in line
    assert sv7_facilities(catalogue) == 0


def test_icat_4_has_no_rest_part() -> None:
    with LocalCatalogue(ServeConfig(profile="4.3")) as cat:
        result = verify(cat.service_url)
        code, line = run_check(cat.service_url, 5.0, None, False, [WRITER])
    assert {o for o, _ in outcomes(result).values()} == {"skipped"}
    assert all(c.explanation == "needs ICAT >=5, the server runs 4.3.3" for c in result.checks)
    assert code == 0 and "login ok, no REST (ICAT 4.3.3), no IDS |" in line


class _SoapOnlyProxy(http.server.BaseHTTPRequestHandler):
    """Forwards /ICATService/ to the catalogue, answers 404 for anything else (such as /icat/),
    as a reverse proxy set up before the site's ICAT grew a REST API does."""

    upstream = ""

    def _forward(self) -> None:
        if not self.path.startswith("/ICATService/"):
            self.send_error(404)
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
        headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type",
                                                                           "soapaction")}
        request = urllib.request.Request(self.upstream + self.path, body, headers,
                                         method=self.command)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status, content, kind = answer.status, answer.read(), answer.headers
        except urllib.error.HTTPError as error:
            status, content, kind = error.code, error.read(), error.headers
        self.send_response(status)
        self.send_header("Content-Type", kind.get("Content-Type", "text/xml"))
        self.send_header("Content-Length", str(len(content)))
        self.end_headers()
        self.wfile.write(content)

    do_GET = do_POST = _forward

    def log_message(self, *args: Any) -> None:
        pass


def test_rest_missing_behind_a_proxy_that_forwards_soap_only(
        catalogue: LocalCatalogue) -> None:
    proxy_class = type("Proxy", (_SoapOnlyProxy,),
                       {"upstream": catalogue.service_url.removesuffix("/ICATService/ICAT")})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), proxy_class)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/ICATService/ICAT"
        result = verify(url, parts=("session", "rest"))
        code, line = run_check(url, 5.0, None, False, [WRITER])
    finally:
        server.shutdown()
        server.server_close()
    found = outcomes(result)
    assert found["test_login[writer]"] == ("passed", None)  # SOAP gets through
    assert found["test_rest_version"] == ("failed", "rest-missing")
    record = next(c for c in result.checks if c.id.endswith("::test_rest_version"))
    assert "HTTP 404" in (record.explanation or "") and "/icat/" in (record.hint or "")
    assert code == 2 and line.startswith("ICAT CRITICAL - rest-missing: ")
