"""A scripted vault for unit tests of the client (over httpx.MockTransport).

``MockVault`` answers ``POST /auth`` with a fresh session id each time, checks the
Authorization header of every other request, records every request, and answers the
rest from ``routes``: ``{"GET /objects/documents/1": handler}`` where a handler takes the
request and returns a response (or raises an httpx error to simulate the network).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

import httpx
import trio

from vaultfs.client import Credentials, VaultClient

__all__ = ["PASSWORD", "MockVault", "envelope", "failure", "form_of"]

PASSWORD = "s3cret-Pa55"
API = "/api/v25.1"

Handler = Callable[[httpx.Request], httpx.Response | Awaitable[httpx.Response]]


def envelope(
    status: int = 200, headers: dict[str, str] | None = None, **body: Any
) -> httpx.Response:
    return httpx.Response(status, json={"responseStatus": "SUCCESS", **body}, headers=headers)


def failure(
    type_: str, message: str = "", status: int = 400, headers: dict[str, str] | None = None
) -> httpx.Response:
    body = {"responseStatus": "FAILURE", "errors": [{"type": type_, "message": message or type_}]}
    return httpx.Response(status, json=body, headers=headers)


class MockVault:
    def __init__(self) -> None:
        self.routes: dict[str, Handler] = {}
        self.requests: list[httpx.Request] = []
        self.logins: list[dict[str, list[str]]] = []
        self.sessions: set[str] = set()
        #: simulated latency of the login, so parallel callers overlap
        self.login_delay = 0.0

    def client(self, **kwargs: Any) -> VaultClient:
        kwargs.setdefault("transport", httpx.MockTransport(self.handle))
        return VaultClient("http://vault.test", Credentials("ann@vault.test", PASSWORD), **kwargs)

    def expire_sessions(self) -> None:
        self.sessions.clear()

    def count(self, route: str) -> int:
        method, path = route.split(" ", 1)
        return sum(1 for r in self.requests if r.method == method and r.url.path == API + path)

    async def handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path.removeprefix(API)
        if request.method == "POST" and path == "/auth":
            return await self._login(request)
        if request.headers.get("Authorization") not in self.sessions:
            return failure("INVALID_SESSION_ID", "Invalid or expired session ID.", status=401)
        handler = self.routes.get(f"{request.method} {path}")
        if handler is None:
            return failure("MALFORMED_URL", f"no route {request.method} {path}", status=404)
        result = handler(request)
        if not isinstance(result, httpx.Response):
            result = await result
        return result

    async def _login(self, request: httpx.Request) -> httpx.Response:
        form = parse_qs(request.content.decode(), keep_blank_values=True)
        self.logins.append(form)
        if self.login_delay:
            await trio.sleep(self.login_delay)
        if form.get("password") != [PASSWORD]:
            return failure("USERNAME_OR_PASSWORD_INCORRECT", status=401)
        session_id = f"SESSION-{len(self.logins)}-abcdef"
        self.sessions.add(session_id)
        vaults = [{"id": 7, "name": "Test", "url": "http://vault.test/api"}]
        return envelope(sessionId=session_id, userId=42, vaultId=7, vaultIds=vaults)


def form_of(request: httpx.Request) -> dict[str, list[str]]:
    return parse_qs(request.content.decode(), keep_blank_values=True)
