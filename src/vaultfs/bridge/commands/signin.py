"""Single sign-on for the commands: how a user signs in, and the interactive sign-in.

Owns the decisions around ``vaultfs.client``'s OAuth parts: ask the vault's discovery
how a user signs in (``password`` keeps today's way; a vault without discovery counts as
password); pick the user's OAuth 2.0 / OIDC profile; settle the client id, scopes and
device endpoint (the profile's ``[oauth]`` table, then discovery, then the issuer's own
metadata); run the interactive sign-in (the device grant with ``--device-code`` or where
there is no display, else the browser with the authorization code flow, its address
also printed); and build the ``TokenLogin`` the mount's client signs in with. What a
person must see (the address, the code) goes to stderr, never to a log.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import webbrowser
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from vaultfs import client, durable, errors
from vaultfs.bridge.commands.tokens import SignInStore
from vaultfs.client import (
    DEFAULT_CLIENT_ID,
    Discovery,
    SsoProfile,
    VaultClient,
    complete_metadata,
    discover,
)

if TYPE_CHECKING:
    from vaultfs.client import DeviceCode, TokenLogin

# The token parts (client.TokenLogin, client.revoke, client.sign_in_with_*) are named
# through the package where used: they load Authlib, which a password mount never needs.

__all__ = [
    "SsoSettings",
    "SsoSetup",
    "check_session",
    "how_user_signs_in",
    "interactive_sign_in",
    "prepare",
    "sign_out",
    "token_login",
]

#: retries of the vault's answers while signing in (a person is waiting)
_RETRIES = 2

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SsoSettings:
    """What the user configured (a profile's ``[oauth]`` table; all optional)."""

    client_id: str | None = None
    scopes: str | None = None
    profile: str | None = None
    device_authorization_endpoint: str | None = None
    token_file: Path | None = None

    @classmethod
    def from_table(cls, table: dict[str, str]) -> SsoSettings:
        token_file = table.get("token_file")
        return cls(
            client_id=table.get("client_id") or None,
            scopes=table.get("scopes"),
            profile=table.get("profile") or None,
            device_authorization_endpoint=table.get("device_authorization_endpoint") or None,
            token_file=Path(token_file).expanduser() if token_file else None,
        )


@dataclass(frozen=True)
class SsoSetup:
    """Everything a sign-in of one user needs, settled."""

    url: str
    user: str
    profile: SsoProfile
    client_id: str
    scope: str
    store: SignInStore


def how_user_signs_in(
    url: str, user: str, settings: SsoSettings, *, kept: Path | None = None
) -> Discovery:
    """The vault's discovery answer for ``user``; ``password`` when the vault has no
    discovery or cannot be asked (the password login then says what is wrong).
    ``kept``: where the last answer is kept (a mount's cache: no secret in it), and
    taken from when the vault cannot be reached, so that a mount starts offline
    (docs/user-guide.md "Offline")."""
    try:
        discovery = trio.run(discover, url, user, DEFAULT_CLIENT_ID)
    except errors.VaultError as exc:
        remembered = _kept_discovery(kept) if isinstance(exc, errors.VaultUnavailable) else None
        if remembered is not None:
            log.info("the vault cannot be reached; %s signs in as it did last", user)
            return remembered
        log.debug("discovery for %s failed (%s); signing in with a password", user, exc.type)
        return Discovery("password")
    if kept is not None:
        _keep_discovery(kept, discovery)
    return discovery


def _keep_discovery(path: Path, discovery: Discovery) -> None:
    body = {
        "auth_type": discovery.auth_type,
        "profiles": [
            {
                "id": p.id,
                "label": p.label,
                "session_endpoint": p.session_endpoint,
                "metadata": dict(p.metadata),
                "client_id": p.client_id,
            }
            for p in discovery.profiles
        ],
    }
    try:
        durable.ensure_private_dir(path.parent)
        durable.write_json_atomically(path, body)
    except OSError as exc:  # an offline start then signs in with a password
        log.warning("the vault's sign-in answer could not be kept in %s: %s", path, exc)


def _kept_discovery(path: Path | None) -> Discovery | None:
    if path is None:
        return None
    try:
        body = json.loads(path.read_text())
        profiles = tuple(
            SsoProfile(
                str(p["id"]),
                str(p["label"]),
                str(p["session_endpoint"]),
                dict(p.get("metadata") or {}),
                p.get("client_id"),
            )
            for p in body.get("profiles") or []
        )
        return Discovery(str(body["auth_type"]), profiles)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _profile(discovery: Discovery, wanted: str | None, user: str) -> SsoProfile:
    if not discovery.profiles:
        raise errors.UsernameOrPasswordIncorrect(
            f"{user} signs in with single sign-on through a profile vaultfs cannot use "
            "(SAML): the vault offers no OAuth 2.0 / OpenID Connect profile for them"
        )
    if wanted is None:
        return discovery.profiles[0]
    for profile in discovery.profiles:
        if profile.id == wanted:
            return profile
    names = ", ".join(p.id for p in discovery.profiles)
    raise errors.UsernameOrPasswordIncorrect(
        f"the vault has no OAuth profile {wanted!r} for {user} (it has: {names})"
    )


def prepare(url: str, user: str, discovery: Discovery, settings: SsoSettings) -> SsoSetup:
    """Settle profile, client id, scope and endpoints (asks the issuer for its metadata)."""
    profile = trio.run(complete_metadata, _profile(discovery, settings.profile, user))
    if settings.device_authorization_endpoint:
        metadata = {
            **profile.metadata,
            "device_authorization_endpoint": settings.device_authorization_endpoint,
        }
        profile = SsoProfile(
            profile.id, profile.label, profile.session_endpoint, metadata, profile.client_id
        )
    client_id = settings.client_id or profile.client_id or DEFAULT_CLIENT_ID
    scope = settings.scopes if settings.scopes is not None else profile.server.default_scope()
    store = SignInStore(url, user, settings.token_file)
    return SsoSetup(url, user, profile, client_id, scope, store)


def _has_display() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _show_code(code: DeviceCode) -> None:
    minutes = max(1, round(code.expires_in / 60))
    lines = [
        f"To sign in, open {code.verification_uri} and enter the code {code.user_code}",
    ]
    if code.verification_uri_complete:
        lines.append(f"(or open {code.verification_uri_complete})")
    lines.append(f"Waiting for the approval (the code expires in {minutes} min) ...")
    print("\n".join(lines), file=sys.stderr, flush=True)


def _open_browser(url: str) -> None:
    print(f"To sign in, open this address in a browser:\n  {url}", file=sys.stderr, flush=True)
    if _has_display():
        try:
            webbrowser.open(url)
        except webbrowser.Error as exc:
            log.debug("no browser: %s", exc)
    print("Waiting for the approval ...", file=sys.stderr, flush=True)


def interactive_sign_in(setup: SsoSetup, *, device: bool) -> None:
    """Sign in as a person would (device code when asked or without a display, else the
    browser) and keep the tokens in the store."""
    server = setup.profile.server
    use_device = device or (not _has_display() and bool(server.device_authorization_endpoint))
    print(
        f"{setup.user} signs in to {setup.url} through {setup.profile.label} "
        f"({server.issuer or server.token_endpoint})",
        file=sys.stderr,
        flush=True,
    )
    if use_device:
        token = trio.run(
            lambda: client.sign_in_with_device_code(
                server, setup.client_id, setup.scope, _show_code, who=setup.user
            )
        )
    else:
        token = trio.run(
            lambda: client.sign_in_with_browser(
                server, setup.client_id, setup.scope, _open_browser, who=setup.user
            )
        )
    if not token.get("refresh_token"):
        log.warning(
            "the authorization server gave no refresh token: the mount will need a new "
            "sign-in when the access token expires (ask for the offline_access scope?)"
        )
    setup.store.save(token)
    print(f"signed in; the sign-in is kept in {setup.store.where}", file=sys.stderr, flush=True)


def token_login(setup: SsoSetup) -> TokenLogin:
    return client.TokenLogin(setup.user, setup.profile, setup.client_id, setup.store)


def check_session(setup: SsoSetup) -> int | None:
    """Exchange the stored sign-in for a session once (and end it): the vault accepts
    it. Returns the vault id the session was for."""

    async def exchange() -> int | None:
        async with VaultClient(setup.url, token_login(setup), max_retries=_RETRIES) as client:
            await client.login(max_retries=_RETRIES)
            return client.vault_id

    return trio.run(exchange)


def sign_out(url: str, user: str, settings: SsoSettings) -> tuple[bool, bool]:
    """Revoke the stored refresh token at the identity provider (when the vault still
    names one with a revocation endpoint) and forget the tokens: (revoked, found)."""
    store = SignInStore(url, user, settings.token_file)
    token = store.load()
    revoked = False
    if token and isinstance(token.get("refresh_token"), str):
        discovery = how_user_signs_in(url, user, settings)
        if discovery.sso:
            try:
                setup = prepare(url, user, discovery, settings)
                server = setup.profile.server
                revoked = trio.run(client.revoke, server, setup.client_id, token["refresh_token"])
            except errors.VaultError as exc:
                log.warning("the sign-in could not be revoked: %s", exc)
    found = store.delete()
    return revoked, found
