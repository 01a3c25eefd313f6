"""User routes: ``GET /objects/users`` and ``GET /objects/users/{id}``, read by every
user of the vault (a client turns user names into the ids lifecycle actions and
document roles take). Users are managed with ``vaultfs serve-admin``, not here.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..envelope import success
from ..storage import user_list
from .common import caller, path_int, state

__all__ = ["routes"]


async def list_users(request: Request) -> Response:
    who = caller(request)
    records = await state(request).db.read(user_list.list_users, who.vault_id)
    return success(
        responseMessage="Success",
        size=len(records),
        start=0,
        limit=len(records),
        users=[{"user": r} for r in records],
    )


async def get_user(request: Request) -> Response:
    who = caller(request)
    user_id = path_int(request, "user_id", "user id")
    record = await state(request).db.read(user_list.user_record, who.vault_id, user_id)
    return success(responseMessage="Success", users=[{"user": record}])


def routes() -> list[BaseRoute]:
    return [
        Route("/objects/users", list_users, methods=["GET"]),
        Route("/objects/users/{user_id}", get_user, methods=["GET"]),
    ]
