"""Document routes: list, read, versions, create, update, new drafts, delete, deletions."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import InvalidData
from vaultfs.wire import PAGE_LIMIT, parse_datetime

from .. import formats, versions
from ..envelope import success
from ..permissions import Permission
from ..storage import changes, crosslinks, deletions, document_list, documents, search
from ..storage.db import now_ms
from .common import (
    MAX_ID,
    api_url,
    bool_param,
    caller,
    check_numbers,
    form,
    parse_count,
    path_int,
    query,
    since,
    state,
    version_at_least,
    version_path,
)

__all__ = ["date_param", "int_param", "routes"]

_DOCS = "/objects/documents"
#: How far back deleted documents can be listed.
_DELETIONS_WINDOW = timedelta(days=30)
_DELETIONS_GRACE_MS = 3_600_000
#: Form fields of creates and updates that hold record ids or version numbers.
_NUMBER_FIELDS = (
    "major_version_number__v",
    "minor_version_number__v",
    "source_vault_id__v",
    "source_document_id__v",
    "bound_source_major_version__v",
    "bound_source_minor_version__v",
)


def int_param(
    request: Request, name: str, default: int, minimum: int, maximum: int = MAX_ID
) -> int:
    """An integer query parameter; values above ``maximum`` are taken as ``maximum``
    (a ``limit`` can only lower the page size, a ``start`` past the end gives nothing)."""
    text = query(request, name)
    if text is None:
        return default
    value = parse_count(text)
    if value is None or value < minimum:
        raise InvalidData(f"Invalid value for [{name}]: '{text}' (an integer >= {minimum})")
    return min(value, maximum)


async def list_documents(request: Request) -> Response:
    who = caller(request)
    # "limit can only lower it": larger values are ignored, not refused.
    limit = int_param(request, "limit", PAGE_LIMIT, 1, PAGE_LIMIT)
    start = int_param(request, "start", 0, 0)
    scope = query(request, "versionscope") or "latest"
    if scope not in ("latest", "all"):
        raise InvalidData(f"Invalid value for [versionscope]: '{scope}' (latest or all)")
    # scope (and term highlights) came with v4; older versions search fields only.
    content_scope = (
        query(request, "scope") if version_at_least(request, versions.SEARCH_SCOPE) else None
    )
    if content_scope not in (None, "contents", "all"):
        raise InvalidData(f"Invalid value for [scope]: '{content_scope}' (contents or all)")
    spec = document_list.ListQuery(
        caller=who,
        start=start,
        limit=limit,
        sort=query(request, "sort"),
        search=query(request, "search"),
        scope=content_scope,
        all_versions=scope == "all",
        named_filter=query(request, "named_filter"),
    )
    records, total = await state(request).db.read(document_list.list_documents, who.vault_id, spec)
    return success(
        size=len(records),
        start=start,
        limit=limit,
        responseDetails={"total": total, "size": len(records), "start": start, "limit": limit},
        documents=[{"document": _for_version(request, record)} for record in records],
    )


#: record fields that appeared in a later API version than the record itself
_FIELDS_SINCE = {"version_id": versions.VERSION_ID, "binder__v": versions.BINDER_FLAG}


def _for_version(request: Request, record: dict[str, Any]) -> dict[str, Any]:
    """The record as the request's API version shows it: without later fields."""
    hidden = [f for f, since_ in _FIELDS_SINCE.items() if not version_at_least(request, since_)]
    return {k: v for k, v in record.items() if k not in hidden} if hidden else record


def _version_url(request: Request, doc_id: int, major: int, minor: int) -> str:
    return api_url(request, f"{_DOCS}/{doc_id}/versions/{major}/{minor}")


def _shape(request: Request, doc_id: int, read: dict[str, Any], latest: bool) -> dict[str, Any]:
    record = read["document"]
    major, minor = record["major_version_number__v"], record["minor_version_number__v"]
    base = f"{_DOCS}/{doc_id}" if latest else f"{_DOCS}/{doc_id}/versions/{major}/{minor}"
    body: dict[str, Any] = {
        "document": _for_version(request, record),
        "renditions": {t: api_url(request, f"{base}/renditions/{t}") for t in read["renditions"]},
        "versions": [
            {"number": f"{a}.{b}", "value": _version_url(request, doc_id, a, b)}
            for a, b in read["versions"]
        ],
    }
    if read["attachments"] is not None:
        body["attachments"] = [
            {"id": att, "url": api_url(request, f"{_DOCS}/{doc_id}/attachments/{att}")}
            for att in read["attachments"]
        ]
    return body


async def get_document(request: Request) -> Response:
    who = caller(request)
    doc_id = path_int(request, "doc_id", "document id")
    read = await state(request).db.read(documents.read_document, who.vault_id, doc_id, None)
    return success(**_shape(request, doc_id, read, latest=True))


async def get_version(request: Request) -> Response:
    who = caller(request)
    doc_id = path_int(request, "doc_id", "document id")
    version = version_path(request)
    read = await state(request).db.read(documents.read_document, who.vault_id, doc_id, version)
    return success(**_shape(request, doc_id, read, latest=False))


async def list_versions(request: Request) -> Response:
    who = caller(request)
    doc_id = path_int(request, "doc_id", "document id")
    read = await state(request).db.read(documents.read_document, who.vault_id, doc_id, None)
    shaped = _shape(request, doc_id, read, latest=True)
    return success(versions=shaped["versions"], renditions=shaped["renditions"])


