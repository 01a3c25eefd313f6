"""Reading documents: one document or version, version lists, the document list,
and the list of deleted documents.

Every function takes the caller's vault id: documents of other vaults do not exist
for the caller (``INVALID_DOCUMENT``), and neither do documents their document roles
hide from the acting user (storage/access.py); lists leave those out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from vaultfs.errors import InvalidData, InvalidDocument

from . import access, metadata, search
from .records import MetaSnapshot, document_record, format_ms
from .sql import Conn, Row, dialect_of, ilike, json_sort_key, json_text
from .users import SessionUser

__all__ = [
    "ListQuery",
    "decorate",
    "deleted_documents",
    "find_common",
    "get_binder",
    "get_document",
    "get_version",
    "latest_version",
    "list_documents",
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
    roles = access.document_roles(conn, doc["id"])
    for role in access.ROLE_FIELDS:
        if role in roles or role in record:
            record[role] = roles.get(role, {"users": [], "groups": []})
    record["binder__v"] = bool(doc["binder"])
    link = conn.execute("SELECT * FROM crosslinks WHERE doc_id = ?", (doc["id"],)).fetchone()
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


# --- the document list --------------------------------------------------------------

#: Sortable fields that are columns; other queryable editable fields sort by their
#: JSON value.
_SORT_COLUMNS = {
    "id": "d.id",
    "name__v": "lower(v.name)",
    "document_number__v": "d.document_number",
    "status__v": "v.status",
    "filename__v": "lower(v.filename)",
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
    caller: SessionUser
    start: int = 0
    limit: int = 200
    sort: str | None = None
    search: str | None = None
    #: None: fields only; ``contents``: file text only; ``all``: fields or file text
    scope: str | None = None
    all_versions: bool = False
    named_filter: str | None = None


def _field_match(conn: Conn) -> str:
    like = ilike(conn)
    title = json_text(conn, "v.fields", "title__v")
    return (
        f"(v.name {like} ? ESCAPE '\\' OR v.filename {like} ? ESCAPE '\\'"
        f" OR {title} {like} ? ESCAPE '\\')"
    )


def _keyword(conn: Conn, word: str, scope: str | None) -> tuple[str, list[Any]]:
    """The condition that one search keyword matches (every keyword must)."""
    pattern = "%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    fields = (_field_match(conn), [pattern, pattern, pattern])
    if scope is None:
        return fields
    query = search.text_query(conn, word)
    content = (search.CONTENT_MATCH[dialect_of(conn)], [query]) if query else ("1 = 0", [])
    if scope == "contents":
        return content
    return f"({fields[0]} OR {content[0]})", fields[1] + content[1]


def _order_by(conn: Conn, sort: str | None) -> tuple[str, list[Any]]:
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
        expr, key = json_sort_key(conn, "v.fields")
        params.append(key(field))
    # Missing values first going up, last going down (SQLite's order, said aloud so
    # PostgreSQL sorts the same); id and version as tie-breakers keep pages stable.
    nulls = "NULLS FIRST" if direction == "asc" else "NULLS LAST"
    order = direction.upper()
    return f"{expr} {order} {nulls}, d.id {order}, v.major, v.minor", params


def list_documents(conn: Conn, vault_id: int, query: ListQuery) -> tuple[list[dict[str, Any]], int]:
    """One page of document records and the total number matching."""
    visible, visible_params = access.visible_sql(query.caller)
    where = ["d.vault_id = ?", visible]
    params: list[Any] = [vault_id, *visible_params]
    if not query.all_versions:
        where.append("v.major = d.latest_major AND v.minor = d.latest_minor")
    words = (query.search or "").split()
    for word in words:
        condition, condition_params = _keyword(conn, word, query.scope)
        where.append(condition)
        params += condition_params
    user_id = query.caller.user.id
    filter_name = (query.named_filter or "").strip().lower()
    if filter_name == "my documents":
        where.append(
            "(d.created_by = ? OR EXISTS (SELECT 1 FROM document_roles o WHERE o.doc_id = d.id"
            " AND o.role = 'owner__v' AND o.kind = 'users' AND o.principal = ?))"
        )
        params += [user_id, user_id]
    elif filter_name == "recent documents":
        where.append("(v.modified_by = ? OR d.created_by = ?)")
        params += [user_id, user_id]
    elif filter_name == "favorites":
        where.append("d.id IN (SELECT doc_id FROM favorites WHERE user_id = ?)")
        params.append(user_id)
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
        record = decorate(conn, doc, document_record(meta, doc, ver))
        if query.scope is not None and words:
            highlights = _term_highlights(conn, doc["id"], words)
            if highlights:
                record["term_highlights"] = highlights
        records.append(record)
    return records, int(total)


def _term_highlights(conn: Conn, doc_id: int, words: list[str]) -> list[dict[str, Any]]:
    """Per version whose file text matches: the keywords found in it."""
    rows = conn.execute(
        "SELECT major, minor, blob FROM versions WHERE doc_id = ? AND blob IS NOT NULL"
        " ORDER BY major, minor",
        (doc_id,),
    ).fetchall()
    result = []
    for row in rows:
        terms = search.matched_terms(conn, row["blob"], words)
        if terms:
            result.append(
                {
                    "name": "content",
                    "highlight": terms,
                    "major_version_number__v": row["major"],
                    "minor_version_number__v": row["minor"],
                }
            )
    return result


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
