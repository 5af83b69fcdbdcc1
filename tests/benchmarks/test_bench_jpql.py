"""Cost of compiling a query: the first time (parse + translate) and every time after (cache).

The load benchmarks send one query string thousands of times a second, so the cached path must
cost next to nothing; the cold path is what each new query string costs once.
"""

from __future__ import annotations

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from igestbench.icat.schema import get_profile
from igestbench.mock.jpql import compile_search
from igestbench.mock.jpql.compiler import clear_caches

PROFILE = get_profile("6.2")
#: What an ingestor sends most: a searchMatching-style lookup with JOINs and INCLUDE.
QUERY = (
    "SELECT o FROM Datafile o JOIN o.dataset AS ds JOIN ds.investigation AS i "
    "WHERE ds.name = 'e208945' AND i.name = '12100409-ST' AND o.name = 'e208945.nxs' INCLUDE 1"
)
RESTRICT = (("Datafile", ('SELECT r0."id" FROM "Datafile" r0', ())),)

pytestmark = pytest.mark.benchmark(group="jpql compile")


def test_cold_compile(benchmark: BenchmarkFixture) -> None:
    compile_search(PROFILE, QUERY)  # build the parser once; that is not part of a query's cost
    result = benchmark.pedantic(
        compile_search, args=(PROFILE, QUERY), setup=clear_caches, rounds=200, iterations=1
    )
    assert result.kind == "entity"


def test_cached_compile(benchmark: BenchmarkFixture) -> None:
    compile_search(PROFILE, QUERY, user="db/acord", restrict=RESTRICT)
    result = benchmark(compile_search, PROFILE, QUERY, user="db/acord", restrict=RESTRICT)
    # the rule's query restricts the rows (per row the search's own conditions leave: EXISTS)
    assert 'FROM "Datafile" r0' in result.sql and "EXISTS (SELECT 1" in result.sql
