"""The fault tier: a mount talks to its vault through a proxy that fails a seeded share
of the requests (503, a reset before forwarding, a reset after the vault answered, a
truncated answer), while rsync copies new files in and edits change documents. Once
the spool has drained, every byte written is in the vault exactly once: one document
per new file, one draft per edit, no duplicate, nothing only in lost+found."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.faultproxy import FAULTS, FaultProxy
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

API = "/api/v25.1"


def all_documents(api: httpx.Client) -> list[dict[str, Any]]:
    body = api.get("/objects/documents", params={"limit": 1000}).json()
    return [item["document"] for item in body["documents"]]


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


@pytest.mark.parametrize("seed", [7, 11])
def test_every_byte_arrives_exactly_once_through_a_failing_proxy(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path, seed: int
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    port = int(fresh_vault.url.rsplit(":", 1)[1])
    before = {int(d["id"]): d for d in all_documents(api)}
    source = tmp_path / "new"
    source.mkdir()
    files = {f"fault file {seed}-{n}.txt": os.urandom(2000 + 997 * n) for n in range(12)}
    for name, data in files.items():
        (source / name).write_bytes(data)
    with FaultProxy(port, seed=seed, share=0.25) as proxy:
        # A poll every second: the index's own calls go through the faults too, between
        # and during the saves, as over hours of a real mount's life.
        mount = MountProcess(proxy.url, tmp_path / "m", options="poll_interval=1,retries=8")
        try:
            mount.start()
            general = mount.mountpoint / "General"
            edits = sorted(p for p in general.glob("*/*.md"))[:2]
            assert edits, "the demo vault has markdown documents in General"
            originals = {p: p.read_bytes() for p in edits}
            proxy.active = True
            subprocess.run(
                ["rsync", "-r", f"{source}/", f"{general}/"],
                capture_output=True,
                timeout=300,
                check=False,  # a close may report EIO: the spool keeps and retries
            )
            # A write the faults made fail (its check-out's look or lock failed past
            # its tries: EIO) is one its program was told of.
            told = {
                path: subprocess.run(
                    ["sh", "-c", 'echo "edited through faults" >> "$1"', "sh", path],
                    capture_output=True,
                    timeout=120,
                    check=False,
                ).returncode
                for path in edits
            }
            wait_until(
                lambda: not mount.status()["pending_uploads"], timeout=240, what="an empty spool"
            )
            proxy.active = False
            status = mount.status()
            assert status["lost_and_found"] == [], status["lost_and_found"]
        finally:
            mount.stop()
    # Every new file is one document, whole; nothing twice.
    after = all_documents(api)
    created = [d for d in after if int(d["id"]) not in before]
    by_name: dict[str, list[dict[str, Any]]] = {}
    for doc in created:
        by_name.setdefault(doc["filename__v"], []).append(doc)
    assert sorted(by_name) == sorted(files), sorted(by_name)
    for name, docs in by_name.items():
        assert len(docs) == 1, f"{name} created {len(docs)} times"
        content = api.get(f"/objects/documents/{docs[0]['id']}/file").content
        assert md5(content) == md5(files[name])
    # Every edit is one draft holding the original plus the line; one whose write failed
    # (its program was told) left the document as it was.
    for path, original in originals.items():
        matches = [d for d in after if d["filename__v"] == path.name and int(d["id"]) in before]
        assert len(matches) == 1
        doc = matches[0]
        content = api.get(f"/objects/documents/{doc['id']}/file").content
        saved = original + b"edited through faults\n" if told[path] == 0 else original
        assert content == saved, (path, told[path])
        old = before[int(doc["id"])]
        assert (doc["major_version_number__v"], doc["minor_version_number__v"]) == (
            old["major_version_number__v"],
            old["minor_version_number__v"] + (told[path] == 0),
        )
    hit = {kind for kind in FAULTS if proxy.counts[kind]}
    assert hit == set(FAULTS), proxy.counts
