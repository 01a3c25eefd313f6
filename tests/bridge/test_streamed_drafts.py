"""Drafts sent while they are written (``write/spool/streaming``), against a real vault.

Content written from its start to its end is streamed once it passes ``STREAM_FROM``;
whatever happens to the stream, a check-in leaves exactly one draft holding exactly
the bytes written: the streamed one when the content only grew, the file sent at close
when it was overwritten, truncated, or the stream's request failed. The mount test
drives ``cp`` of a big file onto a document.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
import trio

from tests.bridge.test_spool_live import (
    connect,
    download,
    editable_document,
    latest_to_file,
    running,
    version_count,
)
from vaultfs.bridge.write.spool.entry import SpoolEntry
from vaultfs.bridge.write.spool.spool import Spool, start_from
from vaultfs.bridge.write.spool.streaming import STREAM_FROM
from vaultfs.client import VaultClient
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess

_CHUNK = 128 * 1024
#: twice the threshold: the stream starts halfway through
_SIZE = 2 * STREAM_FROM + 12345


async def _edit(
    client: VaultClient,
    tmp_path: Path,
    payload: bytes,
    *,
    then: Callable[[SpoolEntry], None] | None = None,
) -> tuple[int, int]:
    """Write ``payload`` sequentially into a checked-out document (then, if given, do
    ``then`` to the entry) and check it in; (document id, versions before)."""
    doc = await editable_document(client)
    doc_id = int(doc["id"])
    before = await version_count(client, doc_id)
    initial = await latest_to_file(client, doc_id, tmp_path / "initial")
    async with running(Spool(tmp_path / "spool", client)) as spool:
        entry = await spool.begin(
            doc_id, start_from(initial, filename=doc["filename__v"], base_md5=doc["md5checksum__v"])
        )
        entry.truncate(0)
        for offset in range(0, len(payload), _CHUNK):
            entry.pwrite(offset, payload[offset : offset + _CHUNK])
            spool.wrote(entry)
            await trio.lowlevel.checkpoint()  # lets the stream send as a program's writes do
        if then is not None:
            then(entry)
            spool.wrote(entry)
        await spool.commit(entry)
        assert spool.pending() == []
    return doc_id, before


def _overwrite(entry: SpoolEntry, data: bytes) -> None:
    """A program that goes back to write a header last."""
    entry.pwrite(0, data)


def _streamed(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "stream" in r.getMessage()]


async def test_content_written_from_start_to_end_is_streamed_into_one_draft(
    fresh_vault: VaultProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="vaultfs")
    payload = os.urandom(_SIZE)
    async with connect(fresh_vault) as client:
        doc_id, before = await _edit(client, tmp_path, payload)
        assert any("streaming the draft" in m for m in _streamed(caplog))
        assert not any("stream stopped" in m for m in _streamed(caplog))
        assert await version_count(client, doc_id) == before + 1
        assert await download(client, doc_id) == payload
        assert await client.get_lock(doc_id) is None


async def test_an_overwrite_after_streaming_began_sends_the_file_and_makes_one_draft(
    fresh_vault: VaultProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="vaultfs")
    payload = os.urandom(_SIZE)
    header = b"HEADER written last, at the start"
    async with connect(fresh_vault) as client:
        doc_id, before = await _edit(
            client, tmp_path, payload, then=lambda entry: _overwrite(entry, header)
        )
        assert any("stream stopped" in m for m in _streamed(caplog))
        assert await version_count(client, doc_id) == before + 1
        final = header + payload[len(header) :]
        assert await download(client, doc_id) == final
        latest = (await client.get_document(doc_id))["document"]
        assert latest["md5checksum__v"] == hashlib.md5(final).hexdigest()


async def test_a_truncation_after_streaming_began_makes_one_draft_of_what_followed(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    def start_over(entry: SpoolEntry) -> None:  # a program that starts over
        entry.truncate(0)
        entry.pwrite(0, b"short second attempt\n")

    async with connect(fresh_vault) as client:
        doc_id, before = await _edit(client, tmp_path, os.urandom(_SIZE), then=start_over)
        assert await version_count(client, doc_id) == before + 1
        assert await download(client, doc_id) == b"short second attempt\n"


@pytest.mark.skipif(shutil.which("cp") is None, reason="needs cp")
def test_cp_of_a_big_file_onto_a_document_makes_one_complete_draft(
    module_mount: MountProcess, module_api: httpx.Client, tmp_path: Path
) -> None:
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(_SIZE))
    target = next(
        p
        for p in sorted(module_mount.mountpoint.rglob("*"))
        if p.is_file()
        and "versions" not in p.parts
        and "renditions" not in p.parts
        and "attachments" not in p.parts
        and os.access(p, os.W_OK)
    )
    doc_id = int(os.getxattr(target.parent, "user.vault.id").decode())
    before = len(module_api.get(f"/objects/documents/{doc_id}/versions").json()["versions"])
    subprocess.run(["cp", str(source), str(target)], check=True)
    module_mount.settle()  # the check-in follows the last close
    versions = module_api.get(f"/objects/documents/{doc_id}/versions").json()["versions"]
    assert len(versions) == before + 1
    with module_api.stream("GET", f"/objects/documents/{doc_id}/file") as answer:
        assert (
            hashlib.md5(answer.read()).hexdigest() == hashlib.md5(source.read_bytes()).hexdigest()
        )
    assert target.read_bytes() == source.read_bytes()
