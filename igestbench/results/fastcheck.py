"""A quick pass over a result document that says when :func:`.format.problems` would find
nothing, item by item instead of field by field.

``problems`` checks each field of :data:`.format.FIELDS` in turn, and each field of a list's
entries (``checks[].outcome`` …) over every entry: 230 checks a file, each a few calls, and
merge and report check 900 files of a 30 x 30 campaign. Nearly every file is good, so this pass
walks each entry once with exact type tests, and only when it sees anything unusual — a wrong
type, a missing key, a subclass of ``dict``, anything its rules do not cover — does ``problems``
run its own checks and write its messages, in its order. It never says "clean" where
``problems`` would find something: its tests are stricter than the field checks, never looser.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from igestbench.results.format import Field, JSONObject

#: the exact types a JSON value of each kind may have (true and false are no numbers)
EXACT: dict[type, tuple[type, ...]] = {int: (int,), float: (float, int), str: (str,),
                                       bool: (bool,), dict: (dict,), list: (list,)}
_ABSENT = object()
#: (key, exact types, required, nullable, exact types of list items or None, further check)
_ItemRule = tuple[str, tuple[type, ...], bool, bool, tuple[type, ...] | None,
                  Callable[[Any], str | None] | None]


def clean_check(fields: Sequence[Field],
                field_clean: Callable[[JSONObject, Field], bool]) -> Callable[[JSONObject], bool]:
    """A test of a document that is True only when ``problems`` would find nothing in it.
    ``field_clean(doc, field)``: the format's own check of a field outside list entries."""
    plain = [f for f in fields if "[]." not in f.path]
    sections: dict[str, list[_ItemRule]] = {}
    for f in fields:
        section, marker, key = f.path.partition("[].")
        if marker:
            sections.setdefault(section, []).append(
                (key, EXACT[f.kind], f.required, f.nullable,
                 EXACT[f.items] if f.items is not None else None, f.check))
    rules = [(section.split("."), tuple(items)) for section, items in sections.items()]

    def clean(doc: JSONObject) -> bool:
        if not all(field_clean(doc, f) for f in plain):
            return False
        for path, items in rules:
            entries: Any = doc
            for name in path:
                if type(entries) is dict:
                    entries = entries.get(name)
                elif isinstance(entries, dict):
                    return False  # a subclass: unusual
                else:
                    entries = None  # a parent absent or no object: no entries to check
            if type(entries) is list:
                if not all(_entry_clean(entry, items) for entry in entries):
                    return False
            elif isinstance(entries, list):
                return False  # a subclass: unusual
        return True

    return clean


def _entry_clean(entry: Any, rules: tuple[_ItemRule, ...]) -> bool:
    if type(entry) is not dict:
        # a list's item that is no object is the list's own problem (problems skips it); a
        # subclass of dict problems would check, so it is "unusual" here
        return not isinstance(entry, dict)
    for key, types, required, nullable, item_types, check in rules:
        value = entry.get(key, _ABSENT)
        if value is _ABSENT:
            if required:
                return False
            continue
        if value is None:
            if nullable:
                continue
            return False
        if type(value) not in types:
            return False
        if item_types is not None and not all(type(v) in item_types for v in value):
            return False
        if check is not None and check(value) is not None:
            return False
    return True
