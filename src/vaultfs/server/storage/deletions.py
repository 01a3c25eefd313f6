"""Deleting a document or one version, and the record of it that
``GET /objects/deletions/documents`` lists.

Deleted files stay in the blob directory until the sweep at the next start.
"""

from __future__ import annotations

from vaultfs.errors import InvalidData

from .changes import check_not_locked_by_other, touch_version
from .documents import get_document, get_version
from .sql import Conn
from .users import SessionUser

__all__ = ["delete_document", "delete_version"]


def _record_deletion(
    conn: Conn,
    vault_id: int,
    doc_id: int,
    versions: list[tuple[int, int]],
    now: int,
) -> None:
    conn.executemany(
        "INSERT INTO deletions (doc_id, vault_id, major, minor, deleted_ms) VALUES (?, ?, ?, ?, ?)",
        [(doc_id, vault_id, major, minor, now) for major, minor in versions],
    )


def delete_document(conn: Conn, caller: SessionUser, doc_id: int, now: int) -> None:
    """Delete a document with all its versions, renditions and attachments.

    Deleted files stay in the blob directory until the sweep at the next start (a
    concurrent upload of the same content may be about to reference them).
    """
    doc = get_document(conn, caller.vault_id, doc_id)
    check_not_locked_by_other(doc, caller)
    rows = conn.execute("SELECT major, minor FROM versions WHERE doc_id = ?", (doc_id,))
    _record_deletion(conn, caller.vault_id, doc_id, [(r[0], r[1]) for r in rows], now)
    conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))


def delete_version(
    conn: Conn, caller: SessionUser, doc_id: int, major: int, minor: int, now: int
) -> None:
    doc, _ = get_version(conn, caller.vault_id, doc_id, major, minor)
    check_not_locked_by_other(doc, caller)
    others = conn.execute(
        "SELECT major, minor FROM versions WHERE doc_id = ? AND NOT (major = ? AND minor = ?)"
        " ORDER BY major DESC, minor DESC",
        (doc_id, major, minor),
    ).fetchall()
    if not others:
        raise InvalidData(
            f"Version [{major}.{minor}] is the only version of document [{doc_id}]; "
            "delete the document instead"
        )
    conn.execute(
        "DELETE FROM versions WHERE doc_id = ? AND major = ? AND minor = ?",
        (doc_id, major, minor),
    )
    _record_deletion(conn, caller.vault_id, doc_id, [(major, minor)], now)
    new_latest = others[0]
    conn.execute(
        "UPDATE documents SET latest_major = ?, latest_minor = ? WHERE id = ?",
        (new_latest["major"], new_latest["minor"], doc_id),
    )
    # The latest version's record shows the change of the version list.
    touch_version(conn, doc_id, new_latest["major"], new_latest["minor"], caller.user.id, now)
