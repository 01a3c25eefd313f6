"""Attachments of documents: files bound to every version, versioned 1, 2, 3 ...

Adding a file whose checksum and name match an existing attachment does nothing
(the spec's rule); a file with the name of an existing attachment but other content
becomes that attachment's next version; any other file is a new attachment.
"""

from __future__ import annotations

from typing import Any

from vaultfs.errors import InvalidData, MalformedUrl

from .changes import check_not_locked_by_other, touch_version
from .content import StoredFile
from .documents import get_document
from .records import format_ms
from .sql import Conn, Row
from .users import SessionUser

__all__ = [
    "MAX_ATTACHMENTS",
    "MAX_ATTACHMENT_SIZE",
    "MAX_DESCRIPTION",
    "add_attachment",
    "attachment_record",
    "attachment_version",
    "attachment_versions",
    "delete_attachment",
    "list_attachments",
]

MAX_ATTACHMENTS = 50
#: "each file under 2 GB"
MAX_ATTACHMENT_SIZE = 2 * 1024**3 - 1
MAX_DESCRIPTION = 1000


def _latest_row(conn: Conn, attachment_id: int) -> Row:
    row: Row = conn.execute(
        "SELECT a.id, a.doc_id, a.created_by, a.created_ms, v.* FROM attachments a"
        " JOIN attachment_versions v ON v.attachment_id = a.id WHERE a.id = ?"
        " ORDER BY v.version DESC LIMIT 1",
        (attachment_id,),
    ).fetchone()
    return row


def _get(conn: Conn, vault_id: int, doc_id: int, attachment_id: int) -> Row:
    get_document(conn, vault_id, doc_id)
    row = conn.execute(
        "SELECT * FROM attachments WHERE id = ? AND doc_id = ?", (attachment_id, doc_id)
    ).fetchone()
    if row is None:
        raise MalformedUrl(f"Attachment [{attachment_id}] does not exist on document [{doc_id}]")
    return row


def attachment_versions(conn: Conn, vault_id: int, doc_id: int, attachment_id: int) -> list[int]:
    _get(conn, vault_id, doc_id, attachment_id)
    rows = conn.execute(
        "SELECT version FROM attachment_versions WHERE attachment_id = ? ORDER BY version",
        (attachment_id,),
    ).fetchall()
    return [r[0] for r in rows]


def attachment_record(conn: Conn, attachment_id: int) -> dict[str, Any]:
    """The Attachment resource (latest version); ``versions`` holds numbers, routes add URLs."""
    row = _latest_row(conn, attachment_id)
    versions = conn.execute(
        "SELECT version FROM attachment_versions WHERE attachment_id = ? ORDER BY version",
        (attachment_id,),
    ).fetchall()
    record: dict[str, Any] = {
        "id": row["id"],
        "version__v": row["version"],
        "filename__v": row["filename"],
        "format__v": row["format"],
        "size__v": row["size"],
        "md5checksum__v": row["md5"],
        "created_by__v": row["created_by"],
        "created_date__v": format_ms(row["created_ms"]),
        "versions": [r[0] for r in versions],
    }
    if row["description"]:
        record["description__v"] = row["description"]
    return record


def list_attachments(
    conn: Conn, vault_id: int, doc_id: int, attachment_id: int | None = None
) -> list[dict[str, Any]]:
    if attachment_id is not None:
        _get(conn, vault_id, doc_id, attachment_id)
        return [attachment_record(conn, attachment_id)]
    get_document(conn, vault_id, doc_id)
    rows = conn.execute(
        "SELECT id FROM attachments WHERE doc_id = ? ORDER BY id", (doc_id,)
    ).fetchall()
    return [attachment_record(conn, r[0]) for r in rows]


def attachment_version(
    conn: Conn,
    vault_id: int,
    doc_id: int,
    attachment_id: int,
    version: int | None,
) -> Row:
    """The row of one version (the latest when ``version`` is None)."""
    _get(conn, vault_id, doc_id, attachment_id)
    if version is None:
        return _latest_row(conn, attachment_id)
    row = conn.execute(
        "SELECT * FROM attachment_versions WHERE attachment_id = ? AND version = ?",
        (attachment_id, version),
    ).fetchone()
    if row is None:
        raise MalformedUrl(f"Attachment [{attachment_id}] has no version [{version}]")
    return row


def add_attachment(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    file: StoredFile,
    description: str | None,
    now: int,
) -> tuple[int, int]:
    """Add a file; returns (attachment id, version number)."""
    doc = get_document(conn, caller.vault_id, doc_id)
    check_not_locked_by_other(doc, caller)
    enabled = conn.execute(
        "SELECT attachments_enabled FROM doc_types WHERE name = ?", (doc["type"],)
    ).fetchone()
    if not (enabled and enabled[0]):
        raise InvalidData("Attachments are not enabled for this document type")
    if description and len(description) > MAX_DESCRIPTION:
        raise InvalidData(
            f"Invalid value for [description__v]: longer than {MAX_DESCRIPTION} characters"
        )
    same_name = None
    for row in conn.execute("SELECT id FROM attachments WHERE doc_id = ?", (doc_id,)).fetchall():
        latest = _latest_row(conn, row["id"])
        if latest["filename"] == file.filename:
            if latest["md5"] == file.blob.md5:
                return int(row["id"]), int(latest["version"])
            same_name = latest
    if same_name is not None:
        attachment_id, version = int(same_name["id"]), int(same_name["version"]) + 1
    else:
        count = conn.execute(
            "SELECT count(*) FROM attachments WHERE doc_id = ?", (doc_id,)
        ).fetchone()[0]
        if count >= MAX_ATTACHMENTS:
            raise InvalidData(f"A document has at most {MAX_ATTACHMENTS} attachments")
        cur = conn.execute(
            "INSERT INTO attachments (doc_id, created_by, created_ms) VALUES (?, ?, ?)"
            " RETURNING id",
            (doc_id, caller.user.id, now),
        )
        attachment_id, version = int(cur.fetchone()[0]), 1
    conn.execute(
        "INSERT INTO attachment_versions (attachment_id, version, blob, md5, size, filename,"
        " format, description, created_by, created_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            attachment_id,
            version,
            file.blob.sha256,
            file.blob.md5,
            file.blob.size,
            file.filename,
            file.format,
            description or None,
            caller.user.id,
            now,
        ),
    )
    touch_version(conn, doc_id, doc["latest_major"], doc["latest_minor"], caller.user.id, now)
    return attachment_id, version


def delete_attachment(
    conn: Conn, caller: SessionUser, doc_id: int, attachment_id: int, now: int
) -> None:
    doc = get_document(conn, caller.vault_id, doc_id)
    check_not_locked_by_other(doc, caller)
    _get(conn, caller.vault_id, doc_id, attachment_id)
    conn.execute("DELETE FROM attachments WHERE id = ?", (attachment_id,))
    touch_version(conn, doc_id, doc["latest_major"], doc["latest_minor"], caller.user.id, now)
