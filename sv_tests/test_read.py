"""Reads: reference queries with known answers, get by id, INCLUDE, paging, and content counts.

Everything runs as the reader account (else the writer, else any account). A catalogue with
nothing readable skips the checks that need an object, and scores "empty" for content.
"""

from __future__ import annotations

import pytest

from igestbench.client import Catalogue
from igestbench.icat.beans import Bean
from igestbench.results import scoring
from igestbench.verify.options import ReferenceQuery
from igestbench.verify.plugin import OPTIONS_KEY
from sv_tests.conftest import Fact

pytestmark = pytest.mark.part("read")

#: Entities a populated catalogue has, most plentiful first: where to look for objects to read.
PLENTIFUL = ("Datafile", "Dataset", "Investigation", "Facility")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "reference" in metafunc.fixturenames:
        known = metafunc.config.stash[OPTIONS_KEY].reference_queries
        queries: list[ReferenceQuery | None] = [*known] or [None]
        ids = [q.name if q else "none" for q in queries]
        metafunc.parametrize("reference", queries, ids=ids)


def test_reference_query(reference: ReferenceQuery | None, reader: Catalogue) -> None:
    if reference is None:
        pytest.skip("no --reference-queries file ([[query]] tables of name, query and count)")
    result = reader.search(reference.query)
    found = int(result[0]) if reference.is_count else len(result)
    assert found == reference.expected, (
        f"{reference.name}: {found} found where {reference.expected} are expected "
        f"({reference.query})"
    )


def test_content_counts(reader: Catalogue, fact: Fact) -> None:
    for entity in scoring.CONTENT_ENTITIES:
        (count,) = reader.search(f"SELECT COUNT(x) FROM {entity} x")
        assert int(count) >= 0, f"COUNT of {entity} is {count}"
        fact(scoring.content_key(entity), int(count))


def first_object(reader: Catalogue) -> Bean:
    for entity in PLENTIFUL:
        found = reader.search(f"SELECT x FROM {entity} x ORDER BY x.id LIMIT 0, 1")
        if found:
            bean: Bean = found[0]
            return bean
    pytest.skip(f"nothing readable among {', '.join(PLENTIFUL)}")


def test_get_by_id(reader: Catalogue) -> None:
    found = first_object(reader)
    assert found.id is not None, f"a {found.entity} without id"
    got = reader.get(found.entity, found.id)
    assert (got.entity, got.id) == (found.entity, found.id), (
        f"get({found.entity}, {found.id}) returned {got.entity} {got.id}"
    )


def test_include(reader: Catalogue) -> None:
    for entity, relation in (("Dataset", "investigation"), ("Investigation", "facility")):
        query = f"SELECT x FROM {entity} x ORDER BY x.id INCLUDE x.{relation} LIMIT 0, 1"
        found = reader.search(query)
        if found:
            related = found[0].get(relation)
            assert isinstance(related, Bean) and related.id is not None, (
                f"{query}: the {relation} is not included"
            )
            return
    pytest.skip("no readable Dataset or Investigation to INCLUDE from")


def test_paging(reader: Catalogue) -> None:
    for entity in PLENTIFUL:
        ids = reader.search(f"SELECT x.id FROM {entity} x ORDER BY x.id LIMIT 0, 2")
        if len(ids) < 2:
            continue
        pages = [
            reader.search(f"SELECT x.id FROM {entity} x ORDER BY x.id LIMIT {i}, 1") for i in (0, 1)
        ]
        assert pages == [[ids[0]], [ids[1]]], f"{entity} pages {pages} for first ids {ids}"
        return
    pytest.skip("no entity with two readable objects to page through")
