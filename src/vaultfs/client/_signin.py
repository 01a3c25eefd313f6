"""Interactive sign-in at an authorization server: the two ways a person approves vaultfs.

``sign_in_with_browser``: the authorization code flow with PKCE (RFC 7636) and a
loopback redirect (RFC 8252): a one-shot HTTP listener on 127.0.0.1 and a free port
receives the redirect; the caller opens (or prints) the authorization URL.
``sign_in_with_device_code``: the device authorization grant (RFC 8628) for machines
without a browser: the caller shows the verification address and the user code; the
token endpoint is polled at the interval the server asks for.

Authlib (``authlib.integrations.httpx_client``) builds the authorization URL and the
PKCE challenge, checks the ``state`` of the redirect, and makes every token request.
Authlib's client has no call for the device authorization request itself (one form
POST of ``client_id`` and ``scope``); it is sent through the same Authlib client. Both
return the token (with the refresh token) for the caller to keep; nothing here logs it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import httpx
import trio
from authlib.common.errors import AuthlibBaseError
from authlib.common.security import generate_token
from authlib.oauth2.rfc8628 import DEVICE_CODE_GRANT_TYPE

from vaultfs.errors import UsernameOrPasswordIncorrect, VaultError, VaultUnavailable

from ._oauth import AuthServer, OAuthError, oauth_client, refused_sign_in

__all__ = ["DeviceCode", "sign_in_with_browser", "sign_in_with_device_code"]

log = logging.getLogger("vaultfs.client")

#: how long a person has to approve in the browser
BROWSER_TIMEOUT = 300.0
_CALLBACK = "/callback"
_DONE_PAGE = (
    b"<!DOCTYPE html><html><head><meta charset='utf-8'><title>vaultfs</title></head>"
    b"<body><p>vaultfs is signed in. You can close this page.</p></body></html>"
)


@dataclass(frozen=True)
class DeviceCode:
    """What the person is shown: where to go and which code to type."""

    verification_uri: str
    user_code: str
    #: the address with the code in it, when the server gives one
    verification_uri_complete: str | None
    expires_in: float


def _token(token: Any) -> dict[str, Any]:
    """The token to keep: without the ID token (vaultfs never reads it)."""
    return {k: v for k, v in dict(token).items() if k != "id_token"}


def _server_name(server: AuthServer) -> str:
    return server.issuer or server.token_endpoint


async def sign_in_with_device_code(
    server: AuthServer,
    client_id: str,
    scope: str,
    show: Callable[[DeviceCode], None],
    *,
    who: str,
    verify: bool | str = True,
) -> dict[str, Any]:
    """The device authorization grant: ``show`` the code, wait for the approval."""
    if not server.device_authorization_endpoint:
        raise VaultError(
            f"the authorization server {_server_name(server)} offers no device sign-in "
            "(no device_authorization_endpoint): sign in with a browser, or name the "
            "endpoint in the profile's [oauth] table"
        )
    async with oauth_client(client_id, verify=verify) as oauth:
        form = {"client_id": client_id}
        if scope:
            form["scope"] = scope
        try:
            response = await oauth.request(
                "POST", server.device_authorization_endpoint, data=form, withhold_token=True
            )
            answer = response.json()
        except httpx.RequestError as exc:
            raise VaultUnavailable(
                f"cannot reach the authorization server {_server_name(server)}: "
                f"{type(exc).__name__}"
            ) from exc
        except ValueError:
            answer = {}
        if not isinstance(answer, dict) or "device_code" not in answer:
            error = answer.get("error") if isinstance(answer, dict) else None
            raise UsernameOrPasswordIncorrect(
                f"the authorization server {_server_name(server)} refused a device sign-in "
                f"for client {client_id} ({error or f'HTTP {response.status_code}'})"
            )
        expires_in = float(answer.get("expires_in") or 600)
        show(
            DeviceCode(
                verification_uri=str(
                    answer.get("verification_uri") or answer.get("verification_url") or ""
                ),
                user_code=str(answer.get("user_code") or ""),
                verification_uri_complete=answer.get("verification_uri_complete") or None,
                expires_in=expires_in,
            )
        )
        interval = float(answer.get("interval") or 5)
        with trio.move_on_after(expires_in):
            while True:
                await trio.sleep(interval)
                try:
                    token = await oauth.fetch_token(
                        server.token_endpoint,
                        grant_type=DEVICE_CODE_GRANT_TYPE,
                        device_code=answer["device_code"],
                    )
                except OAuthError as exc:
                    if exc.error == "authorization_pending":
                        continue
                    if exc.error == "slow_down":
                        interval += 5  # RFC 8628 3.5
                        continue
                    raise refused_sign_in(exc, who, _server_name(server)) from None
                except httpx.RequestError as exc:
                    log.warning("polling the token endpoint failed: %s", type(exc).__name__)
                    continue
                return _token(token)
    raise UsernameOrPasswordIncorrect(
        f"the device code for {who} expired before it was approved; sign in again"
    )


class _Redirect:
    """The one-shot loopback listener of the authorization code flow."""

    def __init__(self) -> None:
        self.received: str | None = None
        redirect = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if not self.path.startswith(_CALLBACK):
                    self.send_error(404)
                    return
                redirect.received = self.path
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(_DONE_PAGE)))
                self.end_headers()
                self.wfile.write(_DONE_PAGE)

            def log_message(self, format: str, *args: object) -> None:
                pass  # the request line holds the authorization code

        self._server = HTTPServer(("127.0.0.1", 0), Handler)
        self._server.timeout = 0.5
        self.uri = f"http://127.0.0.1:{self._server.server_address[1]}{_CALLBACK}"
        self._stop = threading.Event()

    def wait(self) -> str | None:
        """Serve until the redirect arrives (or ``close``); blocking, for a thread."""
        while self.received is None and not self._stop.is_set():
            self._server.handle_request()
        return self.received

    def close(self) -> None:
        self._stop.set()
        self._server.server_close()


async def sign_in_with_browser(
    server: AuthServer,
    client_id: str,
    scope: str,
    open_url: Callable[[str], None],
    *,
    who: str,
    verify: bool | str = True,
    wait: float = BROWSER_TIMEOUT,
) -> dict[str, Any]:
    """The authorization code flow with PKCE: ``open_url`` shows the authorization
    page; the redirect to the loopback listener carries the code."""
    if not server.authorization_endpoint:
        raise VaultError(
            f"the authorization server {_server_name(server)} names no authorization "
            "endpoint: use the device sign-in (--device-code)"
        )
    redirect = _Redirect()
    try:
        async with oauth_client(
            client_id,
            verify=verify,
            scope=scope or None,
            redirect_uri=redirect.uri,
            code_challenge_method="S256",
        ) as oauth:
            verifier = generate_token(64)
            url, state = oauth.create_authorization_url(
                server.authorization_endpoint, code_verifier=verifier
            )
            open_url(url)
            received = None
            with trio.move_on_after(wait):
                received = await trio.to_thread.run_sync(redirect.wait, abandon_on_cancel=True)
            if received is None:
                raise UsernameOrPasswordIncorrect(
                    f"no approval from the browser within {wait:.0f}s; sign in again"
                )
            if "code=" not in received:
                raise UsernameOrPasswordIncorrect(
                    f"the sign-in of {who} was not approved in the browser"
                )
            try:
                token = await oauth.fetch_token(
                    server.token_endpoint,
                    authorization_response=redirect.uri + received.removeprefix(_CALLBACK),
                    state=state,
                    code_verifier=verifier,
                )
            except AuthlibBaseError as exc:
                # A token error, or a redirect whose state is not the one sent.
                raise refused_sign_in(exc, who, _server_name(server)) from None
            except httpx.RequestError as exc:
                raise VaultUnavailable(
                    f"cannot reach the authorization server {_server_name(server)}: "
                    f"{type(exc).__name__}"
                ) from exc
            return _token(token)
    finally:
        redirect.close()
