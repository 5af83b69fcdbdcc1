"""The answer texts of rows already written, kept by id while the store is unchanged.

A search that returns many objects spends most of the local catalogue's time handing each
column of each row from SQLite to Python and writing it out. A page of 1,000 Datafiles (the
scale part's ``page`` query at 10³) cost 3.2 ms of CPU in-process, of which finding and
sorting their ids was 0.4 ms (2026-11-27, the 2-core dev machine). So the text written for a
row is kept, by the row's id, and a search whose rows were mostly written before asks SQLite
for their ids only — the same statement, the same plan, scan and sort, so its cost still grows
with the catalogue as ICAT's does — and fetches and writes only the rows it has not kept
(:meth:`Reader._rows_text`): 0.7 ms for that page. It spares writing an object twice, never
the query that finds it.

Only a search's own rows are kept, not INCLUDEd objects. The scale part asks for another
Dataset with its Datafiles on each call: kept texts would hold all of a small tree's and few
of a big one's, and a query as flat as ICAT's would seem to grow with the catalogue. A page,
asked again, is the same rows at every size.

Kept texts are valid for one version of the store's rows (:attr:`Store.version`, bumped at the
end of every outermost transaction, after its COMMIT, and after a ROLLBACK too). A read takes
the version *before* its statement runs and keeps what it writes under it; texts are found only
by reads of the same version. A read that ran across a write keeps its texts under the version
it began in, which no later read asks for. A read that began in the microseconds between a
COMMIT and the bump keeps what it saw after the write under the older version, where a read
of that version racing the write may find it: a row as committed a moment later, never older
than its statement saw (row by row, as a database's READ COMMITTED gives). Reads inside a
transaction (the writer's own, which see its uncommitted rows) neither find nor keep.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

#: Texts kept per (answer form, entity) at most: a 2,000-row page ten times over (~10 MB of
#: Datafiles' XML). Past it they are dropped all at once, as :class:`row_xml._Texts` does.
KEPT_ROWS = 20_000
#: An answer of at least this many rows, most of them kept the last time its statement ran,
#: asks for ids first; a smaller one fetches whole rows at once (a second statement costs
#: more than writing a few rows).
BY_IDS_FROM = 50
#: Statements whose last share of kept rows is remembered.
_REMEMBERED = 4096


class Texts(dict[int, str]):
    """Row id → the row's answer text, for one answer form and entity, of one store version."""

    def known(self, ids: Sequence[int]) -> tuple[list[str | None], int]:
        """The kept text of each of ``ids`` (None where none is kept); how many were kept."""
        known = list(map(self.get, ids))
        return known, len(ids) - known.count(None)

    def keep(self, ids: Sequence[int], texts: Sequence[str]) -> None:
        """Keep the texts of one answer's rows, unless the answer alone passes the bound."""
        if len(ids) <= KEPT_ROWS:
            self.update(zip(ids, texts, strict=True))


class KeptTexts:
    """The :class:`Texts` of one answer form and entity, for the latest store version read."""

    def __init__(self) -> None:
        self._kept: tuple[int, Texts] = (-1, Texts())

    def of(self, version: int) -> Texts:
        """The texts kept under ``version`` (none when the store has changed since)."""
        kept_version, texts = self._kept
        if kept_version != version:
            texts = Texts()
            # a plain assignment: another thread may be replacing it too, and one of the two
            # empty dicts wins — only texts are lost, never mixed across versions
            self._kept = (version, texts)
        elif len(texts) >= KEPT_ROWS:
            texts.clear()
        return texts


class ByIds:
    """Which statements ask for their ids first: those whose last answer was big and mostly
    kept (a page asked again); a statement whose rows differ on every call (one Dataset of
    thousands, another each time) fetches whole rows, as it did before any text was kept."""

    def __init__(self) -> None:
        self._statements: dict[str, None] = {}

    def wanted(self, sql: str) -> bool:
        return sql in self._statements

    def note(self, sql: str, rows: int, kept: int) -> None:
        """What a run of ``sql`` found: ``rows`` rows, ``kept`` of them with their text kept."""
        if rows >= BY_IDS_FROM and 2 * kept >= rows:
            if len(self._statements) >= _REMEMBERED and sql not in self._statements:
                with contextlib.suppress(KeyError, RuntimeError, StopIteration):
                    self._statements.pop(next(iter(self._statements)))
            self._statements[sql] = None
        else:
            self._statements.pop(sql, None)
