"""Which objects the scale part's query set asks for, call after call: spread over the whole
tree at every size, so that neither side of a comparison answers from a few hot rows."""

from __future__ import annotations

import itertools
import re
from array import array

import pytest

from igestbench.workloads import Journal
from igestbench.workloads.scale_queries import QUERIES
from igestbench.workloads.scale_tree import ScaleTree, TreeShape

CALLS = 22  # the part's and the benchmark's: 2 untimed, 20 timed


def _tree(size: int) -> ScaleTree:
    tree = ScaleTree(None, Journal(), "sv7-test-scale", TreeShape())  # type: ignore[arg-type]
    fpd = tree.shape.files_per_dataset
    tree.datafiles = array("q", range(1_000_000, 1_000_000 + size))
    tree.datasets = array("q", range(500_000, 500_000 + (size + fpd - 1) // fpd))
    return tree


def _asked(name: str, tree: ScaleTree) -> list[str]:
    (query,) = [q for q in QUERIES if q.name == name]
    return [str(query.call(tree, turn).obj_id or query.call(tree, turn).query)
            for turn in range(CALLS)]


@pytest.mark.parametrize("size", [1_000, 10_000, 100_000, 1_000_000])
def test_the_datafiles_asked_are_spread_over_the_tree(size: int) -> None:
    tree = _tree(size)
    for name in ("name", "dataset-name", "get"):
        asked = _asked(name, tree)
        serials = sorted(int(re.findall(r"\d+", text)[-1]) % 1_000_000 for text in asked)
        assert len(set(serials)) == CALLS, name
        # twenty-two calls over the whole tree: the closest two are not neighbours
        assert min(b - a for a, b in itertools.pairwise(serials)) > size // (10 * CALLS), name
        assert serials[-1] - serials[0] > size * 0.8, name


@pytest.mark.parametrize("size", [10_000, 100_000, 1_000_000])
def test_a_dataset_with_include_is_another_dataset_at_every_call(size: int) -> None:
    tree = _tree(size)
    for name in ("include", "include-concise"):
        ids = [int(re.search(r"5\d{5}", text).group()) for text in _asked(name, tree)]
        # 25 Datasets at 10^4: nearly every call another one; more Datasets: all distinct
        assert len(set(ids)) >= min(CALLS, len(tree.datasets)) - 4, (name, ids)
        assert max(ids) - min(ids) > len(tree.datasets) * 0.8, name
