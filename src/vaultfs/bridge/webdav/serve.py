"""Running the WebDAV front: each user's core built as for a mount, served over HTTP(S).

Owns the life of ``vaultfs webdav``: on loopback it signs its one user in (a wrong
password fails before anything listens) and starts their front (``front``: the same
daemon as a mount, without a kernel to tell); beyond loopback it serves over TLS only
and each WebDAV user signs in with their own vault credentials (``users``). It serves
WsgiDAV's application with Hypercorn in the same trio loop: each request's sign-in
and body are handled in the loop first (``bodies``: never whole in memory), then
Hypercorn runs WsgiDAV in a worker thread, which calls the core with
``trio.from_thread`` (``calls``). Stops on SIGTERM/SIGINT after the spool had a
chance to check in what is pending, like a mount. Never starts FUSE.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AsyncExitStack
from functools import partial
from pathlib import Path
from typing import Any

import trio
from hypercorn.app_wrappers import InvalidPathError, WSGIWrapper, _build_environ
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio.run import worker_serve

from vaultfs import errors
from vaultfs.bridge.core.ownership import owning
from vaultfs.bridge.webdav.bodies import Body, BodyTooLarge, ClientGone, limit_of, receive_body
from vaultfs.bridge.webdav.calls import http_status_of
from vaultfs.bridge.webdav.config import WebdavConfig
from vaultfs.bridge.webdav.front import UserFront, open_front
from vaultfs.bridge.webdav.users import SignInNeeded, Users

__all__ = ["WebdavConfig", "run_webdav"]

log = logging.getLogger(__name__)

#: who a request is served as, from its ``Authorization`` header
Route = Callable[[str | None], Awaitable[UserFront]]


async def run_webdav(config: WebdavConfig, ready: Callable[[str], None] | None = None) -> None:
    """Serve until signalled; ``ready(address)`` once the front answers."""
    hypercorn = HypercornConfig()
    host = f"[{config.host}]" if ":" in config.host else config.host
    hypercorn.bind = [f"{host}:{config.port}"]
    hypercorn.accesslog = None
    if config.tls_cert is not None and config.tls_key is not None:
        hypercorn.certfile, hypercorn.keyfile = str(config.tls_cert), str(config.tls_key)
    async with AsyncExitStack() as stack:
        stopped = trio.Event()
        async with trio.open_nursery() as nursery:
            route: Route
            if config.users:
                # One front a cache directory; each user's own below it is theirs.
                config.cache_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
                stack.enter_context(owning(config.cache_dir, config.cache_dir, nonempty=True))
                users = Users(config, stack, nursery)
                route, stop = users.front_of, users.stop
            else:
                front = await open_front(stack, config, nursery, in_memory=False)
                route, stop = partial(_the_one, front), front.stop
            nursery.start_soon(_on_signals, stopped)
            app = _Wsgi(route, config.max_upload, config.cache_dir / "bodies")
            bound = await nursery.start(
                lambda task_status: worker_serve(
                    app, hypercorn, shutdown_trigger=stopped.wait, task_status=task_status
                )
            )
            address = bound[0] if bound else f"{config.scheme}://{config.host}:{config.port}"
            who = "each WebDAV user" if config.users else config.user
            log.info("serving %s for %s over WebDAV at %s", config.url, who, address)
            if ready is not None:
                ready(address)
            await stopped.wait()
            await stop()
            nursery.cancel_scope.cancel()


async def _the_one(front: UserFront, authorization: str | None) -> UserFront:
    """The loopback front serves its one user, whoever asks."""
    return front


def _dispatch(environ: dict[str, Any], start_response: Any) -> Any:
    """The WsgiDAV application of the user the request was signed in as."""
    return environ["vaultfs.front"](environ, start_response)


class _Wsgi(WSGIWrapper):
    """Hypercorn's WSGI wrapper, with each request's body received into a private
    file first (``bodies``: Hypercorn's own holds it in memory), answering the
    lifespan protocol its trio worker speaks first (its own returns at once, and the
    trio worker then fails to start), and sending the status of a response without a
    body (it sends the status with the first chunk of the body only)."""

    def __init__(self, route: Route, max_upload: int, bodies: Path) -> None:
        super().__init__(_at_least_one_chunk(_dispatch), max_upload)
        self.route = route
        self.bodies = bodies

    async def __call__(
        self, scope: Any, receive: Any, send: Any, sync_spawn: Any, call_soon: Any
    ) -> None:
        if scope["type"] != "lifespan":
            await super().__call__(scope, receive, send, sync_spawn, call_soon)
            return
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def handle_http(
        self, scope: Any, receive: Any, send: Any, sync_spawn: Any, call_soon: Any
    ) -> None:
        try:
            front = await self.route(_header(scope, b"authorization"))
        except SignInNeeded as exc:
            log.info("webdav: %s %s: %s (HTTP 401)", scope["method"], scope["path"], exc)
            await _answer(send, 401, b"Sign in with your vault credentials\n", _CHALLENGE)
            return
        except errors.VaultError as exc:
            status = http_status_of(exc)
            log.warning("webdav: sign-in failed: %s (HTTP %d)", exc, status)
            await _answer(send, status, b"The vault refused or did not answer\n")
            return
        try:
            body = await receive_body(
                scope, receive, self.bodies, limit_of(scope, self.max_body_size)
            )
        except BodyTooLarge as exc:
            log.info("webdav: %s %s: body refused: %s", scope["method"], scope["path"], exc)
            await _answer(send, 413, b"Request body too large\n")
            return
        except ClientGone:
            log.info("webdav: %s %s: client gone during the body", scope["method"], scope["path"])
            return
        try:
            try:
                environ = _environ(scope, body)
                environ["vaultfs.front"] = front.app
            except InvalidPathError:
                await _answer(send, 404, b"")
                return
            await sync_spawn(self.run_app, environ, partial(call_soon, send))
        finally:
            body.close()
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _environ(scope: Any, body: Body) -> dict[str, Any]:
    """The WSGI environ of a request whose whole body is ``body``: its exact length,
    and no ``Transfer-Encoding`` (Hypercorn joined the chunks already)."""
    environ: dict[str, Any] = _build_environ(scope, b"")
    environ["wsgi.input"] = body.stream
    environ.pop("HTTP_TRANSFER_ENCODING", None)
    environ.pop("HTTP_AUTHORIZATION", None)  # used by the sign-in; nothing after needs it
    if body.size or "CONTENT_LENGTH" in environ:
        environ["CONTENT_LENGTH"] = str(body.size)
    return environ


_CHALLENGE = [(b"www-authenticate", b'Basic realm="vaultfs", charset="UTF-8"')]


def _header(scope: Any, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _answer(
    send: Any, status: int, text: bytes, extra: list[tuple[bytes, bytes]] | None = None
) -> None:
    headers = [(b"content-length", str(len(text)).encode()), (b"connection", b"close")]
    headers += extra or []
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text, "more_body": False})


def _at_least_one_chunk(app: Any) -> Any:
    """``app`` answering every response with at least one chunk of body, and an empty
    one (not to a HEAD) with ``Content-Length: 0``: WsgiDAV answers some refusals
    (a path with ``..``) with the length of a page it does not send."""

    def chunks(environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        started: list[Any] = []

        def capture(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            started[:] = [status, headers, exc_info]
            return None

        result = app(environ, capture)
        try:
            empty = True
            for chunk in result:
                if empty:
                    start_response(*started)
                    empty = False
                yield chunk
            if empty:
                status, headers, exc_info = started
                if environ.get("REQUEST_METHOD") != "HEAD":
                    headers = [h for h in headers if h[0].lower() != "content-length"]
                    headers.append(("Content-Length", "0"))
                start_response(status, headers, exc_info)
                yield b""
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()

    return chunks


async def _on_signals(stopped: trio.Event) -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.info("webdav: %s: stopping", signal.Signals(signum).name)
            stopped.set()
            return
