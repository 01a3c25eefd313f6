"""Document locks (check-out): take, read, release.

Taking a lock is one conditional UPDATE inside the write transaction, so of two
clients racing for the same document exactly one wins.
"""

from __future__ import annotations

from vaultfs.errors import InsufficientAccess, OperationNotAllowed

from .changes import touch_version
from .documents import get_document
from .sql import Conn
from .users import SessionUser

__all__ = ["lock_document", "read_lock", "unlock_document"]


def lock_document(conn: Conn, caller: SessionUser, doc_id: int, now: int) -> None:
    """Check the document out to the caller; a second lock by the holder is a no-op."""
    doc = get_document(conn, caller.vault_id, doc_id)
    cur = conn.execute(
        "UPDATE documents SET locked_by = ?, locked_ms = ? WHERE id = ? AND locked_by IS NULL",
        (caller.user.id, now, doc_id),
    )
    if cur.rowcount == 0:
        holder = doc["locked_by"]
        if holder == caller.user.id:
            return
        raise OperationNotAllowed(
            f"Document [{doc_id}] is already checked out by another user (user id {holder})"
        )
    touch_version(conn, doc_id, doc["latest_major"], doc["latest_minor"], caller.user.id, now)


def read_lock(conn: Conn, vault_id: int, doc_id: int) -> tuple[int, int] | None:
    """(locked_by user id, locked_ms) or None."""
    doc = get_document(conn, vault_id, doc_id)
    if doc["locked_by"] is None:
        return None
    return int(doc["locked_by"]), int(doc["locked_ms"])


def unlock_document(conn: Conn, caller: SessionUser, doc_id: int, now: int) -> bool:
    """Undo the check-out; False when the document was not checked out.

    Only the holder may undo a check-out, or an admin.
    """
    doc = get_document(conn, caller.vault_id, doc_id)
    holder = doc["locked_by"]
    if holder is None:
        return False
    if holder != caller.user.id and caller.user.role != "admin":
        raise InsufficientAccess(
            f"Document [{doc_id}] is checked out by another user; only that user or an "
            "admin can undo the check out"
        )
    conn.execute("UPDATE documents SET locked_by = NULL, locked_ms = NULL WHERE id = ?", (doc_id,))
    touch_version(conn, doc_id, doc["latest_major"], doc["latest_minor"], caller.user.id, now)
    return True
