"""Changing documents: create, update fields, new draft versions, delete.

Each function runs inside the one write transaction of its request (see db.py), so a
request that fails half-way changes nothing. Files arrive as ``StoredFile`` (already
in the blob store). ``now`` comes from ``Database.tick`` so that modification times
strictly increase.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping
from typing import Any

from vaultfs.errors import InvalidData, OperationNotAllowed, ParameterRequired

from . import access, metadata
from .content import StoredFile
from .documents import get_document, get_version, latest_version
from .fields import FieldSpec, is_list, parse_value
from .sql import Conn, Row
from .users import SessionUser

__all__ = [
    "CREATE_PARAMETERS",
    "CROSSLINK_FIELDS",
    "check_not_locked_by_other",
    "create_document",
    "create_version",
    "delete_document",
    "delete_version",
    "insert_version",
    "parse_fields",
    "reclassify",
    "touch_version",
    "update_fields",
]

#: Parameters of a create that are not fields.
CREATE_PARAMETERS = frozenset({"file", "suppressRendition"})
#: Fields that make a CrossLink document (create only).
CROSSLINK_FIELDS = (
    "source_vault_id__v",
    "source_document_id__v",
    "source_binding_rule__v",
    "bound_source_major_version__v",
    "bound_source_minor_version__v",
)
#: Binding rules of CrossLinks: label -> whether it binds a specific version.
_BINDING_RULES = {
    "Latest version": False,
    "Latest Steady State version": False,
    "Specific Document version": True,
}
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


def _name_default(where: metadata.Classification) -> str | None:
    for node in reversed(where.path):
        if node.name_default:
            return node.name_default
    return None


def _default_name(rule: str, file: StoredFile | None) -> str | None:
    """Apply a name defaulting rule; ``{filename}`` is the file name without extension."""
    if "{filename}" in rule:
        if file is None:
            return None
        stem = posixpath.splitext(file.filename)[0] or file.filename
        return rule.replace("{filename}", stem)[:100]
    return rule


def parse_fields(
    specs: Mapping[str, FieldSpec], form: Mapping[str, str], *, creating: bool
) -> dict[str, Any]:
    """Parsed editable field values of a form; INVALID_DATA names a field that is not."""
    values: dict[str, Any] = {}
    for name, text in form.items():
        spec = specs.get(name)
        if spec is None:
            raise InvalidData(f"Invalid field [{name}]: no such field on this document type")
        allowed = spec["editable"] and (creating or not spec["setOnCreateOnly"])
        if not allowed:
            raise InvalidData(f"Field [{name}] is not editable")
        values[name] = None if text == "" else parse_value(spec, text)
    return values


def _check_required(
    specs: Mapping[str, FieldSpec], values: Mapping[str, Any], *, lifecycle_given: bool
) -> None:
    """PARAMETER_REQUIRED naming every required field without a value."""
    missing = [
        name
        for name, spec in specs.items()
        if spec["required"] and not spec["systemAttribute"] and values.get(name) in (None, [])
    ]
    if not lifecycle_given:
        missing.insert(0, "lifecycle__v")
    if missing:
        raise ParameterRequired.naming(missing)


def _crosslink(
    conn: Conn, given: dict[str, str], file: StoredFile | None
) -> tuple[int, int, str, int | None, int | None] | None:
    """The validated CrossLink fields of a create (popped from ``given``), or None."""
    link = {name: given.pop(name) for name in CROSSLINK_FIELDS if name in given}
    if not link:
        return None
    for name in CROSSLINK_FIELDS[:3]:
        if name not in link:
            raise ParameterRequired(f"Missing required parameter [{name}] of a CrossLink")
    if file is not None:
        raise InvalidData("A CrossLink document takes its content from its source: no [file]")
    numbers: dict[str, int] = {}
    for name, text in link.items():
        if name != "source_binding_rule__v":
            if not (text.isascii() and text.strip().isdigit()):
                raise InvalidData(f"Invalid value for [{name}]: '{text}' is not a number")
            numbers[name] = int(text)
    given_rule = link["source_binding_rule__v"].strip().lower()
    rule = next((r for r in _BINDING_RULES if r.lower() == given_rule), None)
    if rule is None:
        raise InvalidData(
            f"Invalid value for [source_binding_rule__v]: '{given_rule}' (Latest version, "
            "Latest Steady State version or Specific Document version)"
        )
    vault_id, source_id = numbers["source_vault_id__v"], numbers["source_document_id__v"]
    source = conn.execute(
        "SELECT id FROM documents WHERE id = ? AND vault_id = ?", (source_id, vault_id)
    ).fetchone()
    if source is None:
        raise InvalidData(
            f"Invalid value for [source_document_id__v]: no document [{source_id}] in vault "
            f"[{vault_id}]"
        )
    access.check(conn, source_id, changes=False)  # a hidden source does not exist either
    major = minor = None
    if _BINDING_RULES[rule]:
        if "bound_source_major_version__v" not in numbers:
            raise ParameterRequired("Missing required parameter [bound_source_major_version__v]")
        major = numbers["bound_source_major_version__v"]
        minor = numbers.get("bound_source_minor_version__v", 0)
        exists = conn.execute(
            "SELECT 1 FROM versions WHERE doc_id = ? AND major = ? AND minor = ?",
            (source_id, major, minor),
        ).fetchone()
        if exists is None:
            raise InvalidData(
                f"Invalid value for [bound_source_major_version__v]: document [{source_id}] "
                f"has no version [{major}.{minor}]"
            )
    return vault_id, source_id, rule, major, minor


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
    link = _crosslink(conn, given, file)
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
        rule = _name_default(where)
        if rule is not None:
            values["name__v"] = _default_name(rule, file)
    _check_required(specs, values, lifecycle_given="lifecycle__v" in given)
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
    _check_required(specs, values, lifecycle_given="lifecycle__v" in given)
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
