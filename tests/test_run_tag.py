"""The run tag's one valid form, the run's Facility names, and LIKE patterns built from them."""

from __future__ import annotations

import datetime as dt

import pytest

from igestbench.icat.query import Query
from igestbench.workloads.run_tag import InvalidRunTag, RunTag, escape_like, like_prefix


def test_what_sv7_writes_is_valid_and_nothing_else() -> None:
    tag = RunTag.new("Elettra Sincrotrone")
    assert RunTag.parse(tag.name) == RunTag("elettra-sincrotrone", tag.run_id)
    assert tag.name.startswith("sv7-elettra-sincrotrone-")
    bad_tags = ["%", "sv7-", "PART", "", "sv7-x-20261126T101500", "sv7-x-20261126T101500-",
                "sv7-x-20261126T101500-abcd%", "sv7-X-20261126T101500-abcd",
                "sv7-x_y-20261126T101500-abcd", " sv7-x-20261126T101500-abcd", None, 7]
    for bad in bad_tags:
        with pytest.raises(InvalidRunTag, match="not a run tag sv7 writes"):
            RunTag.parse(bad)


def test_the_runs_facilities_are_the_tag_or_the_tag_and_a_suffix() -> None:
    tag = RunTag.parse("sv7-ab-c-20261126T101500-9f3a")
    assert tag.owns_name("sv7-ab-c-20261126T101500-9f3a")
    assert tag.owns_name("sv7-ab-c-20261126T101500-9f3a-full-cycle-zeep-c1-w0")
    for other in ["sv7-ab-c-20261126T101500-9f3a0", "sv7-ab-c-20261126T101500-9f3a-",
                  "sv7-ab-c-20261126T101500-9f3a-x%", "SV7-ab-c-20261126T101500-9f3a",
                  "PARTNER-0", "sv7-ab-c-20261126T101500-9f3b"]:  # fmt: skip
        assert not tag.owns_name(other), other
    assert RunTag.of_facility("sv7-ab-c-20261126T101500-9f3a-sweep-rest") == tag
    with pytest.raises(InvalidRunTag):
        RunTag.of_facility("PARTNER-0")
    assert tag.started == dt.datetime(2026, 11, 26, 10, 15, tzinfo=dt.UTC)


def test_like_patterns_escape_wildcards() -> None:
    assert escape_like("a_b%c!d") == "a!_b!%c!!d"
    query = Query("Facility").where(name=like_prefix("sv7-a_b-"))
    assert str(query) == "SELECT o FROM Facility o WHERE o.name LIKE 'sv7-a!_b-%' ESCAPE '!'"
