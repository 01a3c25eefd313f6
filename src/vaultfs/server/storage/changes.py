"""Changing documents: create, update fields, reclassify, new draft versions.

Each function runs inside the one write transaction of its request (see db.py), so a
request that fails half-way changes nothing. Files arrive as ``StoredFile`` (already
in the blob store). ``now`` comes from ``Database.tick`` so that modification times
strictly increase. The parts a create is made of are in ``form_fields`` (which fields a
form sets) and ``crosslinks`` (a CrossLink's source); deletes are ``deletions``'.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from vaultfs.errors import InvalidData, OperationNotAllowed, ParameterRequired

from . import access, metadata
from .content import StoredFile
from .crosslinks import crosslink_of
from .documents import get_version, latest_version
from .fields import is_list
from .form_fields import check_required, default_name, name_default, parse_fields
from .sql import Conn, Row
from .users import SessionUser

__all__ = [
    "CREATE_PARAMETERS",
    "check_not_locked_by_other",
    "create_document",
    "create_version",
    "insert_version",
    "reclassify",
    "touch_version",
    "update_fields",
]

#: Parameters of a create that are not fields.
CREATE_PARAMETERS = frozenset({"file", "suppressRendition"})
_CLASSIFYING = ("type__v", "subtype__v", "classification__v", "lifecycle__v")


def check_not_locked_by_other(doc: Row, caller: SessionUser) -> None:
    if doc["locked_by"] is not None and doc["locked_by"] != caller.user.id:
        raise OperationNotAllowed(
            f"Document [{doc['id']}] is checked out by another user (user id {doc['locked_by']})"
        )


def touch_version(conn: Conn, doc_id: int, major: int, minor: int, user_id: int, now: int) -> None:
    """Bump ``version_modified_date__v`` of a version (every change of it does)."""
    conn.execute(
        "UPDATE versions SET modified_ms = ?, modified_by = ? WHERE doc_id = ? AND major = ?"
        " AND minor = ?",
        (now, user_id, doc_id, major, minor),
    )


def create_document(
    conn: Conn,
    caller: SessionUser,
    form: Mapping[str, str],
    file: StoredFile | None,
    now: int,
    *,
    binder: bool = False,
) -> int:
    """Create a document (or binder) from the text parts of a create request; its id.

    Besides fields the form may carry role assignments (``viewer__v.users=1,2``) and
    CrossLink fields (``CROSSLINK_FIELDS``).
    """
    given = {
        k: v
        for k, v in form.items()
        if v != "" and k not in CREATE_PARAMETERS and access.parse_role_key(k) is None
    }
    link = crosslink_of(conn, given, file)
    where = metadata.resolve_classification(
        conn, given.get("type__v"), given.get("subtype__v"), given.get("classification__v")
    )
    specs = metadata.leaf_fields(conn, where)
    lifecycles = where.leaf.lifecycles or where.type.lifecycles
    rest = {k: v for k, v in given.items() if k not in _CLASSIFYING}
    values = parse_fields(specs, rest, creating=True)
    for name, spec in specs.items():
        if name not in values and spec.get("defaultValue") is not None:
            default = spec["defaultValue"]
            values[name] = default if is_list(spec) else default[0]
    if not values.get("name__v"):
        rule = name_default(where)
        if rule is not None:
            values["name__v"] = default_name(rule, file)
    check_required(specs, values, lifecycle_given="lifecycle__v" in given)
    lifecycle = metadata.resolve_lifecycle(conn, given["lifecycle__v"], lifecycles)
    status = (
        metadata.resolve_status(conn, lifecycle, values.pop("status__v"))
        if values.get("status__v")
        else metadata.initial_state(conn, lifecycle)
    )
    values.pop("status__v", None)
    major = int(values.pop("major_version_number__v", 0) or 0)
    minor = int(values.pop("minor_version_number__v", 1) or 0)
    if major < 0 or minor < 0 or (major, minor) == (0, 0):
        raise InvalidData("Invalid version number: use a version of at least 0.1")
    name = str(values.pop("name__v"))
    cur = conn.execute(
        "INSERT INTO documents (vault_id, document_number, type, subtype, classification,"
        " lifecycle, created_by, created_ms, latest_major, latest_minor, binder)"
        " VALUES (?, '', ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        (
            caller.vault_id,
            where.type.name,
            where.subtype.name if where.subtype else None,
            where.classification.name if where.classification else None,
            lifecycle,
            caller.user.id,
            now,
            major,
            minor,
            int(binder),
        ),
    )
    doc_id = int(cur.fetchone()[0])
    conn.execute(
        "UPDATE documents SET document_number = ? WHERE id = ?", (f"VV-{doc_id:06d}", doc_id)
    )
    insert_version(conn, doc_id, major, minor, values, name, status, file, caller, now)
    conn.execute(
        "INSERT INTO document_roles (doc_id, role, kind, principal)"
        " VALUES (?, 'owner__v', 'users', ?)",
        (doc_id, caller.user.id),
    )
    access.add_roles(conn, caller.vault_id, doc_id, dict(form))
    if link is not None:
        conn.execute(
            "INSERT INTO crosslinks (doc_id, source_vault_id, source_doc_id, binding_rule,"
            " bound_major, bound_minor) VALUES (?, ?, ?, ?, ?, ?)",
            (doc_id, *link),
        )
    return doc_id


def insert_version(
    conn: Conn,
    doc_id: int,
    major: int,
    minor: int,
    values: dict[str, Any],
    name: str,
    status: str,
    file: StoredFile | None,
    caller: SessionUser,
    now: int,
) -> None:
    conn.execute(
        "INSERT INTO versions (doc_id, major, minor, fields, name, status, blob, md5, size,"
        " filename, format, created_by, created_ms, modified_by, modified_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            doc_id,
            major,
            minor,
            json.dumps(values),
            name,
            status,
            file.blob.sha256 if file else None,
            file.blob.md5 if file else None,
            file.blob.size if file else None,
            file.filename if file else None,
            file.format if file else None,
            caller.user.id,
            now,
            caller.user.id,
            now,
        ),
    )


def update_fields(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    version: tuple[int, int] | None,
    form: Mapping[str, str],
    now: int,
) -> None:
    """Set editable fields of a version (the latest when ``version`` is None)."""
    if version is None:
        doc, ver = latest_version(conn, caller.vault_id, doc_id)
    else:
        doc, ver = get_version(conn, caller.vault_id, doc_id, *version)
    check_not_locked_by_other(doc, caller)
    specs = metadata.leaf_fields(conn, metadata.classification_of(conn, doc))
    changes = parse_fields(specs, form, creating=False)
    if not changes:
        raise ParameterRequired("No fields to update were given")
    values: dict[str, Any] = json.loads(ver["fields"])
    name, status = ver["name"], ver["status"]
    for field_name, value in changes.items():
        spec = specs[field_name]
        if value is None and spec["required"]:
            raise InvalidData(f"Field [{field_name}] is required and cannot be cleared")
        if field_name == "name__v":
            name = value
        elif field_name == "status__v":
            status = metadata.resolve_status(conn, doc["lifecycle"], str(value))
            # Setting the state by hand ends the document's workflow (the local vault
            # has no workflow tasks to complete it otherwise).
            conn.execute("UPDATE workflows SET active = 0 WHERE doc_id = ?", (doc_id,))
        elif value is None:
            values.pop(field_name, None)
        else:
            values[field_name] = value
    conn.execute(
        "UPDATE versions SET fields = ?, name = ?, status = ?, modified_ms = ?, modified_by = ?"
        " WHERE doc_id = ? AND major = ? AND minor = ?",
        (json.dumps(values), name, status, now, caller.user.id, doc_id, ver["major"], ver["minor"]),
    )


def reclassify(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    form: Mapping[str, str],
    now: int,
) -> None:
    """Move the document (its latest version) to another type, subtype or classification.

    The form names the new classification and lifecycle and may set other editable
    fields; fields the new classification requires must then have a value.
    """
    doc, ver = latest_version(conn, caller.vault_id, doc_id)
    check_not_locked_by_other(doc, caller)
    given = {k: v for k, v in form.items() if v != ""}
    where = metadata.resolve_classification(
        conn, given.get("type__v"), given.get("subtype__v"), given.get("classification__v")
    )
    specs = metadata.leaf_fields(conn, where)
    changes = parse_fields(
        specs, {k: v for k, v in given.items() if k not in _CLASSIFYING}, creating=False
    )
    values: dict[str, Any] = {**json.loads(ver["fields"]), **changes}
    values["name__v"] = values.pop("name__v", None) or ver["name"]
    check_required(specs, values, lifecycle_given="lifecycle__v" in given)
    lifecycle = metadata.resolve_lifecycle(
        conn, given["lifecycle__v"], where.leaf.lifecycles or where.type.lifecycles
    )
    status = (
        ver["status"] if lifecycle == doc["lifecycle"] else metadata.initial_state(conn, lifecycle)
    )
    conn.execute(
        "UPDATE documents SET type = ?, subtype = ?, classification = ?, lifecycle = ?"
        " WHERE id = ?",
        (
            where.type.name,
            where.subtype.name if where.subtype else None,
            where.classification.name if where.classification else None,
            lifecycle,
            doc_id,
        ),
    )
    name = str(values.pop("name__v"))
    conn.execute(
        "UPDATE versions SET fields = ?, name = ?, status = ?, modified_ms = ?, modified_by = ?"
        " WHERE doc_id = ? AND major = ? AND minor = ?",
        (json.dumps(values), name, status, now, caller.user.id, doc_id, ver["major"], ver["minor"]),
    )


def create_version(
    conn: Conn,
    caller: SessionUser,
    doc_id: int,
    mode: str | None,
    file: StoredFile | None,
    description: str | None,
    now: int,
    *,
    number: tuple[int, int] | None = None,
    status: str | None = None,
) -> tuple[int, int]:
    """A new draft version (minor + 1) of the latest; returns its numbers.

    ``mode`` is ``createDraft``: ``latestContent`` copies the latest file,
    ``uploadedContent`` (and no mode) takes the uploaded file. ``number`` and
    ``status`` set them explicitly (migration of versions, the demo vault).
    """
    doc, latest = latest_version(conn, caller.vault_id, doc_id)
    check_not_locked_by_other(doc, caller)
    if mode not in (None, "latestContent", "uploadedContent"):
        raise InvalidData(
            f"Invalid value for [createDraft]: '{mode}' (latestContent or uploadedContent)"
        )
    if mode == "latestContent":
        if latest["blob"] is None:
            raise InvalidData("The latest version has no content to copy")
        file = None
    elif file is None:
        raise ParameterRequired("Missing required parameter [file]")
    values: dict[str, Any] = json.loads(latest["fields"])
    if description is not None:
        values["description__v"] = description or None
    major, minor = number or (latest["major"], latest["minor"] + 1)
    if (major, minor) <= (latest["major"], latest["minor"]):
        raise InvalidData(f"Version [{major}.{minor}] is not after the latest version")
    status = status or metadata.initial_state(conn, doc["lifecycle"])
    insert_version(conn, doc_id, major, minor, values, latest["name"], status, file, caller, now)
    if file is None:
        conn.execute(
            "UPDATE versions SET blob = ?, md5 = ?, size = ?, filename = ?, format = ?"
            " WHERE doc_id = ? AND major = ? AND minor = ?",
            (
                latest["blob"],
                latest["md5"],
                latest["size"],
                latest["filename"],
                latest["format"],
                doc_id,
                major,
                minor,
            ),
        )
    conn.execute(
        "UPDATE documents SET latest_major = ?, latest_minor = ? WHERE id = ?",
        (major, minor, doc_id),
    )
    return major, minor
