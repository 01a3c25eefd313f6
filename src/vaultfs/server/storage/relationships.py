"""Relationships between documents: create on a version, read, delete; their metadata.

A relationship goes from a version of the source document (the version in the path
of its creation) to a target document, or to one version of it. Relationship types
(``relationship_types``) set the rules: ``targetDocVersionSpecific`` needs the target
version, ``singleUse`` allows one relationship of the type per source version,
``targetDocumentTypes`` (when not empty) limits the target's document type. A
relationship that exists already, or a target version that does not, is
``INVALID_DATA``. Deleting a document or a version deletes its relationships.
``list_all_relationships`` pages every relationship of the vault the caller may see
(an extension: the spec shows no way to read them but one version at a time).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vaultfs.errors import InvalidData, InvalidDocument, MalformedUrl, ParameterRequired

from . import access
from .changes import touch_version
from .documents import get_document, get_version
from .records import format_ms
from .sql import Conn, Row
from .users import SessionUser

__all__ = [
    "FIELD_METADATA",
    "create_relationship",
    "delete_relationship",
    "get_relationship",
    "list_all_relationships",
    "list_relationships",
    "relationship_types",
]


def _meta(name: str, type_: str, required: bool = False, **extra: Any) -> dict[str, Any]:
    entry = {
        "name": name,
        "type": type_,
        "editable": False,
        "queryable": True,
        "required": required,
        "multivalue": False,
        "onCreateEditable": name.startswith("target_") or name == "relationship_type__v",
        **extra,
    }
    return entry


#: Field metadata of relationship records (the ``properties`` of the metadata).
FIELD_METADATA = [
    _meta("id", "id", length=20),
    _meta("source_doc_id__v", "id", required=True, length=20),
    _meta("source_major_version__v", "Integer"),
    _meta("source_minor_version__v", "Integer"),
    _meta("target_doc_id__v", "id", required=True, length=20),
    _meta("target_major_version__v", "Integer"),
    _meta("target_minor_version__v", "Integer"),
    _meta("relationship_type__v", "String", required=True, length=255),
    _meta("created_date__v", "DateTime"),
    _meta("created_by__v", "ObjectReference", object="users"),
    _meta("source_vault_id__v", "id"),
]


def relationship_types(conn: Conn) -> list[dict[str, Any]]:
    """Every relationship type entry, in the vault's order."""
    rows = conn.execute("SELECT spec FROM relationship_types ORDER BY position").fetchall()
    return [json.loads(r[0]) for r in rows]


def _record(row: Row, vault_id: int) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": row["id"],
        "source_doc_id__v": row["source_doc"],
        "source_major_version__v": row["source_major"],
        "source_minor_version__v": row["source_minor"],
        "target_doc_id__v": row["target_doc"],
        "relationship_type__v": row["relationship_type"],
        "created_date__v": format_ms(row["created_ms"]),
        "created_by__v": row["created_by"],
        "source_vault_id__v": vault_id,
    }
    if row["target_major"] is not None:
        record["target_major_version__v"] = row["target_major"]
        record["target_minor_version__v"] = row["target_minor"]
    return record


def _type_spec(conn: Conn, value: str) -> dict[str, Any]:
    for spec in relationship_types(conn):
        if value.strip().lower() in (spec["value"].lower(), spec["label"].lower()):
            return spec
    raise InvalidData(f"Invalid value for [relationship_type__v]: unknown type '{value}'")


