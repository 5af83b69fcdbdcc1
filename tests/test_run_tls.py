"""``sv7 run`` against catalogues whose TLS it cannot use: a cause and a hint, not "unreachable"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from igestbench.client.transport import INSECURE_NOTICE
from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue
from tests.test_run import credentials_env, sv7

QUICK = ["--parts", "single-query", "--flavour", "zeep", "--concurrency", "1", "--queries", "3"]


def only_result(out: Path) -> dict[str, Any]:
    (path,) = out.glob("*.json")
    data: dict[str, Any] = json.loads(path.read_text())
    return data


@pytest.mark.parametrize(
    ("tls", "https_to_http", "cause", "hint"),
    [
        ("self-signed", False, "tls-self-signed", "--ca-file"),
        ("ca", False, "tls-unknown-ca", "--ca-file"),
        (None, True, "tls-plain-http", "http://"),
    ],
)
def test_a_tls_failure_is_named_with_its_hint(
    tmp_path: Path, tls: str | None, https_to_http: bool, cause: str, hint: str
) -> None:
    with LocalCatalogue(ServeConfig(tls=tls)) as cat:
        url = cat.service_url.replace("http://", "https://") if https_to_http else cat.service_url
        result = sv7("run", "--target", url, *QUICK, "--out", str(tmp_path), env=credentials_env())
    assert result.returncode == 5, result.stderr  # TLS failed (README), not 4 unreachable
    assert "Traceback" not in result.stderr and "cannot be reached" not in result.stderr
    said = next(line for line in result.stderr.splitlines() if line.startswith("sv7 run: TLS"))
    assert f"{cause}: " in said and hint in said
    data = only_result(tmp_path)
    assert data["run"]["status"] == "failed"
    (note,) = [n for n in data["notes"] if n.startswith("TLS failed")]
    assert f"{cause}: " in note and hint in note


def test_insecure_says_so_once_without_a_python_warning(tmp_path: Path) -> None:
    with LocalCatalogue(ServeConfig(tls="self-signed")) as cat:
        result = sv7(
            "run",
            "--target",
            cat.service_url,
            "--insecure",
            *QUICK,
            "--out",
            str(tmp_path),
            env=credentials_env(),
        )
    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr and ".py:" not in result.stderr, result.stderr
    assert result.stderr.count(INSECURE_NOTICE) == 1
    assert INSECURE_NOTICE in only_result(tmp_path)["notes"]
