"""The connection storage functions receive: one sqlite3-shaped API on both backends.

Storage functions are plain ``fn(conn, ...)`` with ``?`` placeholders and rows read by
column name or position. ``SqlConnection`` runs those statements through a SQLAlchemy
Core connection (``exec_driver_sql``) on SQLite or PostgreSQL (psycopg 3), so the
functions stay as they are and the SQL stays plain and dialect-neutral. Where the two
dialects differ (JSON access, full-text search), storage modules ask ``dialect_of``.

``Conn`` is the structural type of what storage functions need; ``sqlite3.Connection``
satisfies it as well, so callers typed against it keep type-checking.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import Any, Protocol, overload

from sqlalchemy import Connection

__all__ = [
    "Conn",
    "Cursor",
    "Row",
    "SqlConnection",
    "dialect_of",
    "ilike",
    "is_postgres",
    "json_sort_key",
    "json_text",
]


class Cursor(Protocol):
    """What storage functions read from ``conn.execute``."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Conn(Protocol):
    """A connection in a transaction, as storage functions use it."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Any: ...


class Row:
    """A result row read by position or column name (the ``sqlite3.Row`` contract)."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: tuple[Any, ...], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    @overload
    def __getitem__(self, key: int | str) -> Any: ...
    @overload
    def __getitem__(self, key: slice) -> tuple[Any, ...]: ...
    def __getitem__(self, key: int | str | slice) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def keys(self) -> list[str]:
        return list(self._index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Row):
            return self._values == other._values
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=True))!r})"


class _Result:
    """A fully read result (both drivers buffer the rows anyway)."""

    def __init__(self, rows: list[Row], rowcount: int) -> None:
        self._rows = rows
        self._next = 0
        self.rowcount = rowcount

    def fetchone(self) -> Row | None:
        if self._next >= len(self._rows):
            return None
        self._next += 1
        return self._rows[self._next - 1]

    def fetchall(self) -> list[Row]:
        rest = self._rows[self._next :]
        self._next = len(self._rows)
        return rest

    def __iter__(self) -> Iterator[Row]:
        return iter(self.fetchall())


@lru_cache(maxsize=2048)
def _postgres_sql(sql: str) -> str:
    """The statement in psycopg's paramstyle (``%s``; a literal ``%`` doubled). The
    storage writes SQL both dialects take (``ON CONFLICT DO NOTHING``, not SQLite's
    ``INSERT OR IGNORE``)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _params(parameters: Any) -> Any:
    if parameters is None:
        return ()
    if isinstance(parameters, dict):
        return parameters
    return tuple(parameters)


class SqlConnection:
    """A SQLAlchemy connection (inside a transaction) with the sqlite3-shaped API."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.dialect: str = connection.dialect.name

    def _sql(self, sql: str) -> str:
        return _postgres_sql(sql) if self.dialect == "postgresql" else sql

    def execute(self, sql: str, parameters: Any = (), /) -> _Result:
        result = self.connection.exec_driver_sql(self._sql(sql), _params(parameters))
        # No lastrowid (psycopg has none): an insert that needs its new id says
        # RETURNING id, which both backends understand.
        rows: list[Row] = []
        if result.returns_rows:
            index = {name: i for i, name in enumerate(result.keys())}
            rows = [Row(tuple(r), index) for r in result.fetchall()]
        return _Result(rows, result.rowcount)

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> _Result:
        batch = [_params(p) for p in parameters]
        if not batch:
            return _Result([], 0)
        result = self.connection.exec_driver_sql(self._sql(sql), batch)
        return _Result([], result.rowcount)


def dialect_of(conn: Conn) -> str:
    """``sqlite`` or ``postgresql``: the backend of a connection (sqlite3's own: sqlite)."""
    return getattr(conn, "dialect", "sqlite")


def is_postgres(conn: Conn) -> bool:
    return dialect_of(conn) == "postgresql"


def json_text(conn: Conn, column: str, key: str) -> str:
    """SQL for the value of ``key`` in the JSON object ``column``, compared as text.

    ``key`` is a constant of the caller's (a field name), never user input.
    """
    if is_postgres(conn):
        return f"({column}::jsonb ->> '{key}')"
    return f"json_extract({column}, '$.{key}')"


def json_sort_key(conn: Conn, column: str) -> tuple[str, Callable[[str], str]]:
    """SQL sorting by one key (a ``?`` parameter) of a JSON object, and that parameter.

    PostgreSQL's ``jsonb`` order, like SQLite's ``json_extract``, sorts numbers as
    numbers and text as text.
    """
    if is_postgres(conn):
        return f"({column}::jsonb -> ?)", lambda key: key
    return f"json_extract({column}, ?)", lambda key: f"$.{key}"


def ilike(conn: Conn) -> str:
    """The case-insensitive LIKE (SQLite's LIKE already ignores ASCII case)."""
    return "ILIKE" if is_postgres(conn) else "LIKE"
