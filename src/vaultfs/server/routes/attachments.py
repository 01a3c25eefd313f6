"""Attachment routes: list, read, versions, download, create, delete."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import ParameterRequired

from .. import versions
from ..downloads import file_response
from ..envelope import success
from ..permissions import Permission
from ..storage import attachments
from .common import api_url, caller, form, path_int, since, state

__all__ = ["routes"]


def _ids(request: Request) -> tuple[int, int]:
    return (
        path_int(request, "doc_id", "document id"),
        path_int(request, "attachment_id", "attachment id"),
    )


def _with_urls(request: Request, doc_id: int, record: dict[str, Any]) -> dict[str, Any]:
    base = f"/objects/documents/{doc_id}/attachments/{record['id']}/versions"
    record["versions"] = [
        {"version__v": v, "url": api_url(request, f"{base}/{v}")} for v in record["versions"]
    ]
    return record


async def list_attachments(request: Request) -> Response:
    who = caller(request)
    doc_id = path_int(request, "doc_id", "document id")
    one = path_int(request, "attachment_id") if "attachment_id" in request.path_params else None
    records = await state(request).db.read(attachments.list_attachments, who.vault_id, doc_id, one)
    return success(data=[_with_urls(request, doc_id, r) for r in records])


async def list_versions(request: Request) -> Response:
    who = caller(request)
    doc_id, attachment_id = _ids(request)
    numbers = await state(request).db.read(
        attachments.attachment_versions, who.vault_id, doc_id, attachment_id
    )
    base = f"/objects/documents/{doc_id}/attachments/{attachment_id}/versions"
    return success(
        data=[{"version__v": v, "url": api_url(request, f"{base}/{v}")} for v in numbers]
    )


async def version_metadata(request: Request) -> Response:
    who = caller(request)
    doc_id, attachment_id = _ids(request)
    number = path_int(request, "attachment_version", "attachment version")
    row = await state(request).db.read(
        attachments.attachment_version, who.vault_id, doc_id, attachment_id, number
    )
    record = {
        "id": attachment_id,
        "version__v": row["version"],
        "filename__v": row["filename"],
        "format__v": row["format"],
        "size__v": row["size"],
        "md5checksum__v": row["md5"],
        "description__v": row["description"],
    }
    return success(data=[record])


async def download(request: Request) -> Response:
    who = caller(request)
    vault = state(request)
    doc_id, attachment_id = _ids(request)
    number = (
        path_int(request, "attachment_version", "attachment version")
        if ("attachment_version" in request.path_params)
        else None
    )
    row = await vault.db.read(
        attachments.attachment_version, who.vault_id, doc_id, attachment_id, number
    )
    return file_response(vault.blobs, row["blob"], row["filename"])


async def create(request: Request) -> Response:
    who = caller(request, Permission.EDIT)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    body = await form(
        request, files=frozenset({"file"}), max_file_size=attachments.MAX_ATTACHMENT_SIZE
    )
    file = body.files.get("file")
    if file is None:
        raise ParameterRequired("Missing required parameter [file]")
    attachment_id, version = await vault.db.write(
        attachments.add_attachment,
        who,
        doc_id,
        file,
        body.fields.get("description__v"),
        vault.db.tick(),
    )
    return success(data={"id": attachment_id, "version__v": version})


async def delete(request: Request) -> Response:
    who = caller(request, Permission.EDIT)
    vault = state(request)
    doc_id, attachment_id = _ids(request)
    await vault.db.write(attachments.delete_attachment, who, doc_id, attachment_id, vault.db.tick())
    return success(data={"id": attachment_id})


def routes() -> list[BaseRoute]:
    base = "/objects/documents/{doc_id}/attachments"
    one = base + "/{attachment_id}"
    gate = since(versions.ATTACHMENTS)
    return [
        Route(base, gate(list_attachments), methods=["GET"]),
        Route(base, gate(create), methods=["POST"]),
        Route(one, gate(list_attachments), methods=["GET"]),
        Route(one, gate(delete), methods=["DELETE"]),
        Route(one + "/file", gate(download), methods=["GET"]),
        Route(one + "/versions", gate(list_versions), methods=["GET"]),
        Route(one + "/versions/{attachment_version}", gate(version_metadata), methods=["GET"]),
        Route(one + "/versions/{attachment_version}/file", gate(download), methods=["GET"]),
    ]
