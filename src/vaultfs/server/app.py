"""``create_app(config)``: the Starlette application of the local vault.

Nothing is created at import time. The application's lifespan opens the database
(SQLite in the data directory, or a shared PostgreSQL) and the content store (the
blob directory, or a bucket),
creates the demo vaults in an empty database, sweeps orphaned blobs (left by a crash
or by deletions), reads the vault host names and the OAuth profiles, and closes
everything on exit.
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

from . import demo, demo_metadata
from .config import ServerConfig
from .envelope import error_response
from .limits import (
    ApiLimiter,
    AuthThrottle,
    LoginThrottle,
    RateLimiter,
    SharedAuthThrottle,
    SharedRateLimiter,
)
from .middleware import ApiMiddleware
from .oauth import load_profiles
from .routes import api_routes
from .state import VaultState
from .storage import vaults
from .storage.content import ContentStore, ContentUnavailable, StoredFile
from .storage.db import Database, now_ms
from .storage.stores import content_store

__all__ = ["create_app", "open_database", "open_state"]

log = logging.getLogger("vaultfs.server")


#: On a content store several processes share (a bucket, or a directory beside a
#: shared database), unreferenced files younger than this are spared by the start-up
#: sweep: another process may be mid-upload.
_SHARED_SWEEP_AGE = 3600.0


def open_database(config: ServerConfig) -> Database:
    """The vault's database, not yet open: SQLite in the data directory, or the URL."""
    if config.database_url is None:
        return Database(config.data_dir / "vault.sqlite3")
    password = None
    if config.database_password_file is not None:
        password = config.database_password_file.read_text().strip()
    return Database(config.database_url, password=password)


def open_state(config: ServerConfig) -> VaultState:
    """Open (and on first start, fill) the data directory (blocking)."""
    config.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    # A directory made beforehand (by a packager, a test) is tightened too: it holds
    # password hashes, sessions and every document.
    config.data_dir.chmod(0o700)
    db = open_database(config)
    db.open()
    blobs = content_store(config.content, config.data_dir)
    try:
        blobs.open()
    except ContentUnavailable as exc:
        log.error("cannot open the content store: %s", exc)
        db.close()
        raise
    log.info("files are kept in %s", blobs)
    # Processes starting together on one database: one fills it, the others wait.
    with db.exclusive():
        if demo.ensure_demo_vault(db, blobs, config):
            _add_second_demo_vault(db, blobs)
        age = _SHARED_SWEEP_AGE if db.shared or blobs.shared else 0.0
        try:
            removed = blobs.sweep(db.read_sync(demo.referenced_blobs), min_age_seconds=age)
        except ContentUnavailable as exc:
            # Orphans cost space only; the next start tries again.
            log.warning("%s", exc)
            removed = 0
    if removed:
        log.info("removed %d unreferenced files from %s", removed, blobs)
    limiter: ApiLimiter
    throttle: LoginThrottle
    if db.shared:
        limiter = SharedRateLimiter(
            db, config.burst_limit, config.daily_limit, config.burst_window_seconds
        )
        throttle = SharedAuthThrottle(
            db, config.auth_burst_limit, config.auth_window_seconds, config.auth_delay_ms
        )
    else:
        limiter = RateLimiter(config.burst_limit, config.daily_limit, config.burst_window_seconds)
        throttle = AuthThrottle(
            config.auth_burst_limit, config.auth_window_seconds, config.auth_delay_ms
        )
    return VaultState(
        config=config,
        db=db,
        blobs=blobs,
        limiter=limiter,
        auth_throttle=throttle,
        hosts=db.read_sync(vaults.vault_hosts),
        default_vault=db.read_sync(vaults.default_vault),
        oauth=load_profiles(config.data_dir / "oauth.toml"),
    )


def _add_second_demo_vault(db: Database, blobs: ContentStore) -> None:
    """A second vault in the demo domain, so multi-vault logins can be tried."""
    admin = next(name for name, _, role in demo.DEMO_USERS if role == "admin")
    members = [name for name, _, role in demo.DEMO_USERS if role in ("admin", "editor")]

    def store(data: bytes, filename: str) -> StoredFile:
        return StoredFile(blob=blobs.put_bytes(data), filename=filename)

    db.write_sync(
        vaults.add_second_demo_vault, store, demo_metadata.DEMO_VAULT_ID, admin, members, now_ms()
    )


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
