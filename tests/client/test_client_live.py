"""Live tests: the client against a real local vault process over real HTTP.

Every test makes the documents it changes, so tests do not depend on each other.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.conftest import ADMIN, DEMO_PASSWORD, EDITOR, VIEWER
from vaultfs.client import Credentials, Download, VaultClient
from vaultfs.errors import (
    InsufficientAccess,
    InvalidData,
    InvalidDocument,
    UsernameOrPasswordIncorrect,
    VaultError,
    VaultUnavailable,
)
from vaultfs.testing.vault_process import VaultProcess, free_port

GENERAL = {"type__v": "general__c", "lifecycle__v": "general_lifecycle__c"}


def _client(server: VaultProcess, user: str = EDITOR, **kwargs: object) -> VaultClient:
    return VaultClient(server.url, Credentials(user, DEMO_PASSWORD), **kwargs)  # type: ignore[arg-type]


@pytest.fixture
async def editor(vault_server: VaultProcess) -> AsyncIterator[VaultClient]:
    async with _client(vault_server) as client:
        yield client


async def _read(download: Download) -> bytes:
    return b"".join([piece async for piece in download.pieces()])


def _file(tmp_path: Path, name: str, size: int, seed: int = 1) -> Path:
    path = tmp_path / name
    block = hashlib.sha256(str(seed).encode()).digest()
    path.write_bytes((block * (size // len(block) + 1))[:size])
    return path


async def _create(client: VaultClient, path: Path, name: str) -> int:
    return await client.create_document({"name__v": name, **GENERAL}, path)


async def test_login_session_keep_alive_and_logout(vault_server: VaultProcess) -> None:
    async with _client(vault_server) as client:
        body = await client.login()
        assert "sessionId" not in body
        assert client.session_state == "active" and client.user_id is not None
        assert body["vaultId"] in [v["id"] for v in body["vaultIds"]]
        await client.keep_alive()
        await client.logout()
        assert client.session_state == "none"
        assert await client.document_types()  # logs in again lazily
        assert client.session_state == "active"


async def test_unknown_user_is_refused(vault_server: VaultProcess) -> None:
    async with _client(vault_server, user="nobody@vaultfs.demo") as client:
        with pytest.raises(UsernameOrPasswordIncorrect):
            await client.login()


async def test_expired_session_is_renewed(vault_server: VaultProcess) -> None:
    async with _client(vault_server) as client:
        await client.login()
        # End the client's session behind its back, as an inactivity timeout would.
        session_id = client._http.session.id
        assert session_id is not None
        async with httpx.AsyncClient() as http:
            ended = await http.delete(
                f"{vault_server.url}/api/v25.1/session", headers={"Authorization": session_id}
            )
        assert ended.json()["responseStatus"] == "SUCCESS"
        assert await client.document_types()
        assert client.budget.by_endpoint["POST /auth"] == 2


async def test_metadata_and_listing(editor: VaultClient) -> None:
    types = await editor.document_types()
    assert any(t["label"] == "General" for t in types)
    general = await editor.document_type("general__c")
    assert general["name"] == "general__c"
    properties = await editor.document_properties()
    assert any(p["name"] == "name__v" for p in properties)
    page = await editor.list_documents(limit=5)
    assert 0 < len(page.documents) <= 5 and page.limit == 5
    assert all("id" in d and "name__v" in d for d in page.documents)
    whole = await editor.get_document(page.documents[0]["id"])
    assert whole["document"]["id"] == page.documents[0]["id"]
    versions = await editor.list_versions(page.documents[0]["id"])
    assert versions and all("number" in v for v in versions)
    with pytest.raises(InvalidDocument):
        await editor.get_document(987_654_321)


async def test_budget_follows_the_headers(editor: VaultClient) -> None:
    await editor.document_types()
    first = editor.budget.burst_remaining
    await editor.document_types()
    assert first is not None and editor.budget.daily_remaining is not None
    assert editor.budget.burst_remaining is not None and editor.budget.burst_remaining < first
    assert editor.budget.by_endpoint["GET /metadata/objects/documents/types"] == 2


async def test_create_download_and_resume(editor: VaultClient, tmp_path: Path) -> None:
    source = _file(tmp_path, "report.bin", 3 * (1 << 20) + 12_345)
    content = source.read_bytes()
    doc_id = await _create(editor, source, "client live download")
    async with editor.download_file(doc_id) as download:
        assert download.length == len(content)
        assert download.filename == "report.bin"
        assert await _read(download) == content
    for offset in (1, 1 << 20, len(content) - 1):
        async with editor.download_file(doc_id, offset=offset) as download:
            assert download.length == len(content) - offset
            assert await _read(download) == content[offset:]
    async with editor.download_file(doc_id, offset=len(content)) as download:
        assert await _read(download) == b""
    record = (await editor.get_document(doc_id))["document"]
    assert record["md5checksum__v"] == hashlib.md5(content).hexdigest()


async def test_drafts_make_new_versions(editor: VaultClient, tmp_path: Path) -> None:
    first = _file(tmp_path, "draft.txt", 1000, seed=1)
    doc_id = await _create(editor, first, "client live drafts")
    record = (await editor.get_document(doc_id))["document"]
    before = (record["major_version_number__v"], record["minor_version_number__v"])
    second = _file(tmp_path, "draft2.txt", 2000, seed=2)
    uploaded = await editor.create_draft(doc_id, second)
    assert uploaded == (before[0], before[1] + 1)
    copied = await editor.create_draft(doc_id, None)
    assert copied == (before[0], before[1] + 2)
    async with editor.download_file(doc_id, *before) as download:
        assert await _read(download) == first.read_bytes()
    async with editor.download_file(doc_id, *copied) as download:
        assert await _read(download) == second.read_bytes()
    numbers = [v["number"] for v in await editor.list_versions(doc_id)]
    assert f"{copied[0]}.{copied[1]}" in numbers
    version = await editor.get_version(doc_id, *uploaded)
    assert version["document"]["minor_version_number__v"] == uploaded[1]


async def test_update_and_clear_fields(editor: VaultClient, tmp_path: Path) -> None:
    doc_id = await _create(editor, _file(tmp_path, "f.txt", 10), "client live fields")
    await editor.update_document(doc_id, {"title__v": "A title & more"})
    assert (await editor.get_document(doc_id))["document"]["title__v"] == "A title & more"
    await editor.update_document(doc_id, {"title__v": None})
    assert not (await editor.get_document(doc_id))["document"].get("title__v")


async def test_locks_between_users(vault_server: VaultProcess, tmp_path: Path) -> None:
    async with _client(vault_server) as editor, _client(vault_server, ADMIN) as admin:
        doc_id = await _create(editor, _file(tmp_path, "lock.txt", 10), "client live lock")
        assert await editor.get_lock(doc_id) is None
        await editor.lock(doc_id)
        lock = await admin.get_lock(doc_id)
        assert lock is not None and lock["locked_by__v"] == editor.user_id
        with pytest.raises(VaultError) as info:
            await admin.lock(doc_id)
        assert not isinstance(info.value, VaultUnavailable)
        await editor.unlock(doc_id)
        assert await editor.get_lock(doc_id) is None


async def test_viewer_may_not_create(vault_server: VaultProcess, tmp_path: Path) -> None:
    async with _client(vault_server, VIEWER) as viewer:
        with pytest.raises(InsufficientAccess):
            await _create(viewer, _file(tmp_path, "v.txt", 10), "client live viewer")


async def test_delete_shows_in_deletions(vault_server: VaultProcess, tmp_path: Path) -> None:
    since = datetime.now(UTC) - timedelta(minutes=1)
    async with _client(vault_server, ADMIN) as admin:
        doc_id = await _create(admin, _file(tmp_path, "d.txt", 10), "client live delete")
        await admin.delete_document(doc_id)
        with pytest.raises(InvalidDocument):
            await admin.get_document(doc_id)
        deleted = await admin.deleted_documents(since)
        assert doc_id in [d["id"] for d in deleted]
        assert doc_id in [d["id"] for d in await admin.deleted_documents()]


async def test_attachments(editor: VaultClient, tmp_path: Path) -> None:
    doc_id = await _create(editor, _file(tmp_path, "main.txt", 10), "client live attachments")
    attachment = _file(tmp_path, "appendix.bin", 70_000, seed=3)
    content = attachment.read_bytes()
    created = await editor.create_attachment(doc_id, attachment)
    assert [a["id"] for a in await editor.list_attachments(doc_id)] == [created["id"]]
    async with editor.download_attachment(doc_id, created["id"]) as download:
        assert download.filename == "appendix.bin"
        assert await _read(download) == content
    async with editor.download_attachment(doc_id, created["id"], 1, offset=5) as download:
        assert await _read(download) == content[5:]


async def test_renditions_of_demo_documents(editor: VaultClient) -> None:
    page = await editor.list_documents()
    for document in page.documents:
        renditions = await editor.list_renditions(document["id"])
        if renditions:
            break
    else:
        pytest.fail("the demo vault has no document with a rendition")
    rendition_type = next(iter(renditions))
    async with editor.download_rendition(document["id"], rendition_type) as download:
        data = await _read(download)
    assert data and download.length == len(data)


async def test_unreachable_vault_is_unavailable(autojump_clock: object) -> None:
    nobody = f"http://127.0.0.1:{free_port()}"
    async with VaultClient(nobody, Credentials(EDITOR, DEMO_PASSWORD), max_retries=2) as client:
        with pytest.raises(VaultUnavailable, match="POST /auth"):
            await client.login()
        assert client.budget.by_endpoint["POST /auth"] == 3


#: names the vault takes and a local file system may not (274 bytes), or that need
#: care in a header: each must arrive as sent, whatever the local file is called
SENT_NAMES = [
    "治験実施計画書改訂版" * 9 + ".txt",
    "Résumé; draft=1 'final'.txt",
]


@pytest.mark.parametrize("filename", SENT_NAMES)
async def test_uploads_carry_the_name_given_not_the_local_files(
    editor: VaultClient, tmp_path: Path, filename: str
) -> None:
    local = _file(tmp_path, "17.data", 100)  # a spool file: named by a number
    doc_id = await editor.create_document(
        {"name__v": "client live sent name", **GENERAL}, local, filename=filename
    )
    document = (await editor.get_document(doc_id))["document"]
    assert document["filename__v"] == filename
    await editor.lock(doc_id)
    await editor.create_draft(doc_id, local, filename=filename)
    await editor.unlock(doc_id)
    assert (await editor.get_document(doc_id))["document"]["filename__v"] == filename
    created = await editor.create_attachment(doc_id, local, filename=filename)
    [attachment] = await editor.list_attachments(doc_id)
    assert attachment["id"] == created["id"] and attachment["filename__v"] == filename


async def test_a_name_that_is_not_utf8_is_refused_before_anything_is_sent(
    editor: VaultClient, tmp_path: Path
) -> None:
    local = _file(tmp_path, "18.data", 10)
    with pytest.raises(InvalidData, match="not valid UTF-8"):
        await editor.create_document(
            {"name__v": "never", **GENERAL}, local, filename="bad-\udcff.txt"
        )
    assert editor.budget.calls == 0  # not even a login
