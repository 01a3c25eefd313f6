"""How a user signs in to a vault, and what is known of its authorization servers.

Owns the vault's discovery (``discover``: ``password``, or the OAuth 2.0 / OIDC profiles
with their authorization server), the profile and server records, and the issuer's own
metadata completing the vault's (``complete_metadata``). Plain httpx: a mount that signs
in with a password asks discovery at every start, and loads none of Authlib for it
(``_oauth`` holds the token exchanges, imported only by a single sign-on).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from vaultfs.errors import VaultError, VaultUnavailable

from ._errors import error_from_response, parse_json
from ._transport import tls_context

__all__ = [
    "DEFAULT_CLIENT_ID",
    "TIMEOUT",
    "AuthServer",
    "Discovery",
    "SsoProfile",
    "complete_metadata",
    "discover",
]

log = logging.getLogger("vaultfs.client")

#: vaultfs's client id at an authorization server, when neither the vault's discovery
#: (``as_client_id``) nor the profile's configuration names another
DEFAULT_CLIENT_ID = "vaultfs"
#: an authorization server's requests
TIMEOUT = 30.0
_DISCOVERY_TIMEOUT = 10.0
#: the well-known documents of an issuer, in the order they are tried
_WELL_KNOWN = ("/.well-known/openid-configuration", "/.well-known/oauth-authorization-server")


@dataclass(frozen=True)
class AuthServer:
    """What the client uses of an authorization server's metadata (RFC 8414)."""

    token_endpoint: str
    issuer: str | None = None
    authorization_endpoint: str | None = None
    device_authorization_endpoint: str | None = None
    revocation_endpoint: str | None = None
    scopes_supported: tuple[str, ...] = ()

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> AuthServer:
        def text(key: str) -> str | None:
            value = metadata.get(key)
            return value if isinstance(value, str) and value else None

        scopes = metadata.get("scopes_supported")
        return cls(
            token_endpoint=text("token_endpoint") or "",
            issuer=text("issuer"),
            authorization_endpoint=text("authorization_endpoint"),
            device_authorization_endpoint=text("device_authorization_endpoint"),
            revocation_endpoint=text("revocation_endpoint"),
            scopes_supported=tuple(s for s in scopes if isinstance(s, str))
            if isinstance(scopes, list)
            else (),
        )

    def default_scope(self) -> str:
        """``openid``, with ``offline_access`` where the server offers it (many issue a
        refresh token only for it); nothing when the server names no scopes."""
        wanted = [s for s in ("openid", "offline_access") if s in self.scopes_supported]
        return " ".join(wanted)


@dataclass(frozen=True)
class SsoProfile:
    """An OAuth 2.0 / OIDC profile of the vault, as discovery answers it."""

    id: str
    label: str
    #: where an access token is exchanged for a session
    session_endpoint: str
    #: the vault's ``as_metadata`` of the profile, as it was sent
    metadata: Mapping[str, Any] = field(default_factory=dict)
    #: ``as_client_id``: vaultfs's client id at the authorization server, when mapped
    client_id: str | None = None

    @property
    def server(self) -> AuthServer:
        return AuthServer.from_metadata(self.metadata)


@dataclass(frozen=True)
class Discovery:
    """``POST /auth/discovery`` for one user: ``auth_type`` and the OAuth profiles."""

    auth_type: str
    profiles: tuple[SsoProfile, ...] = ()

    @property
    def sso(self) -> bool:
        return self.auth_type == "sso"


async def discover(
    base_url: str,
    username: str,
    client_id: str | None = None,
    *,
    verify: bool | str = True,
) -> Discovery:
    """Ask the vault at ``base_url`` how ``username`` signs in. A SAML-only user gets
    ``sso`` with no profiles (vaultfs cannot sign them in)."""
    form = {"username": username}
    if client_id:
        form["client_id"] = client_id
    url = f"{base_url.rstrip('/')}/auth/discovery"
    # Short: a vault that does not answer is found out by the sign-in that follows.
    async with httpx.AsyncClient(
        timeout=_DISCOVERY_TIMEOUT, verify=tls_context(verify), trust_env=False
    ) as http:
        try:
            response = await http.post(url, data=form, headers={"Accept": "application/json"})
        except httpx.RequestError as exc:
            raise VaultUnavailable(f"POST /auth/discovery: {type(exc).__name__}") from exc
    body = parse_json(response)
    error = error_from_response(response, body, "POST /auth/discovery")
    if error is not None:
        raise error
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        raise VaultError("the discovery answer carries no data")
    profiles = []
    for item in data.get("auth_profiles") or []:
        if not isinstance(item, dict) or not isinstance(item.get("as_metadata"), dict):
            continue  # a SAML profile: not for this client
        profiles.append(
            SsoProfile(
                id=str(item.get("id")),
                label=str(item.get("label") or item.get("id")),
                session_endpoint=str(item.get("vault_session_endpoint") or ""),
                metadata=dict(item["as_metadata"]),
                client_id=item.get("as_client_id") or None,
            )
        )
    return Discovery(str(data.get("auth_type") or "password"), tuple(profiles))


async def complete_metadata(profile: SsoProfile, *, verify: bool | str = True) -> SsoProfile:
    """The profile with the issuer's own metadata added where the vault's leaves gaps
    (the vault's ``as_metadata`` has no device authorization endpoint, for one). What
    the vault says wins; an issuer that does not answer leaves the profile as it is."""
    issuer = profile.metadata.get("issuer")
    if not isinstance(issuer, str) or not issuer:
        return profile
    async with httpx.AsyncClient(
        timeout=TIMEOUT, verify=tls_context(verify), trust_env=False
    ) as http:
        for suffix in _WELL_KNOWN:
            try:
                response = await http.get(issuer.rstrip("/") + suffix)
                found = response.json() if response.status_code == 200 else None
            except (httpx.HTTPError, ValueError):
                found = None
            if isinstance(found, dict):
                return replace(profile, metadata={**found, **profile.metadata})
    log.debug("no metadata document at the issuer of profile %s", profile.id)
    return profile
