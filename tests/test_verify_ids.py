"""The ``ids`` part of the service checks and of ``sv7 check``: it passes where the IDS works and
leaves nothing, is skipped ("no IDS") where there is none, and fails with its cause where the
IDS answers ping but not as it should."""

from __future__ import annotations

from typing import Any

import pytest

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.ids.errors import InternalException
from igestbench.verify import VerificationResult, VerifyOptions, run_check, run_verification
from tests.test_verify_rest import READER, WRITER, outcomes, sv7_facilities

CHECKS = {"test_ids_ping_and_version", "test_ids_put_and_get_round_trip",
          "test_ids_reader_cannot_put", "test_ids_cleanup_leaves_nothing"}  # fmt: skip


def verify(target: str) -> VerificationResult:
    options = VerifyOptions(target=target, timeout=5.0, accounts=(READER, WRITER), parts=("ids",))
    return run_verification(options, quiet=True)


def test_every_ids_check_passes_and_leaves_nothing() -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        result = verify(cat.service_url)
        assert outcomes(result) == {name: ("passed", None) for name in CHECKS}
        assert result.facts["ids_version"] == "2.1.1"
        assert cat.ids is not None and cat.ids.storage.files() == []
        assert sv7_facilities(cat) == 0
        code, line = run_check(cat.service_url, 5.0, None, False, [READER, WRITER])
        assert code == 0 and ", IDS ok" in line and "ids_ping=" in line, line


def test_no_ids_is_skipped_and_said() -> None:
    with LocalCatalogue(ServeConfig(ids=False)) as cat:
        result = verify(cat.service_url)
        assert {outcome for outcome, _ in outcomes(result).values()} == {"skipped"}
        code, line = run_check(cat.service_url, 5.0, None, False, [WRITER])
        assert code == 0 and ", no IDS" in line, line


def test_an_ids_that_answers_ping_but_fails_is_critical(monkeypatch: Any) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        assert cat.ids is not None

        def broken() -> str:
            raise InternalException("class java.lang.RuntimeException the IDS lost its ICAT")

        monkeypatch.setattr(cat.ids.service, "version", broken)
        code, line = run_check(cat.service_url, 5.0, None, False, [WRITER])
        assert code == 2 and line.startswith("ICAT CRITICAL - ids-fault"), line


@pytest.mark.parametrize("granted", ["CRUD"])
def test_a_reader_allowed_to_put_fails_its_check(granted: str) -> None:
    with LocalCatalogue(ServeConfig()) as cat:
        root = cat.service.login("simple", {"username": "root", "password": "root"})
        from igestbench.icat.beans import Bean

        for what in ("Datafile", "Dataset", "DatafileFormat", "Investigation", "Facility"):
            cat.service.create(root, Bean("Rule", {"what": what, "crudFlags": granted}))
        result = verify(cat.service_url)
        found = outcomes(result)
        assert found["test_ids_reader_cannot_put"] == ("failed", "wrong-result")
        assert found["test_ids_cleanup_leaves_nothing"] == ("passed", None)
        assert cat.ids is not None and cat.ids.storage.files() == []
        assert sv7_facilities(cat) == 0
