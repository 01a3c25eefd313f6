"""Lifecycle action routes (documents and binders): list, entry requirements, start.

Lifecycle actions exist since API v6. Listing needs view access; starting needs the
edit permission on the document.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import MalformedUrl, MethodNotSupported

from .. import versions
from ..envelope import success
from ..permissions import Permission, allowed
from ..storage import lifecycle
from .common import api_url, form, since
from .relationships import subject

__all__ = ["routes"]


def _base(request: Request) -> str:
    kind = "binders" if "/objects/binders/" in request.url.path else "documents"
    p = request.path_params
    return f"/objects/{kind}/{p['doc_id']}/versions/{p['major']}/{p['minor']}/lifecycle_actions"


async def list_actions(request: Request) -> Response:
    who, vault, doc_id, version = await subject(request, Permission.VIEW)
    actions = await vault.db.read(
        lifecycle.list_actions, who.vault_id, doc_id, version, allowed(who, Permission.EDIT)
    )
    for entry in actions:
        if "entry_requirements__v" in entry:
            name = entry["entry_requirements__v"]
            entry["entry_requirements__v"] = api_url(
                request, f"{_base(request)}/{name}/entry_requirements"
            )
    return success(responseMessage="Success", lifecycle_actions__v=actions)


def _not_offered(exc: MalformedUrl) -> MethodNotSupported:
    """An action the version does not offer names no endpoint: the spec's type for
    "other endpoint-construction problems" (its version and document exist)."""
    return MethodNotSupported(exc.message)


async def entry_requirements(request: Request) -> Response:
    who, vault, doc_id, version = await subject(request, Permission.VIEW)
    try:
        properties = await vault.db.read(
            lifecycle.entry_requirements,
            who.vault_id,
            doc_id,
            version,
            request.path_params["action"],
        )
    except MalformedUrl as exc:
        raise _not_offered(exc) from None
    return success(responseMessage="Success", properties=properties)


async def start_action(request: Request) -> Response:
    who, vault, doc_id, version = await subject(request, Permission.EDIT)
    body = await form(request)
    try:
        workflow_id = await vault.db.write(
            lifecycle.start_action,
            who,
            doc_id,
            version,
            request.path_params["action"],
            body.fields,
            vault.db.tick(),
        )
    except MalformedUrl as exc:
        raise _not_offered(exc) from None
    if workflow_id is None:
        return success(id=doc_id)
    return success(id=doc_id, workflow_id__v=workflow_id)


def routes() -> list[BaseRoute]:
    gate = since(versions.LIFECYCLE_ACTIONS)
    result: list[BaseRoute] = []
    for kind in ("documents", "binders"):
        base = f"/objects/{kind}/{{doc_id}}/versions/{{major}}/{{minor}}/lifecycle_actions"
        result += [
            Route(base, gate(list_actions), methods=["GET"]),
            Route(base + "/{action}/entry_requirements", gate(entry_requirements), methods=["GET"]),
            Route(base + "/{action}", gate(start_action), methods=["PUT"]),
        ]
    return result
