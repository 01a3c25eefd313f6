"""Reading documents: one document or version, version lists, the document list,
and the list of deleted documents.

Every function takes the caller's vault id: documents of other vaults do not exist
for the caller (``INVALID_DOCUMENT``).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from vaultfs.errors import InvalidData, InvalidDocument

from .records import MetaSnapshot, document_record, format_ms

__all__ = [
    "ListQuery",
    "deleted_documents",
    "get_document",
    "get_version",
    "latest_version",
    "list_documents",
    "read_document",
    "version_numbers",
]


def get_document(conn: sqlite3.Connection, vault_id: int, doc_id: int) -> sqlite3.Row:
    row = conn.execute(
        "SELECT * FROM documents WHERE id = ? AND vault_id = ?", (doc_id, vault_id)
    ).fetchone()
    if row is None:
        raise InvalidDocument(f"Document [{doc_id}] does not exist")
    return row


def get_version(
    conn: sqlite3.Connection, vault_id: int, doc_id: int, major: int, minor: int
) -> tuple[sqlite3.Row, sqlite3.Row]:
    doc = get_document(conn, vault_id, doc_id)
    ver = conn.execute(
        "SELECT * FROM versions WHERE doc_id = ? AND major = ? AND minor = ?",
        (doc_id, major, minor),
    ).fetchone()
    if ver is None:
        raise InvalidDocument(f"Version [{major}.{minor}] of document [{doc_id}] does not exist")
    return doc, ver


def latest_version(
    conn: sqlite3.Connection, vault_id: int, doc_id: int
) -> tuple[sqlite3.Row, sqlite3.Row]:
    doc = get_document(conn, vault_id, doc_id)
    return get_version(conn, vault_id, doc_id, doc["latest_major"], doc["latest_minor"])


def version_numbers(conn: sqlite3.Connection, doc_id: int) -> list[tuple[int, int]]:
    rows = conn.execute(
        "SELECT major, minor FROM versions WHERE doc_id = ? ORDER BY major, minor", (doc_id,)
    ).fetchall()
    return [(r["major"], r["minor"]) for r in rows]


def read_document(
    conn: sqlite3.Connection, vault_id: int, doc_id: int, version: tuple[int, int] | None
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
        "document": document_record(MetaSnapshot.load(conn), doc, ver),
        "versions": version_numbers(conn, doc_id) if version is None else [version],
        "renditions": [r["rendition_type"] for r in renditions],
        "attachments": [r["id"] for r in attachments] if enabled and enabled[0] else None,
    }


# --- the document list --------------------------------------------------------------

#: Sortable fields that are columns; other queryable editable fields sort by their
#: JSON value.
_SORT_COLUMNS = {
    "id": "d.id",
    "name__v": "v.name COLLATE NOCASE",
    "document_number__v": "d.document_number",
    "status__v": "v.status",
    "filename__v": "v.filename COLLATE NOCASE",
    "size__v": "v.size",
    "format__v": "v.format",
    "major_version_number__v": "v.major",
    "minor_version_number__v": "v.minor",
    "document_creation_date__v": "d.created_ms",
    "version_creation_date__v": "v.created_ms",
    "version_modified_date__v": "v.modified_ms",
    "created_by__v": "d.created_by",
    "last_modified_by__v": "v.modified_by",
    "type__v": "d.type",
    "lifecycle__v": "d.lifecycle",
}


@dataclass(frozen=True)
class ListQuery:
    start: int = 0
    limit: int = 200
    sort: str | None = None
    search: str | None = None
    all_versions: bool = False
    named_filter: str | None = None
    user_id: int = 0


def _order_by(conn: sqlite3.Connection, sort: str | None) -> tuple[str, list[Any]]:
    if not sort:
        return "d.id, v.major, v.minor", []
    parts = sort.split()
    direction = parts[1].lower() if len(parts) == 2 else "asc" if len(parts) == 1 else ""
    if direction not in ("asc", "desc"):
        raise InvalidData(f"Invalid value for [sort]: '{sort}' (expected '<field> asc|desc')")
    field = parts[0]
    params: list[Any] = []
    if field in _SORT_COLUMNS:
        expr = _SORT_COLUMNS[field]
    else:
        known = {spec["name"] for spec in MetaSnapshot.load(conn).fields if spec["queryable"]}
        if field not in known:
            raise InvalidData(f"Invalid value for [sort]: unknown field '{field}'")
        expr = "json_extract(v.fields, ?)"
        params.append(f"$.{field}")
    # id and version as tie-breakers keep pages stable.
    return f"{expr} {direction.upper()}, d.id {direction.upper()}, v.major, v.minor", params


def list_documents(
    conn: sqlite3.Connection, vault_id: int, query: ListQuery
) -> tuple[list[dict[str, Any]], int]:
    """One page of document records and the total number matching."""
    where = ["d.vault_id = ?"]
    params: list[Any] = [vault_id]
    if not query.all_versions:
        where.append("v.major = d.latest_major AND v.minor = d.latest_minor")
    for word in (query.search or "").split():
        where.append(
            "(v.name LIKE ? ESCAPE '\\' OR v.filename LIKE ? ESCAPE '\\'"
            " OR json_extract(v.fields, '$.title__v') LIKE ? ESCAPE '\\')"
        )
        pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        params += [pattern, pattern, pattern]
    filter_name = (query.named_filter or "").strip().lower()
    if filter_name == "my documents":
        where.append("d.created_by = ?")
        params.append(query.user_id)
    elif filter_name == "recent documents":
        where.append("(v.modified_by = ? OR d.created_by = ?)")
        params += [query.user_id, query.user_id]
    elif filter_name == "favorites":
        # Favourites are not kept by the local vault: nobody has any.
        where.append("0")
    elif filter_name:
        raise InvalidData(f"Invalid value for [named_filter]: '{query.named_filter}'")
    order, order_params = _order_by(conn, query.sort)
    if filter_name == "recent documents":
        order, order_params = "v.modified_ms DESC, d.id", []
    base = "FROM documents d JOIN versions v ON v.doc_id = d.id WHERE " + " AND ".join(where)
    total = conn.execute("SELECT count(*) " + base, params).fetchone()[0]
    rows = conn.execute(
        "SELECT d.id AS d_id, v.major AS v_major, v.minor AS v_minor "
        + base
        + f" ORDER BY {order} LIMIT ? OFFSET ?",
        [*params, *order_params, query.limit, query.start],
    ).fetchall()
    meta = MetaSnapshot.load(conn)
    records = []
    for row in rows:
        doc, ver = get_version(conn, vault_id, row["d_id"], row["v_major"], row["v_minor"])
        records.append(document_record(meta, doc, ver))
    return records, int(total)


# --- deletions ----------------------------------------------------------------------


def deleted_documents(
    conn: sqlite3.Connection,
    vault_id: int,
    start_ms: int,
    end_ms: int,
    offset: int,
    limit: int,
) -> tuple[list[dict[str, Any]], int]:
    base = "FROM deletions WHERE vault_id = ? AND deleted_ms >= ? AND deleted_ms <= ?"
    params = [vault_id, start_ms, end_ms]
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
