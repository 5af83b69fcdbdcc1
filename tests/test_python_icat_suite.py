"""The harness that runs python-icat's own suite (tests/python_icat_suite.py), without PyPI.

The suite itself runs in ``tox -e python-icat``; here the harness's steps are checked on their
own: the accounts it configures, the cached sdist, the build_test step and a clear error when
PyPI cannot be reached.
"""

from __future__ import annotations

import configparser
import io
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from igestbench.mock.auth import load_accounts
from tests import python_icat_suite as suite

SECTIONS = {
    "root", "useroffice", "idsreader", "ingest",
    "acord", "ahau", "jbotu", "jdoe", "nbour", "rbeck",
}  # fmt: skip


def test_icat_cfg_has_every_section_python_icat_reads() -> None:
    cfg = configparser.ConfigParser()
    cfg.read_string(suite.icat_cfg("http://127.0.0.1:1/ICATService/ICAT?wsdl"))
    assert set(cfg.sections()) == SECTIONS
    assert cfg["ingest"]["username"] == "dataingest"  # the user init-icat.py gives rights to
    assert cfg["jdoe"]["auth"] == "db" and cfg["useroffice"]["auth"] == "simple"
    # every account reaches the IDS sv7 serve serves beside the catalogue
    assert {cfg[s]["idsurl"] for s in SECTIONS} == {"http://127.0.0.1:1/ids"}


def test_users_file_makes_only_root_a_root_user(tmp_path: Path) -> None:
    path = tmp_path / "users.toml"
    path.write_text(suite.users_toml())
    accounts = load_accounts(path)
    assert {a.user_name for a in accounts if a.root} == {"simple/root"}
    assert len(accounts) == len(SECTIONS)


def test_a_cached_sdist_is_used_without_pip(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "python_icat-9.9.9.tar.gz").write_bytes(b"")

    def no_pip(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("pip was called")

    monkeypatch.setattr(suite.subprocess, "run", no_pip)
    assert suite.fetch_sdist("9.9.9", tmp_path).name == "python_icat-9.9.9.tar.gz"


def test_no_pypi_is_a_clear_error(tmp_path: Path, monkeypatch: Any) -> None:
    def offline(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert cmd[1:4] == ["-m", "pip", "download"]
        said = "ERROR: Could not find a version that satisfies the requirement python-icat==9.9.9"
        return subprocess.CompletedProcess(cmd, 1, "", said)

    monkeypatch.setattr(suite.subprocess, "run", offline)
    with pytest.raises(suite.SuiteError) as info:
        suite.fetch_sdist("9.9.9", tmp_path / "cache")
    message = str(info.value)
    assert "cannot download the sdist of python-icat 9.9.9 from PyPI" in message
    assert "Could not find a version" in message and "--sdist FILE" in message


def _sdist(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_prepare_runs_the_sdists_build_test(tmp_path: Path) -> None:
    setup = (
        "import sys, pathlib\n"
        "assert sys.argv[1:] == ['--quiet', 'build_test'], sys.argv\n"
        "pathlib.Path('tests', 'scripts').mkdir(parents=True)\n"
        "pathlib.Path('tests', 'scripts', 'icatdump.py').write_text('')\n"
    )
    sdist = _sdist(tmp_path / "p.tar.gz", {"python-icat-9.9.9/setup.py": setup})
    work = tmp_path / "work"
    work.mkdir()
    src = suite.prepare(sdist, work)
    assert src == work / "python-icat-9.9.9"
    assert (src / "tests" / "scripts" / "icatdump.py").is_file()


def test_prepare_reports_a_failing_build_test(tmp_path: Path) -> None:
    setup = "raise SystemExit('no build_test here')"
    sdist = _sdist(tmp_path / "p.tar.gz", {"p-1/setup.py": setup})
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(suite.SuiteError, match=r"(?s)build_test failed.*no build_test here"):
        suite.prepare(sdist, work)
