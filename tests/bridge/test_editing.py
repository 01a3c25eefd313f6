"""The write wiring of the core, against a fake spool with the spool's interface."""

from __future__ import annotations

import errno
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio

from vaultfs import errors
from vaultfs.bridge.blobcache import BlobCache
from vaultfs.bridge.core import Core
from vaultfs.bridge.index import DocumentIndex, TypeCatalog
from vaultfs.bridge.inodes import ROOT_INODE
from vaultfs.bridge.tree import Tree

from .fakevault import FakeVault


class FakeEntry:
    def __init__(self, doc_id: int, path: Path) -> None:
        self.doc_id = doc_id
        self.path = path

    def size(self) -> int:
        return self.path.stat().st_size

    def pread(self, offset: int, size: int) -> bytes:
        with self.path.open("rb") as f:
            f.seek(offset)
            return f.read(size)

    def pwrite(self, offset: int, data: bytes) -> int:
        with self.path.open("r+b") as f:
            f.seek(offset)
            return f.write(data)

    def truncate(self, size: int) -> None:
        os.truncate(self.path, size)

    def fsync(self) -> None:
        pass


class FakeSpool:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.entries: dict[int, FakeEntry] = {}
        self.begun: list[dict[str, Any]] = []
        self.committed: list[bytes] = []
        self.locked_by_other: set[int] = set()

    def entry(self, doc_id: int) -> FakeEntry | None:
        return self.entries.get(doc_id)

    async def begin(
        self, doc_id: int, *, filename: str, base_md5: str | None, initial: Path | None
    ) -> FakeEntry:
        if doc_id in self.locked_by_other:
            raise errors.LockedByOther(f"{doc_id} is locked")
        if doc_id in self.entries:  # as the real spool: an open edit keeps its content
            return self.entries[doc_id]
        self.begun.append({"doc_id": doc_id, "filename": filename, "initial": initial})
        path = self.directory / str(doc_id)
        path.write_bytes(initial.read_bytes() if initial else b"")  # noqa: ASYNC240 - a test fake
        self.entries[doc_id] = FakeEntry(doc_id, path)
        return self.entries[doc_id]

    async def commit(self, entry: FakeEntry) -> None:
        self.committed.append(entry.path.read_bytes())
        del self.entries[entry.doc_id]

    def pending(self) -> list[dict[str, Any]]:
        return [{"doc_id": d} for d in self.entries]


@pytest.fixture
async def setup(tmp_path: Path) -> AsyncIterator[tuple[Core, FakeSpool, FakeVault]]:
    vault = FakeVault()
    vault.add("Guide", b"original content\n", filename="guide.txt")
    index = DocumentIndex(vault)  # type: ignore[arg-type]
    await index.build()
    spool = FakeSpool(tmp_path)
    blobs = BlobCache(tmp_path / "cache", 1 << 20)
    async with trio.open_nursery() as nursery:
        await nursery.start(blobs.run)
        tree = Tree(vault, index, TypeCatalog(vault))  # type: ignore[arg-type]
        yield Core(tree, blobs, spool=spool), spool, vault  # type: ignore[arg-type]
        nursery.cancel_scope.cancel()


async def _file(core: Core) -> int:
    ino = ROOT_INODE
    for name in ("Reference", "Guide", "guide.txt"):
        ino = (await core.lookup(ino, name)).ino
    return ino


async def test_edit_in_place_starts_from_the_content_and_checks_in_on_last_flush(setup) -> None:  # type: ignore[no-untyped-def]
    core, spool, _ = setup
    ino = await _file(core)
    first = await core.open(ino, os.O_RDWR)
    second = await core.open(ino, os.O_WRONLY)
    assert spool.begun[0]["initial"] is not None  # started from the current content
    assert await core.write(first.fh, 0, b"CHANGED") == 7
    assert (await core.getattr(ino)).size == len(b"original content\n")
    reader = await core.open(ino, os.O_RDONLY)
    assert await core.read(reader.fh, 0, 7) == b"CHANGED"
    await core.release(reader.fh)
    await core.flush(first.fh)  # not the last writer: nothing checked in yet
    await core.release(first.fh)
    assert spool.committed == []
    await core.flush(second.fh)
    await core.release(second.fh)
    assert spool.committed == [b"CHANGEDl content\n"]


async def test_truncating_open_starts_empty(setup) -> None:  # type: ignore[no-untyped-def]
    core, spool, _ = setup
    ino = await _file(core)
    opened = await core.open(ino, os.O_WRONLY | os.O_TRUNC)
    assert spool.begun[0]["initial"] is None
    await core.write(opened.fh, 0, b"new")
    await core.setattr(ino, 2, opened.fh)
    await core.flush(opened.fh)
    await core.release(opened.fh)
    assert spool.committed == [b"ne"]


async def test_locked_by_another_user_is_ebusy(setup) -> None:  # type: ignore[no-untyped-def]
    core, spool, _ = setup
    spool.locked_by_other.add(1)
    with pytest.raises(errors.LockedByOther) as info:
        await core.open(await _file(core), os.O_WRONLY)
    assert errors.errno_for(info.value) == errno.EBUSY
