"""The local catalogue's SQLite store: tables from the schema, and ICAT's write semantics.

ICAT semantics kept here: the server sets ``createId``/``modId`` (the user name) and
``createTime``/``modTime``; a bean's one-to-many children without an id are created with it
(cascade); ``createMany`` is all-or-nothing and reports the index of the failing bean in
``offset``; ``update`` replaces every attribute and many-to-one relation with what the bean holds
(absent means null); ``delete`` cascades to every one-to-many child. NOT NULL, string lengths,
references and uniqueness are checked with ICAT's fault types and messages.

Reads (search, get, INCLUDE) live in :mod:`igestbench.mock.reader`; access rules in
:mod:`igestbench.mock.authz`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import logging
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import apsw

from igestbench.icat.beans import UTC, Bean
from igestbench.icat.faults import (
    IcatBadParameter,
    IcatError,
    IcatInternal,
    IcatNoSuchObject,
    IcatObjectAlreadyExists,
    IcatValidation,
)
from igestbench.icat.schema import Entity, Field, Profile, RelType
from igestbench.mock import db, tables
from igestbench.mock.checkpoints import Checkpointer
from igestbench.mock.mapping import MappedConnection
from igestbench.mock.tables import column_name, quote, table, to_sql
from igestbench.mock.time_budget import RunElsewhere, TimeBudget
from igestbench.mock.values import (
    REFUSE,
    SKIP,
    attribute_plan,
    check_applicable,
    check_value,
    ones_plan,
    present_values,
)

log = logging.getLogger(__name__)

#: SQLite virtual machine steps between two looks at the time budget (about 0.1 ms of work).
_PROGRESS_STEPS = 10_000
#: Prepared statements each connection keeps (Python's sqlite3 kept 128 by default).
_CACHED_STATEMENTS = 128
#: Statistics are refreshed once this many rows were written since the last time, and at least
#: as many as then (so at 1,000, 2,000, 4,000 … rows: a few times per order of magnitude),
#: each index sampled on this many rows. ICAT's database keeps statistics from its first rows
#: (InnoDB's are computed when a table is opened and after a tenth of it changed); without
#: them SQLite takes a numeric range over a parameter beside its type by the type's index —
#: every parameter of that type, 7x the time at 10^4 Datafiles.
ANALYZE_FROM = 1_000
ANALYSIS_LIMIT = 2_000

#: Called as ``check(access, entity, id)`` inside a write's transaction; raises to refuse it.
AccessCheck = Callable[[str, Entity, int], None]

#: Entity types whose change alters who may do what (the access rule cache is dropped then).
AUTHZ_ENTITIES = frozenset({"Rule", "User", "UserGroup", "Grouping", "PublicStep"})


@functools.lru_cache(maxsize=8)
def _stamp_text(stamp: dt.datetime) -> str:
    # every object of one createMany shares its time: written once, not 10,000 times
    return tables.format_stored_datetime(stamp)


def _correct_statistics(conn: apsw.Connection) -> None:
    """Make a sampled ANALYZE's statistics say what a full one would, where it matters.

    A sample of ANALYSIS_LIMIT rows that saw one value of an index's column (every parameter
    of one type) reports ANALYSIS_LIMIT + 1 rows per value, however big the table: at 10^6
    Datafiles SQLite would then prefer a parameter's type index (2,001 rows, it thinks) to a
    range on its value's (1/64 of the table, it guesses), and scan. Such a figure becomes the
    table's size (its largest id: ids only grow), as the table's own count does. And every
    index is marked ``noskipscan``: ICAT's MariaDB has no skip-scan, so with it SQLite would
    find a Datafile by name alone by seeking each Dataset in the (dataset, name) key where
    ICAT reads the whole table.
    """
    sizes: dict[str, int] = {}
    rows = db.rows(conn, "SELECT tbl, idx, stat FROM sqlite_stat1")
    for tbl, idx, stat in rows:
        if tbl not in sizes:
            top = db.scalar(conn, f"SELECT MAX(rowid) FROM {quote(tbl)}")
            sizes[tbl] = int(top or 0)
        words = stat.split()
        numbers = [int(w) for w in words if w.isdigit()]
        if not numbers:
            continue
        size = max(sizes[tbl], numbers[0], 1)
        numbers = [size] + [size if n > ANALYSIS_LIMIT else n for n in numbers[1:]]
        marks = [w for w in words if not w.isdigit() and w != "noskipscan"]
        new = " ".join([*map(str, numbers), *marks, *(["noskipscan"] if idx else [])])
        conn.execute("UPDATE sqlite_stat1 SET stat = ? WHERE tbl = ? AND idx IS ?",
                     (new, tbl, idx))


def now() -> dt.datetime:
    """The server's clock, to the millisecond as ICAT stores it."""
    t = dt.datetime.now(UTC)
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


