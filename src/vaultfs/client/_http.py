"""The request pipeline every API call goes through.

``Http.call`` (JSON answers) and ``Http.open_stream`` (downloads) run, in this order:
the vault's reach (``_reach``: offline, a call fails at once; a call whose retries ran
out on the transport takes the client offline) -> retries (``_retry``) -> session
(lazy login, one re-login and replay on ``INVALID_SESSION_ID``) -> pacing and counting
(``_budget``) -> one httpx request -> translation of the answer (``_errors``). Owns the
httpx.AsyncClient.
"""

from __future__ import annotations

import logging
import mimetypes
import random
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import httpx

from vaultfs.errors import InvalidSessionId, VaultError, VaultOffline, VaultUnavailable

from ._budget import BudgetMeter
from ._errors import error_from_response, parse_json, transport_error
from ._multipart import upload_filename
from ._reach import Reachability
from ._retry import Attempt, RetryPolicy, retrying
from ._session import PasswordLogin, Session, SessionSource
from ._transport import wide_read_transport
from ._types import Credentials

__all__ = ["Call", "Http"]

#: ``--debug`` traces every request here: method, path template, status, duration
#: (never a header, a form field or a query: they may hold credentials)
log = logging.getLogger("vaultfs.client.http")

#: seconds a probe of a vault that could not be reached waits for its answer
_PROBE_TIMEOUT = 5.0

#: Query parameters; None and "" values are left out.
Params = Mapping[str, str | int | None]

T = TypeVar("T")
#: Turns an answer into the call's result (or raises what the answer says).
Receive = Callable[[httpx.Response, "Call"], Awaitable[T]]


@dataclass(frozen=True)
class Call:
    """One API request, described before it is sent (and re-sent)."""

    method: str
    #: path template below ``/api/<version>``, e.g. ``/objects/documents/{id}``; it names
    #: the endpoint in ``Budget.by_endpoint``
    template: str
    path_args: Mapping[str, str | int] = field(default_factory=dict)
    params: Params = field(default_factory=dict)
    #: form fields: sent form-urlencoded, or multipart when ``file`` is set
    form: Mapping[str, str] | None = None
    #: a file to upload as the multipart part ``file`` (streamed from disk)
    file: Path | None = None
    #: the name that part carries (None: ``file``'s own name). The local file is named
    #: however its owner likes (an id, a hash); the vault takes this one as the file's.
    filename: str | None = None
    #: a body produced while it is sent (its ``Content-Type`` in ``headers``): sent
    #: once, never replayed (neither by a retry nor after a new login)
    body: AsyncIterable[bytes] | None = None
    #: safe to send again after an ambiguous failure (the request may have arrived)
    idempotent: bool = True
    #: retries instead of the policy's (None: the policy's)
    max_retries: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.filename is not None:
            upload_filename(self.filename)  # refused before anything is sent

    @property
    def path(self) -> str:
        return self.template.format(
            **{k: quote(str(v), safe="") for k, v in self.path_args.items()}
        )

    @property
    def endpoint(self) -> str:
        return f"{self.method} {self.template}"

    @property
    def what(self) -> str:
        """For messages: method and path (the path holds no secret)."""
        return f"{self.method} {self.path}"


