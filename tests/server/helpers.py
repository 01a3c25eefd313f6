"""Helpers of the server tests: an HTTP client with a session, and envelope checks."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import ADMIN, login

__all__ = ["API", "api_client", "assert_error", "assert_ok", "upload"]

API = "/api/v25.1"


def api_client(url: str, username: str = ADMIN) -> httpx.Client:
    """A client logged in as ``username``, its base URL at the versioned API."""
    session = login(url, username)
    return httpx.Client(base_url=url + API, headers={"Authorization": session}, timeout=30)


def assert_ok(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert response.status_code == 200, body
    assert body["responseStatus"] == "SUCCESS", body
    return body


def assert_error(
    response: httpx.Response,
    error_type: str,
    status: int | None = None,
    mentions: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert body["responseStatus"] in ("FAILURE", "EXCEPTION"), body
    assert body["errors"][0]["type"] == error_type, body
    if status is not None:
        assert response.status_code == status, (response.status_code, body)
    if mentions is not None:
        assert mentions in body["errors"][0]["message"], body
    return body


def upload(
    client: httpx.Client, path: str, fields: dict[str, str], name: str, content: bytes
) -> httpx.Response:
    return client.post(path, data=fields, files={"file": (name, content)})
