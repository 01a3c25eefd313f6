"""Bulk (CSV) operations on documents: one function per row kind, and row isolation.

``run_rows`` runs every row of a batch in the one write transaction of the request,
each inside its own SAVEPOINT: a row that fails is rolled back alone (nothing of it
stays, no half-made document) and answers FAILURE with its errors; the others go on.
Rows are plain ``dict[str, str]`` (CSV cells); files named in a ``file`` column were
copied into the blob store before the transaction (``Prepared``).

Migration mode (needed by version and rendition imports) is a vault setting
(``vault_settings``: ``migration_mode`` = ``true``) or, per request, an admin's
``X-VaultAPI-MigrationMode: true`` header.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vaultfs.errors import InvalidData, InvalidDocument, MalformedUrl, ParameterRequired, VaultError

from . import changes, deletions, form_fields, renditions, search
from .content import StoredFile
from .documents import latest_version
from .metadata import classification_of, leaf_fields, resolve_status, unchanging
from .sql import Conn, json_text
from .users import SessionUser

__all__ = [
    "Prepared",
    "create_row",
    "delete_version_row",
    "migration_mode",
    "rendition_row",
    "run_rows",
    "update_row",
    "version_row",
]

log = logging.getLogger("vaultfs.server")

RowResult = dict[str, Any]


@dataclass(frozen=True)
class Prepared:
    """One input row, with its file stored (or the error that stopped it early)."""

    row: dict[str, str]
    file: StoredFile | None = None
    text: str | None = None
    error: VaultError | None = None


def migration_mode(conn: Conn, vault_id: int) -> bool:
    row = conn.execute(
        "SELECT value FROM vault_settings WHERE vault_id = ? AND name = 'migration_mode'",
        (vault_id,),
    ).fetchone()
    return row is not None and str(row[0]).strip().lower() == "true"


def _failure(exc: VaultError, row: Mapping[str, str]) -> RowResult:
    # Per-row failures of bulk results are INVALID_DATA when the row names something
    # that does not exist; other types are kept.
    errors = [
        {**e, "type": "INVALID_DATA"} if e["type"] in ("INVALID_DOCUMENT", "MALFORMED_URL") else e
        for e in exc.errors
    ]
    result: RowResult = {"responseStatus": "FAILURE", "errors": errors}
    for key in ("id", "external_id__v"):
        if row.get(key):
            result[key] = row[key]
    return result


def run_rows(
    conn: Conn,
    prepared: list[Prepared],
    handle: Callable[[Conn, Prepared], RowResult],
) -> list[RowResult]:
    """Each row in its own savepoint; results in input order. No row changes metadata,
    so its reads are kept for the batch (metadata.unchanging)."""
    with unchanging():
        return [_run_row(conn, item, handle) for item in prepared]


def _run_row(
    conn: Conn, item: Prepared, handle: Callable[[Conn, Prepared], RowResult]
) -> RowResult:
    if item.error is not None:
        return _failure(item.error, item.row)
    conn.execute("SAVEPOINT bulk_row")
    try:
        result = handle(conn, item)
    except VaultError as exc:
        conn.execute("ROLLBACK TO bulk_row")
        answer = _failure(exc, item.row)
    except Exception as exc:
        conn.execute("ROLLBACK TO bulk_row")
        log.error("unexpected error in a bulk row (the row changed nothing)", exc_info=exc)
        answer = _failure(VaultError("The row failed and changed nothing"), item.row)
    else:
        answer = {"responseStatus": "SUCCESS", **result}
    conn.execute("RELEASE bulk_row")
    return answer


# --- rows -------------------------------------------------------------------------


def _doc_id(conn: Conn, vault_id: int, row: Mapping[str, str], by_external: bool) -> int:
    """The document a row names: ``id``, or ``external_id__v`` with idParam."""
    if by_external:
        external = row.get("external_id__v", "").strip()
        if not external:
            raise ParameterRequired("Missing required parameter [external_id__v]")
        found = conn.execute(
            "SELECT d.id FROM documents d JOIN versions v ON v.doc_id = d.id"
            " AND v.major = d.latest_major AND v.minor = d.latest_minor"
            f" WHERE d.vault_id = ? AND {json_text(conn, 'v.fields', 'external_id__v')} = ?",
            (vault_id, external),
        ).fetchone()
        if found is None:
            raise InvalidData(f"Invalid value for [external_id__v]: no document '{external}'")
        return int(found[0])
    text = row.get("id", "").strip()
    if not text:
        raise ParameterRequired("Missing required parameter [id]")
    if not (text.isascii() and text.isdigit()):
        raise InvalidData(f"Invalid value for [id]: '{text}' is not a document id")
    return int(text)


def _version(row: Mapping[str, str]) -> tuple[int, int]:
    numbers = []
    for name in ("major_version_number__v", "minor_version_number__v"):
        text = row.get(name, "").strip()
        if not text:
            raise ParameterRequired(f"Missing required parameter [{name}]")
        if not (text.isascii() and text.isdigit()):
            raise InvalidData(f"Invalid value for [{name}]: '{text}' is not a number")
        numbers.append(int(text))
    return numbers[0], numbers[1]


def create_row(conn: Conn, caller: SessionUser, item: Prepared, now: int) -> RowResult:
    fields = {k: v for k, v in item.row.items() if k != "file"}
    doc_id = changes.create_document(conn, caller, fields, item.file, now)
    if item.file is not None:
        search.index_text(conn, item.file.blob.sha256, item.text)
    result: RowResult = {"id": doc_id}
    if fields.get("external_id__v"):
        result["external_id__v"] = fields["external_id__v"]
    return result


def update_row(
    conn: Conn, caller: SessionUser, item: Prepared, by_external: bool, now: int
) -> RowResult:
    """Set the row's fields on the latest version: ``null`` clears, an empty cell skips."""
    doc_id = _doc_id(conn, caller.vault_id, item.row, by_external)
    skip = {"external_id__v"} if by_external else set()
    fields = {
        k: ("" if v.strip().lower() == "null" else v)
        for k, v in item.row.items()
        if k != "id" and k not in skip and v != ""
    }
    changes.update_fields(conn, caller, doc_id, None, fields, now)
    return {"id": doc_id}


