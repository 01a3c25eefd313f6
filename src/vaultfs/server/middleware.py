"""The API middleware: paths, versions, sessions, call limits, remaining-call headers,
response format, last-resort error envelope.

A pure ASGI middleware (streaming responses pass through untouched). For every HTTP
request it:

0. drops a trailing ``/`` from the path (``/api/`` keeps it): clients add one, and a
   redirect is never an answer of this API;
1. refuses versioned paths whose label is not a served API version (``MALFORMED_URL``),
   except logins, which take any well-formed ``vN.M`` (``versions``);
2. resolves the session of versioned calls other than authentication (``auth`` query
   parameter first, then ``Authorization: <id>`` or ``Bearer <id>``) and puts the
   caller in the scope; no valid session, or a session of another vault than the one
   the request's host name addresses -> ``INVALID_SESSION_ID``;
3. charges the call to the session's vault (``API_LIMIT_EXCEEDED`` + Retry-After);
4. adds ``X-ServiceAPI-*`` headers to every response (the remaining-call counts only
   from API v14, where the spec introduces them, and under the ``X-VaultAPI-*`` names
   too, which clients of the real service read; the execution id always);
5. sends JSON envelopes as XML when the request asks for XML (``formats.xml_send``);
5a. reads what is left of a request body before the answer starts (``_Body``): the
    server drops a keep-alive connection whose request body had not fully arrived when
    the answer ended, and the client's next request on it would get no answer;
6. turns any exception that escaped the routes into the JSON envelope
   (``envelope.error_response``; a POST never answers a 5xx).
"""

from __future__ import annotations

import logging
import re
import uuid
from urllib.parse import parse_qsl

import trio
from starlette.datastructures import URL
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from vaultfs.errors import InvalidSessionId, MalformedUrl
from vaultfs.wire import BURST_REMAINING_HEADER, DAILY_REMAINING_HEADER, EXECUTION_ID_HEADER

from . import formats, versions
from .envelope import error_response
from .limits import Remaining
from .routes.common import CALLER_KEY, EXTRA_HEADERS_KEY
from .state import VaultState
from .storage import users
from .storage.db import now_ms

__all__ = ["ApiMiddleware", "session_token"]

log = logging.getLogger("vaultfs.server")

_VERSIONED = re.compile(r"^/api/([^/]+)(/.*)?$")
#: Versioned paths that need no session (authentication and discovery).
_OPEN = re.compile(r"^/auth(/discovery|/oauth/session/[^/]+)?/?$")
#: The password login: answered under any well-formed version label.
_LOGIN = re.compile(r"^/auth/?$")
#: The remaining-call headers under the names of the real service's own clients
#: (VAPIL reads these), sent beside the spec's ``X-ServiceAPI-*`` names.
_VAULT_API_BURST = "X-VaultAPI-BurstLimitRemaining"
_VAULT_API_DAILY = "X-VaultAPI-DailyLimitRemaining"


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


#: The most of an unread request body read before answering; beyond it the answer says
#: ``Connection: close`` (a refused multi-gigabyte upload is not worth receiving).
_DRAIN_LIMIT = 1024 * 1024


class _Body:
    """The request's ``receive``, knowing whether the body was read to its end.

    Calls are serialized: a streaming answer may wait for the disconnect in another task
    while the body is drained; whoever receives the body's end, the other sees it.
    """

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._lock = trio.Lock()
        self.complete = False

    async def __call__(self) -> Message:
        async with self._lock:
            return self._note(await self._receive())

    def _note(self, message: Message) -> Message:
        if message["type"] != "http.request" or not message.get("more_body", False):
            self.complete = True
        return message

    async def drain(self) -> bool:
        """Read the rest of the body (up to ``_DRAIN_LIMIT``); True when it all came."""
        size = 0
        while not self.complete:
            async with self._lock:
                if self.complete:  # another task received the end while we waited
                    break
                message = self._note(await self._receive())
            size += len(message.get("body", b""))
            if size > _DRAIN_LIMIT:
                return False
        return True


