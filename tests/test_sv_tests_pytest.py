"""``pytest sv_tests --target URL`` by hand: from a checkout where only pytest is installed,
and as ``pytest --pyargs sv_tests`` from an installed package (outside the source tree).

Both run pytest in a fresh interpreter (``python -I -S``) whose ``sys.path`` is built here, so
what is importable is exactly what the test says: the site-packages of this environment minus
pytest-benchmark (the plugin is gone, not merely switched off), and for the installed case a
wheel of this tree installed into a folder of its own instead of the checkout.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from igestbench.mock.catalogue import LocalCatalogue
from igestbench.verify.pytest_entry import names_service_checks

ROOT = Path(__file__).resolve().parents[1]
PARTS = ["--verify-parts", "connectivity,soap,session"]


def site_without_benchmark(tmp_path: Path) -> Path:
    """This environment's site-packages as links, without pytest-benchmark."""
    site = Path(sysconfig.get_paths()["purelib"])
    hidden = tmp_path / "site-packages"
    hidden.mkdir()
    for entry in site.iterdir():
        if not entry.name.lower().startswith(("pytest_benchmark", "pytest-benchmark")):
            (hidden / entry.name).symlink_to(entry)
    return hidden


def run_pytest(path: list[Path], args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    code = (
        "import importlib.util, sys; "
        f"sys.path[:0] = {[str(p) for p in path]!r}; "
        "assert importlib.util.find_spec('pytest_benchmark') is None, 'not hidden'; "
        "import pytest; raise SystemExit(pytest.main(sys.argv[1:]))"
    )
    # the default account logs in (session checks); nothing of this process' sys.path leaks
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SV7_", "PYTHON"))}
    env.update(SV7_AUTH="simple", SV7_USER="reader", SV7_PASSWORD="reader")
    return subprocess.run(
        [sys.executable, "-I", "-S", "-c", code, *args, "-p", "no:cacheprovider"],
        capture_output=True, text=True, timeout=300, cwd=cwd, env=env,
    )


def assert_checks_passed(result: subprocess.CompletedProcess[str]) -> None:
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "unrecognized arguments" not in out and " passed" in out and "skipped" not in out, out
    assert "sv7 target: http://127.0.0.1:" in out  # the plugin's header: it was loaded


def test_from_a_checkout_without_pytest_benchmark(
    catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """pyproject's addopts once held --benchmark-disable: "unrecognized arguments" here."""
    hidden = site_without_benchmark(tmp_path)
    result = run_pytest([ROOT, hidden], ["sv_tests", "--target", catalogue.service_url, *PARTS],
                        cwd=ROOT)
    assert_checks_passed(result)


@pytest.mark.slow
def test_installed_with_pyargs_from_outside_the_tree(
    catalogue: LocalCatalogue, tmp_path: Path
) -> None:
    """Without the pytest11 entry point pytest reads sv_tests/conftest.py only after parsing
    the command line: "unrecognized arguments: --target"."""
    if importlib.util.find_spec("setuptools") is None:
        pytest.skip("building the wheel needs setuptools")
    # built from a copy: setuptools leaves build/ and an egg-info in the tree it builds, and an
    # egg-info in the checkout would switch the entry point on for every later run from it
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".tox", "build", "*.egg-info", "__pycache__", ".*_cache", "fixtures", "reports"))
    installed = tmp_path / "installed"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-cache-dir", "--target", str(installed), str(source)],
        capture_output=True, text=True, timeout=600,
    )
    assert build.returncode == 0, build.stderr
    assert (installed / "sv_tests" / "conftest.py").is_file()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    hidden = site_without_benchmark(tmp_path)
    result = run_pytest(
        [installed, hidden],
        ["--pyargs", "sv_tests", "--target", catalogue.service_url, *PARTS],
        cwd=outside,
    )
    assert_checks_passed(result)


@pytest.mark.parametrize(
    ("args", "pyargs", "named"),
    [
        (["sv_tests"], False, True),
        (["/site/sv_tests/test_tls.py::test_chain"], False, True),
        (["--pyargs", "sv_tests.test_soap"], True, True),
        (["tests"], False, False),
        (["tests/test_verify.py"], False, False),
        (["sv_tests_extra"], True, False),
    ],
)
def test_the_entry_point_acts_only_for_sessions_of_the_service_checks(
    args: list[str], pyargs: bool, named: bool
) -> None:
    assert names_service_checks(args, pyargs) is named
