"""OAuth 2.0 / OpenID Connect profiles: configuration, discovery entries, token checks.

Profiles are configured in ``DATA/oauth.toml`` (read at start; see docs/server.md)::

    [profiles.corp_idp]
    label = "Corporate IdP"
    introspection_endpoint = "https://idp.example.com/oauth2/introspect"
    user_claim = "email"                 # claim holding the vault user name
    users = ["ann@example.com"]          # users whose security policy is this profile

An access token is valid when the profile's introspection endpoint (RFC 7662) says
``active: true``; when the caller sent ``client_id`` and the answer names another
client, the token is refused. The user is the one whose user name is the value of
``user_claim`` in the introspection answer. Tokens are never verified locally (no
JWKS): the authorization server is the one authority on them.
"""

from __future__ import annotations

import logging
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from vaultfs.errors import ServerException, UsernameOrPasswordIncorrect

__all__ = ["OAuthProfile", "check_token", "discovery_entry", "load_profiles"]

log = logging.getLogger("vaultfs.server")

#: Keys of the spec's ``as_metadata`` object that a profile may configure.
AS_METADATA_KEYS = (
    "issuer",
    "authorization_endpoint",
    "token_endpoint",
    "registration_endpoint",
    "jwks_uri",
    "response_types_supported",
    "response_modes_supported",
    "introspection_endpoint",
    "introspection_endpoint_auth_methods_supported",
    "revocation_endpoint",
    "revocation_endpoint_auth_methods_supported",
    "end_session_endpoint",
    # Not in the spec's list: RFC 8628's metadata name, for clients that sign in with the
    # device grant (the spec's list has no place for it; clients ignore what they do not
    # know).
    "device_authorization_endpoint",
)
_INTROSPECTION_TIMEOUT = 10.0


@dataclass(frozen=True)
class OAuthProfile:
    id: str
    label: str
    introspection_endpoint: str
    description: str = ""
    #: claim of the introspection answer that holds the vault user name
    user_claim: str = "sub"
    #: users (lower-case names) whose security policy names this profile
    users: frozenset[str] = frozenset()
    use_adal: bool = False
    #: client id sent by an application -> client id at the authorization server
    client_ids: dict[str, str] = field(default_factory=dict)
    #: credentials of the vault at the introspection endpoint (HTTP Basic), if needed
    introspection_client_id: str | None = None
    introspection_client_secret: str | None = None
    as_metadata: dict[str, Any] = field(default_factory=dict)


def _profile(profile_id: str, table: dict[str, Any]) -> OAuthProfile:
    endpoint = table.get("introspection_endpoint")
    if not isinstance(endpoint, str) or not endpoint:
        raise ValueError(f"oauth profile [{profile_id}] needs an introspection_endpoint")
    metadata = {key: table[key] for key in AS_METADATA_KEYS if key in table}
    return OAuthProfile(
        id=profile_id,
        label=str(table.get("label", profile_id)),
        description=str(table.get("description", "")),
        introspection_endpoint=endpoint,
        user_claim=str(table.get("user_claim", "sub")),
        users=frozenset(str(u).lower() for u in table.get("users", [])),
        use_adal=bool(table.get("use_adal", False)),
        client_ids={str(k): str(v) for k, v in table.get("client_ids", {}).items()},
        introspection_client_id=table.get("introspection_client_id"),
        introspection_client_secret=table.get("introspection_client_secret"),
        as_metadata=metadata,
    )


def load_profiles(path: Path) -> dict[str, OAuthProfile]:
    """The profiles of an ``oauth.toml`` (none when the file does not exist)."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        return {}
    if path.stat().st_mode & 0o077:
        # It may hold the introspection client secret.
        log.warning("%s is readable by other users; chmod 600 it", path)
    tables = data.get("profiles", {})
    return {pid: _profile(pid, table) for pid, table in tables.items()}


def discovery_entry(profile: OAuthProfile, session_url: str, client_id: str | None) -> dict:
    """The profile as an ``auth_profiles[]`` item of the discovery answer."""
    entry: dict[str, Any] = {
        "id": profile.id,
        "label": profile.label,
        "description": profile.description,
        "vault_session_endpoint": session_url,
        "use_adal": profile.use_adal,
    }
    if client_id and client_id in profile.client_ids:
        entry["as_client_id"] = profile.client_ids[client_id]
    entry["as_metadata"] = {
        "introspection_endpoint": profile.introspection_endpoint,
        **profile.as_metadata,
    }
    return entry


async def check_token(profile: OAuthProfile, token: str, client_id: str | None) -> str:
    """The user name an active access token stands for (asks the introspection endpoint)."""
    form = {"token": token, "token_type_hint": "access_token"}
    if client_id:
        form["client_id"] = client_id
    auth: httpx.Auth | None = None
    if profile.introspection_client_id:
        auth = httpx.BasicAuth(
            profile.introspection_client_id, profile.introspection_client_secret or ""
        )
    try:
        async with httpx.AsyncClient(timeout=_INTROSPECTION_TIMEOUT, auth=auth) as http:
            response = await http.post(profile.introspection_endpoint, data=form)
            response.raise_for_status()
            claims = response.json()
    except (httpx.HTTPError, ValueError) as exc:
        log.warning("introspection of profile %s failed: %s", profile.id, exc)
        raise ServerException(
            f"The authorization server of profile [{profile.id}] could not check the token"
        ) from exc
    refused = UsernameOrPasswordIncorrect("The access token is not valid for this profile")
    if not isinstance(claims, dict) or claims.get("active") is not True:
        raise refused
    expires = claims.get("exp")
    if isinstance(expires, int | float) and expires < time.time():
        raise refused
    if client_id and claims.get("client_id") not in (None, client_id):
        raise refused
    username = claims.get(profile.user_claim)
    if not isinstance(username, str) or not username:
        raise refused
    return username
