"""Reading documents: one document or version, version lists, and the list of deleted
documents (the document list is document_list.py).

Every function takes the caller's vault id: documents of other vaults do not exist
for the caller (``INVALID_DOCUMENT``), and neither do documents their document roles
hide from the acting user (storage/access.py); lists leave those out.
"""

from __future__ import annotations

from typing import Any

from vaultfs.errors import InvalidDocument

from . import access, metadata
from .records import MetaSnapshot, document_record, format_ms
from .sql import Conn, Row
from .users import SessionUser

__all__ = [
    "decorate",
    "decorate_with",
    "deleted_documents",
    "find_common",
    "get_binder",
    "get_document",
    "get_version",
    "latest_version",
    "read_document",
    "version_numbers",
]


def get_document(conn: Conn, vault_id: int, doc_id: int, *, changes: bool | None = None) -> Row:
    """The document row, after the acting user's access check (see access.check)."""
    row = conn.execute(
        "SELECT * FROM documents WHERE id = ? AND vault_id = ?", (doc_id, vault_id)
    ).fetchone()
    if row is None:
        raise InvalidDocument(f"Document [{doc_id}] does not exist")
    access.check(conn, doc_id, changes=changes)
    return row


def get_binder(conn: Conn, vault_id: int, binder_id: int) -> Row:
    """A document addressed under ``/objects/binders``: it must be a binder."""
    row = get_document(conn, vault_id, binder_id)
    if not row["binder"]:
        raise InvalidDocument(f"Binder [{binder_id}] does not exist (a document, not a binder)")
    return row


def decorate(conn: Conn, doc: Row, record: dict[str, Any]) -> dict[str, Any]:
    """Add what records.py does not know: roles, binder and CrossLink fields."""
    link = conn.execute("SELECT * FROM crosslinks WHERE doc_id = ?", (doc["id"],)).fetchone()
    return decorate_with(doc, record, access.document_roles(conn, doc["id"]), link)


def decorate_with(
    doc: Row, record: dict[str, Any], roles: dict[str, dict[str, list[int]]], link: Row | None
) -> dict[str, Any]:
    """``decorate`` with the document's roles and CrossLink row already read (lists read
    them for a whole page at once)."""
    for role in access.ROLE_FIELDS:
        if role in roles or role in record:
            record[role] = roles.get(role, {"users": [], "groups": []})
    record["binder__v"] = bool(doc["binder"])
    if link is not None:
        record.update(
            {
                "crosslink__v": True,
                "source_vault_id__v": link["source_vault_id"],
                "source_document_id__v": link["source_doc_id"],
                "source_binding_rule__v": link["binding_rule"],
                "bound_source_major_version__v": link["bound_major"],
                "bound_source_minor_version__v": link["bound_minor"],
            }
        )
    return record


def get_version(conn: Conn, vault_id: int, doc_id: int, major: int, minor: int) -> tuple[Row, Row]:
    doc = get_document(conn, vault_id, doc_id)
    ver = conn.execute(
        "SELECT * FROM versions WHERE doc_id = ? AND major = ? AND minor = ?",
        (doc_id, major, minor),
    ).fetchone()
    if ver is None:
        raise InvalidDocument(f"Version [{major}.{minor}] of document [{doc_id}] does not exist")
    return doc, ver


def latest_version(conn: Conn, vault_id: int, doc_id: int) -> tuple[Row, Row]:
    doc = get_document(conn, vault_id, doc_id)
    return get_version(conn, vault_id, doc_id, doc["latest_major"], doc["latest_minor"])


def version_numbers(conn: Conn, doc_id: int) -> list[tuple[int, int]]:
    rows = conn.execute(
        "SELECT major, minor FROM versions WHERE doc_id = ? ORDER BY major, minor", (doc_id,)
    ).fetchall()
    return [(r["major"], r["minor"]) for r in rows]


def read_document(
    conn: Conn, vault_id: int, doc_id: int, version: tuple[int, int] | None
) -> dict[str, Any]:
    """Record, version numbers, rendition types of the version and attachment ids."""
    if version is None:
        doc, ver = latest_version(conn, vault_id, doc_id)
    else:
        doc, ver = get_version(conn, vault_id, doc_id, *version)
    renditions = conn.execute(
        "SELECT rendition_type FROM renditions WHERE doc_id = ? AND major = ? AND minor = ?"
        " ORDER BY rendition_type",
        (doc_id, ver["major"], ver["minor"]),
    ).fetchall()
    attachments = conn.execute(
        "SELECT id FROM attachments WHERE doc_id = ? ORDER BY id", (doc_id,)
    ).fetchall()
    enabled = conn.execute(
        "SELECT attachments_enabled FROM doc_types WHERE name = ?", (doc["type"],)
    ).fetchone()
    return {
        "document": decorate(conn, doc, document_record(MetaSnapshot.load(conn), doc, ver)),
        "versions": version_numbers(conn, doc_id) if version is None else [version],
        "renditions": [r["rendition_type"] for r in renditions],
        "attachments": [r["id"] for r in attachments] if enabled and enabled[0] else None,
    }


# --- deletions ----------------------------------------------------------------------


def deleted_documents(
    conn: Conn,
    caller: SessionUser,
    start_ms: int,
    end_ms: int,
    offset: int,
    limit: int,
) -> tuple[list[dict[str, Any]], int]:
    """Deleted versions in the window (those of documents the caller could see)."""
    visible, visible_params = access.visible_sql(caller, "deletions.doc_id")
    base = (
        "FROM deletions WHERE vault_id = ? AND deleted_ms >= ? AND deleted_ms <= ? AND " + visible
    )
    params = [caller.vault_id, start_ms, end_ms, *visible_params]
    total = conn.execute("SELECT count(*) " + base, params).fetchone()[0]
    rows = conn.execute(
        "SELECT * " + base + " ORDER BY deleted_ms, doc_id, major, minor LIMIT ? OFFSET ?",
        [*params, limit, offset],
    ).fetchall()
    data = [
        {
            "id": r["doc_id"],
            "major_version_number__v": r["major"],
            "minor_version_number__v": r["minor"],
            "date_deleted": format_ms(r["deleted_ms"]),
        }
        for r in rows
    ]
    return data, int(total)


def find_common(conn: Conn, vault_id: int, doc_ids: list[int]) -> list[dict[str, Any]]:
    """Fields every listed document has; ``shared`` with ``usedIn`` across their types."""
    leaves: dict[str, metadata.Classification] = {}
    for doc_id in doc_ids:
        where = metadata.classification_of(conn, get_document(conn, vault_id, doc_id))
        leaves[where.leaf.name] = where
    first, *others = leaves.values()
    common = metadata.fields_for(conn, first.path)
    for where in others:
        names = set(metadata.leaf_fields(conn, where))
        common = [spec for spec in common if spec["name"] in names]
    result = []
    for spec in common:
        if len(leaves) > 1:
            spec = {k: v for k, v in spec.items() if k not in ("definedIn", "definedInType")}
            spec["shared"] = True
            spec["usedIn"] = [{"key": name, "type": w.leaf.level} for name, w in leaves.items()]
        result.append(spec)
    return result
