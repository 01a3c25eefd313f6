"""The database of the local vault: SQLite (default) or PostgreSQL, and its transactions.

One SQLAlchemy Core engine. SQLite: one file (``vault.sqlite3``) in WAL mode, served by
one process. PostgreSQL: one database that several server processes share.

Blocking calls run in worker threads (``trio.to_thread``). Reads run in parallel, each
in one snapshot (SQLite's read transaction, PostgreSQL's REPEATABLE READ). Writes run
one at a time, each in one transaction, so a request changes everything it meant to
or nothing: in a process a ``trio.Lock`` orders them; across processes SQLite's
``BEGIN IMMEDIATE`` or, on PostgreSQL, a transaction-scoped advisory lock does. With
writers serialised, every read-modify-write in the storage functions (next version
number, lock owner, counters) has exactly one winner on both backends.

Storage modules are plain functions ``fn(conn, ...)`` (see ``sql.py``); routes run them
through ``Database.read`` / ``Database.write``. The schema is versioned by Alembic
(``schema.py``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import trio
from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url

from . import schema
from .sql import SqlConnection

__all__ = ["Database", "now_ms"]

T = TypeVar("T")

_READ_POOL = 4
#: PostgreSQL advisory lock keys (one namespace: these two numbers).
_WRITE_LOCK_KEY = 0x7661_0001
_STARTUP_LOCK_KEY = 0x7661_0002


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _sqlite_engine(path: Path) -> Engine:
    # check_same_thread=False: a connection is used by one worker thread at a time,
    # but not always the same thread (trio's thread cache).
    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"check_same_thread": False, "timeout": 30},
        pool_size=_READ_POOL + 1,
        max_overflow=_READ_POOL,
    )

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        # The driver's own implicit transactions are off: the "begin" hook below
        # starts them, so a writer can ask for BEGIN IMMEDIATE.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.execute("PRAGMA busy_timeout = 30000")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = FULL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        conn.exec_driver_sql(conn.get_execution_options().get("sqlite_begin", "BEGIN"))

    return engine


def _postgres_engine(url: str, password: str | None) -> Engine:
    parsed = make_url(url).set(drivername="postgresql+psycopg")
    if password is not None:
        parsed = parsed.set(password=password)
    # Without a password here, libpq reads PGPASSWORD or the PGPASSFILE (~/.pgpass).
    return create_engine(
        parsed, pool_size=_READ_POOL + 1, max_overflow=_READ_POOL, pool_pre_ping=True
    )


def database_url(target: Path | str) -> str:
    """The SQLAlchemy URL of ``target``: a URL as given, a path as a SQLite file."""
    if isinstance(target, Path):
        return f"sqlite:///{target}"
    return target


class Database:
    """The engine of one vault database and the one-writer-at-a-time rule."""

    def __init__(self, target: Path | str, *, password: str | None = None) -> None:
        self.url = database_url(target)
        self.dialect = make_url(self.url).get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ValueError(f"unsupported database: {self.dialect} (sqlite or postgresql)")
        db = make_url(self.url).database
        self.path: Path | None = Path(db) if self.dialect == "sqlite" and db else None
        self._password = password
        self._engine: Engine | None = None
        self._write_lock = trio.Lock()
        self._read_slots = trio.Semaphore(_READ_POOL)
        self._last_ms = 0
        self._clock_guard = threading.Lock()

    @property
    def shared(self) -> bool:
        """Whether several server processes may serve this database (PostgreSQL)."""
        return self.dialect == "postgresql"

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise RuntimeError("database is not open")
        return self._engine

    # --- lifecycle --------------------------------------------------------------

    def open(self, revision: str = "head") -> None:
        """Connect and bring the schema up to date (blocking); ``revision``: only that
        far (a restore loads records at their own revision, then upgrades)."""
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._engine = _sqlite_engine(self.path)
        else:
            self._engine = _postgres_engine(self.url, self._password)
        with self.exclusive(), self.begin_write() as conn:
            schema.upgrade(conn, revision)
        if self.path is not None:
            self.path.chmod(0o600)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold off other processes' start-up work (schema upgrade, demo data) meanwhile.

        SQLite needs nothing: it has one process, and its writers exclude each other.
        """
        if not self.shared:
            yield
            return
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.exec_driver_sql("SELECT pg_advisory_lock(%s)", (_STARTUP_LOCK_KEY,))
            try:
                yield
            finally:
                conn.exec_driver_sql("SELECT pg_advisory_unlock(%s)", (_STARTUP_LOCK_KEY,))

    # --- running storage functions ------------------------------------------------

    def tick(self) -> int:
        """A strictly increasing millisecond timestamp for changes.

        Two changes never share a modification time, so a client that lists by
        ``version_modified_date__v desc`` down to what it knows misses nothing. On a
        shared database the clock is a row every process advances.
        """
        with self._clock_guard:
            self._last_ms = max(now_ms(), self._last_ms + 1)
            if self.shared:
                self._last_ms = self._shared_tick(self._last_ms)
            return self._last_ms

    def _shared_tick(self, floor: int) -> int:
        with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            row = conn.exec_driver_sql(
                "UPDATE vaultfs_clock SET last_ms = GREATEST(last_ms + 1, %s) RETURNING last_ms",
                (floor,),
            ).one()
        return int(row[0])

    @contextmanager
    def begin_write(self) -> Iterator[Connection]:
        """A write transaction on a SQLAlchemy connection (schema work, restores)."""
        if self.shared:
            with self.engine.connect() as conn, conn.begin():
                # One writer at a time across all processes, as SQLite's file lock does.
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK_KEY,))
                yield conn
        else:
            with self.engine.connect() as conn:
                conn = conn.execution_options(sqlite_begin="BEGIN IMMEDIATE")
                with conn.begin():
                    yield conn

    @contextmanager
    def _begin_read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            if self.shared:
                conn = conn.execution_options(
                    isolation_level="REPEATABLE READ", postgresql_readonly=True
                )
            with conn.begin():
                yield conn

    def read_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in one read transaction (blocking)."""
        with self._begin_read() as conn:
            return fn(SqlConnection(conn), *args)

    def short_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in a transaction of its own that locks only the rows
        it touches (blocking): small shared state such as call counters, which must
        not queue behind the writers."""
        if not self.shared:
            return self.write_sync(fn, *args)
        with self.engine.connect() as conn, conn.begin():
            return fn(SqlConnection(conn), *args)

    def write_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in one write transaction (blocking; caller serialises)."""
        with self.begin_write() as conn:
            return fn(SqlConnection(conn), *args)

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        async with self._read_slots:
            return await trio.to_thread.run_sync(self.read_sync, fn, *args)

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        async with self._write_lock:
            # Not cancellable: once the transaction started it runs to its end, so a
            # client that goes away cannot leave a connection mid-transaction.
            return await trio.to_thread.run_sync(self.write_sync, fn, *args)
