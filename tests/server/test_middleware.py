"""Unit tests of the last-resort error envelope (in-process ASGI, no server process)."""

from __future__ import annotations

from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from vaultfs.server.config import ServerConfig
from vaultfs.server.limits import RateLimiter
from vaultfs.server.middleware import ApiMiddleware
from vaultfs.server.state import VaultState
from vaultfs.server.storage.blobs import BlobStore
from vaultfs.server.storage.db import Database


async def _boom(request: Request) -> Response:
    raise RuntimeError("secret internal detail")


async def _overflow(request: Request) -> Response:
    raise OverflowError("Python int too large to convert to SQLite INTEGER")


def _app(tmp_path: Path) -> Starlette:
    app = Starlette(
        routes=[
            Route("/boom", _boom, methods=["GET", "POST"]),
            Route("/overflow", _overflow, methods=["GET", "POST"]),
        ],
        middleware=[Middleware(ApiMiddleware)],
    )
    app.state.vault = VaultState(
        config=ServerConfig(data_dir=tmp_path),
        db=Database(tmp_path / "unused.sqlite3"),
        blobs=BlobStore(tmp_path / "blobs"),
        limiter=RateLimiter(10, 100),
    )
    return app


async def test_unexpected_errors_are_json_and_creates_never_5xx(tmp_path: Path) -> None:
    transport = httpx.ASGITransport(app=_app(tmp_path))
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        read = await client.get("/boom")
        assert read.status_code == 500
        assert read.json()["responseStatus"] == "EXCEPTION"
        assert read.json()["errors"][0]["type"] == "EXCEPTION"
        create = await client.post("/boom")
        assert create.status_code == 400
        body = create.json()
        assert body["responseStatus"] == "FAILURE"
        # Only the spec's error types reach a client.
        assert body["errors"][0]["type"] == "INVALID_DATA"
        # A number too large for the database names nothing that exists.
        for method in ("GET", "POST"):
            big = await client.request(method, "/overflow")
            assert big.status_code == 400
            assert big.json()["errors"][0]["type"] == "INVALID_DATA"
            assert "SQLite" not in big.text
    for response in (read, create):
        assert "secret" not in response.text
        assert "X-ServiceAPI-ExecutionId" in response.headers
