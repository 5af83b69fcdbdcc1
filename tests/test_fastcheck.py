"""The quick pass over result documents (results/fastcheck.py) says "clean" only where the
format's field checks find nothing, whatever is wrong where."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from igestbench.results import format as result_format
from igestbench.results.format import FIELDS, FORMAT_VERSION, problems

FIXTURES = Path(__file__).parent.parent / "fixtures" / "results"
_GONE = object()
ODD_VALUES = [_GONE, None, True, 0, -1, 1.5, "x", "", [], [1, None], {}, {"a": 1}]


class _Dict(dict[str, Any]):
    """A subclass of dict: the field checks accept it as an object, the quick pass is wary."""


def _documents() -> list[tuple[int, dict[str, Any]]]:
    found = []
    for path in sorted(FIXTURES.glob("v*/*.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        found.append((doc["version"], doc))
    return found


def _slow(doc: dict[str, Any], version: int, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    with monkeypatch.context() as m:
        m.setattr(result_format, "_CLEAN", {v: lambda _: False for v in FIELDS})
        return list(problems(doc, version))


def _set(doc: dict[str, Any], path: str, value: Any) -> bool:
    """``value`` at ``path`` (``a.b``, or ``a[].b`` in the first entry); False: no such place."""
    section, marker, key = path.partition("[].")
    *parents, last = (section.split(".") + ([key] if marker else []))
    node: Any = doc
    for i, name in enumerate(parents):
        node = node.get(name) if isinstance(node, dict) else None
        if marker and i == len(section.split(".")) - 1:
            if not isinstance(node, list) or not node or not isinstance(node[0], dict):
                return False
            node = node[0]
    if not isinstance(node, dict):
        return False
    if value is _GONE:
        node.pop(last, None)
    else:
        node[last] = copy.deepcopy(value)
    return True


def test_good_files_are_clean_at_once() -> None:
    for version, doc in _documents():
        assert result_format._CLEAN[version](doc), version
        assert list(problems(doc, version)) == []


def test_never_clean_where_the_field_checks_find_something(
        monkeypatch: pytest.MonkeyPatch) -> None:
    tried = found = 0
    for version, good in _documents():
        for field in FIELDS[version]:
            for value in ODD_VALUES:
                doc = copy.deepcopy(good)
                if not _set(doc, field.path, value):
                    continue
                tried += 1
                expected = _slow(doc, version, monkeypatch)
                found += bool(expected)
                assert list(problems(doc, version)) == expected, (field.path, value)
                if expected:
                    assert not result_format._CLEAN[version](doc), (field.path, value)
    assert tried > 500 and found > 200


def test_subclasses_of_dict_and_list_are_left_to_the_field_checks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    ((_, good),) = [(v, d) for v, d in _documents() if v == FORMAT_VERSION][:1]
    doc = copy.deepcopy(good)
    doc["checks"] = [_Dict(c) for c in doc["checks"]]
    assert not result_format._CLEAN[FORMAT_VERSION](doc)
    assert list(problems(doc, FORMAT_VERSION)) == _slow(doc, FORMAT_VERSION, monkeypatch)
