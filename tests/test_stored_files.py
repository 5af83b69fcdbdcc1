"""Which Datafiles a run's cleanup deletes through the IDS: asked in pages, so that a run with
more stored files than the server's entity limit is cleaned up all the same."""

from __future__ import annotations

from typing import Any

from igestbench.icat.query import Query
from igestbench.workloads import survey
from igestbench.workloads.stored_files import stored_datafiles


class _Server:
    """Answers the search for stored Datafiles as ICAT does, refusing more than ``limit``."""

    def __init__(self, ids: list[int], limit: int) -> None:
        self.ids, self.limit, self.asked = ids, limit, 0

    def user_name(self) -> str:
        return "simple/ingest"

    def search(self, query: Query) -> list[Any]:
        self.asked += 1
        assert "ORDER BY" in str(query)  # pages of an unordered answer may overlap
        skip, count = query.paging or (0, len(self.ids))
        page = self.ids[skip : skip + count]
        assert len(page) <= self.limit, "VALIDATION: attempt to return more than the limit"
        return page


def test_the_stored_datafiles_are_asked_in_pages(monkeypatch: Any) -> None:
    monkeypatch.setattr(survey, "PAGE", 100)
    server = _Server(list(range(1, 351)), limit=100)
    assert stored_datafiles(server, ["tag-ids"]) == list(range(1, 351))  # type: ignore[arg-type]
    assert server.asked == 4  # 100, 100, 100, 50
