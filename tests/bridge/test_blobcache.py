"""The content cache: streaming reads during a download, LRU bound, restart."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

from vaultfs import errors
from vaultfs.bridge.content import blobcache
from vaultfs.bridge.content.blobcache import CHUNK, BlobCache

from .fakevault import FakeDownload
from .fsdriver import running


def _fetch(data: bytes, gate: trio.Event | None = None, counter: list[int] | None = None):
    @asynccontextmanager
    async def fetch(offset: int) -> AsyncIterator[FakeDownload]:
        if counter is not None:
            counter.append(offset)
        yield FakeDownload(data, offset, gate=gate)

    return fetch


async def test_first_bytes_arrive_before_the_download_completes(tmp_path: Path) -> None:
    data = os.urandom(3 * (1 << 20) + 17)
    gate = trio.Event()
    async with running(BlobCache(tmp_path, 1 << 30)) as cache:
        first = await cache.open("k", _fetch(data, gate))
        second = await cache.open("k", _fetch(data, gate))
        # The first chunk is readable while the rest is held at the gate.
        assert await first.read(0, 100) == data[:100]
        assert not first.complete

        async def read_tail(results: list[bytes]) -> None:
            results.append(await second.read(len(data) - 10, 10))

        results: list[bytes] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read_tail, results)
            await trio.testing.wait_all_tasks_blocked()
            assert results == []  # waiting for bytes that have not arrived
            gate.set()
        assert results == [data[-10:]]
        assert await first.read(len(data), 10) == b""
        assert cache.exact_size("k") == len(data)
        # The last bytes are readable a moment before the download is filed away.
        await first.wait_complete()
        assert cache.is_cached("k")
        first.close()
        second.close()


class _Pushed:
    """A download whose pieces the test hands over one by one (``push``)."""

    def __init__(self, data: bytes, piece: int) -> None:
        self.data, self.offset, self.filename = data, 0, None
        self.length = len(data)
        self._piece = piece
        self._send, self._receive = trio.open_memory_channel[bytes](100)
        self.pushed = 0

    def push(self, count: int) -> None:
        for _ in range(count):
            start = self.pushed
            self.pushed = min(len(self.data), start + self._piece)
            self._send.send_nowait(self.data[start : self.pushed])
        if self.pushed == len(self.data):
            self._send.close()

    async def pieces(self) -> AsyncIterator[bytes]:
        async for piece in self._receive:
            yield piece


async def test_a_reader_keeping_up_is_answered_from_memory_and_one_lagging_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the download just received is handed to its readers from memory (2 MiB of
    it); older bytes are read back from the cache file. Either way, the bytes asked for."""
    data = os.urandom(20 * 150_001)
    download = _Pushed(data, 150_001)  # each piece a batch of its own (over 128 KiB)
    preads: list[int] = []
    pread = os.pread

    def counted(fd: int, size: int, offset: int) -> bytes:
        preads.append(offset)
        return pread(fd, size, offset)

    monkeypatch.setattr(os, "pread", counted)

    @asynccontextmanager
    async def fetch(offset: int) -> AsyncIterator[_Pushed]:
        yield download

    async with running(BlobCache(tmp_path, 1 << 30)) as cache:
        handle = await cache.open("k", fetch)
        download.push(2)
        assert await handle.read(0, 200_000) == data[:200_000]  # two pieces
        assert await handle.read(150_000, 10) == data[150_000:150_010]  # across them
        assert await handle.read(3, 5) == data[3:8]  # within one
        assert preads == []
        download.push(15)  # 2.5 MB: the first pieces are no longer in memory
        await trio.testing.wait_all_tasks_blocked()  # (all of them received)
        assert await handle.read(1000, 300_000) == data[1000:301_000]
        assert preads == [1000]
        end = download.pushed
        assert await handle.read(end - 400_000, 400_000) == data[end - 400_000 : end]
        assert preads == [1000]
        download.push(3)  # the end
        assert await handle.read(len(data) - 10, 100) == data[-10:]
        await handle.wait_complete()
        assert await handle.read(0, 100) == data[:100]  # whole: from the file
        assert preads == [1000, 0]
        handle.close()


