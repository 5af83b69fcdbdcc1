"""The texts of rows written before are used again only while the rows are unchanged
(mock/row_texts.py): a big answer asked again finds its rows by id, in the same statement's plan,
and says the same; an update, a rollback, a deletion and another user's rules are seen at once;
the writer's uncommitted rows never reach another reader."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from igestbench.config import ServeConfig
from igestbench.icat.beans import Bean
from igestbench.mock import row_texts
from igestbench.mock.catalogue import LocalCatalogue
from igestbench.mock.service import IcatService
from tests.sql_trace import statements
from tests.test_catalogue_no_stall import seed

FILES = 120  # over row_texts.BY_IDS_FROM: asked again, the page asks for its ids first
PAGE = "SELECT df FROM Datafile df ORDER BY df.name"


@pytest.fixture()
def service() -> Iterator[IcatService]:
    with LocalCatalogue(ServeConfig()) as cat:
        seed(cat.service, FILES)
        yield cat.service


def _root(service: IcatService) -> str:
    return service.login("simple", {"username": "root", "password": "root"})


def _statements(service: IcatService, run: Callable[[], Any]) -> tuple[Any, list[str]]:
    """What ``run()`` gave, and the statements SQLite ran meanwhile (this thread's connection)."""
    with statements(service.store.conn) as seen:
        answer = run()
    return answer, [s for s in seen if not s.startswith("EXPLAIN")]


def _ids_only(statements: list[str]) -> bool:
    return any(re.match(r'SELECT t0\."id" FROM "Datafile"', s) for s in statements)


def _sizes(text: str) -> list[int]:
    return [int(v) for v in re.findall(r'(?:<fileSize>|"fileSize":)(\d+)', text)]


@pytest.mark.parametrize("form", ["search_xml", "search_json"])
def test_a_page_asked_again_finds_its_rows_by_id_and_says_the_same(service, form) -> None:  # type: ignore[no-untyped-def]
    root = _root(service)
    answer = getattr(service, form)
    first, ran = _statements(service, lambda: answer(root, PAGE))
    assert not _ids_only(ran)  # nothing kept yet: whole rows, as before
    second, ran = _statements(service, lambda: answer(root, PAGE))
    assert not _ids_only(ran)  # its rows were kept: the next call asks for ids
    third, ran = _statements(service, lambda: answer(root, PAGE))
    assert _ids_only(ran), ran
    assert not any("IN (" in s for s in ran), "rows fetched although all were kept"
    assert first == second == third
    assert len(_sizes(third)) == FILES


def test_a_different_small_answer_each_time_keeps_fetching_whole_rows(service) -> None:  # type: ignore[no-untyped-def]
    root = _root(service)
    ids = service.search(root, "SELECT df.id FROM Datafile df ORDER BY df.id").items
    for i in ids[:5]:
        text, ran = _statements(service, lambda i=i: service.search_xml(
            root, f"SELECT df FROM Datafile df WHERE df.id = {i}"))  # fmt: skip
        assert not _ids_only(ran) and f"<id>{i}</id>" in text


@pytest.mark.parametrize("asked_before", [1, 3])
def test_an_update_is_in_the_next_answer(service, asked_before) -> None:  # type: ignore[no-untyped-def]
    """Once (texts kept, whole rows fetched) and thrice (the page asks for ids first)."""
    root = _root(service)
    for _ in range(asked_before):
        service.search_xml(root, PAGE)
    first = service.search(root, "SELECT df FROM Datafile df ORDER BY df.name LIMIT 0, 1").items[0]
    whole = service.get(root, "Datafile df INCLUDE df.dataset", first.id)
    service.update(root, Bean("Datafile", {**whole.values, "fileSize": 987654}))
    text = service.search_xml(root, PAGE)
    assert 987654 in _sizes(text)
    assert len(_sizes(text)) == FILES


def test_a_deleted_row_is_gone_from_the_next_answer(service) -> None:  # type: ignore[no-untyped-def]
    root = _root(service)
    for _ in range(3):
        service.search_json(root, PAGE)
    first = service.search(root, "SELECT df FROM Datafile df ORDER BY df.name LIMIT 0, 1").items[0]
    service.delete(root, Bean("Datafile", {"id": first.id}))
    text = service.search_json(root, PAGE)
    assert f'"id":{first.id},' not in text
    assert len(_sizes(text)) == FILES - 1


def test_a_row_deleted_between_its_id_and_its_text_is_left_out(service, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    root = _root(service)
    for _ in range(2):
        service.search_xml(root, PAGE)
    reader = service.reader
    kept = next(iter(reader._kept.values())).of(service.store.version)
    gone = sorted(kept)[0]
    del kept[gone]  # as if dropped: the next answer fetches this row by id …
    fetch = reader._fetch

    def deleted_first(*args: Any, **kwargs: Any) -> Any:
        # … and it is deleted, by another request, between the two statements
        service.store.conn.execute('DELETE FROM "Datafile" WHERE id = ?', (gone,))
        return fetch(*args, **kwargs)

    monkeypatch.setattr(reader, "_fetch", deleted_first)
    text = service.search_xml(root, PAGE)
    assert f"<id>{gone}</id>" not in text
    assert len(_sizes(text)) == FILES - 1


def test_the_writers_uncommitted_rows_reach_no_other_reader(service) -> None:  # type: ignore[no-untyped-def]
    root = _root(service)
    reader, store = service.reader, service.store
    for _ in range(3):
        reader.search_xml("simple/root", PAGE, None)
    seen_by_another: list[str] = []
    with pytest.raises(RuntimeError), store.transaction():
        store.conn.execute('UPDATE "Datafile" SET "fileSize" = 555555')
        # the writer reads its own rows …
        assert set(_sizes(reader.search_xml("simple/root", PAGE, None))) == {555555}
        # … another request, on its own connection, the committed ones
        other = threading.Thread(target=lambda: seen_by_another.append(
            reader.search_xml("simple/root", PAGE, None)))  # fmt: skip
        other.start()
        other.join()
        raise RuntimeError("rolled back")
    assert seen_by_another and 555555 not in _sizes(seen_by_another[0])
    assert 555555 not in _sizes(service.search_xml(root, PAGE))


def test_a_member_reads_only_the_rows_of_its_rules_however_kept(service) -> None:  # type: ignore[no-untyped-def]
    root = _root(service)
    ids = service.search(root, "SELECT df.id FROM Datafile df ORDER BY df.id").items
    readable = ids[: FILES // 2]
    service.create(root, Bean("Rule", {"crudFlags": "R", "what": f"SELECT df FROM Datafile df "
                                       f"WHERE df.id <= {readable[-1]}"}))  # fmt: skip
    member = service.login("simple", {"username": "reader", "password": "reader"})
    for _ in range(3):
        assert len(_sizes(service.search_xml(root, PAGE))) == FILES  # every text kept
    for _ in range(3):
        text = service.search_xml(member, PAGE)
        assert sorted(int(i) for i in re.findall(r"<id>(\d+)</id>", text)) == readable


def test_kept_texts_are_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(row_texts, "KEPT_ROWS", 10)
    kept = row_texts.KeptTexts()
    texts = kept.of(1)
    texts.update((i, str(i)) for i in range(10))
    assert kept.of(1) == {}  # full: dropped at once
    texts = kept.of(1)
    texts[1] = "one"
    assert kept.of(2) == {} and kept.of(1) == {}  # another version: nothing of the first
    texts = kept.of(1)
    texts.keep(range(11), [str(i) for i in range(11)])
    assert texts == {}  # one answer over the bound alone is not kept
    texts.keep([3, 4], ["three", "four"])
    assert texts.known([4, 5, 3]) == (["four", None, "three"], 2)
