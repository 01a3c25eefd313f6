"""Keeping documents for offline (docs/user-guide.md "Keeping documents for offline"):
``vaultfs pin`` on real mounts of a real vault process, which is then stopped.

A folder pinned with ``--wait`` costs one call per document; the next mount, started
offline from the same cache, reads every pinned document while a document nobody read
fails at once; a pinned view's document that changes in the vault is downloaded in the
background after a refresh, and reads offline at once.
"""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import upload_draft
from tests.ops.conftest import run_vaultfs
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

CHECKLIST = "General/Release Checklist/Release_Checklist.md"
#: a read of content that is not kept fails at once offline, and kept content reads at
#: the cache's speed; one that waited for the client's retries would take far longer
AT_ONCE = 10.0
#: calls a pin may spend beyond one per document: a poll of the index that falls in
#: the wait (a page and the deletions), a session's renewal
SLACK = 5


def pinned(mount: MountProcess) -> dict[str, Any]:
    status: dict[str, Any] = mount.status()["pinned"]
    return status


def source_of(directory: Path) -> Path:
    return directory / os.getxattr(directory, "user.vault.filename__v").decode()


def first_document(folders: list[Path]) -> Path:
    """The first document directory in or below ``folders`` (types, subtypes,
    classifications; views' links and documents' own directories are not walked:
    offline, what was never listed fails)."""
    for folder in folders:
        if folder.is_symlink() or not folder.is_dir():
            continue
        if (folder / "versions").is_dir():
            return folder
        try:
            return first_document(sorted(folder.iterdir()))
        except LookupError:
            continue
    raise LookupError("no document")


def document_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and (p / "versions").is_dir())


def test_a_pinned_folder_reads_offline_and_costs_a_call_per_document(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    online = MountProcess(fresh_vault.url, tmp_path / "m", cache_dir=cache)
    try:
        online.start()
        general = online.mountpoint / "General"
        documents = document_dirs(general)
        assert len(documents) >= 5
        before = online.status()["api_calls"]
        said = run_vaultfs("pin", "--wait", "--timeout", "120", str(general))
        assert said.returncode == 0, said.stderr
        assert f"{len(documents)} document(s) pinned" in said.stdout
        assert said.stdout.endswith(f"{general}: all kept for offline\n")
        status = online.status()
        kept = status["pinned"]
        assert kept["documents"] == len(documents) and kept["downloads"] == len(documents)
        assert kept["waiting"] == 0 and kept["to_download"] == 0 and kept["failed"] == []
        assert sorted(kept["paths"]) == sorted(
            str(d.relative_to(online.mountpoint)) for d in documents
        )
        # One call per document (its file); the folder's documents came from the index.
        assert status["api_calls"] - before <= len(documents) + SLACK
        assert "all kept for offline" in run_vaultfs("status", str(online.mountpoint)).stdout
        expected = {
            str(d.relative_to(online.mountpoint)): api.get(
                f"/objects/documents/{int(os.getxattr(d, 'user.vault.id'))}/file"
            ).content
            for d in documents
        }
    finally:
        online.stop()
    fresh_vault.stop()
    offline = MountProcess(fresh_vault.url, tmp_path / "m", cache_dir=cache)
    try:
        offline.start()
        root = offline.mountpoint
        assert offline.status()["vault"]["state"] == "offline"
        assert pinned(offline)["documents"] == len(documents)  # the set survived
        started = time.monotonic()
        for path, content in expected.items():
            assert source_of(root / path).read_bytes() == content
        assert time.monotonic() - started < AT_ONCE
        # A document elsewhere that nobody read is not kept: it fails at once.
        other = first_document([d for d in sorted(root.iterdir()) if d.name != "General"])
        started = time.monotonic()
        with pytest.raises(OSError) as refused:
            source_of(other).read_bytes()
        assert refused.value.errno == errno.EHOSTUNREACH
        assert time.monotonic() - started < AT_ONCE
        # Unpinning works offline (the set is local); the content stays in the cache.
        said = run_vaultfs("unpin", str(root / "General"))
        assert said.returncode == 0, said.stderr
        assert f"{len(documents)} document(s) unpinned" in said.stdout
        assert pinned(offline)["documents"] == 0 and pinned(offline)["bytes"] == 0
        assert "pinned           none" in run_vaultfs("status", str(root)).stdout
        first = next(iter(expected))
        assert source_of(root / first).read_bytes() == expected[first]
        # Not on a mount: a usage error.
        assert run_vaultfs("pin", str(tmp_path)).returncode == 2
    finally:
        offline.stop()


def test_a_pin_the_cache_cannot_hold_is_refused_with_the_numbers(
    fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    with MountProcess(fresh_vault.url, tmp_path / "m", options="cache_size=4K") as mount:
        said = run_vaultfs("pin", str(mount.mountpoint / "General"))
        assert said.returncode == 1
        assert (
            "not pinned: it needs" in said.stderr
            and "the content cache holds 4.0 KiB" in said.stderr
        )
        assert pinned(mount)["documents"] == 0


def test_a_pinned_documents_new_version_comes_in_the_background(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    with MountProcess(fresh_vault.url, tmp_path / "m") as mount:
        checklist = mount.mountpoint / CHECKLIST
        doc_id = int(os.getxattr(checklist.parent, "user.vault.id"))
        # Pinned through a view: Favorites' answer now is the checklist.
        assert api.post(f"/objects/documents/{doc_id}/favorite").status_code == 200
        said = run_vaultfs("pin", "--wait", str(mount.mountpoint / "Favorites"))
        assert said.returncode == 0, said.stderr
        assert "1 document(s) pinned" in said.stdout
        assert pinned(mount)["paths"] == [str(checklist.parent.relative_to(mount.mountpoint))]
        downloads = pinned(mount)["downloads"]
        new = b"# Release checklist\n\n- written by another client\n"
        upload_draft(api, doc_id, "Release_Checklist.md", new)
        calls = mount.status()["api_calls"]
        mount.refresh()  # what `vaultfs refresh` does: the index learns the version
        wait_until(
            lambda: pinned(mount)["waiting"] == 0 and pinned(mount)["downloads"] > downloads,
            timeout=60,
            what="the new version downloaded",
        )
        assert pinned(mount)["downloads"] == downloads + 1
        # The poll (a page, the deletions) and the one download.
        assert mount.status()["api_calls"] - calls <= 1 + SLACK
        fresh_vault.stop()
        started = time.monotonic()
        assert checklist.read_bytes() == new  # kept: no call, no wait for the vault
        assert time.monotonic() - started < AT_ONCE