async def test_a_slow_disk_sends_the_writes_to_a_worker_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes are made in the loop's thread until one is slow; then in a worker thread,
    so that a disk that throttles its writers never holds up the loop twice."""
    threaded: list[int] = []
    run_sync = trio.to_thread.run_sync

    async def counted(fn: Any, *args: Any) -> Any:
        threaded.append(1)
        return await run_sync(fn, *args)

    data = os.urandom(6 * CHUNK)
    async with running(BlobCache(tmp_path, 1 << 30)) as cache:
        monkeypatch.setattr(trio.to_thread, "run_sync", counted)
        # No write is slow: a loaded machine's disk may take over 5 ms for one (CI).
        monkeypatch.setattr(blobcache, "_SLOW_WRITE", float("inf"))
        fast = await cache.open("fast", _fetch(data))
        assert await fast.read(0, len(data)) == data
        await fast.wait_complete()
        assert threaded == []
        monkeypatch.setattr(blobcache, "_SLOW_WRITE", -1.0)  # every write is "slow"
        slow = await cache.open("slow", _fetch(data))
        await slow.wait_complete()
        assert await slow.read(0, len(data)) == data
        assert 0 < len(threaded) < 6  # the first write in the loop, the rest not
        fast.close()
        slow.close()


async def test_a_download_in_tiny_pieces_is_written_whole(tmp_path: Path) -> None:
    """More pieces than one writev takes (a network handing a few bytes at a time)."""
    data = os.urandom(300_000)

    @asynccontextmanager
    async def fetch(offset: int) -> AsyncIterator[FakeDownload]:
        yield FakeDownload(data, offset, piece=10)

    async with running(BlobCache(tmp_path, 1 << 30)) as cache:
        handle = await cache.open("k", fetch)
        await handle.wait_complete()
        assert await handle.read(0, len(data)) == data
        handle.close()
    assert (tmp_path / "blobs").is_dir() and cache.is_cached("k")


async def test_lru_keeps_the_cache_under_its_bound(tmp_path: Path) -> None:
    async with running(BlobCache(tmp_path, 250)) as cache:
        for key in "abc":
            handle = await cache.open(key, _fetch(key.encode() * 100))
            await handle.wait_complete()
            handle.close()
        assert not cache.is_cached("a") and cache.is_cached("b") and cache.is_cached("c")
        assert cache.usage()["bytes"] <= 250
        assert len(list((tmp_path / "blobs").iterdir())) == 2


async def test_the_cache_survives_a_restart_without_downloading(tmp_path: Path) -> None:
    data = b"x" * 5000
    async with running(BlobCache(tmp_path, 1 << 20)) as cache:
        await cache.cached_path("k", _fetch(data))
    assert os.stat(tmp_path).st_mode & 0o777 == 0o700
    counter: list[int] = []
    async with running(BlobCache(tmp_path, 1 << 20)) as cache:
        assert cache.is_cached("k") and cache.exact_size("k") == 5000
        handle = await cache.open("k", _fetch(data, counter=counter))
        assert handle.complete and await handle.read(0, 10000) == data
        handle.close()
    assert counter == []
    blob = next((tmp_path / "blobs").iterdir())
    assert blob.stat().st_mode & 0o777 == 0o600


async def test_a_failed_download_fails_the_read_and_is_retried(tmp_path: Path) -> None:
    @asynccontextmanager
    async def broken(offset: int) -> AsyncIterator[FakeDownload]:
        raise errors.VaultUnavailable("down")
        yield  # pragma: no cover

    async with running(BlobCache(tmp_path, 1 << 20)) as cache:
        handle = await cache.open("k", broken)
        with pytest.raises(errors.VaultUnavailable):
            await handle.read(0, 10)
        handle.close()
        handle = await cache.open("k", _fetch(b"fine"))
        assert await handle.read(0, 10) == b"fine"
        handle.close()


async def test_eviction_never_takes_a_pinned_file(tmp_path: Path) -> None:
    """A pinned file (``keeps``) counts against the bound but is never evicted: what
    does not fit goes among the others, oldest first, the newest too when only pinned
    files are left."""
    async with running(BlobCache(tmp_path, 250)) as cache:
        pinned = {BlobCache.file_of("a")}
        cache.keeps = lambda name: name in pinned
        for key in "abcd":
            await cache.cached_path(key, _fetch(key.encode() * 100))
            assert cache.is_cached("a")  # the oldest, yet pinned
        assert not cache.is_cached("b") and not cache.is_cached("c") and cache.is_cached("d")
        assert cache.usage()["bytes"] == 200
        pinned.add(BlobCache.file_of("d"))
        # Nothing but pinned files to make room: the newcomer is served, then goes.
        path = await cache.cached_path("e", _fetch(b"e" * 100))
        assert not path.exists() and not cache.is_cached("e")
        assert cache.is_cached("a") and cache.is_cached("d")
        # Unpinned, a file is the least recently used again and goes first.
        pinned.discard(BlobCache.file_of("a"))
        await cache.cached_path("f", _fetch(b"f" * 100))
        assert not cache.is_cached("a") and cache.is_cached("d") and cache.is_cached("f")
        assert len(list((tmp_path / "blobs").iterdir())) == 2


async def test_a_smaller_bound_at_a_restart_keeps_the_pinned_files(tmp_path: Path) -> None:
    async with running(BlobCache(tmp_path, 1 << 20)) as cache:
        for key in "abc":
            await cache.cached_path(key, _fetch(key.encode() * 100))
    smaller = BlobCache(tmp_path, 150)
    smaller.keeps = lambda name: name == BlobCache.file_of("a")  # the builder's subscription
    async with running(smaller) as cache:
        assert cache.is_cached("a") and not cache.is_cached("b") and not cache.is_cached("c")
        assert cache.usage()["bytes"] == 100
