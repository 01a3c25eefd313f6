"""Unit tests: lazy login, one re-login for parallel callers, the session id kept secret."""

from __future__ import annotations

import httpx
import pytest
import trio

from vaultfs.client import Credentials, VaultClient
from vaultfs.errors import InsufficientAccess, InvalidSessionId, VaultError

from .mockvault import PASSWORD, MockVault, envelope, failure


def _document(request: httpx.Request) -> httpx.Response:
    return envelope(document={"id": int(request.url.path.rsplit("/", 1)[1])})


async def test_logs_in_lazily_with_a_form_and_the_vault_dns() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/1"] = _document
    transport = httpx.MockTransport(vault.handle)
    credentials = Credentials("ann@vault.test", PASSWORD, vault_dns="vault.test")
    async with VaultClient("http://vault.test/", credentials, transport=transport) as client:
        assert client.session_state == "none" and not vault.logins
        await client.get_document(1)
        assert client.session_state == "active"
        assert client.user_id == 42 and client.vault_id == 7
    auth = vault.requests[0]
    assert auth.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert vault.logins == [
        {"username": ["ann@vault.test"], "password": [PASSWORD], "vaultDNS": ["vault.test"]}
    ]


async def test_login_returns_the_response_without_session_id() -> None:
    vault = MockVault()
    async with vault.client() as client:
        body = await client.login()
    assert "sessionId" not in body
    assert body["vaultId"] == 7 and body["userId"] == 42


async def test_session_id_only_in_the_authorization_header() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/1"] = _document
    vault.routes["POST /keep-alive"] = lambda r: envelope()
    vault.routes["DELETE /session"] = lambda r: envelope()
    async with vault.client() as client:
        await client.get_document(1)
        await client.keep_alive()
        assert "SESSION-" not in repr(client) and PASSWORD not in repr(client)
        assert "SESSION-" not in repr(client._http.session)
    authed = [r for r in vault.requests if r.url.path != "/api/v25.1/auth"]
    assert [r.method for r in authed] == ["GET", "POST", "DELETE"]
    for request in vault.requests:
        assert "SESSION-" not in str(request.url)
        assert "auth=" not in request.url.query.decode()
    assert {r.headers["Authorization"] for r in authed} == {"SESSION-1-abcdef"}
    assert PASSWORD not in repr(Credentials("ann", PASSWORD))


async def test_expired_session_relogs_in_once_and_replays() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/1"] = _document
    async with vault.client() as client:
        await client.get_document(1)
        vault.expire_sessions()
        body = await client.get_document(1)
    assert body["document"]["id"] == 1
    assert len(vault.logins) == 2
    assert vault.count("GET /objects/documents/1") == 3  # first, refused, replayed


async def test_parallel_callers_relog_in_once(autojump_clock: object) -> None:
    vault = MockVault()
    vault.login_delay = 0.5  # so that every caller finds the session expired meanwhile
    vault.routes["GET /objects/documents/1"] = _document
    results: list[int] = []
    async with vault.client() as client:
        await client.get_document(1)
        vault.expire_sessions()

        async def read() -> None:
            results.append((await client.get_document(1))["document"]["id"])

        async with trio.open_nursery() as nursery:
            for _ in range(8):
                nursery.start_soon(read)
    assert results == [1] * 8
    assert len(vault.logins) == 2


async def test_parallel_first_calls_log_in_once(autojump_clock: object) -> None:
    vault = MockVault()
    vault.login_delay = 0.5
    vault.routes["GET /objects/documents/1"] = _document
    async with vault.client() as client, trio.open_nursery() as nursery:
        for _ in range(8):
            nursery.start_soon(client.get_document, 1)
    assert len(vault.logins) == 1


async def test_refused_again_after_relogin_raises_and_stops() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/1"] = lambda r: failure("INVALID_SESSION_ID", status=401)
    async with vault.client() as client:
        with pytest.raises(InvalidSessionId):
            await client.get_document(1)
    assert len(vault.logins) == 2
    assert vault.count("GET /objects/documents/1") == 2


async def test_logout_on_exit_and_no_relogin_for_it() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/1"] = _document
    vault.routes["DELETE /session"] = lambda r: envelope()
    client = vault.client()
    async with client:
        await client.get_document(1)
        vault.expire_sessions()
    assert client.session_state == "none"
    # The logout found the session expired: best effort, no new login for it.
    assert vault.count("DELETE /session") == 1 and len(vault.logins) == 1


async def test_no_logout_without_a_session() -> None:
    vault = MockVault()
    async with vault.client():
        pass
    assert vault.requests == []


async def test_session_for_a_vault_not_in_vault_ids_is_refused() -> None:
    vault = MockVault()

    async def odd_login(request: httpx.Request) -> httpx.Response:
        vault.requests.append(request)
        vaults = [{"id": 8, "name": "Other", "url": "http://vault.test/api"}]
        return envelope(sessionId="S", userId=1, vaultId=7, vaultIds=vaults)

    async with vault.client(transport=httpx.MockTransport(odd_login)) as client:
        with pytest.raises(VaultError, match="vaultIds"):
            await client.login()
        assert client.session_state == "none"
    assert len(vault.requests) == 1  # a deterministic refusal: not retried


async def test_session_for_another_vault_than_the_dns_asked_for_is_refused() -> None:
    vault = MockVault()
    transport = httpx.MockTransport(vault.handle)
    credentials = Credentials("ann@vault.test", PASSWORD, vault_dns="other.test")
    async with VaultClient("http://vault.test", credentials, transport=transport) as client:
        with pytest.raises(InsufficientAccess, match=r"other\.test"):
            await client.document_types()
