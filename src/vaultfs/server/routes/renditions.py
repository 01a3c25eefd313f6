"""Rendition routes: list, download, add, replace, delete (latest or a version)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import ParameterRequired

from .. import versions
from ..downloads import file_response
from ..envelope import success
from ..permissions import Permission
from ..storage import renditions
from .common import (
    api_url,
    bool_param,
    caller,
    form,
    path_int,
    query,
    since,
    state,
    version_at_least,
    version_path,
)

__all__ = ["routes"]


def _version(request: Request) -> tuple[int, int] | None:
    return version_path(request) if "major" in request.path_params else None


async def list_renditions(request: Request) -> Response:
    who = caller(request)
    doc_id = path_int(request, "doc_id", "document id")
    version = _version(request)
    _, types = await state(request).db.read(
        renditions.list_renditions, who.vault_id, doc_id, version
    )
    base = f"/objects/documents/{doc_id}"
    if version is not None:
        base += f"/versions/{version[0]}/{version[1]}"
    return success(
        renditionTypes=types,
        renditions={t: api_url(request, f"{base}/renditions/{t}") for t in types},
    )


async def download_rendition(request: Request) -> Response:
    who = caller(request)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    # steadyState came with v6: older versions do not know the parameter.
    steady = version_at_least(request, versions.STEADY_STATE) and bool_param(
        query(request, "steadyState"), "steadyState"
    )
    row = await vault.db.read(
        renditions.get_rendition,
        who.vault_id,
        doc_id,
        _version(request),
        request.path_params["rendition_type"],
        steady,
    )
    return file_response(vault.blobs, row["blob"], row["filename"])


async def put_rendition(request: Request) -> Response:
    who = caller(request, Permission.EDIT)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    version = _version(request)
    rendition_type = request.path_params["rendition_type"]
    await vault.db.read(renditions.check_rendition_type, rendition_type)
    body = await form(request, files=frozenset({"file"}))
    file = body.files.get("file")
    if file is None:
        raise ParameterRequired("Missing required parameter [file]")
    await vault.db.write(
        renditions.put_rendition,
        who,
        doc_id,
        version,
        rendition_type,
        file,
        request.method == "PUT",
        vault.db.tick(),
    )
    return success()


async def delete_rendition(request: Request) -> Response:
    who = caller(request, Permission.EDIT)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    await vault.db.write(
        renditions.delete_rendition,
        who,
        doc_id,
        _version(request),
        request.path_params["rendition_type"],
        vault.db.tick(),
    )
    return success()


def routes() -> list[BaseRoute]:
    result: list[BaseRoute] = []
    document = "/objects/documents/{doc_id}"
    for base, gate in (
        # Renditions of the latest version came with v1: every served version has them.
        (document, since(versions.API_VERSIONS[0])),
        (document + "/versions/{major}/{minor}", since(versions.VERSION_RENDITIONS)),
    ):
        one = base + "/renditions/{rendition_type}"
        result += [
            Route(base + "/renditions", gate(list_renditions), methods=["GET"]),
            Route(one, gate(download_rendition), methods=["GET"]),
            Route(one, gate(put_rendition), methods=["POST", "PUT"]),
            Route(one, gate(delete_rendition), methods=["DELETE"]),
        ]
    return result
