"""``create_app(config)``: the Starlette application of the local vault.

Nothing is created at import time. The application's lifespan opens the database
and the blob directory, creates the demo vaults in an empty data directory, sweeps
orphaned blobs (left by a crash or by deletions), reads the vault host names and the
OAuth profiles, and closes everything on exit.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

from vaultfs.errors import MalformedUrl, MethodNotSupported

from . import demo
from .config import ServerConfig
from .envelope import error_response
from .limits import AuthThrottle, RateLimiter
from .middleware import ApiMiddleware
from .oauth import load_profiles
from .routes import api_routes
from .state import VaultState
from .storage import vaults
from .storage.blobs import BlobStore, StoredFile
from .storage.db import Database, now_ms

__all__ = ["create_app", "open_state"]

log = logging.getLogger("vaultfs.server")


def open_state(config: ServerConfig) -> VaultState:
    """Open (and on first start, fill) the data directory (blocking)."""
    config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    # A directory made beforehand (by a packager, a test) is tightened too: it holds
    # password hashes, sessions and every document.
    config.data_dir.chmod(0o700)
    db = Database(config.data_dir / "vault.sqlite3")
    db.open()
    blobs = BlobStore(config.data_dir / "blobs")
    blobs.open()
    if demo.ensure_demo_vault(db, blobs, config):
        _add_second_demo_vault(db, blobs)
    removed = blobs.sweep(db.read_sync(demo.referenced_blobs))
    if removed:
        log.info("removed %d unreferenced files from the blob directory", removed)
    return VaultState(
        config=config,
        db=db,
        blobs=blobs,
        limiter=RateLimiter(config.burst_limit, config.daily_limit, config.burst_window_seconds),
        auth_throttle=AuthThrottle(
            config.auth_burst_limit, config.auth_window_seconds, config.auth_delay_ms
        ),
        hosts=db.read_sync(vaults.vault_hosts),
        default_vault=db.read_sync(vaults.default_vault),
        oauth=load_profiles(config.data_dir / "oauth.toml"),
    )


def _add_second_demo_vault(db: Database, blobs: BlobStore) -> None:
    """A second vault in the demo domain, so multi-vault logins can be tried."""
    admin = next(name for name, _, role in demo.DEMO_USERS if role == "admin")
    members = [name for name, _, role in demo.DEMO_USERS if role in ("admin", "editor")]

    def store(data: bytes, filename: str) -> StoredFile:
        return StoredFile(blob=blobs.put_bytes(data), filename=filename)

    db.write_sync(vaults.add_second_demo_vault, store, demo.DEMO_VAULT_ID, admin, members, now_ms())


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        return error_response(
            MethodNotSupported(f"Method {request.method} is not supported on {request.url.path}")
        )
    return error_response(MalformedUrl(f"No such resource: {request.url.path}"))


def create_app(config: ServerConfig) -> Starlette:
    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        vault = await trio.to_thread.run_sync(open_state, config)
        app.state.vault = vault
        try:
            yield
        finally:
            vault.db.close()

    app = Starlette(
        routes=api_routes(),
        middleware=[Middleware(ApiMiddleware)],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    # A redirect (307, empty body) is never an answer of this API: the middleware
    # already drops trailing slashes, and an unknown path is MALFORMED_URL.
    app.router.redirect_slashes = False
    return app
