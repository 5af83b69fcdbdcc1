"""The scale part's fixed query set: what each query asks of the tree, and what it must answer.

Every query is asked the same way over SOAP and REST, as root and as the member; each call
picks another object of the tree (spread over all of it, so no single row stays cached) and
checks the answer — a wrong answer is an error, never a fast figure. What is counted as
``rows`` is the objects the answer holds (a Dataset with INCLUDE: the Dataset and its
Datafiles; COUNT: its one number).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from igestbench.client.base import Catalogue
from igestbench.workloads.base import WrongResult
from igestbench.workloads.scale_tree import ScaleTree

#: Rows of the paged query: one page, as TopCAT or icatdump ask for.
PAGE = 2000
#: Datafiles the parameter range holds (at most: fewer on a tree smaller than the range).
RANGE_ROWS = 20
#: The golden ratio's fraction: turn i of a query asks position frac(i·φ) of the tree, a Weyl
#: sequence — consecutive calls land far apart and any run of calls covers the tree evenly,
#: whatever its size (a fixed stride does not: 7,919,993 is -7 modulo 10,000, so at 10⁴ twenty
#: calls fell on neighbouring Datafiles of one or two Datasets)
_PHI = 0.6180339887498949


@dataclass(frozen=True)
class Call:
    """One call of a query: what to send, and the rows the answer must hold."""

    query: str
    #: for ``get``: the primary key
    obj_id: int | None
    rows: int
    #: the value COUNT must be at least (the tree's size)
    at_least: int | None = None
    #: a Dataset with INCLUDE: the Datafiles it must bring along
    included: int | None = None


@dataclass(frozen=True)
class ScaleQuery:
    #: the key in the result file
    name: str
    #: what the report calls it
    label: str
    make: Callable[[ScaleTree, int], Call]

    def call(self, tree: ScaleTree, turn: int) -> Call:
        return self.make(tree, turn)


def _spread(turn: int, count: int) -> int:
    """The position of call ``turn`` among ``count`` (see :data:`_PHI`)."""
    return min(count - 1, int((turn * _PHI) % 1.0 * count))


def _serial(tree: ScaleTree, turn: int) -> int:
    return _spread(turn, tree.size)


def _by_dataset_and_name(tree: ScaleTree, turn: int) -> Call:
    s = _serial(tree, turn)
    return Call(f"SELECT df FROM Datafile df WHERE df.dataset.id = {tree.dataset_of(s)} "
                f"AND df.name = '{tree.datafile_name(s)}'", None, 1)  # fmt: skip


def _by_name(tree: ScaleTree, turn: int) -> Call:
    s = _serial(tree, turn)
    return Call(f"SELECT df FROM Datafile df WHERE df.name = '{tree.datafile_name(s)}'", None, 1)


def _get(tree: ScaleTree, turn: int) -> Call:
    return Call("Datafile", tree.datafiles[_serial(tree, turn)], 1)


def _count(tree: ScaleTree, turn: int) -> Call:
    return Call("SELECT COUNT(df) FROM Datafile df", None, 1, at_least=tree.size)


def _like_prefix(tree: ScaleTree, turn: int) -> Call:
    # the serial without its last digit: up to ten Datafiles share the prefix
    tens = _serial(tree, turn) // 10
    prefix = tree.datafile_name(tens * 10)[:-len("0.nxs")]
    rows = min(10, tree.size - tens * 10)
    return Call(f"SELECT df FROM Datafile df WHERE df.name LIKE '{prefix}%'", None, rows)


def _parameter_range(tree: ScaleTree, turn: int) -> Call:
    every = tree.shape.parameter_every
    carriers = tree.parameters_below(tree.size)
    first = _serial(tree, turn) // every % max(1, carriers - RANGE_ROWS + 1)
    rows = min(RANGE_ROWS, carriers - first)
    low, high = first * every, (first + rows - 1) * every
    assert tree.parameter_type is not None
    return Call(f"SELECT df FROM Datafile df JOIN df.parameters p WHERE p.type.id = "
                f"{tree.parameter_type.id} AND p.numericValue BETWEEN {low} AND {high}",
                None, rows)  # fmt: skip


def _page(tree: ScaleTree, turn: int) -> Call:
    # the first Investigation: the fullest (it holds files_per_investigation once grown)
    return Call(f"SELECT df FROM Datafile df WHERE df.dataset.investigation.id = "
                f"{tree.investigations[0]} ORDER BY df.name LIMIT 0, {PAGE}", None,
                min(PAGE, tree.files_in_investigation(0)))  # fmt: skip


def _dataset_index(tree: ScaleTree, turn: int) -> int:
    # spread over the Datasets, not over the Datafiles (which would favour the big ones)
    return _spread(turn, len(tree.datasets))


def _include(tree: ScaleTree, turn: int) -> Call:
    index = _dataset_index(tree, turn)
    files = tree.files_in_dataset(index)
    return Call(f"SELECT ds FROM Dataset ds WHERE ds.id = {tree.datasets[index]} "
                "INCLUDE ds.datafiles", None, 1 + files, included=files)  # fmt: skip


def _include_concise(tree: ScaleTree, turn: int) -> Call:
    index = _dataset_index(tree, turn)
    files = tree.files_in_dataset(index)
    # ICAT's concise syntax puts INCLUDE right after the entity name, before the condition
    return Call(f"Dataset INCLUDE Datafile [id = {tree.datasets[index]}]", None, 1 + files,
                included=files)


#: The fixed query set, in the order the report shows it.
QUERIES: tuple[ScaleQuery, ...] = (
    ScaleQuery("dataset-name", "Datafile by (dataset, name)", _by_dataset_and_name),
    ScaleQuery("name", "Datafile by name only", _by_name),
    ScaleQuery("get", "get Datafile by id", _get),
    ScaleQuery("count", "COUNT of all Datafiles", _count),
    ScaleQuery("like-prefix", "name LIKE 'prefix%'", _like_prefix),
    ScaleQuery("parameter-range", "numeric range over a DatafileParameter", _parameter_range),
    ScaleQuery("page", f"one page of {PAGE:,} Datafiles, ORDER BY name", _page),
    ScaleQuery("include", "a Dataset with INCLUDE of its Datafiles", _include),
    ScaleQuery("include-concise", "the same in the concise syntax", _include_concise),
)
BY_NAME = {q.name: q for q in QUERIES}


def ask(catalogue: Catalogue, call: Call) -> int:
    """Send ``call``; the rows of its answer, or WrongResult when they are not what the tree
    holds (a member who reads less than root: rules that do not grant what they should)."""
    if call.obj_id is not None:
        found = catalogue.get(call.query, call.obj_id)
        if found.id != call.obj_id:
            raise WrongResult(f"get of Datafile {call.obj_id} gave {found.entity} {found.id}")
        return 1
    answer: list[Any] = catalogue.search(call.query)
    if call.at_least is not None:
        if len(answer) != 1 or int(answer[0]) < call.at_least:
            raise WrongResult(f"COUNT gave {answer[:1]}, the tree alone holds {call.at_least}")
        return 1
    if call.included is not None:
        held = len(answer[0].get("datafiles") or []) if len(answer) == 1 else -1
        if held != call.included:
            raise WrongResult(f"the Dataset came with {held} Datafiles of {call.included}")
        return 1 + held
    if len(answer) != call.rows:
        raise WrongResult(f"{len(answer)} rows where the tree holds {call.rows}")
    return len(answer)
