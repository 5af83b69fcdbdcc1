"""Measurements only when asked: ``tox -e bench`` passes ``--benchmark-enable``.

Run by hand without it (``pytest tests/benchmarks/test_bench_x.py``), each benchmark runs its
function once, as a quick smoke test. This used to be ``--benchmark-disable`` in pyproject's
addopts, which broke every pytest run where pytest-benchmark is not installed — among them
``pytest sv_tests --target URL`` from a checkout without the test extra.
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(tryfirst=True)  # before pytest-benchmark's own pytest_configure reads it
def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("benchmark_enable", default=False):
        config.option.benchmark_disable = True
