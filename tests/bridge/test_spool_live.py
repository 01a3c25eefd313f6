"""The spool against a real local vault process, with the real client.

Check-out/check-in end to end (the draft holds exactly the bytes written, the lock
is released), a lock held by another user, and an outage of the vault during a
check-in that the worker cures once the vault is back, uploading exactly once.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import ADMIN, EDITOR
from vaultfs.bridge.write.spool.spool import Spool, start_from
from vaultfs.client import Credentials, VaultClient
from vaultfs.errors import LockedByOther, VaultError
from vaultfs.testing.vault_process import DEMO_PASSWORD, VaultProcess


def connect(vault: VaultProcess, user: str = ADMIN) -> VaultClient:
    # Few, short client-level retries: an outage must reach the spool quickly.
    return VaultClient(
        vault.url, Credentials(user, DEMO_PASSWORD), max_retries=1, connect_timeout=2.0
    )


@asynccontextmanager
async def running(spool: Spool) -> AsyncIterator[Spool]:
    async with trio.open_nursery() as nursery:
        await nursery.start(spool.run)
        yield spool
        nursery.cancel_scope.cancel()


async def editable_document(client: VaultClient) -> dict[str, Any]:
    """A demo document with a source file that nobody has checked out."""
    page = await client.list_documents()
    for doc in page.documents:
        if doc.get("md5checksum__v") and not doc.get("locked__v"):
            return doc
    pytest.fail("the demo vault has no unlocked document with a file")


async def download(client: VaultClient, doc_id: int) -> bytes:
    async with client.download_file(doc_id) as stream:
        return b"".join([piece async for piece in stream.pieces()])


async def version_count(client: VaultClient, doc_id: int) -> int:
    return len(await client.list_versions(doc_id))


async def latest_to_file(client: VaultClient, doc_id: int, path: Path) -> Path:
    await trio.Path(path).write_bytes(await download(client, doc_id))
    return path


async def test_check_out_edit_check_in_makes_a_draft_of_exactly_the_bytes(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    payload = os.urandom(300_000) + b"\x00end"
    async with connect(fresh_vault) as client:
        doc = await editable_document(client)
        doc_id = int(doc["id"])
        before = await version_count(client, doc_id)
        initial = await latest_to_file(client, doc_id, tmp_path / "initial")
        async with running(Spool(tmp_path / "spool", client)) as spool:
            entry = await spool.begin(
                doc_id,
                start_from(initial, filename=doc["filename__v"], base_md5=doc["md5checksum__v"]),
            )
            lock = await client.get_lock(doc_id)
            assert lock is not None
            assert str(lock["locked_by__v"]) == str(client.user_id)
            entry.truncate(0)
            for offset in range(0, len(payload), 65536):
                entry.pwrite(offset, payload[offset : offset + 65536])
            await spool.commit(entry)
            assert spool.pending() == []
        assert await client.get_lock(doc_id) is None
        assert await version_count(client, doc_id) == before + 1
        assert await download(client, doc_id) == payload
        latest = (await client.get_document(doc_id))["document"]
        assert latest["md5checksum__v"] == hashlib.md5(payload).hexdigest()


async def test_a_document_checked_out_by_another_user_is_refused(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    async with connect(fresh_vault, EDITOR) as editor, connect(fresh_vault, ADMIN) as admin:
        doc = await editable_document(admin)
        doc_id = int(doc["id"])
        before = await version_count(admin, doc_id)
        initial = await latest_to_file(admin, doc_id, tmp_path / "initial")
        meta = {"filename": doc["filename__v"], "base_md5": doc["md5checksum__v"]}
        editor_spool = Spool(tmp_path / "editor", editor)
        admin_spool = Spool(tmp_path / "admin", admin)

        held = await editor_spool.begin(doc_id, start_from(initial, **meta))
        with pytest.raises(LockedByOther):
            await admin_spool.begin(doc_id, start_from(initial, **meta))
        assert admin_spool.entry(doc_id) is None
        marks = tmp_path / "admin" / "locks"
        assert not marks.exists() or list(marks.iterdir()) == []  # no lock kept
        lock = await admin.get_lock(doc_id)
        assert lock is not None
        assert str(lock["locked_by__v"]) == str(editor.user_id)

        await editor_spool.commit(held)  # unchanged: nothing uploaded, lock released
        mine = await admin_spool.begin(doc_id, start_from(initial, **meta))
        await admin_spool.commit(mine)
        assert await admin.get_lock(doc_id) is None
        assert await version_count(admin, doc_id) == before


async def test_a_document_this_user_checked_out_on_another_client_is_refused(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    """Two clients of one user (two mounts' spools, each with its own directory): the
    vault lets the second lock what the user holds; its lease refuses, and the first
    client's save is the one checked in."""
    async with connect(fresh_vault, EDITOR) as first, connect(fresh_vault, EDITOR) as second:
        doc = await editable_document(first)
        doc_id = int(doc["id"])
        initial = await latest_to_file(first, doc_id, tmp_path / "initial")
        meta = {"filename": doc["filename__v"], "base_md5": doc["md5checksum__v"]}
        first_spool = Spool(tmp_path / "first", first)
        second_spool = Spool(tmp_path / "second", second)
        held = await first_spool.begin(doc_id, start_from(initial, **meta))
        with pytest.raises(LockedByOther, match="another client"):
            await second_spool.begin(doc_id, start_from(initial, **meta))
        assert second_spool.entry(doc_id) is None
        held.pwrite(held.size(), b"the first client's line\n")
        before = await version_count(first, doc_id)
        await first_spool.commit(held)
        assert await version_count(first, doc_id) == before + 1
        assert await first.get_lock(doc_id) is None


async def test_check_in_during_an_outage_is_uploaded_once_when_the_vault_returns(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    payload = b"written while the vault was away\n" * 1000
    async with connect(fresh_vault) as client:
        doc = await editable_document(client)
        doc_id = int(doc["id"])
        before = await version_count(client, doc_id)
        initial = await latest_to_file(client, doc_id, tmp_path / "initial")
        spool = Spool(tmp_path / "spool", client, retry_initial=0.2, retry_max=1.0)
        async with running(spool):
            entry = await spool.begin(
                doc_id,
                start_from(initial, filename=doc["filename__v"], base_md5=doc["md5checksum__v"]),
            )
            entry.truncate(0)
            entry.pwrite(0, payload)

            await trio.to_thread.run_sync(fresh_vault.stop)
            with pytest.raises(VaultError):
                await spool.commit(entry)
            [status] = spool.pending()
            assert status["doc_id"] == doc_id
            assert status["state"] in ("pending", "uploading")
            assert status["attempts"] >= 1
            assert status["last_error"]
            assert await trio.Path(tmp_path / "spool" / f"{doc_id}.data").read_bytes() == payload

            await trio.to_thread.run_sync(fresh_vault.start)
            assert await spool.wait_idle(timeout=60)
        assert spool.lost_and_found() == []
        assert await client.get_lock(doc_id) is None
        assert await version_count(client, doc_id) == before + 1
        assert await download(client, doc_id) == payload
