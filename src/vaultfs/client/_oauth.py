"""Single sign-on (OAuth 2.0 / OpenID Connect) for the client: tokens and sessions.

Owns ``TokenLogin``: the ``SessionSource`` that exchanges an access token for
a session at the profile's session endpoint, refreshing the token (Authlib) when it has
expired or the vault refused it. Tokens are kept by a ``TokenStore`` the caller passes
in (the bridge keeps them in the keyring or a 0600 file); refreshed tokens go back to it
at once, since the authorization server may have rotated the refresh token.

Every OAuth exchange is Authlib's (``authlib.integrations.httpx_client``): no token
request, PKCE or error parsing is written here. Tokens never reach a log or a message.
"""

from __future__ import annotations

import logging
import time
import warnings
from typing import Any, Protocol

import authlib.deprecate
import httpx
from authlib.common.errors import AuthlibBaseError

with warnings.catch_warnings():
    # Authlib announces a move of its httpx integration to the httpx2 fork; vaultfs's
    # HTTP is httpx throughout, which the integration still runs on.
    # (Imported first: authlib.deprecate puts an "always" filter of its own in front.)
    warnings.filterwarnings(
        "ignore",
        message="The httpx module is deprecated",
        category=authlib.deprecate.AuthlibDeprecationWarning,
    )
    from authlib.integrations.httpx_client import AsyncOAuth2Client, OAuthError

from vaultfs.errors import SignInExpired, UsernameOrPasswordIncorrect, VaultError, VaultUnavailable

from ._discovery import TIMEOUT, AuthServer, SsoProfile
from ._session import PostCall
from ._transport import tls_context

__all__ = [
    "TokenLogin",
    "TokenStore",
    "oauth_client",
    "refused_sign_in",
    "revoke",
]

log = logging.getLogger("vaultfs.client")

#: an access token this close to its expiry is refreshed before it is used
_EXPIRY_MARGIN = 30.0
#: token errors after which only a new interactive sign-in helps (RFC 6749 5.2)
_REFUSALS = frozenset({"invalid_grant", "invalid_client", "unauthorized_client"})


class TokenStore(Protocol):
    """Where the tokens of one sign-in are kept between runs (never in a log)."""

    def load(self) -> dict[str, Any] | None:
        """The stored token (``refresh_token``, maybe ``access_token``, ``expires_at``)."""
        ...

    def save(self, token: dict[str, Any]) -> None: ...


def oauth_client(client_id: str, *, verify: bool | str = True, **kwargs: Any) -> AsyncOAuth2Client:
    """Authlib's httpx client for vaultfs as a public client (no secret: PKCE and the
    device grant are what public clients use)."""
    return AsyncOAuth2Client(
        client_id=client_id,
        token_endpoint_auth_method="none",
        timeout=TIMEOUT,
        verify=tls_context(verify),
        trust_env=False,
        **kwargs,
    )


def refused_sign_in(exc: AuthlibBaseError, who: str, where: str) -> VaultError:
    """The error for a token request the authorization server refused (the error code
    only: descriptions may quote what was sent)."""
    if exc.error in _REFUSALS:
        return SignInExpired(
            f"the authorization server {where} refused the sign-in of {who} ({exc.error}): "
            "it was revoked or has expired; sign in again with `vaultfs login`"
        )
    return UsernameOrPasswordIncorrect(
        f"the authorization server {where} refused the sign-in of {who} ({exc.error})"
    )


