"""Result files are read by orjson where it reads them as json does, else by json
(results/loader.py _decode): the same values, of the same types, and the same errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from igestbench.results import ResultFileError, load_result
from igestbench.results.loader import _decode, _NotJson

SAME = [
    '{"a": 1, "a": 2}', "1e-400", "-0", "-0.0", '"\\u00e9 \\ud83d\\ude00"', "[1.0, 1, 1e308]",
    "[9223372036854775807, -9223372036854775808, 18446744073709551615]",
    # beyond 64 bits: json keeps an exact integer (orjson would give a float)
    "123456789012345678901234567890", "-9223372036854775809", "99999999999999999999",
    '"\\ud800"',  # a lone surrogate: json reads it, orjson refuses it
]


def _typed(value: Any) -> Any:
    if isinstance(value, list):
        return [_typed(v) for v in value]
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    return (type(value).__name__, value)


@pytest.mark.parametrize("text", SAME, ids=range(len(SAME)))
def test_values_and_their_types_are_jsons(text: str) -> None:
    assert _typed(_decode(text, text.encode())) == _typed(json.loads(text))


@pytest.mark.parametrize(
    "text", ["NaN", "[1, -Infinity]", "1e400", "[-1e400]", '{"a": 1,}', '{"a": "\t"}', "[1"]
)
def test_what_json_refuses_is_refused_with_its_error(text: str) -> None:
    with pytest.raises((json.JSONDecodeError, _NotJson)) as found:
        _decode(text, text.encode())
    if not isinstance(found.value, _NotJson):
        with pytest.raises(json.JSONDecodeError) as expected:
            json.loads(text)
        assert (found.value.msg, found.value.pos) == (expected.value.msg, expected.value.pos)


def test_a_count_beyond_64_bits_stays_an_integer(tmp_path: Path) -> None:
    source = Path(__file__).parent.parent / "fixtures" / "results" / "v2"
    (good,) = source.glob("*.json")
    text = good.read_text(encoding="utf-8")
    doc = json.loads(text)
    doc["run"]["odd"] = 2**70
    path = tmp_path / good.name
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert load_result(path).raw["run"]["odd"] == 2**70
    path.write_text(text.replace('"run": {', '"run": {"nan": NaN, ', 1), encoding="utf-8")
    with pytest.raises(ResultFileError, match="NaN is not a JSON number"):
        load_result(path)
