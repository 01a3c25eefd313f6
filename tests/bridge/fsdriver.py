"""Driving the file system as the kernel would, in unit tests (no mount)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.inodes import ROOT_INODE

__all__ = ["listdir", "read_all", "running", "walk"]


@asynccontextmanager
async def running(cache: BlobCache) -> AsyncIterator[BlobCache]:
    async with trio.open_nursery() as nursery:
        await nursery.start(cache.run)
        yield cache
        nursery.cancel_scope.cancel()


async def walk(core: FileSystem, *names: str) -> int:
    ino = ROOT_INODE
    for name in names:
        ino = (await core.lookup(ino, name)).ino
    return ino


async def listdir(core: FileSystem, ino: int) -> dict[str, int]:
    fh = await core.opendir(ino)
    try:
        entries = await core.readdir(fh, 0)
    finally:
        core.releasedir(fh)
    return {name: attr.mode for _, name, _, attr in entries}


async def read_all(core: FileSystem, ino: int) -> bytes:
    opened = await core.open(ino, 0)
    data = b""
    while chunk := await core.read(opened.fh, len(data), 4096):
        data += chunk
    await core.release(opened.fh)
    return data