class TokenLogin:
    """A session from an access token of profile ``profile``: ``POST
    {session_endpoint}`` with ``Authorization: Bearer``. A token near its expiry, or one
    the vault refused, is refreshed first; the refresh token is read from the store each
    time (a ``vaultfs login`` in another process may have replaced it)."""

    def __init__(
        self,
        username: str,
        profile: SsoProfile,
        client_id: str,
        store: TokenStore,
        *,
        vault_dns: str | None = None,
        verify: bool | str = True,
        clock: Any = time.time,
    ) -> None:
        self.username = username
        self.vault_dns = vault_dns
        self.method = f"sso {profile.id}"
        self._profile = profile
        self._server = profile.server
        self._client_id = client_id
        self._store = store
        self._verify = verify
        self._clock = clock
        self._token: dict[str, Any] | None = None
        #: the refresh token the server refused: not offered again (nor logged again)
        #: until a new sign-in replaces it in the store
        self._refused: str | None = None

    async def open_session(self, post: PostCall) -> dict[str, Any]:
        access, refreshed = await self._access_token(refresh=False)
        try:
            return await self._exchange(post, access)
        except UsernameOrPasswordIncorrect:
            if refreshed:
                raise
            # Revoked or expired early at the authorization server: one refresh.
            log.info("the vault refused the access token of %s; refreshing it", self.username)
        access, _ = await self._access_token(refresh=True)
        return await self._exchange(post, access)

    async def _exchange(self, post: PostCall, access: str) -> dict[str, Any]:
        form = {"client_id": self._client_id}
        if self.vault_dns:
            form["vaultDNS"] = self.vault_dns
        return await post(
            self._profile.session_endpoint, form, {"Authorization": f"Bearer {access}"}
        )

    async def _access_token(self, *, refresh: bool) -> tuple[str, bool]:
        """An access token, and whether it was refreshed just now."""
        stored = self._store.load()
        if stored and (
            self._token is None or stored.get("refresh_token") != self._token.get("refresh_token")
        ):
            self._token = stored
        token = self._token
        if not token or not token.get("refresh_token"):
            raise SignInExpired(
                f"no stored sign-in for {self.username}: sign in with `vaultfs login` "
                "(or mount from a terminal)"
            )
        if token["refresh_token"] == self._refused:
            raise SignInExpired(
                f"the authorization server refused the sign-in of {self.username} "
                "(revoked or expired): sign in again with `vaultfs login`"
            )
        expires_at = token.get("expires_at")
        lifetime = token.get("expires_in")
        # A short-lived token is not refreshed for most of its life.
        margin = (
            min(_EXPIRY_MARGIN, lifetime / 4)
            if isinstance(lifetime, int | float)
            else _EXPIRY_MARGIN
        )
        usable = (
            isinstance(token.get("access_token"), str)
            and isinstance(expires_at, int | float)
            and expires_at - margin > self._clock()
        )
        if usable and not refresh:
            return str(token["access_token"]), False
        token = await self._refresh(token)
        return str(token["access_token"]), True

    async def _refresh(self, token: dict[str, Any]) -> dict[str, Any]:
        where = self._server.issuer or self._server.token_endpoint
        if not self._server.token_endpoint:
            raise VaultError(f"profile {self._profile.id} names no token endpoint")
        async with oauth_client(self._client_id, verify=self._verify) as oauth:
            try:
                fresh = await oauth.refresh_token(
                    self._server.token_endpoint, refresh_token=token["refresh_token"]
                )
            except OAuthError as exc:
                error = refused_sign_in(exc, self.username, where)
                if isinstance(error, SignInExpired):
                    self._refused = token["refresh_token"]
                log.error("%s; the mount keeps what it has not sent yet", error.message)
                raise error from None
            except httpx.RequestError as exc:
                raise VaultUnavailable(
                    f"cannot reach the authorization server {where}: {type(exc).__name__}"
                ) from exc
        kept = {k: v for k, v in dict(fresh).items() if k != "id_token"}
        # Some servers do not rotate: the old refresh token stays valid then.
        kept.setdefault("refresh_token", token["refresh_token"])
        self._token = kept
        self._store.save(kept)
        log.info("refreshed the access token of %s at %s", self.username, where)
        return kept


async def revoke(server: AuthServer, client_id: str, refresh_token: str) -> bool:
    """Revoke a refresh token at the server's revocation endpoint (RFC 7009); whether
    the server took it (False also when it has no such endpoint or cannot be reached)."""
    if not server.revocation_endpoint:
        return False
    async with oauth_client(client_id) as oauth:
        try:
            response = await oauth.revoke_token(
                server.revocation_endpoint, token=refresh_token, token_type_hint="refresh_token"
            )
        except httpx.RequestError as exc:
            log.warning("cannot reach the revocation endpoint: %s", type(exc).__name__)
            return False
    return bool(response.status_code == 200)
