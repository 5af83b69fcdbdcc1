"""Fixtures shared by the project's tests: local catalogues on loopback ports."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from igestbench.config import ServeConfig
from igestbench.mock.catalogue import LocalCatalogue


@pytest.fixture(scope="module")
def catalogue() -> Iterator[LocalCatalogue]:
    """A 6.2 local catalogue shared by a test module (tests must not rely on each other's data)."""
    with LocalCatalogue(ServeConfig()) as cat:
        yield cat


@pytest.fixture()
def fresh_catalogue() -> Iterator[LocalCatalogue]:
    """A new, empty 6.2 local catalogue for one test."""
    with LocalCatalogue(ServeConfig()) as cat:
        yield cat


@pytest.fixture(scope="module")
def catalogue_43() -> Iterator[LocalCatalogue]:
    with LocalCatalogue(ServeConfig(profile="4.3")) as cat:
        yield cat
