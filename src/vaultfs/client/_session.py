"""The session of one user: lazy sign-in, one renewal for many callers, and its checks.

How a session is obtained is pluggable: a ``SessionSource`` is passed in (a password
login, ``PasswordLogin``; or an access token exchanged at a profile's session endpoint,
``_oauth.TokenLogin``). ``Session`` only decides when: on first use, and again after
``INVALID_SESSION_ID``, under one trio.Lock so that parallel callers that find the
session missing or expired cause exactly one sign-in.

The session id lives only here and leaves only as the ``Authorization`` header value the
HTTP layer asks for; ``repr`` and logs show the state, never the id.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit

import trio

from vaultfs.errors import (
    InsufficientAccess,
    UserLockedOut,
    UsernameOrPasswordIncorrect,
    VaultError,
)

from ._types import Credentials

__all__ = ["PasswordLogin", "PostCall", "Session", "SessionSource"]

log = logging.getLogger("vaultfs.client")

#: POSTs a form once and returns the success body: ``(address, form, headers)``, where
#: the address is a path below the API base (``/auth``) or an absolute URL (a profile's
#: session endpoint). Never retried here: the callers of the session retry.
PostCall = Callable[[str, Mapping[str, str], Mapping[str, str]], Awaitable[dict[str, Any]]]


class SessionSource(Protocol):
    """A way to obtain a new session for one user."""

    #: the user name (for messages and logs)
    username: str
    #: the vault DNS asked for (``vaultDNS``), checked against the answer; or None
    vault_dns: str | None
    #: how the user signs in, for logs: ``password`` or ``sso <profile>``
    method: str

    async def open_session(self, post: PostCall) -> dict[str, Any]:
        """The session response of a new sign-in (with ``sessionId``)."""
        ...


class PasswordLogin:
    """``POST /auth`` with user name and password."""

    method = "password"

    def __init__(self, credentials: Credentials) -> None:
        self._credentials = credentials
        self.username = credentials.username
        self.vault_dns = credentials.vault_dns

    async def open_session(self, post: PostCall) -> dict[str, Any]:
        form = {"username": self._credentials.username, "password": self._credentials.password}
        if self._credentials.vault_dns:
            form["vaultDNS"] = self._credentials.vault_dns
        return await post("/auth", form, {})


class Session:
    """Holds the session id; ``current()`` signs in on first use, ``renew()`` after
    ``INVALID_SESSION_ID``. Both run under one trio.Lock."""

    def __init__(self, source: SessionSource, post: PostCall) -> None:
        self._source = source
        self._post = post
        self._lock = trio.Lock()
        self._id: str | None = None
        self._expired = False
        self._refused = False
        #: why the last sign-in was refused (the vault's message; never a secret)
        self.refusal: str | None = None
        self.user_id: int | None = None
        self.vault_id: int | None = None

    def __repr__(self) -> str:
        return f"Session(user={self._source.username!r}, state={self.state})"

    @property
    def state(self) -> str:
        """``active``; ``expired`` (to be renewed at the next call); ``refused`` (the
        vault or the authorization server refused the stored sign-in: a changed
        password, an account locked out, a single sign-on to make again with ``vaultfs
        login``; ``refusal`` says which); ``none``."""
        if self._id is not None:
            return "active"
        if self._refused:
            return "refused"
        return "expired" if self._expired else "none"

    @property
    def id(self) -> str | None:
        """The session id, for the Authorization header only (None before a login)."""
        return self._id

    async def current(self) -> str:
        """The session id, signing in first when there is none."""
        if self._id is not None:
            return self._id
        async with self._lock:
            if self._id is None:
                await self._login()
            assert self._id is not None
            return self._id

    async def renew(self, stale: str) -> str:
        """A new session id after ``stale`` was refused. When another caller already
        signed in again since ``stale`` was handed out, its session is reused."""
        if self._id == stale:
            self._id, self._expired = None, True
            log.info("session of %s expired; signing in again (%s)", self._source.username,
                     self._source.method)  # fmt: skip
        return await self.current()

    async def login(self) -> dict[str, Any]:
        """Sign in now (replacing any session); the response without ``sessionId``."""
        async with self._lock:
            return await self._login()

    def forget(self) -> None:
        """Drop the session id (after a logout)."""
        self._id, self._expired = None, False

    async def _login(self) -> dict[str, Any]:
        try:
            body = await self._source.open_session(self._post)
        except (UsernameOrPasswordIncorrect, UserLockedOut) as exc:  # SignInExpired too
            self._refused, self.refusal = True, exc.message
            raise
        session_id = body.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise VaultError("the login response carries no sessionId")
        public = {k: v for k, v in body.items() if k != "sessionId"}
        self._check_vault(public)
        self._id, self._expired, self._refused = session_id, False, False
        self.refusal = None
        self.user_id = _int_or_none(body.get("userId"))
        self.vault_id = _int_or_none(body.get("vaultId"))
        log.info("logged in as %s (vault %s, %s)", self._source.username, self.vault_id,
                 self._source.method)  # fmt: skip
        return public

    def _check_vault(self, body: dict[str, Any]) -> None:
        """The session must be for a vault the user may use, and, when a vault DNS was
        asked for, for that vault: the vault issues a session for another vault when
        the DNS is not valid for the user, which must not go unnoticed."""
        vault_id = body.get("vaultId")
        vaults = [v for v in body.get("vaultIds") or [] if isinstance(v, dict)]
        vault = next((v for v in vaults if str(v.get("id")) == str(vault_id)), None)
        if vault is None:
            raise VaultError(f"the session is for vault {vault_id}, not one in vaultIds")
        wanted = self._source.vault_dns
        if wanted:
            host = urlsplit(str(vault.get("url") or "")).hostname or ""
            if host.lower() != wanted.lower():
                raise InsufficientAccess(
                    f"no session for vault {wanted}: the vault issued one for {host or vault_id}"
                )


def _int_or_none(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
