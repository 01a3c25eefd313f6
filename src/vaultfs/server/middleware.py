"""The API middleware: session check, call limits, remaining-call headers, last-resort
error envelope.

A pure ASGI middleware (streaming responses pass through untouched). For every HTTP
request it:

1. resolves the session of versioned calls other than login (``auth`` query
   parameter first, then ``Authorization: <id>`` or ``Bearer <id>``) and puts the
   caller in the scope; no valid session -> ``INVALID_SESSION_ID``;
2. charges the call to the session's vault (``API_LIMIT_EXCEEDED`` + Retry-After);
3. adds ``X-ServiceAPI-*`` headers to every response;
4. turns any exception that escaped the routes into the JSON envelope: a POST
   answers FAILURE (a create must never look retryable), others EXCEPTION.
"""

from __future__ import annotations

import logging
import re
import uuid
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vaultfs.errors import InvalidSessionId, MalformedUrl, VaultError
from vaultfs.wire import BURST_REMAINING_HEADER, DAILY_REMAINING_HEADER, EXECUTION_ID_HEADER

from .envelope import error_response, failure_for_unexpected
from .limits import Remaining
from .routes.common import CALLER_KEY, is_version_label
from .state import VaultState
from .storage import users
from .storage.db import now_ms

__all__ = ["ApiMiddleware"]

log = logging.getLogger("vaultfs.server")

_VERSIONED = re.compile(r"^/api/([^/]+)(/.*)?$")
#: Versioned paths that need no session.
_OPEN_PATHS = frozenset({"/auth", "/auth/discovery"})
#: Default vault, for the headers of calls made without a session.
_DEFAULT_VAULT = 1


def session_token(scope: Scope) -> str | None:
    """The session id of a request: query ``auth`` wins over the header."""
    for key, value in parse_qsl(scope.get("query_string", b"").decode("latin-1")):
        if key == "auth" and value:
            return value
    for key, value in scope.get("headers", []):
        if key == b"authorization":
            text = value.decode("latin-1").strip()
            if text.lower().startswith("bearer "):
                text = text[7:].strip()
            return text or None
    return None


class ApiMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def _authenticate(self, vault: VaultState, scope: Scope) -> users.SessionUser:
        token = session_token(scope)
        if not token:
            raise InvalidSessionId("Missing session ID (Authorization header or auth parameter)")
        timeout_ms = int(vault.config.session_timeout_seconds * 1000)
        now = now_ms()
        who = await vault.db.read(users.resolve_session, token, now, timeout_ms)
        # Record activity, but not on every call: a tenth of the timeout is precise
        # enough and spares a write per read request.
        if now - who.last_used_ms > min(5000, timeout_ms // 10):
            await vault.db.write(users.touch_session, who.token_hash, now, timeout_ms)
        return who

    def _needs_session(self, path: str) -> bool:
        match = _VERSIONED.match(path)
        if match is None or path == "/api/":
            return False
        label, rest = match.group(1), match.group(2) or ""
        if not is_version_label(label):
            raise MalformedUrl(f"Invalid API version [{label}] in the URL")
        return rest.rstrip("/") not in _OPEN_PATHS

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        # The state the lifespan opened (Starlette puts itself in the scope).
        vault: VaultState = scope["app"].state.vault
        execution_id = uuid.uuid4().hex
        remaining: Remaining | None = None
        started = False

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                left = remaining or vault.limiter.peek(_DEFAULT_VAULT)
                message = dict(message)
                message["headers"] = [
                    *message.get("headers", []),
                    (BURST_REMAINING_HEADER.encode(), str(left.burst).encode()),
                    (DAILY_REMAINING_HEADER.encode(), str(left.daily).encode()),
                    (EXECUTION_ID_HEADER.encode(), execution_id.encode()),
                ]
            await send(message)

        try:
            if self._needs_session(scope["path"]):
                who = await self._authenticate(vault, scope)
                remaining = vault.limiter.peek(who.vault_id)
                remaining = vault.limiter.charge(who.vault_id)
                scope[CALLER_KEY] = who
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:
            if started:
                # Headers are out: nothing to do but end the connection and log.
                log.error("error after the response started", exc_info=exc)
                raise
            if scope["method"] == "POST" and not isinstance(exc, VaultError):
                exc = failure_for_unexpected(exc)
            await error_response(exc)(scope, receive, send_with_headers)
