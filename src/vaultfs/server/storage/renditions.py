"""Renditions of document versions: at most one file per rendition type and version."""

from __future__ import annotations

from vaultfs.errors import InvalidData, MalformedUrl

from .changes import check_not_locked_by_other, touch_version
from .content import StoredFile
from .documents import get_version, latest_version
from .sql import Conn, Row
from .users import SessionUser

__all__ = [
    "check_rendition_type",
    "delete_rendition",
    "get_rendition",
    "list_renditions",
    "put_rendition",
    "resolve_version",
]


def resolve_version(
    conn: Conn, vault_id: int, doc_id: int, version: tuple[int, int] | None
) -> tuple[Row, Row]:
    if version is None:
        return latest_version(conn, vault_id, doc_id)
    return get_version(conn, vault_id, doc_id, *version)


def check_rendition_type(conn: Conn, rendition_type: str) -> None:
    row = conn.execute("SELECT 1 FROM rendition_types WHERE name = ?", (rendition_type,)).fetchone()
    if row is None:
        raise MalformedUrl(f"Unknown rendition type [{rendition_type}]")


def list_renditions(
    conn: Conn, vault_id: int, doc_id: int, version: tuple[int, int] | None
) -> tuple[tuple[int, int], list[str]]:
    """The version's numbers and its rendition types."""
    _, ver = resolve_version(conn, vault_id, doc_id, version)
    rows = conn.execute(
        "SELECT rendition_type FROM renditions WHERE doc_id = ? AND major = ? AND minor = ?"
        " ORDER BY rendition_type",
        (doc_id, ver["major"], ver["minor"]),
    ).fetchall()
    return (ver["major"], ver["minor"]), [r[0] for r in rows]


def get_rendition(
    conn: Conn,
    vault_id: int,
    doc_id: int,
    version: tuple[int, int] | None,
    rendition_type: str,
    steady_state: bool = False,
) -> Row:
    """The rendition row; ``steady_state`` picks the latest version M.0 instead."""
    if steady_state and version is None:
        row = conn.execute(
            "SELECT r.* FROM renditions r JOIN documents d ON d.id = r.doc_id"
            " WHERE r.doc_id = ? AND d.vault_id = ? AND r.minor = 0 AND r.rendition_type = ?"
            " ORDER BY r.major DESC LIMIT 1",
            (doc_id, vault_id, rendition_type),
        ).fetchone()
        latest_version(conn, vault_id, doc_id)  # INVALID_DOCUMENT for unknown ids
    else:
        _, ver = resolve_version(conn, vault_id, doc_id, version)
        row = conn.execute(
            "SELECT * FROM renditions WHERE doc_id = ? AND major = ? AND minor = ?"
            " AND rendition_type = ?",
            (doc_id, ver["major"], ver["minor"], rendition_type),
        ).fetchone()
    if row is None:
        raise MalformedUrl(f"Document [{doc_id}] has no rendition [{rendition_type}]")
    return row


def put_rendition(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    version: tuple[int, int] | None,
    rendition_type: str,
    file: StoredFile,
    replace: bool,
    now: int,
) -> None:
    """Add (``replace`` False: must not exist) or replace (must exist) a rendition."""
    check_rendition_type(conn, rendition_type)
    doc, ver = resolve_version(conn, caller.vault_id, doc_id, version)
    check_not_locked_by_other(doc, caller)
    key = (doc_id, ver["major"], ver["minor"], rendition_type)
    exists = conn.execute(
        "SELECT 1 FROM renditions WHERE doc_id = ? AND major = ? AND minor = ?"
        " AND rendition_type = ?",
        key,
    ).fetchone()
    if exists and not replace:
        raise InvalidData(
            f"Rendition [{rendition_type}] already exists on version "
            f"[{ver['major']}.{ver['minor']}]; replace it with PUT"
        )
    if not exists and replace:
        raise MalformedUrl(f"Document [{doc_id}] has no rendition [{rendition_type}] to replace")
    conn.execute(
        "INSERT INTO renditions (doc_id, major, minor, rendition_type, blob, md5,"
        " size, filename, format, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (doc_id, major, minor, rendition_type) DO UPDATE SET"
        " blob = excluded.blob, md5 = excluded.md5, size = excluded.size,"
        " filename = excluded.filename, format = excluded.format,"
        " created_ms = excluded.created_ms",
        (*key, file.blob.sha256, file.blob.md5, file.blob.size, file.filename, file.format, now),
    )
    touch_version(conn, doc_id, ver["major"], ver["minor"], caller.user.id, now)


def delete_rendition(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    version: tuple[int, int] | None,
    rendition_type: str,
    now: int,
) -> None:
    doc, ver = resolve_version(conn, caller.vault_id, doc_id, version)
    check_not_locked_by_other(doc, caller)
    cur = conn.execute(
        "DELETE FROM renditions WHERE doc_id = ? AND major = ? AND minor = ?"
        " AND rendition_type = ?",
        (doc_id, ver["major"], ver["minor"], rendition_type),
    )
    if cur.rowcount == 0:
        raise MalformedUrl(f"Document [{doc_id}] has no rendition [{rendition_type}]")
    touch_version(conn, doc_id, ver["major"], ver["minor"], caller.user.id, now)
