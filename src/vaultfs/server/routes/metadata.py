"""Metadata routes: the metadata index, document fields, the type tree, lock fields."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import MalformedUrl, ParameterRequired

from .. import versions
from ..envelope import success
from ..storage import access, documents, metadata, relationships
from ..storage.fields import field
from .common import api_url, bool_param, caller, form, query, since, state

__all__ = ["routes"]

_TYPES = "/metadata/objects/documents/types"


async def metadata_index(request: Request) -> Response:
    caller(request)
    return success(
        values={
            "documents": api_url(request, _TYPES),
            "users": api_url(request, "/metadata/objects/users"),
            "groups": api_url(request, "/metadata/objects/groups"),
            "securitypolicies": api_url(request, "/metadata/objects/securitypolicies"),
            "vobjects": api_url(request, "/metadata/vobjects"),
        }
    )


async def properties(request: Request) -> Response:
    caller(request)
    return success(properties=await state(request).db.read(metadata.all_fields))


async def types(request: Request) -> Response:
    caller(request)
    nodes = await state(request).db.read(metadata.children, None, "type")
    return success(
        types=[{"label": n.label, "value": api_url(request, f"{_TYPES}/{n.name}")} for n in nodes],
        lock=api_url(request, "/metadata/objects/documents/lock"),
    )


def _type_record(
    conn: sqlite3.Connection,
    where: metadata.Classification,
    inherited: bool,
    url_for: Callable[[str], str],
) -> dict[str, Any]:
    node = where.leaf
    url = _TYPES + f"/{where.type.name}"
    if where.subtype is not None:
        url += f"/subtypes/{where.subtype.name}"
    if where.classification is not None:
        url += f"/classifications/{where.classification.name}"
    lifecycles = node.lifecycles or (where.subtype.lifecycles if where.subtype else [])
    lifecycles = lifecycles or where.type.lifecycles
    record: dict[str, Any] = {
        "name": node.name,
        "label": node.label,
        "availableLifecycles": [
            {"name": name, "label": metadata.lifecycle_label(conn, name)} for name in lifecycles
        ],
        "relationshipTypes": [
            {"label": row["label"], "value": url_for(f"{url}/relationships/{row['value']}")}
            for row in relationships.relationship_types(conn)
        ],
        "processes": [],
        "defaultWorkflows": [],
        "templates": [],
        "nameDefault": node.name_default,
        "attachmentsEnabled": node.attachments_enabled,
    }
    if node.level == "type":
        record["renditions"] = [r["name"] for r in metadata.rendition_types(conn)]
    lower = {"type": "subtype", "subtype": "classification"}.get(node.level)
    below = metadata.children(conn, node.name, lower) if lower else []
    if below:
        key = "subtypes" if lower == "subtype" else "classifications"
        record[key] = [{"label": n.label, "value": url_for(f"{url}/{key}/{n.name}")} for n in below]
    else:
        record["properties"] = metadata.fields_for(conn, where.path, inherited)
    return record


async def relationship_metadata(request: Request) -> Response:
    """Relationship fields and types of a document type (one type when in the path)."""
    caller(request)
    wanted = request.path_params.get("relationship_type")

    def read(conn: sqlite3.Connection) -> list[dict[str, Any]]:
        metadata.resolve_path(conn, request.path_params["type"])
        types = relationships.relationship_types(conn)
        return [t for t in types if wanted is None or t["value"] == wanted]

    types = await state(request).db.read(read)
    if wanted is not None and not types:
        raise MalformedUrl(f"Unknown relationship type [{wanted}]")
    return success(
        properties=relationships.FIELD_METADATA,
        relationshipTypes=types,
        relationships=[
            {
                "relationship_name": name,
                "relationship_label": label,
                "relationship_type": "reference_outbound",
                "object": {"name": "documents"},
            }
            for name, label in (("source__vr", "Source"), ("target__vr", "Target"))
        ],
    )


async def find_common(request: Request) -> Response:
    who = caller(request)
    body = await form(request)
    text = body.fields.get("docIds", "").strip()
    if not text:
        raise ParameterRequired("Missing required parameter [docIds]")
    doc_ids = access.parse_ids(text, "docIds")
    if not doc_ids:
        raise ParameterRequired("Missing required parameter [docIds]")
    properties = await state(request).db.read(documents.find_common, who.vault_id, doc_ids)
    return success(properties=properties)


async def type_metadata(request: Request) -> Response:
    caller(request)
    params = request.path_params
    flag = query(request, "includeInheritedFields")
    inherited = flag is None or bool_param(flag, "includeInheritedFields")

    def read(conn: sqlite3.Connection) -> dict[str, Any]:
        where = metadata.resolve_path(
            conn, params["type"], params.get("subtype"), params.get("classification")
        )
        return _type_record(conn, where, inherited, lambda path: api_url(request, path))

    return success(**await state(request).db.read(read))


async def lock_metadata(request: Request) -> Response:
    caller(request)
    lock_fields = [
        field(
            "locked_by__v",
            "Locked By",
            "ObjectReference",
            required=True,
            editable=False,
            system=True,
            scope="Lock",
            object_type="user__sys",
        ),
        field(
            "locked_date__v",
            "Locked Date",
            "DateTime",
            required=True,
            editable=False,
            system=True,
            scope="Lock",
        ),
    ]
    return success(name="lock", properties=lock_fields)


def routes() -> list[BaseRoute]:
    t = "/metadata/objects/documents/types/{type}"
    return [
        Route("/metadata/objects", metadata_index, methods=["GET"]),
        Route("/metadata/objects/documents/properties", properties, methods=["GET"]),
        Route(
            "/metadata/objects/documents/properties/find_common",
            since(versions.FIND_COMMON)(find_common),
            methods=["POST"],
        ),
        Route(
            t + "/relationships",
            since(versions.RELATIONSHIPS)(relationship_metadata),
            methods=["GET"],
        ),
        Route(
            t + "/relationships/{relationship_type}",
            since(versions.RELATIONSHIPS)(relationship_metadata),
            methods=["GET"],
        ),
        Route("/metadata/objects/documents/types", types, methods=["GET"]),
        Route("/metadata/objects/documents", types, methods=["GET"]),
        Route("/metadata/objects/documents/lock", lock_metadata, methods=["GET"]),
        Route(t, type_metadata, methods=["GET"]),
        Route(t + "/subtypes/{subtype}", type_metadata, methods=["GET"]),
        Route(
            t + "/subtypes/{subtype}/classifications/{classification}",
            type_metadata,
            methods=["GET"],
        ),
    ]