def _normal_path(scope: Scope) -> Scope:
    """The scope with one trailing ``/`` dropped from its path (``/api/`` keeps it).

    ``/api/v25.1/`` and ``/objects/documents/`` mean the same resource as without the
    slash; answering them directly spares clients a redirect they may not follow.
    """
    path: str = scope["path"]
    if path == "/api":
        path = "/api/"
    elif len(path) > 1 and path.endswith("/") and path != "/api/":
        path = path.rstrip("/") or "/"
    if path == scope["path"]:
        return scope
    raw: bytes = scope.get("raw_path") or scope["path"].encode()
    raw = b"/api/" if path == "/api/" else raw.rstrip(b"/") or b"/"
    return {**scope, "path": path, "raw_path": raw}


def _host(scope: Scope) -> str:
    """The host name the request was addressed to (no port)."""
    return URL(scope=scope).hostname or ""


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
        addressed = vault.vault_of_host(_host(scope))
        if addressed is not None and addressed != who.vault_id:
            # A session is valid for one vault only.
            raise InvalidSessionId("Invalid session ID for this vault.")
        # Record activity, but not on every call: a tenth of the timeout is precise
        # enough and spares a write per read request.
        if now - who.last_used_ms > min(5000, timeout_ms // 10):
            await vault.db.write(users.touch_session, who.token_hash, now, timeout_ms)
        return who

    @staticmethod
    def _version(path: str) -> tuple[str | None, bool]:
        """(API version label or None, whether the path needs a session)."""
        match = _VERSIONED.match(path)
        if match is None or path == "/api/":
            return None, False
        label, rest = match.group(1), match.group(2) or ""
        if not versions.supported(label) and not (
            versions.well_formed(label) and _LOGIN.match(rest)
        ):
            raise MalformedUrl(f"Invalid or unsupported API version [{label}] in the URL")
        return label, not _OPEN.match(rest)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        scope = _normal_path(scope)
        body = _Body(receive)
        # The state the lifespan opened (Starlette puts itself in the scope).
        vault: VaultState = scope["app"].state.vault
        execution_id = uuid.uuid4().hex
        remaining: Remaining | None = None
        with_counts = True
        started = False
        out = formats.xml_send(send) if formats.wanted(scope) == "xml" else send

        async def send_with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = [*message.get("headers", [])]
                if not await body.drain():
                    headers.append((b"connection", b"close"))
                if with_counts:
                    left = remaining or vault.limiter.peek(vault.host_vault(_host(scope)))
                    burst, daily = str(left.burst).encode(), str(left.daily).encode()
                    headers += [
                        (BURST_REMAINING_HEADER.encode(), burst),
                        (DAILY_REMAINING_HEADER.encode(), daily),
                        (_VAULT_API_BURST.encode(), burst),
                        (_VAULT_API_DAILY.encode(), daily),
                    ]
                headers += [
                    (name.encode(), value.encode())
                    for name, value in scope.get(EXTRA_HEADERS_KEY, [])
                ]
                headers.append((EXECUTION_ID_HEADER.encode(), execution_id.encode()))
                message = {**message, "headers": headers}
            await out(message)

        try:
            label, needs_session = self._version(scope["path"])
            with_counts = label is None or versions.at_least(label, versions.REMAINING_CALL_HEADERS)
            if needs_session:
                who = await self._authenticate(vault, scope)
                remaining = vault.limiter.peek(who.vault_id)
                remaining = vault.limiter.charge(who.vault_id)
                scope[CALLER_KEY] = who
            await self.app(scope, body, send_with_headers)
        except Exception as exc:
            if started:
                # Headers are out: nothing to do but end the connection and log.
                log.error("error after the response started", exc_info=exc)
                raise
            await error_response(exc, method=scope["method"])(scope, body, send_with_headers)