async def create_document(request: Request, *, binder: bool = False) -> Response:
    who = caller(request, Permission.CREATE)
    vault = state(request)
    body = await form(request, files=frozenset({"file"}), with_text=True)
    check_numbers(body.fields, _NUMBER_FIELDS)
    link = [name for name in crosslinks.CROSSLINK_FIELDS if name in body.fields]
    if link and not version_at_least(request, versions.CROSSLINK):
        # Before CrossLinks existed these were just unknown fields.
        raise InvalidData(f"Invalid field [{link[0]}]: no such field on this document type")
    file = body.files.get("file")
    text = file.text if file is not None else None
    now = vault.db.tick()

    def create(conn: sqlite3.Connection) -> int:
        doc_id = changes.create_document(conn, who, body.fields, file, now, binder=binder)
        if file is not None:
            search.index_text(conn, file.blob.sha256, text)
        return doc_id

    # An unexpected error here becomes a FAILURE in the middleware (POST), never a 5xx.
    doc_id = await vault.db.write(create)
    what = "binder" if binder else "document"
    return success(responseMessage=f"successfully created {what}", id=doc_id)


async def create_binder(request: Request) -> Response:
    return await create_document(request, binder=True)


async def update_document(request: Request) -> Response:
    who = caller(request, Permission.EDIT)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    version = version_path(request) if "major" in request.path_params else None
    fields = dict((await form(request)).fields)
    # In the query (the spec) or in the form body (the vendor's collection sends it there).
    flag = query(request, "reclassify") or fields.pop("reclassify", None) or None
    reclassify = version_at_least(request, versions.RECLASSIFY) and bool_param(flag, "reclassify")
    check_numbers(fields, _NUMBER_FIELDS)
    if version is None and reclassify:
        await vault.db.write(changes.reclassify, who, doc_id, fields, vault.db.tick())
    else:
        await vault.db.write(changes.update_fields, who, doc_id, version, fields, vault.db.tick())
    return success(id=doc_id)


async def create_version(request: Request) -> Response:
    who = caller(request, Permission.EDIT)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    body = await form(request, files=frozenset({"file"}), with_text=True)
    mode = body.fields.get("createDraft") or query(request, "createDraft")
    if not version_at_least(request, versions.CREATE_DRAFT):
        mode = None  # older versions only replace the file, raising the minor version
    description = body.fields.get("description__v")
    file = body.files.get("file")
    text = file.text if file is not None else None
    now = vault.db.tick()

    def create(conn: sqlite3.Connection) -> tuple[int, int]:
        numbers = changes.create_version(conn, who, doc_id, mode, file, description, now)
        if file is not None:
            search.index_text(conn, file.blob.sha256, text)
        return numbers

    major, minor = await vault.db.write(create)
    return success(
        responseMessage="New draft successfully created",
        major_version_number__v=major,
        minor_version_number__v=minor,
    )


async def delete_document(request: Request) -> Response:
    who = caller(request, Permission.DELETE)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    await vault.db.write(deletions.delete_document, who, doc_id, vault.db.tick())
    return success(id=doc_id)


async def delete_version(request: Request) -> Response:
    who = caller(request, Permission.DELETE)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    await vault.db.write(
        deletions.delete_version, who, doc_id, *version_path(request), vault.db.tick()
    )
    return success(id=doc_id)


def date_param(request: Request, name: str) -> int | None:
    text = query(request, name)
    if text is None:
        return None
    try:
        return int(parse_datetime(text).timestamp() * 1000)
    except ValueError:
        raise InvalidData(
            f"Invalid value for [{name}]: '{text}' (YYYY-MM-DDTHH:MM:SSZ or YYYY-MM-DD)"
        ) from None


def _window_date(request: Request, name: str, oldest: int) -> int | None:
    """A date of the deletions list: no older than 30 days (the spec), with an hour of
    grace for a client that computed "30 days ago" a moment before asking."""
    when = date_param(request, name)
    if when is None:
        return None
    if when < oldest - _DELETIONS_GRACE_MS:
        raise InvalidData(
            f"Invalid value for [{name}]: deleted documents are kept for 30 days only"
        )
    return max(when, oldest)


async def deleted_documents(request: Request) -> Response:
    who = caller(request)
    now = now_ms()
    oldest = now - int(_DELETIONS_WINDOW.total_seconds() * 1000)
    start = _window_date(request, "start_date", oldest) or oldest
    end = _window_date(request, "end_date", oldest) or now
    offset = int_param(request, "offset", 0, 0)
    limit = int_param(request, "limit", 1000, 1, 1000)
    data, total = await state(request).db.read(
        documents.deleted_documents, who, start, end, offset, limit
    )
    body = {
        "responseStatus": "SUCCESS",
        "responseMessage": "Success",
        "responseDetails": {"limit": limit, "size": len(data), "offset": offset, "total": total},
        "data": data,
    }
    return formats.render(request, body, csv_rows=data)


def routes() -> list[BaseRoute]:
    doc = _DOCS + "/{doc_id}"
    version = doc + "/versions/{major}/{minor}"
    return [
        Route(_DOCS, list_documents, methods=["GET"]),
        Route(_DOCS, create_document, methods=["POST"]),
        Route("/objects/binders", create_binder, methods=["POST"]),
        Route(
            "/objects/deletions/documents",
            since(versions.DELETED_DOCUMENTS)(deleted_documents),
            methods=["GET"],
        ),
        Route(doc, get_document, methods=["GET"]),
        Route(doc, update_document, methods=["PUT"]),
        Route(doc, create_version, methods=["POST"]),
        Route(doc, delete_document, methods=["DELETE"]),
        Route(doc + "/versions", list_versions, methods=["GET"]),
        Route(version, get_version, methods=["GET"]),
        Route(version, update_document, methods=["PUT"]),
        Route(version, delete_version, methods=["DELETE"]),
    ]
