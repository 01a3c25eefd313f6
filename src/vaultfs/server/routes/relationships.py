"""Relationship routes: create, list, read and delete the relationships of a version.

The same paths serve documents (``/objects/documents/...``) and binders
(``/objects/binders/...``); a binder path needs a binder. Relationships exist since
API v3.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from .. import versions
from ..envelope import success
from ..permissions import Permission
from ..state import VaultState
from ..storage import documents, relationships
from ..storage.users import SessionUser
from .common import caller, check_numbers, form, path_int, since, state, version_path
from .documents import int_param

__all__ = ["routes", "subject"]


async def subject(
    request: Request, permission: Permission
) -> tuple[SessionUser, VaultState, int, tuple[int, int]]:
    """Caller, vault, document id and version of a ``.../versions/{M}/{m}/...`` path.

    Under ``/objects/binders`` the id must be a binder's.
    """
    who = caller(request, permission)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    version = version_path(request)
    if "/objects/binders/" in request.url.path:
        await vault.db.read(documents.get_binder, who.vault_id, doc_id)
    return who, vault, doc_id, version


#: Field names without their ``__v`` suffix, as veevatools sends them (JSON body); each
#: names one field only, so it is taken for that field unless the body has both.
_UNSUFFIXED = ("target_doc_id", "relationship_type", "target_major_version", "target_minor_version")


def _fields(sent: dict[str, str]) -> dict[str, str]:
    fields = dict(sent)
    for short in _UNSUFFIXED:
        if short in fields and f"{short}__v" not in fields:
            fields[f"{short}__v"] = fields.pop(short)
    return fields


async def create_relationship(request: Request) -> Response:
    who, vault, doc_id, version = await subject(request, Permission.EDIT)
    fields = _fields((await form(request)).fields)
    check_numbers(fields, [f"{short}__v" for short in _UNSUFFIXED if short != "relationship_type"])
    rel_id = await vault.db.write(
        relationships.create_relationship, who, doc_id, version, fields, vault.db.tick()
    )
    return success(responseMessage="Document relationship successfully created.", id=rel_id)


async def list_relationships(request: Request) -> Response:
    who, vault, doc_id, version = await subject(request, Permission.VIEW)
    records = await vault.db.read(relationships.list_relationships, who, doc_id, version)
    return success(responseMessage="Success", relationships=[{"relationship": r} for r in records])


async def get_relationship(request: Request) -> Response:
    who, vault, doc_id, version = await subject(request, Permission.VIEW)
    rel_id = path_int(request, "rel_id", "relationship id")
    record = await vault.db.read(
        relationships.get_relationship, who.vault_id, doc_id, version, rel_id
    )
    return success(responseMessage="Success", relationships=[{"relationship": record}])


async def delete_relationship(request: Request) -> Response:
    who, vault, doc_id, version = await subject(request, Permission.EDIT)
    rel_id = path_int(request, "rel_id", "relationship id")
    await vault.db.write(
        relationships.delete_relationship, who, doc_id, version, rel_id, vault.db.tick()
    )
    return success(responseMessage="Document relationship successfully deleted.", id=rel_id)


#: most relationships one page of the cross-document listing holds (records are small)
ALL_PAGE_LIMIT = 1000
#: the page size when the request names none
ALL_PAGE_DEFAULT = 200


async def list_all_relationships(request: Request) -> Response:
    who = caller(request, Permission.VIEW)
    limit = int_param(request, "limit", ALL_PAGE_DEFAULT, 1, ALL_PAGE_LIMIT)
    start = int_param(request, "start", 0, 0)
    records, total = await state(request).db.read(
        relationships.list_all_relationships, who, start, limit
    )
    return success(
        responseMessage="Success",
        responseDetails={"total": total, "size": len(records), "start": start, "limit": limit},
        relationships=[{"relationship": r} for r in records],
    )


def routes() -> list[BaseRoute]:
    gate = since(versions.RELATIONSHIPS)
    # First: the documents' /objects/documents/{id} would take "relationships" for an id.
    result: list[BaseRoute] = [
        Route("/objects/documents/relationships", gate(list_all_relationships), methods=["GET"])
    ]
    for kind in ("documents", "binders"):
        base = f"/objects/{kind}/{{doc_id}}/versions/{{major}}/{{minor}}/relationships"
        result += [
            Route(base, gate(list_relationships), methods=["GET"]),
            Route(base, gate(create_relationship), methods=["POST"]),
            Route(base + "/{rel_id}", gate(get_relationship), methods=["GET"]),
            Route(base + "/{rel_id}", gate(delete_relationship), methods=["DELETE"]),
        ]
    return result
