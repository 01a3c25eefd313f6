"""Authentication routes: version list, login, keep-alive, end of session, discovery."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import ParameterRequired
from vaultfs.wire import API_VERSION

from ..envelope import success
from ..storage import users
from ..storage.db import now_ms
from .common import CALLER_KEY, base_url, form, state

__all__ = ["API_VERSIONS", "unversioned_routes", "versioned_routes"]


def _versions() -> list[str]:
    """Every label from v2.0 up to the client's version (three or four a year)."""
    last_major, last_minor = (int(p) for p in API_VERSION[1:].split("."))
    labels = []
    for major in range(2, last_major + 1):
        for minor in range(0, 4 if major >= 15 else 2):
            if (major, minor) <= (last_major, last_minor):
                labels.append(f"v{major}.{minor}")
    return labels


API_VERSIONS = _versions()


async def api_versions(request: Request) -> Response:
    base = base_url(request)
    return success(values={label: f"{base}/api/{label}" for label in API_VERSIONS})


async def login(request: Request) -> Response:
    vault = state(request)
    body = await form(request)
    params = {k: v for k, v in request.query_params.items() if v}
    fields = {**params, **{k: v for k, v in body.fields.items() if v}}
    missing = [name for name in ("username", "password") if not fields.get(name)]
    if missing:
        raise ParameterRequired(
            "Missing required parameter(s): " + ", ".join(f"[{m}]" for m in missing)
        )
    user = await vault.db.read(users.check_password, fields["username"], fields["password"])
    token, vault_id, vaults = await vault.db.write(
        users.login, user, fields.get("vaultDNS") or request.url.hostname, now_ms()
    )
    base = base_url(request)
    return success(
        sessionId=token,
        userId=user.id,
        vaultIds=[{"id": v["id"], "name": v["name"], "url": f"{base}/api"} for v in vaults],
        vaultId=vault_id,
    )


async def keep_alive(request: Request) -> Response:
    vault = state(request)
    who = request.scope[CALLER_KEY]
    await vault.db.write(
        users.touch_session,
        who.token_hash,
        now_ms(),
        int(vault.config.session_timeout_seconds * 1000),
    )
    return success()


async def end_session(request: Request) -> Response:
    vault = state(request)
    await vault.db.write(users.end_session, request.scope[CALLER_KEY].token_hash)
    return success()


async def discovery(request: Request) -> Response:
    body = await form(request)
    username = request.query_params.get("username") or body.fields.get("username")
    if not username:
        raise ParameterRequired("Missing required parameter [username]")
    # Every local user signs in with a password (no SSO profiles).
    return success(data={"auth_type": "password"})


def unversioned_routes() -> list[BaseRoute]:
    return [
        Route("/api/", api_versions, methods=["GET"]),
        Route("/auth/discovery", discovery, methods=["POST", "GET"]),
    ]


def versioned_routes() -> list[BaseRoute]:
    return [
        Route("/auth", login, methods=["POST"]),
        Route("/auth/discovery", discovery, methods=["POST", "GET"]),
        Route("/keep-alive", keep_alive, methods=["POST"]),
        Route("/session", end_session, methods=["DELETE"]),
    ]
