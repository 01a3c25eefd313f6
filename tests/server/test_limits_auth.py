"""Call limits: remaining-call headers on every response, the daily limit, and the
throttle of password logins per user name and vault DNS."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from tests.conftest import ADMIN, DEMO_PASSWORD, EDITOR, login
from tests.server.helpers import API, assert_error, assert_ok
from vaultfs.testing.vault_process import VaultProcess

HEADERS = (
    "X-ServiceAPI-BurstLimitRemaining",
    "X-ServiceAPI-DailyLimitRemaining",
    "X-ServiceAPI-ExecutionId",
)


def _login(url: str, username: str, password: str = DEMO_PASSWORD, **extra: str) -> httpx.Response:
    return httpx.post(
        url + API + "/auth", data={"username": username, "password": password, **extra}
    )


def test_headers_on_auth_errors_and_unversioned_calls(vault_server: VaultProcess) -> None:
    url = vault_server.url
    responses = [
        _login(url, ADMIN),
        _login(url, ADMIN, "wrong password"),
        httpx.post(url + API + "/auth", data={}),
        httpx.post(url + "/auth/discovery", data={"username": ADMIN}),
        httpx.get(url + "/api/v99.0/objects/documents"),
        httpx.get(url + API + "/objects/documents"),  # no session
        httpx.post(url + "/auth/oauth/session/none"),
        httpx.put(url + API + "/keep-alive"),
    ]
    ids = set()
    for r in responses:
        assert r.status_code < 500, r.text
        for header in HEADERS:
            assert header in r.headers, (r.request.url, header)
        ids.add(r.headers["X-ServiceAPI-ExecutionId"])
    assert len(ids) == len(responses)


def test_daily_limit(tmp_path: Path) -> None:
    with VaultProcess(tmp_path / "data", extra_args=["--daily-limit", "2"]) as server:
        session = login(server.url)
        url = server.url + API + "/metadata/objects"
        first, second, third = (httpx.get(url, headers={"Authorization": session}) for _ in "123")
        assert_ok(first)
        assert first.headers["X-ServiceAPI-DailyLimitRemaining"] == "1"
        assert_ok(second)
        body = assert_error(third, "API_LIMIT_EXCEEDED", 429, mentions="daily")
        assert body["responseStatus"] == "FAILURE"
        assert 300 < int(third.headers["Retry-After"]) <= 86_400
        assert third.headers["X-ServiceAPI-DailyLimitRemaining"] == "0"


def test_password_logins_are_throttled(tmp_path: Path) -> None:
    args = ["--auth-burst-limit", "4", "--auth-delay-ms", "300"]
    with VaultProcess(tmp_path / "data", extra_args=args) as server:
        timed = []
        for _ in range(4):
            started = time.monotonic()
            r = _login(server.url, ADMIN)
            timed.append((r, time.monotonic() - started))
        # The first half of the window is answered at once, the second half delayed.
        for r, _ in timed[:2]:
            assert_ok(r)
            assert "X-VaultAPI-ResponseDelay" not in r.headers
        for r, took in timed[2:]:
            assert_ok(r)
            assert r.headers["X-VaultAPI-ResponseDelay"] == "300"
            assert took >= 0.3
        # Then logins of that user name fail until the window ends...
        refused = _login(server.url, ADMIN)
        assert_error(refused, "API_LIMIT_EXCEEDED", 429)
        assert 0 < int(refused.headers["Retry-After"]) <= 60
        assert_error(_login(server.url, ADMIN, "wrong"), "API_LIMIT_EXCEEDED", 429)
        # ...while other user names, and the same one at another vault DNS, go on.
        assert_ok(_login(server.url, EDITOR))
        assert_ok(_login(server.url, ADMIN, vaultDNS="clinical.localhost"))
        # Sessions already issued are not affected.
        session = timed[0][0].json()["sessionId"]
        assert_ok(httpx.get(server.url + API + "/limits", headers={"Authorization": session}))
