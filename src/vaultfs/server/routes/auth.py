"""Authentication routes: version list, password login, OAuth 2.0 / OIDC token exchange,
keep-alive, end of session, discovery.

Password logins are throttled per user name and vault DNS (``limits.AuthThrottle``):
a delayed answer carries ``X-VaultAPI-ResponseDelay`` (milliseconds), and failed
password checks count towards the account lockout (``storage.users``).
"""

from __future__ import annotations

import trio
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import (
    InvalidData,
    ParameterRequired,
    UsernameOrPasswordIncorrect,
)

from .. import oauth
from ..envelope import success
from ..storage import users
from ..storage.db import now_ms
from ..versions import API_VERSIONS
from .common import CALLER_KEY, add_header, base_url, form, state, vault_url

__all__ = ["RESPONSE_DELAY_HEADER", "unversioned_routes", "versioned_routes"]

#: How long a throttled login was held back, in milliseconds.
RESPONSE_DELAY_HEADER = "X-VaultAPI-ResponseDelay"


async def api_versions(request: Request) -> Response:
    """The version map, at ``/api/`` and (with a session: clients validate a session
    id by calling it) at ``/api/{version}``."""
    base = base_url(request)
    return success(values={label: f"{base}/api/{label}" for label in API_VERSIONS})


async def _fields(request: Request) -> dict[str, str]:
    """Form body over query parameters, empty values dropped."""
    body = await form(request)
    params = {k: v for k, v in request.query_params.items() if v}
    return {**params, **{k: v for k, v in body.fields.items() if v}}


async def _session(request: Request, user: users.User, wanted_dns: str | None) -> Response:
    """Issue a session for ``user`` (vault chosen as the spec says) and answer it."""
    token, vault_id, vaults = await state(request).db.write(users.login, user, wanted_dns, now_ms())
    return success(
        sessionId=token,
        userId=user.id,
        vaultIds=[
            {"id": v["id"], "name": v["name"], "url": vault_url(request, v["id"], v["dns"])}
            for v in vaults
        ],
        vaultId=vault_id,
    )


async def login(request: Request) -> Response:
    vault = state(request)
    fields = await _fields(request)
    missing = [name for name in ("username", "password") if not fields.get(name)]
    if missing:
        raise ParameterRequired(
            "Missing required parameter(s): " + ", ".join(f"[{m}]" for m in missing)
        )
    username = fields["username"]
    # The body's vaultDNS overrides the vault the request's host name addresses.
    wanted_dns = fields.get("vaultDNS") or vault.addressed_dns(request.url.hostname or "")
    delay_ms = vault.auth_throttle.charge(username, wanted_dns or "")
    if delay_ms:
        add_header(request, RESPONSE_DELAY_HEADER, str(delay_ms))
        await trio.sleep(delay_ms / 1000)
    try:
        user = await vault.db.read(users.check_password, username, fields["password"])
    except UsernameOrPasswordIncorrect:
        # A wrong password gets the same answer whether the account exists, is locked
        # or not: the answers must not tell which user names exist.
        await vault.db.write(users.record_failed_login, username, vault.config.lockout_attempts)
        raise
    return await _session(request, user, wanted_dns)


def _bearer(request: Request) -> str:
    header = request.headers.get("authorization", "").strip()
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ParameterRequired("Missing access token (Authorization: Bearer <token>)")
    return token.strip()


async def oauth_session(request: Request) -> Response:
    """Exchange an access token of an OAuth 2.0 / OIDC profile for a session."""
    vault = state(request)
    profile_id = request.path_params["profile_id"]
    profile = vault.oauth.get(profile_id)
    if profile is None:
        raise InvalidData(f"Unknown OAuth 2.0 / OpenID Connect profile [{profile_id}]")
    token = _bearer(request)
    fields = await _fields(request)
    username = await oauth.check_token(profile, token, fields.get("client_id"))
    user = await vault.db.read(users.token_user, username)
    if user.username not in profile.users:
        raise UsernameOrPasswordIncorrect(
            f"The security policy of user [{username}] does not use profile [{profile_id}]"
        )
    # The central login host names no vault: only a vault DNS name counts.
    host = request.url.hostname or ""
    wanted = fields.get("vaultDNS") or (host if vault.vault_of_host(host) else None)
    return await _session(request, user, wanted)


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
    fields = await _fields(request)
    username = fields.get("username")
    if not username:
        raise ParameterRequired("Missing required parameter [username]")
    profiles = [p for p in state(request).oauth.values() if username.lower() in p.users]
    if not profiles:
        # Also the answer for unknown user names: discovery does not tell who exists.
        return success(data={"auth_type": "password"})
    base = base_url(request)
    return success(
        data={
            "auth_type": "sso",
            "auth_profiles": [
                oauth.discovery_entry(
                    p, f"{base}/auth/oauth/session/{p.id}", fields.get("client_id")
                )
                for p in profiles
            ],
        }
    )


def _auth_host_routes() -> list[BaseRoute]:
    """The routes of the central login host (also served under /api/{version})."""
    return [
        Route("/auth/discovery", discovery, methods=["POST", "GET"]),
        Route("/auth/oauth/session/{profile_id}", oauth_session, methods=["POST"]),
    ]


def unversioned_routes() -> list[BaseRoute]:
    return [
        Route("/api/", api_versions, methods=["GET"]),
        Route("/api/{version}", api_versions, methods=["GET"]),
        *_auth_host_routes(),
    ]


def versioned_routes() -> list[BaseRoute]:
    return [
        Route("/auth", login, methods=["POST"]),
        *_auth_host_routes(),
        Route("/keep-alive", keep_alive, methods=["POST"]),
        Route("/session", end_session, methods=["DELETE"]),
    ]
