"""Platform routes: domain information, the caller's domains, account-level limits."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import InsufficientAccess

from .. import versions
from ..envelope import success
from ..storage import vaults
from .common import bool_param, caller, query, since, state

__all__ = ["CUSTOM_OBJECTS_MAX", "RECORDS_PER_OBJECT_MAX", "routes"]

#: Per-vault maxima of the limits request. The local vault has no custom objects and
#: no object records of its own, so nothing is used up.
RECORDS_PER_OBJECT_MAX = 10_000_000
CUSTOM_OBJECTS_MAX = 200


async def domain(request: Request) -> Response:
    who = caller(request)
    if not who.user.domain_admin:
        raise InsufficientAccess("Only domain admins may retrieve domain information")
    include = bool_param(query(request, "include_application"), "include_application")
    info = await state(request).db.read(vaults.domain_information, who.vault_id, include)
    return success(responseMessage="Success", domain__v=info)


async def domains(request: Request) -> Response:
    who = caller(request)
    found = await state(request).db.read(vaults.user_domains, who.user.id)
    return success(responseMessage="Success", domains=found)


async def limits(request: Request) -> Response:
    caller(request)
    return success(
        data=[
            {"name": "records_per_object", "max": RECORDS_PER_OBJECT_MAX},
            {"name": "custom_objects", "max": CUSTOM_OBJECTS_MAX, "remaining": CUSTOM_OBJECTS_MAX},
        ]
    )


def routes() -> list[BaseRoute]:
    return [
        Route("/objects/domain", since(versions.DOMAIN_INFORMATION)(domain), methods=["GET"]),
        Route("/objects/domains", since(versions.DOMAIN_INFORMATION)(domains), methods=["GET"]),
        Route("/limits", since(versions.LIMITS)(limits), methods=["GET"]),
    ]
