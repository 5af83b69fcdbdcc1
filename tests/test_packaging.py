"""What ``pip install .`` installs: setup.cfg finds packages by their ``__init__.py``, so a
folder of modules without one is left out of a plain install — as ``igestbench/mock/ids/`` was:
the installed ``sv7 serve`` could not start (the editable install of the tests did not show it;
.ci/run's install did)."""

from __future__ import annotations

from pathlib import Path

import igestbench

PACKAGE = Path(igestbench.__file__).resolve().parent


def test_every_folder_of_modules_is_a_package_that_pip_installs() -> None:
    missing = sorted(
        str(folder.relative_to(PACKAGE.parent))
        for folder in [PACKAGE, *PACKAGE.rglob("*")]
        if folder.is_dir() and "__pycache__" not in folder.parts
        and any(folder.glob("*.py")) and not (folder / "__init__.py").exists()
    )  # fmt: skip
    assert missing == []