def _optional_int(form: Mapping[str, str], name: str) -> int | None:
    text = form.get(name, "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdigit()):
        raise InvalidData(f"Invalid value for [{name}]: '{text}' is not a number")
    return int(text)


def create_relationship(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    version: tuple[int, int],
    form: Mapping[str, str],
    now: int,
) -> int:
    missing = [n for n in ("target_doc_id__v", "relationship_type__v") if not form.get(n)]
    if missing:
        raise ParameterRequired.naming(missing)
    unknown = sorted(
        set(form)
        - {
            "target_doc_id__v",
            "relationship_type__v",
            "target_major_version__v",
            "target_minor_version__v",
        }
    )
    if unknown:
        raise InvalidData(f"Invalid parameter [{unknown[0]}] for a relationship")
    get_version(conn, caller.vault_id, doc_id, *version)
    spec = _type_spec(conn, form["relationship_type__v"])
    target_id = _optional_int(form, "target_doc_id__v")
    assert target_id is not None
    try:
        # Viewing the target is enough to point at it.
        target = get_document(conn, caller.vault_id, target_id, changes=False)
    except InvalidDocument as exc:
        raise InvalidData(
            f"Invalid value for [target_doc_id__v]: document [{target_id}] does not exist"
        ) from exc
    major = _optional_int(form, "target_major_version__v")
    minor = _optional_int(form, "target_minor_version__v")
    if (major is None) != (minor is None):
        raise InvalidData(
            "Invalid target version: give both [target_major_version__v] and "
            "[target_minor_version__v]"
        )
    if spec["targetDocVersionSpecific"] and major is None:
        raise ParameterRequired(
            f"Missing required parameter [target_major_version__v]: [{spec['value']}] "
            "relationships point at a version"
        )
    if major is not None:
        exists = conn.execute(
            "SELECT 1 FROM versions WHERE doc_id = ? AND major = ? AND minor = ?",
            (target_id, major, minor),
        ).fetchone()
        if exists is None:
            raise InvalidData(
                f"Invalid target: version [{major}.{minor}] of document [{target_id}] "
                "does not exist"
            )
    allowed = spec.get("targetDocumentTypes") or []
    if allowed and target["type"] not in {t["value"] for t in allowed}:
        labels = ", ".join(t["label"] for t in allowed)
        raise InvalidData(
            f"Invalid target: [{spec['value']}] relationships point at documents of type {labels}"
        )
    same = conn.execute(
        "SELECT target_doc, target_major, target_minor FROM relationships"
        " WHERE source_doc = ? AND source_major = ? AND source_minor = ?"
        " AND relationship_type = ?",
        (doc_id, *version, spec["value"]),
    ).fetchall()
    if any(tuple(r) == (target_id, major, minor) for r in same):
        raise InvalidData("Invalid relationship: this relationship exists already")
    if same and spec.get("singleUse"):
        raise InvalidData(
            f"Invalid relationship: [{spec['value']}] is single-use and this version has one"
        )
    rel_id = conn.execute(
        "INSERT INTO relationships (source_doc, source_major, source_minor, target_doc,"
        " target_major, target_minor, relationship_type, created_by, created_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (doc_id, *version, target_id, major, minor, spec["value"], caller.user.id, now),
    ).fetchone()[0]
    touch_version(conn, doc_id, *version, caller.user.id, now)
    return int(rel_id)


def list_relationships(
    conn: Conn, caller: SessionUser, doc_id: int, version: tuple[int, int]
) -> list[dict[str, Any]]:
    """Relationships of the version: from it, and to its document (or to this version).

    Relationships with a document the caller may not see are left out.
    """
    get_version(conn, caller.vault_id, doc_id, *version)
    source_visible, source_params = access.visible_sql(caller, "source_doc")
    target_visible, target_params = access.visible_sql(caller, "target_doc")
    rows = conn.execute(
        "SELECT * FROM relationships WHERE ((source_doc = ? AND source_major = ?"
        " AND source_minor = ?) OR (target_doc = ? AND (target_major IS NULL"
        f" OR (target_major = ? AND target_minor = ?)))) AND {source_visible}"
        f" AND {target_visible} ORDER BY id",
        (doc_id, *version, doc_id, *version, *source_params, *target_params),
    ).fetchall()
    return [_record(r, caller.vault_id) for r in rows]


def list_all_relationships(
    conn: Conn, caller: SessionUser, start: int, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """One page (by id) of every relationship of the caller's vault whose source and
    target documents the caller may see, and how many there are in all."""
    # Not ``r``: the visibility condition names document_roles so.
    source_visible, source_params = access.visible_sql(caller, "rel.source_doc")
    target_visible, target_params = access.visible_sql(caller, "rel.target_doc")
    where = (
        "FROM relationships rel JOIN documents d ON d.id = rel.source_doc WHERE d.vault_id = ?"
        f" AND {source_visible} AND {target_visible}"
    )
    params = (caller.vault_id, *source_params, *target_params)
    total = int(conn.execute(f"SELECT COUNT(*) {where}", params).fetchone()[0])
    rows = conn.execute(
        f"SELECT rel.* {where} ORDER BY rel.id LIMIT ? OFFSET ?", (*params, limit, start)
    ).fetchall()
    return [_record(r, caller.vault_id) for r in rows], total


def _row(conn: Conn, doc_id: int, version: tuple[int, int], rel_id: int) -> Row:
    row = conn.execute(
        "SELECT * FROM relationships WHERE id = ? AND ((source_doc = ? AND source_major = ?"
        " AND source_minor = ?) OR target_doc = ?)",
        (rel_id, doc_id, *version, doc_id),
    ).fetchone()
    if row is None:
        raise MalformedUrl(f"Relationship [{rel_id}] does not exist on this document version")
    return row


def get_relationship(
    conn: Conn, vault_id: int, doc_id: int, version: tuple[int, int], rel_id: int
) -> dict[str, Any]:
    get_version(conn, vault_id, doc_id, *version)
    return _record(_row(conn, doc_id, version, rel_id), vault_id)


def delete_relationship(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    version: tuple[int, int],
    rel_id: int,
    now: int,
) -> None:
    """Delete a relationship of the source version in the path."""
    get_version(conn, caller.vault_id, doc_id, *version)
    row = _row(conn, doc_id, version, rel_id)
    if row["source_doc"] != doc_id:
        raise MalformedUrl(
            f"Relationship [{rel_id}] is not a relationship of this version (its source is "
            f"document [{row['source_doc']}])"
        )
    conn.execute("DELETE FROM relationships WHERE id = ?", (rel_id,))
    touch_version(conn, doc_id, *version, caller.user.id, now)