_CLASSIFYING = ("type__v", "subtype__v", "classification__v", "lifecycle__v")


def version_row(
    conn: Conn, caller: SessionUser, item: Prepared, by_external: bool, now: int
) -> RowResult:
    """Import one version (migration): numbers of the row, which must not exist yet."""
    row = item.row
    doc_id = _doc_id(conn, caller.vault_id, row, by_external)
    doc, latest = latest_version(conn, caller.vault_id, doc_id)
    changes.check_not_locked_by_other(doc, caller)
    major, minor = _version(row)
    if conn.execute(
        "SELECT 1 FROM versions WHERE doc_id = ? AND major = ? AND minor = ?",
        (doc_id, major, minor),
    ).fetchone():
        raise InvalidData(f"Version [{major}.{minor}] of document [{doc_id}] exists already")
    where = classification_of(conn, doc)
    current = {
        "type__v": where.type,
        "subtype__v": where.subtype,
        "classification__v": where.classification,
    }
    for name, node in current.items():
        given = row.get(name, "").strip()
        if given and (node is None or given.lower() not in (node.name.lower(), node.label.lower())):
            raise InvalidData(f"Invalid value for [{name}]: the document is not '{given}'")
    past = (major, minor) < (latest["major"], latest["minor"])
    if item.file is None and past and latest["blob"] is not None:
        raise ParameterRequired("Missing required parameter [file] (the document has content)")
    ignored = {"id", "file", "status__v", "name__v", *_CLASSIFYING}
    ignored |= {"major_version_number__v", "minor_version_number__v"}
    if by_external:
        ignored.add("external_id__v")
    editable = {k: v for k, v in row.items() if k not in ignored and v != ""}
    values: dict[str, Any] = json.loads(latest["fields"])
    specs = leaf_fields(conn, where)
    values.update(form_fields.parse_fields(specs, editable, creating=False))
    status = row.get("status__v", "").strip()
    status = resolve_status(conn, doc["lifecycle"], status) if status else latest["status"]
    name = row.get("name__v", "").strip() or latest["name"]
    changes.insert_version(conn, doc_id, major, minor, values, name, status, item.file, caller, now)
    if item.file is not None:
        search.index_text(conn, item.file.blob.sha256, item.text)
    if not past:
        conn.execute(
            "UPDATE documents SET latest_major = ?, latest_minor = ? WHERE id = ?",
            (major, minor, doc_id),
        )
    result: RowResult = {
        "id": doc_id,
        "major_version_number__v": major,
        "minor_version_number__v": minor,
    }
    if row.get("external_id__v"):
        result["external_id__v"] = row["external_id__v"]
    return result


def rendition_row(
    conn: Conn, caller: SessionUser, item: Prepared, by_external: bool, now: int
) -> RowResult:
    row = item.row
    doc_id = _doc_id(conn, caller.vault_id, row, by_external)
    rendition_type = row.get("rendition_type__v", "").strip()
    if not rendition_type:
        raise ParameterRequired("Missing required parameter [rendition_type__v]")
    version = _version(row)
    if item.file is None:
        raise ParameterRequired("Missing required parameter [file]")
    try:
        renditions.check_rendition_type(conn, rendition_type)
    except MalformedUrl:
        raise InvalidData(f"Invalid value for [rendition_type__v]: '{rendition_type}'") from None
    renditions.put_rendition(conn, caller, doc_id, version, rendition_type, item.file, False, now)
    result: RowResult = {
        "id": doc_id,
        "rendition_type__v": rendition_type,
        "major_version_number__v": version[0],
        "minor_version_number__v": version[1],
    }
    if row.get("external_id__v"):
        result["external_id__v"] = row["external_id__v"]
    return result


def delete_version_row(
    conn: Conn, caller: SessionUser, item: Prepared, by_external: bool, now: int
) -> RowResult:
    doc_id = _doc_id(conn, caller.vault_id, item.row, by_external)
    major, minor = _version(item.row)
    try:
        deletions.delete_version(conn, caller, doc_id, major, minor, now)
    except InvalidDocument as exc:
        raise InvalidData(exc.message) from None
    return {"id": doc_id, "major_version_number__v": major, "minor_version_number__v": minor}
