"""The session of one user: lazy login, one re-login for many callers, and its checks.

The session id lives only here and leaves only as the ``Authorization`` header value the
HTTP layer asks for; ``repr`` and logs show the state, never the id.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import trio

from vaultfs.errors import InsufficientAccess, VaultError

from ._types import Credentials

__all__ = ["Session"]

log = logging.getLogger("vaultfs.client")

#: POSTs the login form and returns the successful session response.
LoginCall = Callable[[dict[str, str]], Awaitable[dict[str, Any]]]


class Session:
    """Holds the session id; ``current()`` logs in on first use, ``renew()`` after
    ``INVALID_SESSION_ID``. Both run under one trio.Lock, so parallel callers that find
    the session missing or expired cause exactly one login."""

    def __init__(self, credentials: Credentials, login_call: LoginCall) -> None:
        self._credentials = credentials
        self._login_call = login_call
        self._lock = trio.Lock()
        self._id: str | None = None
        self._expired = False
        self.user_id: int | None = None
        self.vault_id: int | None = None

    def __repr__(self) -> str:
        return f"Session(user={self._credentials.username!r}, state={self.state})"

    @property
    def state(self) -> str:
        if self._id is not None:
            return "active"
        return "expired" if self._expired else "none"

    @property
    def id(self) -> str | None:
        """The session id, for the Authorization header only (None before a login)."""
        return self._id

    async def current(self) -> str:
        """The session id, logging in first when there is none."""
        if self._id is not None:
            return self._id
        async with self._lock:
            if self._id is None:
                await self._login()
            assert self._id is not None
            return self._id

    async def renew(self, stale: str) -> str:
        """A new session id after ``stale`` was refused. When another caller already
        logged in again since ``stale`` was handed out, its session is reused."""
        if self._id == stale:
            self._id, self._expired = None, True
        return await self.current()

    async def login(self) -> dict[str, Any]:
        """Log in now (replacing any session); the response without ``sessionId``."""
        async with self._lock:
            return await self._login()

    def forget(self) -> None:
        """Drop the session id (after a logout)."""
        self._id, self._expired = None, False

    async def _login(self) -> dict[str, Any]:
        form = {"username": self._credentials.username, "password": self._credentials.password}
        if self._credentials.vault_dns:
            form["vaultDNS"] = self._credentials.vault_dns
        body = await self._login_call(form)
        session_id = body.get("sessionId")
        if not isinstance(session_id, str) or not session_id:
            raise VaultError("the login response carries no sessionId")
        public = {k: v for k, v in body.items() if k != "sessionId"}
        self._check_vault(public)
        self._id, self._expired = session_id, False
        self.user_id = _int_or_none(body.get("userId"))
        self.vault_id = _int_or_none(body.get("vaultId"))
        log.info("logged in as %s (vault %s)", self._credentials.username, self.vault_id)
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
        wanted = self._credentials.vault_dns
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