class Http:
    """The HTTP side of one VaultClient."""

    def __init__(
        self,
        api_url: str,
        credentials: Credentials | SessionSource,
        *,
        timeout: httpx.Timeout,
        limits: httpx.Limits,
        policy: RetryPolicy,
        burst_window: float,
        transport: httpx.AsyncBaseTransport | None,
        verify: bool | str,
        user_agent: str,
    ) -> None:
        self._client = httpx.AsyncClient(
            base_url=api_url,
            timeout=timeout,
            transport=transport or wide_read_transport(verify=verify, limits=limits),
            headers={"Accept": "application/json", "User-Agent": user_agent},
            follow_redirects=False,
            # Proxies and credentials come from the caller, never from the environment
            # (a netrc entry would otherwise add an Authorization header of its own).
            trust_env=False,
        )
        self.meter = BudgetMeter(burst_window)
        source = PasswordLogin(credentials) if isinstance(credentials, Credentials) else credentials
        self.session = Session(source, self._sign_in_post)
        self.policy = policy
        self.reach = Reachability()
        self._probe_url = api_url[: api_url.rindex("/api/")] + "/api/"
        self._rng = random.Random()

    async def aclose(self) -> None:
        await self._client.aclose()

    # --- the two entry points -----------------------------------------------------

    async def call(self, call: Call) -> dict[str, Any]:
        """Send ``call`` (with retries and the session) and return the success body."""
        return await self._retrying(call, self._read_body)

    async def open_stream(self, call: Call) -> httpx.Response | None:
        """Send a download ``call``: the open 2xx response (the caller closes it), or
        None when the server said the range starts past the end (416)."""
        return await self._retrying(call, self._stream_or_raise)

    # --- the layers ---------------------------------------------------------------

    async def _retrying(self, call: Call, receive: Receive[T]) -> T:
        async def attempt(attempt: Attempt) -> T:
            self.reach.refuse(call.what)
            return await self._authorized(call, attempt, receive)

        try:
            return await retrying(
                attempt,
                policy=self.policy,
                rng=self._rng,
                idempotent=call.idempotent,
                what=call.what,
                max_retries=call.max_retries,
            )
        except VaultOffline:
            raise
        except VaultUnavailable as exc:
            # Its retries ran out on the transport: the vault is away, and what follows
            # fails at once until a probe reaches it (``_reach``).
            self.reach.lost(str(exc))
            raise

    async def probe(self) -> bool:
        """Whether the vault answers its unversioned ``GET /api/`` (no session, no
        retry): what tells a vault that is back."""
        try:
            response = await self._client.get(self._probe_url, timeout=_PROBE_TIMEOUT)
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    async def _authorized(self, call: Call, attempt: Attempt, receive: Receive[T]) -> T:
        """Send with the session; after INVALID_SESSION_ID log in again once and replay
        (the vault refused the request before doing anything, so even a create may)."""
        session_id = await self.session.current()
        try:
            return await receive(await self._send(call, attempt, session_id), call)
        except InvalidSessionId:
            if call.body is not None:
                raise  # consumed: the caller sends it again its own way
            session_id = await self.session.renew(session_id)
        return await receive(await self._send(call, attempt, session_id), call)

    async def _send(
        self, call: Call, attempt: Attempt, session_id: str | None, *, url: str | None = None
    ) -> httpx.Response:
        """One request on the wire: paced, counted, its budget headers recorded. The
        answer comes back unread (streaming); transport errors become VaultUnavailable.
        ``url`` replaces the call's path (an absolute address outside the API base)."""
        headers = dict(call.headers)
        if session_id is not None:
            headers["Authorization"] = session_id
        params = {k: str(v) for k, v in call.params.items() if v is not None and v != ""}
        with ExitStack() as opened:
            files = None
            if call.file is not None:
                # An open file object makes httpx stream the part from disk in small
                # chunks, with a Content-Length computed from the file's size.
                filename = upload_filename(call.filename or call.file.name)
                handle = opened.enter_context(call.file.open("rb"))
                content_type = mimetypes.guess_type(filename)[0] or "application/octet-stream"
                # httpx writes the name as browsers do (RFC 7578 section 4.2: UTF-8 in
                # the quoted ``filename``, never RFC 5987's ``filename*``).
                files = {"file": (filename, handle, content_type)}
            request = self._client.build_request(
                call.method,
                url or call.path,
                params=params,
                data=call.form,
                files=files,
                content=call.body,
                headers=headers,
            )
            await self.meter.pace()
            self.meter.count(call.endpoint)
            attempt.sent = True
            started = time.monotonic()
            try:
                response = await self._client.send(request, stream=True)
            except httpx.RequestError as exc:
                log.debug(
                    "%s %s failed after %.3fs: %s",
                    call.method, call.template, time.monotonic() - started, type(exc).__name__,
                )  # fmt: skip
                raise transport_error(exc, call.what) from exc
        # The duration is until the answer's headers: a download's body streams later.
        log.debug(
            "%s %s -> %d in %.3fs",
            call.method, call.template, response.status_code, time.monotonic() - started,
        )  # fmt: skip
        self.meter.observe(response.headers)
        return response

    async def _stream_or_raise(self, response: httpx.Response, call: Call) -> httpx.Response | None:
        """A download's answer: 2xx is the stream, 416 an empty one, anything else an
        envelope to raise."""
        if response.is_success:
            return response
        if response.status_code == 416:
            await response.aclose()
            return None
        await self._read_body(response, call)
        raise AssertionError(f"{call.what}: HTTP {response.status_code} read as a success")

    async def _read_body(self, response: httpx.Response, call: Call) -> dict[str, Any]:
        """Read and close ``response``; the success body, or raise what it says."""
        try:
            await response.aread()
        except httpx.RequestError as exc:
            raise transport_error(exc, call.what) from exc
        finally:
            await response.aclose()
        body = parse_json(response)
        error = error_from_response(response, body, call.what)
        if error is not None:
            raise error
        return body  # a success envelope is a JSON object

    async def _sign_in_post(
        self, address: str, form: Mapping[str, str], headers: Mapping[str, str]
    ) -> dict[str, Any]:
        """POST a sign-in form once, for the session (whose callers retry): ``/auth``, or
        a profile's session endpoint (an absolute URL, which httpx sends as it is)."""
        template = address if address.startswith("/") else "/auth/oauth/session"
        call = Call("POST", template, form=form, headers=headers)
        response = await self._send(call, Attempt(), None, url=address)
        return await self._read_body(response, call)

    async def login(self, *, max_retries: int | None = None) -> dict[str, Any]:
        """Log in now, with retries (``max_retries`` instead of the policy's)."""

        async def attempt(attempt: Attempt) -> dict[str, Any]:
            return await self.session.login()

        return await retrying(
            attempt,
            policy=self.policy,
            rng=self._rng,
            idempotent=True,
            what="sign-in",
            max_retries=max_retries,
        )

    async def logout(self) -> None:
        """DELETE /session once, best effort; the session is forgotten either way."""
        session_id = self.session.id
        if session_id is None:
            return
        self.session.forget()
        call = Call("DELETE", "/session")
        try:
            response = await self._send(call, Attempt(), session_id)
            await self._read_body(response, call)
        except VaultError:
            pass
