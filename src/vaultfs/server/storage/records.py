"""Building document records: the JSON object the API shows for a document version.

``MetaSnapshot`` loads the small metadata tables once per request (labels of types
and lifecycles, field definitions), so that a page of 200 records costs no extra
queries. System-managed fields are computed from the ``documents`` and
``versions`` rows; editable fields come from the version's ``fields`` JSON.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from vaultfs.wire import format_datetime

from .fields import FieldSpec
from .metadata import all_fields
from .sql import Conn, Row

__all__ = ["MetaSnapshot", "document_record", "format_ms", "size_kb", "version_id"]


def format_ms(ms: int) -> str:
    return format_datetime(datetime.fromtimestamp(ms / 1000, tz=UTC))


def size_kb(size: int) -> int:
    """``size__v`` is documented in KB: bytes rounded up to whole KB."""
    return math.ceil(size / 1024)


def version_id(doc_id: int, major: int, minor: int) -> str:
    return f"{doc_id}_{major}_{minor}"


@dataclass
class MetaSnapshot:
    type_labels: dict[str, str]
    type_parents: dict[str, str | None]
    lifecycle_labels: dict[str, str]
    fields: list[FieldSpec]

    @classmethod
    def load(cls, conn: Conn) -> MetaSnapshot:
        types = conn.execute("SELECT name, label, parent FROM doc_types").fetchall()
        lifecycles = conn.execute("SELECT name, label FROM lifecycles").fetchall()
        return cls(
            type_labels={r["name"]: r["label"] for r in types},
            type_parents={r["name"]: r["parent"] for r in types},
            lifecycle_labels={r["name"]: r["label"] for r in lifecycles},
            fields=all_fields(conn),
        )

    def label(self, type_name: str | None) -> str:
        return self.type_labels.get(type_name, type_name) if type_name else ""

    def custom_fields_for(self, leaf: str) -> list[FieldSpec]:
        """Fields defined on ``leaf`` or one of its ancestors (not the standard ones)."""
        path: set[str] = set()
        node: str | None = leaf
        while node is not None:
            path.add(node)
            node = self.type_parents.get(node)
        return [f for f in self.fields if f["definedIn"] in path]


def _role(user_ids: list[int]) -> dict[str, list[int]]:
    return {"users": user_ids, "groups": []}


def document_record(meta: MetaSnapshot, doc: Row, ver: Row) -> dict[str, Any]:
    """The record of version ``ver`` of document ``doc`` (rows of documents/versions)."""
    values: dict[str, Any] = json.loads(ver["fields"])
    doc_id, major, minor = doc["id"], ver["major"], ver["minor"]
    leaf = doc["classification"] or doc["subtype"] or doc["type"]
    record: dict[str, Any] = {
        "id": doc_id,
        "version_id": version_id(doc_id, major, minor),
    }
    if values.get("external_id__v"):
        record["external_id__v"] = values["external_id__v"]
    record.update(
        {
            "document_number__v": doc["document_number"],
            "name__v": ver["name"],
            "title__v": values.get("title__v"),
            "description__v": values.get("description__v"),
            "type__v": meta.label(doc["type"]),
            "subtype__v": meta.label(doc["subtype"]),
            "classification__v": meta.label(doc["classification"]),
            "lifecycle__v": meta.lifecycle_labels.get(doc["lifecycle"], doc["lifecycle"]),
            "status__v": ver["status"],
            "major_version_number__v": major,
            "minor_version_number__v": minor,
            "language__v": values.get("language__v") or [],
            "country__v": values.get("country__v") or [],
            "product__v": values.get("product__v") or [],
            "locked__v": doc["locked_by"] is not None,
            "binder__v": False,
            "crosslink__v": False,
            "created_by__v": doc["created_by"],
            "version_created_by__v": ver["created_by"],
            "last_modified_by__v": ver["modified_by"],
            "document_creation_date__v": format_ms(doc["created_ms"]),
            "version_creation_date__v": format_ms(ver["created_ms"]),
            "version_modified_date__v": format_ms(ver["modified_ms"]),
            "owner__v": _role([doc["created_by"]]),
            "viewer__v": _role([]),
            "editor__v": _role([]),
        }
    )
    if ver["blob"] is not None:
        record.update(
            {
                "filename__v": ver["filename"],
                "format__v": ver["format"],
                "size__v": size_kb(ver["size"]),
                "md5checksum__v": ver["md5"],
            }
        )
    for spec in meta.custom_fields_for(leaf):
        record[spec["name"]] = values.get(spec["name"])
    return record