class Store:
    """ICAT objects in one SQLite database (a file survives a restart; ``:memory:`` does not)."""

    def __init__(self, profile: Profile, path: str = ":memory:") -> None:
        self.profile = profile
        self.path = path
        # Every thread that serves requests has a connection of its own, so that a long read in
        # one thread never waits for, or holds up, another (SQLite connections are per thread).
        # Several connections see one database only through a file; for ":memory:" that is a
        # private temporary file, deleted on close (WAL: readers never block the writer).
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if path == ":memory:":
            self._tmp = tempfile.TemporaryDirectory(prefix="sv7-catalogue-")
            self._file = str(Path(self._tmp.name) / "catalogue.sqlite")
        else:
            self._file = path
        #: per thread: its connection, and the request it is answering (its time budget, whether
        #: on the event loop, the mapped connection it borrowed: mock/time_budget.py)
        self.thread_state = threading.local()
        self._connections: list[apsw.Connection] = []
        self._connections_lock = threading.Lock()
        #: the one connection that maps the database file, lent per request (mock/mapping.py)
        self.mapped = MappedConnection(self._connect)
        #: copies the WAL into the file after writes, off the writer's path (mock/checkpoints.py)
        self.checkpointer = Checkpointer(self._connect)
        #: the server is shutting down: every statement is stopped (interrupt)
        self.stopping = False
        # Writes are serialised here: one transaction at a time, whichever thread runs it.
        self._lock = threading.RLock()
        self._depth = 0
        #: Bumped on every change of an AUTHZ_ENTITIES table; the authorizer caches per value.
        self.authz_generation = 0
        #: rows written by this process, and their number at the last ANALYZE (see _analyze)
        self._written = 0
        self._analyzed_at = 0
        #: bumped by each ANALYZE: every thread's connection then loads the new statistics
        self.statistics = 0
        #: bumped at the end of every outermost transaction, committed or rolled back: what a
        #: read saw before may have changed (the reader's written rows are kept per version)
        self.version = 0
        self.fresh = not self._has_tables()
        with self.transaction():
            for ddl in tables.schema_sql(profile):
                self.conn.execute(ddl)
            existing = db.rows(
                self.conn, "SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'")
            for name in tables.stale_indexes(profile, existing):
                self.conn.execute(f"DROP INDEX IF EXISTS {quote(name)}")
        self._insert_sql: dict[tuple[str, tuple[str, ...]], str] = {}

    @property
    def conn(self) -> apsw.Connection:
        """This thread's connection to the database (opened on first use)."""
        conn: apsw.Connection | None = getattr(self.thread_state, "conn", None)
        if conn is None:
            conn = self._connect()
            self.thread_state.conn = conn
            self.thread_state.statistics = self.statistics
        elif self.thread_state.statistics != self.statistics and not conn.in_transaction:
            # another thread refreshed the statistics: a connection loads them only with its
            # schema, so load them again (reads a small table)
            conn.execute("ANALYZE sqlite_schema")
            self.thread_state.statistics = self.statistics
        return conn

    def _connect(self) -> apsw.Connection:
        # apsw, not Python's sqlite3: it hands a row's values over in about half the time, and
        # brings its own, newer SQLite (mock/db.py). Autocommit, as apsw always is: transactions
        # are explicit (BEGIN/SAVEPOINT), so nesting is ours to decide. A connection may pass
        # from thread to thread (the mapped one is lent), but apsw refuses a use by a second
        # thread while one is inside it (ThreadingViolationError), where sqlite3 let it through.
        conn = apsw.Connection(self._file, statementcachesize=_CACHED_STATEMENTS)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA busy_timeout = 10000")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA wal_autocheckpoint = 0")  # the checkpointer's thread does it
        # a temporary database need not survive a power cut; a kept file survives a crash
        conn.execute("PRAGMA synchronous = OFF" if self._tmp else "PRAGMA synchronous = NORMAL")
        # reads by pread; a request in a worker thread borrows the mapped one (TimeBudget)
        conn.execute("PRAGMA mmap_size = 0")
        local = self.thread_state

        def over_budget() -> bool:
            # SQLite calls this every _PROGRESS_STEPS VM steps; True aborts the statement
            deadline: float | None = getattr(local, "deadline", None)
            if self.stopping:
                return True
            return deadline is not None and time.monotonic() > deadline

        conn.set_progress_handler(over_budget, _PROGRESS_STEPS)
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    def _has_tables(self) -> bool:
        return bool(db.scalar(
            self.conn,
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'Facility'",
        ))

    def interrupt(self) -> None:
        """Stop every running statement now and any later one (the server is shutting down)."""
        self.stopping = True
        self.checkpointer.stop(timeout_s=0)  # no more checkpoints; close() waits for its end
        with self._connections_lock:
            for conn in self._connections:
                conn.interrupt()

    def close(self) -> None:
        self.checkpointer.stop()
        self.interrupt()
        with self._connections_lock:
            for conn in self._connections:
                with contextlib.suppress(apsw.Error):
                    conn.close()
            self._connections.clear()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    @property
    def inline(self) -> bool:
        """Whether this thread is answering a request on the event loop (see time_budget)."""
        return getattr(self.thread_state, "inline_s", None) is not None

    @property
    def inline_s(self) -> float | None:
        """How long a request on the event loop should hold it (seconds); None: not on it."""
        value: float | None = getattr(self.thread_state, "inline_s", None)
        return value

    def time_budget(self, seconds: float, inline_s: float | None = None) -> TimeBudget:
        """SQL run by this thread inside the block is stopped after ``seconds`` in total.

        A statement over budget is really stopped (SQLite's progress handler aborts it), and a
        write transaction it belonged to is rolled back; SQLite errors leave as ICAT faults.
        ``inline_s`` (not None): the block runs on the event loop, which it should hold no longer
        than that. It never waits for another thread's write: it raises :class:`RunElsewhere`
        instead, before writing anything, so that the request runs in a worker. Whether a read
        may run there is decided before it runs (:mod:`igestbench.mock.plans`, which also sends
        reads that held the loop too long to a worker from then on); a statement, once started,
        is never stopped to be run again elsewhere.
        """
        return TimeBudget(self, seconds, inline_s)

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """A transaction, or a savepoint inside the current one; rolled back on any exception."""
        if self.inline:
            if not self._lock.acquire(blocking=False):
                raise RunElsewhere  # the event loop never waits for a worker's write
        else:
            self._lock.acquire()
        try:
            conn = self.conn
            name = f"sp{self._depth}"
            conn.execute("BEGIN IMMEDIATE" if self._depth == 0 else f"SAVEPOINT {name}")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                try:
                    self._roll_back(conn, name)
                finally:
                    if self._depth == 0:  # rows read inside the transaction are gone again
                        self.version += 1
                raise
            self._depth -= 1
            try:
                conn.execute("COMMIT" if self._depth == 0 else f"RELEASE {name}")
            finally:
                if self._depth == 0:  # after the COMMIT, not before: see mock/row_texts.py
                    self.version += 1
            if self._depth == 0:
                self.checkpointer.after_write()
            if self._depth == 0 and self._written - self._analyzed_at >= max(
                    ANALYZE_FROM, self._analyzed_at) and not self.inline:
                self._analyze(conn)
        finally:
            self._lock.release()

    def _analyze(self, conn: apsw.Connection) -> None:
        """Refresh SQLite's statistics of every index, from a sample of each (milliseconds at
        any size; corrected where a sample misleads: :func:`_correct_statistics`). Without them
        SQLite guesses how selective a condition is — for a numeric range over a parameter
        beside its type, the type's index, a scan of every parameter of that type — where
        ICAT's database, which keeps statistics, walks the value's index.
        Each connection loads them when it next prepares a statement after the change."""
        self._analyzed_at = self._written
        deadline, self.thread_state.deadline = getattr(self.thread_state, "deadline", None), None
        try:
            conn.execute(f"PRAGMA analysis_limit = {ANALYSIS_LIMIT}")
            conn.execute("ANALYZE")
            _correct_statistics(conn)
            conn.execute("ANALYZE sqlite_schema")  # the statistics as changed, loaded again
            self.statistics += 1
            self.thread_state.statistics = self.statistics
        except apsw.Error:
            log.warning("ANALYZE failed; the query planner keeps its older statistics")
        finally:
            self.thread_state.deadline = deadline

    def _roll_back(self, conn: apsw.Connection, name: str) -> None:
        # The rollback must run even when the budget is spent (the progress handler would abort
        # it too), and SQLite may already have rolled back the whole transaction itself: an
        # interrupted write does that.
        deadline = getattr(self.thread_state, "deadline", None)
        self.thread_state.deadline = None
        try:
            if not conn.in_transaction:
                return
            if self._depth == 0:
                conn.execute("ROLLBACK")
            else:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
        finally:
            self.thread_state.deadline = deadline

    # --- create --------------------------------------------------------------------------

    def create(self, user: str, bean: Bean, check: AccessCheck | None = None) -> int:
        with self.transaction():
            return self._insert(user, bean, now(), {}, None, check)

    def create_many(
        self, user: str, beans: Sequence[Bean], check: AccessCheck | None = None
    ) -> list[int]:
        stamp = now()
        verified: dict[tuple[str, int], bool] = {}
        ids: list[int] = []
        with self.transaction():
            for index, bean in enumerate(beans):
                try:
                    ids.append(self._insert(user, bean, stamp, verified, None, check))
                except IcatError as exc:
                    exc.offset = index
                    raise
        return ids

    def _entity_of(self, bean: Bean) -> Entity:
        entity = self.profile.entities.get(bean.entity)
        if entity is None:
            raise IcatBadParameter(f"{bean.entity} is not an ICAT entity that can be stored")
        return entity

    def _insert(
        self,
        user: str,
        bean: Bean,
        stamp: dt.datetime,
        verified: dict[tuple[str, int], bool],
        parent: tuple[str, int] | None,
        check: AccessCheck | None,
    ) -> int:
        entity = self._entity_of(bean)
        values = bean.values
        if entity.base == "Parameter":
            check_applicable(entity, values.get("type"))
        cols: list[str] = ["createId", "createTime", "modId", "modTime"]
        stamp_text = _stamp_text(stamp)
        params: list[Any] = [user, stamp_text, user, stamp_text]
        if not present_values(entity, values, cols, params):
            self._attribute_values(entity, values, cols, params)  # in order: its fault first
        for f, column in ones_plan(entity):
            if parent is not None and f.name == parent[0]:
                ref_id: int | None = parent[1]
            else:
                ref_id = self._reference(entity, f, values.get(f.name), verified)
            if ref_id is None:
                if f.not_null:
                    raise IcatValidation(f"{entity.name}: {f.name} cannot be null.")
                continue
            cols.append(column)
            params.append(ref_id)
        key = (entity.name, tuple(cols))
        sql = self._insert_sql.get(key)
        if sql is None:
            sql = (
                f"INSERT INTO {table(entity)} ({', '.join(quote(c) for c in cols)}) "
                f"VALUES ({', '.join('?' * len(cols))})"
            )
            self._insert_sql[key] = sql
        self._written += 1
        try:
            conn = self.conn
            conn.execute(sql, params)
            new_id = conn.last_insert_rowid()
        except apsw.ConstraintError as exc:
            raise self._integrity_error(entity, values, exc, parent) from None
        assert new_id is not None
        for f in entity.manys:
            for child in values.get(f.name) or ():
                if child.id is not None:
                    raise IcatBadParameter(
                        f"{entity.name}.{f.name}: a contained {f.type} must not have an id"
                    )
                if child.entity != f.type:
                    child = Bean(f.type, child.values)
                assert f.mapped_by is not None
                self._insert(user, child, stamp, verified, (f.mapped_by, new_id), check)
        if entity.name in AUTHZ_ENTITIES:
            self.authz_generation += 1
        # ICAT checks CREATE once, on the top-level bean after the whole cascade is flushed
        # (EntityBeanManager.create): a rule on Investigation lets its contained children in.
        if check is not None and parent is None:
            check("CREATE", entity, new_id)
        return new_id

    def _attribute_values(
        self, entity: Entity, values: dict[str, Any], cols: list[str], params: list[Any]
    ) -> None:
        """Validate the attributes of a bean and append their columns and SQL values."""
        for f, when_absent, default in attribute_plan(entity):
            value = values.get(f.name)
            if value is None:
                if when_absent == SKIP:
                    continue
                if when_absent == REFUSE:
                    raise IcatValidation(f"{entity.name}: {f.name} cannot be null.")
                value = default  # its default; False for a Java primitive boolean
            check_value(entity, f, value)
            cols.append(f.name)
            params.append(to_sql(f, value))

    def _reference(
        self,
        entity: Entity,
        f: Field,
        ref: Any,
        verified: dict[tuple[str, int], bool],
    ) -> int | None:
        """The id of a many-to-one reference, checked to exist (memoised within one call)."""
        if ref is None:
            return None
        ref_id = ref.values.get("id") if isinstance(ref, Bean) else None
        if ref_id is None:
            raise IcatValidation(
                f"{entity.name}: {f.name} must refer to an existing {f.type} by id"
            )
        key = (f.type, int(ref_id))
        if key not in verified:
            row = self.conn.execute(f"SELECT 1 FROM {table(f.type)} WHERE id = ?", (key[1],))
            if row.fetchone() is None:
                raise IcatNoSuchObject(f"{f.type}[id:{key[1]}] not found.")
            verified[key] = True
        return key[1]

    def _integrity_error(
        self,
        entity: Entity,
        values: dict[str, Any],
        exc: apsw.ConstraintError,
        parent: tuple[str, int] | None,
    ) -> IcatError:
        text = str(exc)
        if "UNIQUE" in text and entity.constraint:
            parts = []
            for name in entity.constraint:
                value = values.get(name)
                if isinstance(value, Bean):
                    value = value.id
                if parent is not None and name == parent[0]:
                    value = parent[1]
                parts.append(f"{name} = '{value}'")
            return IcatObjectAlreadyExists(f"{entity.name} exists with {', '.join(parts)}")
        if "NOT NULL" in text:
            column = text.rpartition(".")[2]
            return IcatValidation(f"{entity.name}: {column.removesuffix('_id')} cannot be null.")
        return IcatInternal(f"{entity.name}: {text}")

    # --- update and delete ---------------------------------------------------------------

    def update(self, user: str, bean: Bean, check: AccessCheck | None = None) -> None:
        entity = self._entity_of(bean)
        if bean.id is None:
            raise IcatNoSuchObject(f"{entity.name} has null primary key.")
        with self.transaction():
            self.require(entity, int(bean.id))
            # As ICAT's EntityBeanManager.update: UPDATE is judged on the stored object before
            # the change; a change of a relation in the uniqueness key also needs DELETE on the
            # old object and CREATE on the changed one.
            identity_change = self._identity_change(entity, bean)
            if check is not None:
                check("UPDATE", entity, int(bean.id))
                if identity_change:
                    check("DELETE", entity, int(bean.id))
            cols = ["modId", "modTime"]
            params: list[Any] = [user, tables.format_stored_datetime(now())]
            present: list[str] = []
            self._attribute_values(entity, bean.values, present, params)
            cols += present
            # update replaces everything: what the bean lacks becomes null
            nulls = [f.name for f in entity.attributes if f.name not in present]
            verified: dict[tuple[str, int], bool] = {}
            for f in entity.ones:
                ref_id = self._reference(entity, f, bean.values.get(f.name), verified)
                if ref_id is None:
                    if f.not_null:
                        raise IcatValidation(f"{entity.name}: {f.name} cannot be null.")
                    nulls.append(column_name(f))
                else:
                    cols.append(column_name(f))
                    params.append(ref_id)
            assignments = [f"{quote(c)} = ?" for c in cols] + [f"{quote(c)} = NULL" for c in nulls]
            sql = f"UPDATE {table(entity)} SET {', '.join(assignments)} WHERE id = ?"
            try:
                self.conn.execute(sql, [*params, int(bean.id)])
            except apsw.ConstraintError as exc:
                raise self._integrity_error(entity, bean.values, exc, None) from None
            if check is not None and identity_change:
                check("CREATE", entity, int(bean.id))
            if entity.name in AUTHZ_ENTITIES:
                self.authz_generation += 1

    def _identity_change(self, entity: Entity, bean: Bean) -> bool:
        """Whether ``bean`` moves the stored object to another parent of its uniqueness key."""
        rels = [entity.field(n) for n in entity.constraint]
        rels = [f for f in rels if f.rel is RelType.ONE and f.name in bean.values]
        if not rels:
            return False
        cols = ", ".join(quote(column_name(f)) for f in rels)
        row = db.one(
            self.conn, f"SELECT {cols} FROM {table(entity)} WHERE id = ?", (int(bean.id or 0),)
        )
        new = [getattr(bean.values[f.name], "id", None) for f in rels]
        return any(n is not None and n != old for n, old in zip(new, row, strict=True))

    def delete_many(
        self, beans: Sequence[Bean], check: AccessCheck | None = None, first_offset: int = 0
    ) -> None:
        """Delete objects and, by cascade, everything they contain; all or nothing."""
        with self.transaction():
            for index, bean in enumerate(beans):
                try:
                    entity = self._entity_of(bean)
                    if bean.id is None:
                        raise IcatNoSuchObject(f"{entity.name} has null primary key.")
                    self.require(entity, int(bean.id))
                    if check is not None:
                        check("DELETE", entity, int(bean.id))
                    self.conn.execute(f"DELETE FROM {table(entity)} WHERE id = ?", (int(bean.id),))
                    if entity.name in AUTHZ_ENTITIES:
                        self.authz_generation += 1
                except IcatError as exc:
                    exc.offset = first_offset + index
                    raise

    def require(self, entity: Entity, obj_id: int) -> None:
        row = self.conn.execute(f"SELECT 1 FROM {table(entity)} WHERE id = ?", (obj_id,))
        if row.fetchone() is None:
            raise IcatNoSuchObject(f"{entity.name}[id:{obj_id}] not found.")

    def count(self, entity_name: str) -> int:
        return int(db.scalar(self.conn, f"SELECT count(*) FROM {table(entity_name)}"))
