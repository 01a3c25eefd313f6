"""Access routes: document roles, groups, and the caller's favourite documents.

Document roles (``GET``/``POST /objects/documents/{id}/roles``, ``DELETE
.../roles/{role}.{users|groups}/{id}``) are changed by admins and the document's
owners. Groups (``/objects/groups``) are read by everybody and changed by admins.
Favourites (``POST``/``DELETE /objects/documents/{id}/favorite``) feed the
``Favorites`` named filter of the document list.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import InvalidData, MalformedUrl, ParameterRequired

from ..envelope import success
from ..permissions import Permission
from ..storage import access, groups
from ..storage.documents import get_document
from .common import caller, form, path_int, state

__all__ = ["routes"]


def _labels(role: str) -> str:
    return role.removesuffix("__v").replace("_", " ").title()


async def document_roles(request: Request) -> Response:
    who = caller(request)
    doc_id = path_int(request, "doc_id", "document id")

    def read(conn: sqlite3.Connection) -> dict[str, dict[str, list[int]]]:
        get_document(conn, who.vault_id, doc_id)
        return access.document_roles(conn, doc_id)

    roles = await state(request).db.read(read)
    return success(
        documentRoles=[
            {
                "name": role,
                "label": _labels(role),
                "assignedUsers": roles.get(role, {}).get("users", []),
                "assignedGroups": roles.get(role, {}).get("groups", []),
            }
            for role in access.ROLE_FIELDS
        ]
    )


async def assign_roles(request: Request) -> Response:
    who = caller(request, Permission.EDIT)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    body = await form(request)
    unknown = [k for k in body.fields if access.parse_role_key(k) is None]
    if unknown:
        raise InvalidData(f"Invalid parameter [{unknown[0]}]: use <role>.users or <role>.groups")
    if not body.fields:
        raise ParameterRequired("Missing required parameter: <role>.users or <role>.groups")

    def write(conn: sqlite3.Connection) -> dict[str, Any]:
        get_document(conn, who.vault_id, doc_id)
        access.check(conn, doc_id, owner=True)
        access.add_roles(conn, who.vault_id, doc_id, body.fields)
        return access.document_roles(conn, doc_id)

    roles = await vault.db.write(write)
    return success(responseMessage="Document roles updated", id=doc_id, updatedRoles=roles)


async def remove_role(request: Request) -> Response:
    who = caller(request, Permission.EDIT)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    parsed = access.parse_role_key(request.path_params["role"])
    if parsed is None:
        raise MalformedUrl(f"Invalid role [{request.path_params['role']}]: <role>.users|groups")
    principal = path_int(request, "principal", "user or group id")

    def write(conn: sqlite3.Connection) -> None:
        get_document(conn, who.vault_id, doc_id)
        access.check(conn, doc_id, owner=True)
        if not access.remove_role(conn, doc_id, *parsed, principal):
            raise MalformedUrl(f"[{principal}] is not in role [{request.path_params['role']}]")

    await vault.db.write(write)
    return success(responseMessage="Document role removed", id=doc_id)


async def set_favorite(request: Request) -> Response:
    who = caller(request)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    favourite = request.method == "POST"

    def write(conn: sqlite3.Connection) -> None:
        get_document(conn, who.vault_id, doc_id)
        if favourite:
            conn.execute(
                "INSERT INTO favorites (user_id, doc_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
                (who.user.id, doc_id),
            )
        else:
            conn.execute(
                "DELETE FROM favorites WHERE user_id = ? AND doc_id = ?", (who.user.id, doc_id)
            )

    await vault.db.write(write)
    return success(id=doc_id)


async def list_groups(request: Request) -> Response:
    who = caller(request)
    records = await state(request).db.read(groups.list_groups, who.vault_id)
    return success(responseMessage="Success", groups=[{"group": g} for g in records])


async def get_group(request: Request) -> Response:
    who = caller(request)
    group_id = path_int(request, "group_id", "group id")
    record = await state(request).db.read(groups.group_record, who.vault_id, group_id)
    return success(responseMessage="Success", groups=[{"group": record}])


async def create_group(request: Request) -> Response:
    who = caller(request, Permission.MANAGE_GROUPS)
    body = await form(request)
    group_id = await state(request).db.write(groups.create_group, who.vault_id, body.fields)
    return success(responseMessage="Group successfully created.", id=group_id)


async def update_group(request: Request) -> Response:
    who = caller(request, Permission.MANAGE_GROUPS)
    group_id = path_int(request, "group_id", "group id")
    body = await form(request)
    await state(request).db.write(groups.update_group, who.vault_id, group_id, body.fields)
    return success(responseMessage="Group successfully updated.", id=group_id)


async def delete_group(request: Request) -> Response:
    who = caller(request, Permission.MANAGE_GROUPS)
    group_id = path_int(request, "group_id", "group id")
    await state(request).db.write(groups.delete_group, who.vault_id, group_id)
    return success(responseMessage="Group successfully deleted.", id=group_id)


def routes() -> list[BaseRoute]:
    doc = "/objects/documents/{doc_id}"
    return [
        Route(doc + "/roles", document_roles, methods=["GET"]),
        Route(doc + "/roles", assign_roles, methods=["POST"]),
        Route(doc + "/roles/{role}/{principal}", remove_role, methods=["DELETE"]),
        Route(doc + "/favorite", set_favorite, methods=["POST", "DELETE"]),
        Route("/objects/groups", list_groups, methods=["GET"]),
        Route("/objects/groups", create_group, methods=["POST"]),
        Route("/objects/groups/{group_id}", get_group, methods=["GET"]),
        Route("/objects/groups/{group_id}", update_group, methods=["PUT"]),
        Route("/objects/groups/{group_id}", delete_group, methods=["DELETE"]),
    ]
