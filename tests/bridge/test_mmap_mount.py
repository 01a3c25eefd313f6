"""A source file edited through a writable shared map (``mmap(MAP_SHARED, PROT_WRITE)``
of a file opened read-write), as binary editors and memory-mapped tools do, on a real
mount at the default poll interval: the map is given, and the save is one like any other,
one new version holding exactly the bytes written, checked in after the last release."""

from __future__ import annotations

import hashlib
import mmap
import os
from typing import Any

import httpx
import pytest

from tests.conftest import API, login
from vaultfs.testing.mount_process import MountProcess, calls_since
from vaultfs.testing.vault_process import VaultProcess

pytestmark = pytest.mark.mount

#: what a save through write(2) of the same file costs: the look at the lock, lock, the
#: record read at the check-out (and once more when the mount's details of it are
#: due), the fence, upload, unlock, and one call of slack; the poll of the vault's
#: changes, which may fall in the window, aside
_SAVE_CALLS = 8


@pytest.fixture(scope="module")
def api(module_vault: VaultProcess) -> httpx.Client:
    headers = {"Authorization": login(module_vault.url)}
    return httpx.Client(base_url=module_vault.url + API, headers=headers, timeout=30)


def _record(api: httpx.Client, doc_id: int) -> dict[str, Any]:
    body: dict[str, Any] = api.get(f"/objects/documents/{doc_id}").json()
    assert body["responseStatus"] == "SUCCESS", body
    return body


class MappedSave:
    """Before and after of one save through a map of document ``doc_id``'s source file."""

    def __init__(self, mount: MountProcess, api: httpx.Client, doc_id: int) -> None:
        self.mount, self.api, self.doc_id = mount, api, doc_id
        self.path = mount.source_file(doc_id)
        self.original = self.path.read_bytes()
        self.versions = len(_record(api, doc_id)["versions"])
        # Reading it after another document's file looks like a walk to the mount,
        # which then downloads the next documents: those calls are not the save's.
        self.calls = mount.quiet_calls()

    def check(self, expected: bytes) -> None:
        # (quiet: the check-in follows the last release)
        spent = calls_since(self.calls, self.mount.quiet_calls())
        record = _record(self.api, self.doc_id)
        assert len(record["versions"]) == self.versions + 1
        latest = self.api.get(f"/objects/documents/{self.doc_id}/file").content
        assert hashlib.sha256(latest).hexdigest() == hashlib.sha256(expected).hexdigest()
        lock = self.api.get(f"/objects/documents/{self.doc_id}/lock").json().get("lock") or {}
        assert lock.get("locked_by__v") is None
        assert sum(spent.values()) <= _SAVE_CALLS, spent
        assert self.path.read_bytes() == expected


def test_a_writable_shared_map_saves_once(module_mount: MountProcess, api: httpx.Client) -> None:
    save = MappedSave(module_mount, api, 5)  # a .docx: bytes a binary editor changes
    size = len(save.original)
    with open(save.path, "r+b") as f, mmap.mmap(f.fileno(), 0) as mapped:
        assert len(mapped) == size
        mapped[0:4] = b"MAP1"
        mapped[size // 2 : size // 2 + 3] = b"mid"
        mapped[size - 3 : size] = b"end"
        mapped.flush()  # msync(MS_SYNC)
    expected = bytearray(save.original)
    expected[0:4] = b"MAP1"
    expected[size // 2 : size // 2 + 3] = b"mid"
    expected[size - 3 : size] = b"end"
    save.check(bytes(expected))


def test_a_map_written_after_its_descriptor_closed(
    module_mount: MountProcess, api: httpx.Client
) -> None:
    """C's order: open, mmap, close(fd), write through the map, msync, munmap; the
    close's flush comes before the writes, the release after the munmap."""
    save = MappedSave(module_mount, api, 2)
    fd = os.open(save.path, os.O_RDWR)
    try:
        mapped = mmap.mmap(fd, 0)
    finally:
        os.close(fd)
    with mapped:
        mapped[0:6] = b"mapped"
        mapped.flush()
    save.check(b"mapped" + save.original[6:])


def test_a_file_grown_then_written_through_a_map(
    module_mount: MountProcess, api: httpx.Client
) -> None:
    """Tools that write a file through a map size it first (ftruncate), then fill it."""
    save = MappedSave(module_mount, api, 3)
    tail = b"written through a map\n" * 300  # more than a page past the old end
    size = len(save.original) + len(tail)
    with open(save.path, "r+b") as f:
        f.truncate(size)
        with mmap.mmap(f.fileno(), size) as mapped:
            mapped[len(save.original) :] = tail
            mapped.flush()
    save.check(save.original + tail)


def test_a_read_only_map_of_the_saved_file_sees_the_save(
    module_mount: MountProcess, api: httpx.Client
) -> None:
    """After a save through a map, a reader's map shows the new bytes, not pages kept
    from before the edit."""
    path = module_mount.source_file(4)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as before:
        seen = bytes(before)  # (before the save's calls are counted: see MappedSave)
    save = MappedSave(module_mount, api, 4)
    assert seen == save.original
    with open(save.path, "r+b") as f, mmap.mmap(f.fileno(), 0) as mapped:
        mapped[0:2] = b"RW"
    save.check(b"RW" + save.original[2:])
    with open(save.path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as after:
        assert bytes(after) == b"RW" + save.original[2:]
