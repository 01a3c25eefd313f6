"""Source file downloads (latest or a version, optionally checking out) and thumbnails."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import MalformedUrl

from .. import versions
from ..downloads import file_response
from ..permissions import Permission
from ..storage import documents, locks
from ..thumbnails import thumbnail_png
from .common import (
    bool_param,
    caller,
    path_int,
    query,
    since,
    state,
    version_at_least,
    version_path,
)

__all__ = ["routes"]


async def download_file(request: Request) -> Response:
    who = caller(request)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    version = version_path(request) if "major" in request.path_params else None
    # lockDocument came with v6: older versions do not know the parameter.
    lock = version_at_least(request, versions.LOCK_ON_DOWNLOAD)
    if lock and bool_param(query(request, "lockDocument"), "lockDocument"):
        caller(request, Permission.LOCK)
        await vault.db.write(locks.lock_document, who, doc_id, vault.db.tick())
    if version is None:
        _, ver = await vault.db.read(documents.latest_version, who.vault_id, doc_id)
    else:
        _, ver = await vault.db.read(documents.get_version, who.vault_id, doc_id, *version)
    if ver["blob"] is None:
        raise MalformedUrl(
            f"Version [{ver['major']}.{ver['minor']}] of document [{doc_id}] has no source file"
        )
    return file_response(vault.blobs, ver["blob"], ver["filename"])


async def thumbnail(request: Request) -> Response:
    who = caller(request)
    doc_id = path_int(request, "doc_id", "document id")
    _, ver = await state(request).db.read(
        documents.get_version, who.vault_id, doc_id, *version_path(request)
    )
    return Response(thumbnail_png(ver["format"] or ""), media_type="image/png")


def routes() -> list[BaseRoute]:
    doc = "/objects/documents/{doc_id}"
    version = doc + "/versions/{major}/{minor}"
    return [
        Route(doc + "/file", download_file, methods=["GET"]),
        Route(version + "/file", download_file, methods=["GET"]),
        Route(version + "/thumbnail", since(versions.THUMBNAILS)(thumbnail), methods=["GET"]),
    ]
