"""Unit tests: envelopes and transport failures become vaultfs.errors (one place)."""

from __future__ import annotations

import httpx
import pytest

from vaultfs.client import Credentials, VaultClient
from vaultfs.errors import (
    ApiLimitExceeded,
    InvalidData,
    InvalidDocument,
    ServerException,
    UsernameOrPasswordIncorrect,
    VaultError,
    VaultUnavailable,
)

from .mockvault import MockVault, envelope, failure


async def test_failure_envelope_raises_the_error_of_its_type() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/5"] = lambda r: failure(
        "INVALID_DOCUMENT", "Document not found [5].", status=404
    )
    async with vault.client() as client:
        with pytest.raises(InvalidDocument) as info:
            await client.get_document(5)
    assert info.value.message == "Document not found [5]."
    assert info.value.errors == [{"type": "INVALID_DOCUMENT", "message": "Document not found [5]."}]


async def test_failure_envelope_with_http_200_is_still_an_error() -> None:
    # The vault may answer FAILURE with a 2xx status: the envelope decides.
    vault = MockVault()
    vault.routes["POST /objects/documents/5/lock"] = lambda r: failure(
        "INVALID_DATA", "Document is already checked out.", status=200
    )
    async with vault.client() as client:
        with pytest.raises(InvalidData, match="already checked out"):
            await client.lock(5)


async def test_unknown_error_type_keeps_its_wire_name() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/5"] = lambda r: failure("SOMETHING_NEW", "huh")
    async with vault.client() as client:
        with pytest.raises(VaultError) as info:
            await client.get_document(5)
    assert info.value.type == "SOMETHING_NEW"


async def test_exception_envelope_is_a_server_exception() -> None:
    vault = MockVault()
    body = {"responseStatus": "EXCEPTION", "errors": [{"type": "UNEXPECTED", "message": "boom"}]}
    vault.routes["GET /objects/documents/5"] = lambda r: httpx.Response(500, json=body)
    async with vault.client(max_retries=0) as client:
        with pytest.raises(ServerException, match="boom") as info:
            await client.get_document(5)
    assert info.value.errors[0]["type"] == "UNEXPECTED"


async def test_5xx_without_envelope_is_a_server_exception() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/5"] = lambda r: httpx.Response(502, text="<html>bad")
    async with vault.client(max_retries=0) as client:
        with pytest.raises(ServerException, match="GET /objects/documents/5: HTTP 502"):
            await client.get_document(5)


async def test_429_without_envelope_is_api_limit_exceeded() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/5"] = lambda r: httpx.Response(
        429, headers={"Retry-After": "99999"}
    )
    async with vault.client() as client:
        # A wait longer than the burst window is not waited for: it raises at once.
        with pytest.raises(ApiLimitExceeded) as info:
            await client.get_document(5)
    assert info.value.retry_after == 99999
    assert vault.count("GET /objects/documents/5") == 1


async def test_transport_error_names_method_and_path_but_not_the_session() -> None:
    vault = MockVault()

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("timed out", request=request)

    vault.routes["GET /objects/documents/5"] = refuse
    async with vault.client(max_retries=0) as client:
        with pytest.raises(VaultUnavailable) as info:
            await client.get_document(5)
    message = str(info.value)
    assert "GET /objects/documents/5" in message and "ReadTimeout" in message
    assert "SESSION-" not in message
    assert isinstance(info.value.__cause__, httpx.ReadTimeout)


async def test_wrong_password_is_not_retried() -> None:
    vault = MockVault()
    transport = httpx.MockTransport(vault.handle)
    client = VaultClient("http://vault.test", Credentials("ann", "wrong"), transport=transport)
    async with client:
        with pytest.raises(UsernameOrPasswordIncorrect):
            await client.document_types()
    assert len(vault.logins) == 1
    # Refused, and why: the status and the desktop notification say so.
    assert client.session_state == "refused"
    assert client.session_refusal


async def test_garbage_2xx_is_unavailable() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/5"] = lambda r: httpx.Response(200, text="<html>")
    async with vault.client(max_retries=0) as client:
        with pytest.raises(VaultUnavailable, match="without a JSON envelope"):
            await client.get_document(5)


async def test_success_returns_the_body() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/5"] = lambda r: envelope(document={"id": 5})
    async with vault.client() as client:
        body = await client.get_document(5)
    assert body["document"] == {"id": 5}
