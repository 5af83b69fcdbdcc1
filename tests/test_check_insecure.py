"""``sv7 check --insecure``: a probe an operator can leave on for a site whose certificate is not
trusted, red only on a real outage (igestbench/verify/insecure.py says what it waives).

Each case runs against the local catalogue on loopback with one of its certificates: self-signed,
a trustme CA's leaf the probe is not given (an unknown CA), a leaf for another host name, and an
expired leaf (ten days ago, igestbench/mock/tls.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.verify import Account, run_check

READER = Account("simple", "reader", "reader", role="reader")


@pytest.fixture(scope="module")
def self_signed() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(tls="self-signed")) as cat:
        yield cat


def probe(cat: LocalCatalogue, insecure: bool, account: Account = READER) -> tuple[int, str]:
    return run_check(cat.service_url, 2.0, None, insecure, [account])


def test_a_self_signed_certificate_is_said_in_the_ok_line(self_signed: LocalCatalogue) -> None:
    code, line = probe(self_signed, insecure=True)
    assert code == 0, line
    assert line.startswith(
        "ICAT OK - 6.2.0, login ok, REST ok, IDS ok (certificate not verified: self-signed) | "
    )
    # without --insecure nothing changes: the certificate is not trusted
    code, line = probe(self_signed, insecure=False)
    assert code == 2, line
    assert line.startswith("ICAT CRITICAL - tls-self-signed: ")


def test_a_real_failure_stays_critical_under_insecure(self_signed: LocalCatalogue) -> None:
    code, line = probe(self_signed, True, dataclasses.replace(READER, password="wrong"))
    assert code == 2, line
    assert line.startswith("ICAT CRITICAL - auth-refused: ")
    assert "(certificate not verified: self-signed)" in line


def test_an_unknown_ca_and_another_host_name_are_said_too() -> None:
    with LocalCatalogue(ServeConfig(tls="wrong-host")) as cat:
        code, line = probe(cat, insecure=True)
    assert code == 0, line
    assert line.startswith(
        "ICAT OK - 6.2.0, login ok, REST ok, IDS ok (certificate not verified: issued by a CA "
        "not trusted here, for another host name) | "
    )


def test_an_expired_certificate_is_a_warning_with_its_days() -> None:
    with LocalCatalogue(ServeConfig(tls="expired")) as cat:
        code, line = probe(cat, insecure=True)
        assert code == 1, line
        assert line.startswith("ICAT WARNING - tls-expired: ")
        assert " (10 days ago) " in line
        assert "(certificate not verified: issued by a CA not trusted here) | " in line
        code, line = probe(cat, insecure=False)
    assert code == 2, line
