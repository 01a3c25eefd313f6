"""Lock routes: check out, read the lock, undo the check out."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from ..envelope import success
from ..permissions import Permission
from ..storage import locks
from ..storage.records import format_ms
from .common import caller, path_int, state

__all__ = ["routes"]


async def lock(request: Request) -> Response:
    who = caller(request, Permission.LOCK)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    await vault.db.write(locks.lock_document, who, doc_id, vault.db.tick())
    return success(responseMessage="Document successfully checked out.")


async def read_lock(request: Request) -> Response:
    who = caller(request)
    doc_id = path_int(request, "doc_id", "document id")
    held = await state(request).db.read(locks.read_lock, who.vault_id, doc_id)
    if held is None:
        return success(responseMessage="Document is not checked out.")
    user_id, when = held
    return success(lock={"locked_by__v": user_id, "locked_date__v": format_ms(when)})


async def unlock(request: Request) -> Response:
    who = caller(request, Permission.LOCK)
    vault = state(request)
    doc_id = path_int(request, "doc_id", "document id")
    released = await vault.db.write(locks.unlock_document, who, doc_id, vault.db.tick())
    message = "Undo check out successful." if released else "Document was not checked out."
    return success(responseMessage=message)


def routes() -> list[BaseRoute]:
    path = "/objects/documents/{doc_id}/lock"
    return [
        Route(path, lock, methods=["POST"]),
        Route(path, read_lock, methods=["GET"]),
        Route(path, unlock, methods=["DELETE"]),
    ]
