"""Fixed-window call counters kept in the database (``vaultfs_windows``).

Processes that share a database count API calls and logins together: a counter is a
row (name, window start, count), read with its row locked (``FOR UPDATE`` on
PostgreSQL; SQLite's write transaction locks the file) and written back in the same
short transaction, so no two processes both take the last call of a window.
"""

from __future__ import annotations

from collections.abc import Sequence

from .sql import Conn, is_postgres

__all__ = ["forget_expired", "lock_windows", "save_windows"]


def lock_windows(conn: Conn, names: Sequence[str], now_ms: int) -> dict[str, tuple[int, int]]:
    """(start_ms, count) of each named window, made (empty) when missing, rows locked."""
    conn.executemany(
        "INSERT INTO vaultfs_windows (name, start_ms, count, expires_ms) VALUES (?, ?, 0, ?)"
        " ON CONFLICT (name) DO NOTHING",
        [(name, now_ms, now_ms) for name in names],
    )
    marks = ",".join("?" * len(names))
    lock = " ORDER BY name FOR UPDATE" if is_postgres(conn) else ""
    rows = conn.execute(
        f"SELECT name, start_ms, count FROM vaultfs_windows WHERE name IN ({marks}){lock}",
        list(names),
    ).fetchall()
    return {row["name"]: (int(row["start_ms"]), int(row["count"])) for row in rows}


def save_windows(conn: Conn, windows: Sequence[tuple[str, int, int, int]]) -> None:
    """Write (name, start_ms, count, expires_ms) of windows read by ``lock_windows``."""
    conn.executemany(
        "UPDATE vaultfs_windows SET start_ms = ?, count = ?, expires_ms = ? WHERE name = ?",
        [(start, count, expires, name) for name, start, count, expires in windows],
    )


def forget_expired(conn: Conn, now_ms: int) -> int:
    """Drop windows that ended (a later call starts a new one anyway)."""
    return int(conn.execute("DELETE FROM vaultfs_windows WHERE expires_ms < ?", (now_ms,)).rowcount)
