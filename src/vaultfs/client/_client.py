"""VaultClient: the typed async API of a vault over httpx.

Owns the client's life (construction, the session, closing) and its state; the
endpoints (which method, path, parameters and body each operation sends, and which part
of the answer it returns) are inherited from one class per area of the vault:
``_metadata``, ``_documents``, ``_files``, ``_locks``, ``_lifecycle``,
``_relationships``. Everything below an endpoint (the httpx client, the session,
retries, the budget, error translation) is in ``_http`` and the modules it composes.
Callers never see httpx types; the session id travels only in the Authorization
header.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import trio

from vaultfs import __version__
from vaultfs.wire import API_VERSION

from ._documents import DocumentCalls
from ._files import FileCalls
from ._http import Call, Http
from ._lifecycle import LifecycleCalls
from ._locks import LockCalls
from ._metadata import MetadataCalls
from ._reach import Reachability
from ._relationships import RelationshipCalls
from ._retry import REQUESTS
from ._session import SessionSource
from ._types import Budget, Credentials

__all__ = ["VaultClient"]

#: How long closing may take (logout) even when the caller is being cancelled.
_CLOSE_TIMEOUT = 5.0


class VaultClient(
    MetadataCalls, DocumentCalls, FileCalls, LockCalls, LifecycleCalls, RelationshipCalls
):
    """One logged-in user on one vault.

    ``base_url`` is the vault's address (``http://127.0.0.1:8817``); the client adds
    ``/api/<version>/``. ``credentials`` are a user name and password, or any other
    ``SessionSource`` (single sign-on: ``TokenLogin``). Use as ``async with
    VaultClient(...) as client:`` (logs in lazily on the first call, logs out on exit).

    ``timeout`` bounds every read and write on the connection (seconds without progress),
    ``connect_timeout`` the connection set-up. ``max_retries`` bounds the retries of one
    call (see docs/client.md for what is retried). ``burst_window`` is the vault's burst
    limit window, used to pace calls when the burst budget runs low.
    """

    def __init__(
        self,
        base_url: str,
        credentials: Credentials | SessionSource,
        *,
        api_version: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 6,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: bool | str = True,
        connect_timeout: float = 10.0,
        max_connections: int = 16,
        burst_window: float = 300.0,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._username = credentials.username
        self._http = Http(
            f"{self._base_url}/api/{api_version or API_VERSION}",
            credentials,
            # Waiting for a free pooled connection is bounded like a read.
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            # Room for ~8 parallel downloads plus metadata calls, all kept alive.
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            policy=dataclasses.replace(
                REQUESTS, max_retries=max_retries, max_limit_wait=burst_window
            ),
            burst_window=burst_window,
            transport=transport,
            verify=verify,
            user_agent=f"vaultfs/{__version__}",
        )

    def __repr__(self) -> str:
        return (
            f"VaultClient({self._base_url!r}, user={self._username!r}, "
            f"session={self.session_state})"
        )

    async def __aenter__(self) -> VaultClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Log out (best effort) and close the connection pool."""
        # Shielded so a cancelled caller still ends its session on the vault.
        with trio.move_on_after(_CLOSE_TIMEOUT, shield=True):
            try:
                await self._http.logout()
            finally:
                await self._http.aclose()

    # --- state -----------------------------------------------------------------

    @property
    def budget(self) -> Budget:
        """Remaining-call headers last seen, and calls made."""
        return self._http.meter.budget

    @property
    def session_state(self) -> str:
        """``none``, ``active`` or ``expired`` (never the session id itself)."""
        return self._http.session.state

    @property
    def session_refusal(self) -> str | None:
        """Why the vault refused the last sign-in (its message), None when it did not."""
        return self._http.session.refusal

    @property
    def user_id(self) -> int | None:
        return self._http.session.user_id

    @property
    def vault_id(self) -> int | None:
        """The vault the session was issued for."""
        return self._http.session.vault_id

    # --- session ---------------------------------------------------------------

    async def login(self, *, max_retries: int | None = None) -> dict[str, Any]:
        """Sign in (POST /auth, or the session source's way); returns the session
        response without ``sessionId``.
        ``max_retries`` instead of the policy's (a mount fails fast at start)."""
        return await self._http.login(max_retries=max_retries)

    @property
    def reach(self) -> Reachability:
        """Whether the vault can be reached now (``_reach``: offline, calls fail at once)."""
        return self._http.reach

    async def keep_reaching(self) -> None:
        """Until cancelled: whenever the vault cannot be reached, probe it and, once it
        answers, sign in again and go back online (``Reachability.keep_reaching``)."""
        await self._http.reach.keep_reaching(
            self._http.probe, lambda: self._http.login(max_retries=0)
        )

    async def keep_alive(self) -> None:
        """POST /keep-alive (re-logs in when the session had expired)."""
        await self._http.call(Call("POST", "/keep-alive"))

    async def logout(self) -> None:
        """DELETE /session (best effort)."""
        await self._http.logout()
