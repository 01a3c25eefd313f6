"""Running the WebDAV front: the core built as for a mount, served over HTTP.

Owns the life of ``vaultfs webdav``: signs in (a wrong password fails before anything
listens), builds the same daemon as a mount (``daemon.build``: index, content cache,
spool, node families, file system) without a kernel to tell, runs its workers in one
trio nursery, and serves WsgiDAV's application over it with Hypercorn in the same
trio loop (Hypercorn runs each WSGI request in a worker thread, which calls the core
with ``trio.from_thread``: ``webdav.calls``). Stops on SIGTERM/SIGINT after the spool
had a chance to check in what is pending, like a mount. Never starts FUSE.
"""

from __future__ import annotations

import logging
import os
import signal
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import trio
from hypercorn.app_wrappers import InvalidPathError, WSGIWrapper, _build_environ
from hypercorn.config import Config as HypercornConfig
from hypercorn.trio.run import worker_serve
from wsgidav.wsgidav_app import WsgiDAVApp

from vaultfs.bridge.daemon.build import build_daemon
from vaultfs.bridge.daemon.core_start import start_core
from vaultfs.bridge.fs.by_path import PathFileSystem
from vaultfs.bridge.webdav.bodies import (
    Body,
    BodyTooLarge,
    ClientGone,
    limit_of,
    receive_body,
)
from vaultfs.bridge.webdav.locks import VaultLocks
from vaultfs.bridge.webdav.resources import VaultProvider
from vaultfs.wire import MAX_FILE_SIZE

__all__ = ["WebdavConfig", "run_webdav"]

log = logging.getLogger(__name__)

#: how long a stop waits for pending check-ins (what is left stays in the spool)
_STOP_WAIT = 30.0


@dataclass
class WebdavConfig:
    url: str
    user: str
    password: str = field(repr=False)
    host: str
    port: int
    cache_dir: Path
    cache_size: int = 1 << 30
    poll_interval: float = 30.0
    retries: int = 6
    read_only: bool = False
    allow_delete: bool = False
    #: the largest PUT body taken (the vault's own limit on a file by default)
    max_upload: int = MAX_FILE_SIZE
    session_source: Any = field(default=None, repr=False)


_FINITE_DEPTH = (
    b'<?xml version="1.0" encoding="utf-8"?>\n'
    b'<D:error xmlns:D="DAV:"><D:propfind-finite-depth/></D:error>'
)


def finite_depth(app: Any) -> Any:
    """PROPFIND with ``Depth: infinity`` (or none, which means it) refused, as RFC 4918
    allows (403, propfind-finite-depth): one request would walk the whole vault.
    WsgiDAV serves it and has no setting for it."""

    def refusing(environ: dict[str, Any], start_response: Any) -> Any:
        depth = environ.get("HTTP_DEPTH", "infinity").strip().lower()
        if environ.get("REQUEST_METHOD") == "PROPFIND" and depth not in ("0", "1"):
            start_response(
                "403 Forbidden",
                [
                    ("Content-Type", "application/xml; charset=utf-8"),
                    ("Content-Length", str(len(_FINITE_DEPTH))),
                ],
            )
            return [_FINITE_DEPTH]
        return app(environ, start_response)

    return refusing


def wsgi_app(provider: VaultProvider, locks: VaultLocks) -> Any:
    """WsgiDAV over ``provider``: anonymous (the front serves its one signed-in user
    on loopback), WebDAV locks kept by ``locks``, other dead properties in memory."""
    return finite_depth(
        WsgiDAVApp(
            {
                "provider_mapping": {"/": provider},
                "simple_dc": {"user_mapping": {"*": True}},
                "http_authenticator": {"accept_basic": True, "accept_digest": False},
                "lock_storage": locks,
                "property_manager": True,
                "add_header_MS_Author_Via": True,
                "hotfixes": {"emulate_win32_lastmod": True},
                "dir_browser": {"enable": False},
                "logging": {"enable": False},
                "verbose": 0,
                # Each read and write of a body crosses into the core once a block: 1 MiB,
                # not WsgiDAV's 8 KiB (a 64 MiB GET took 5.5 s, now 1 s).
                "block_size": 1 << 20,
            }
        )
    )


async def run_webdav(config: WebdavConfig, ready: Callable[[str], None] | None = None) -> None:
    """Serve until signalled; ``ready(address)`` once the front answers."""
    async with AsyncExitStack() as stack:
        # One daemon a cache directory, a mount's or a front's.
        core = await start_core(
            stack,
            config,
            shown_at=f"http://{config.host}:{config.port}/",
            owned=config.cache_dir,
            nonempty=True,
        )
        client = core.client
        daemon = build_daemon(
            client,
            core.options,
            content_dir=config.cache_dir / "content",
            cache_size=config.cache_size,
            spool=core.spool,
            index_store=core.index_store,
            status_extra=lambda: {"pid": os.getpid(), "webdav": f"{config.host}:{config.port}"},
        )
        pfs = PathFileSystem(daemon.filesystem)
        marks = config.cache_dir / "webdav"
        marks.mkdir(mode=0o700, exist_ok=True)
        locks = VaultLocks(pfs, client, marks)
        spool = daemon.spool
        # Before anything is served: a LOCK must not meet a release of its document.
        await locks.release_left(
            lambda doc_id: spool is not None and spool.entry(doc_id) is not None
        )
        provider = VaultProvider(pfs, read_only=config.read_only, after_save=locks.after_save)
        hypercorn = HypercornConfig()
        host = f"[{config.host}]" if ":" in config.host else config.host
        hypercorn.bind = [f"{host}:{config.port}"]
        hypercorn.accesslog = None
        stopped = trio.Event()
        async with trio.open_nursery() as nursery:
            await nursery.start(daemon.blobs.run)
            await nursery.start(daemon.filesystem.freshness.run)
            await nursery.start(daemon.index.run, config.poll_interval)
            if daemon.spool is not None:
                await nursery.start(daemon.spool.run)
            nursery.start_soon(_on_signals, stopped)
            app = _Wsgi(wsgi_app(provider, locks), config.max_upload, config.cache_dir / "bodies")
            bound = await nursery.start(
                lambda task_status: worker_serve(
                    app, hypercorn, shutdown_trigger=stopped.wait, task_status=task_status
                )
            )
            address = bound[0] if bound else f"http://{config.host}:{config.port}"
            log.info("serving %s for %s over WebDAV at %s", config.url, config.user, address)
            if ready is not None:
                ready(address)
            await stopped.wait()
            if daemon.spool is not None:  # pending check-ins get a last chance
                nursery.start_soon(daemon.spool.flush_now)
                await daemon.spool.wait_idle(_STOP_WAIT)
            await locks.release_all()
            nursery.cancel_scope.cancel()


class _Wsgi(WSGIWrapper):
    """Hypercorn's WSGI wrapper, with each request's body received into a private
    file first (``bodies``: Hypercorn's own holds it in memory), answering the
    lifespan protocol its trio worker speaks first (its own returns at once, and the
    trio worker then fails to start), and sending the status of a response without a
    body (it sends the status with the first chunk of the body only)."""

    def __init__(self, app: Any, max_upload: int, bodies: Path) -> None:
        super().__init__(_at_least_one_chunk(app), max_upload)
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
    if body.size or "CONTENT_LENGTH" in environ:
        environ["CONTENT_LENGTH"] = str(body.size)
    return environ


async def _answer(send: Any, status: int, text: bytes) -> None:
    headers = [(b"content-length", str(len(text)).encode()), (b"connection", b"close")]
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
