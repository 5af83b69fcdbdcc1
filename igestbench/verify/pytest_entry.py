"""The ``pytest11`` entry point of igestbench: the sv7 plugin for sessions that run sv_tests.

From a source checkout ``pytest sv_tests --target URL`` finds the plugin through
``sv_tests/conftest.py`` (an initial conftest: the directory is on the command line). From an
installed package, ``pytest --pyargs sv_tests --target URL`` names a module, not a directory, so
pytest reads sv_tests' conftest only while collecting — after the command line was parsed, too
late for ``--target``. An entry point is loaded before parsing; this one loads the plugin, whose
options (``--target``, ``--site``, ``--account``, ``--timeout`` …) are then known.

It does so only for a session that names sv_tests: installing igestbench must not add options
to every other project's pytest (where ``--timeout`` belongs to pytest-timeout) or put the
checks' collection rules on their tests. Nothing heavy is imported otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

import pytest

PACKAGE = "sv_tests"
PLUGIN = "igestbench.verify.plugin"


def names_service_checks(paths: Sequence[str], pyargs: bool) -> bool:
    """Whether the command line's paths name sv_tests: a path through a directory of that
    name, or (with ``--pyargs``) the package or one of its modules."""
    for arg in paths:
        name = arg.split("::", 1)[0]
        if pyargs and (name == PACKAGE or name.startswith(PACKAGE + ".")):
            return True
        if PACKAGE in PurePath(name).parts:
            return True
    return False


@pytest.hookimpl(trylast=True)  # after the ini's pythonpath: a checkout's plugin comes first
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> None:
    # the positional arguments as pytest's first parse saw them (not the values of -k, -m …)
    known = early_config.known_args_namespace
    if names_service_checks(list(known.file_or_dir or ()), bool(known.pyargs)):
        # its pytest_addoption is historic: the options join the parser before the full parse
        early_config.pluginmanager.import_plugin(PLUGIN)
