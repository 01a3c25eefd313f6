"""Authentication over real HTTP: versions, login forms, session carriers, expiry."""

from __future__ import annotations

import time

import httpx

from tests.conftest import ADMIN, DEMO_PASSWORD, login
from tests.server.helpers import API, assert_error, assert_ok
from vaultfs.testing.vault_process import VaultProcess


def test_api_versions_lists_absolute_urls(vault_server: VaultProcess) -> None:
    body = assert_ok(httpx.get(vault_server.url + "/api/"))
    assert body["values"]["v25.1"] == vault_server.url + "/api/v25.1"
    assert "v2.0" in body["values"]


def test_login_with_form(vault_server: VaultProcess) -> None:
    r = httpx.post(
        vault_server.url + API + "/auth", data={"username": ADMIN, "password": DEMO_PASSWORD}
    )
    body = assert_ok(r)
    assert len(body["sessionId"]) >= 32
    assert body["vaultId"] == body["vaultIds"][0]["id"]
    assert body["vaultIds"][0]["url"] == vault_server.url + "/api"
    assert isinstance(body["userId"], int)


def test_login_with_multipart_and_old_version(vault_server: VaultProcess) -> None:
    r = httpx.post(
        vault_server.url + "/api/v14.0/auth",
        files={"username": (None, ADMIN), "password": (None, DEMO_PASSWORD)},
    )
    session = assert_ok(r)["sessionId"]
    # The version of later calls need not match the one used to log in.
    me = httpx.get(vault_server.url + API + "/metadata/objects", headers={"Authorization": session})
    assert_ok(me)


def test_bad_password_and_missing_field(vault_server: VaultProcess) -> None:
    r = httpx.post(vault_server.url + API + "/auth", data={"username": ADMIN, "password": "nope"})
    assert_error(r, "USERNAME_OR_PASSWORD_INCORRECT", 401)
    r = httpx.post(vault_server.url + API + "/auth", data={"username": ADMIN})
    assert_error(r, "PARAMETER_REQUIRED", mentions="password")


def test_session_carriers(vault_server: VaultProcess) -> None:
    session = login(vault_server.url)
    url = vault_server.url + API + "/metadata/objects"
    assert_ok(httpx.get(url, headers={"Authorization": session}))
    assert_ok(httpx.get(url, headers={"Authorization": f"Bearer {session}"}))
    # The auth query parameter wins over a bad header.
    assert_ok(httpx.get(url, params={"auth": session}, headers={"Authorization": "bogus"}))
    assert_error(
        httpx.get(url, params={"auth": "bogus"}, headers={"Authorization": session}),
        "INVALID_SESSION_ID",
        401,
    )
    assert_error(httpx.get(url), "INVALID_SESSION_ID", 401)
    # Unknown headers, a stray Content-Type and empty query values change nothing.
    assert_ok(
        httpx.get(
            url,
            params={"limit": ""},
            headers={
                "Authorization": session,
                "X-Whatever": "1",
                "Content-Type": "application/json",
            },
        )
    )


def test_keep_alive_and_end_session(vault_server: VaultProcess) -> None:
    session = login(vault_server.url)
    headers = {"Authorization": session}
    assert_ok(httpx.post(vault_server.url + API + "/keep-alive", headers=headers))
    assert_ok(httpx.delete(vault_server.url + API + "/session", headers=headers))
    assert_error(
        httpx.post(vault_server.url + API + "/keep-alive", headers=headers), "INVALID_SESSION_ID"
    )


def test_discovery(vault_server: VaultProcess) -> None:
    for path in ("/auth/discovery", API + "/auth/discovery"):
        body = assert_ok(httpx.post(vault_server.url + path, params={"username": ADMIN}))
        assert body["data"]["auth_type"] == "password"


def test_session_expires_after_inactivity(tmp_path) -> None:
    # 0.02 minutes = 1.2 s of inactivity
    with VaultProcess(tmp_path / "data", extra_args=["--session-timeout", "0.02"]) as server:
        session = login(server.url)
        url = server.url + API + "/metadata/objects"
        assert_ok(httpx.get(url, headers={"Authorization": session}))
        # Not synchronisation: the passing of idle time is what is under test (any
        # request with the session would reset it).
        time.sleep(1.5)
        assert_error(httpx.get(url, headers={"Authorization": session}), "INVALID_SESSION_ID")
