"""The content cache: immutable file contents on disk, bounded, streamed while fetched.

Owns the cache directory (0700; files 0600): one file per content key (a version id
plus checksum, a rendition, an attachment version), least-recently-used eviction under
a byte bound that never takes a pinned file (``keeps``: the documents kept for
offline, whose set is ``content.pins``'; they count against the bound), rebuilt from
the files on start so it survives restarts, and the exact sizes learned from downloads
(``sizes.json``, no secrets in it).

Reads stream: the first reader of a key starts one background download into a
``.part`` file; every reader waits only until the bytes it asks for have arrived (a
``trio.Event`` replaced as bytes come and as they land), so the first bytes reach a
reader long before the download completes, and several keys download in parallel. A
reader that keeps up with the download is answered from the last 2 MiB it received,
held in memory until it ends, rather than by reading back what was just written (one
copy of every byte less for a cold sequential read). Disk writes are fed through a
bounded channel and made in the loop's thread (a page-cache write) until the disk is
found slow, then in a worker thread, so the trio loop keeps serving reads and receiving
the next bytes while the disk writes the last ones. An open handle keeps its
file descriptor, so eviction (unlink) never breaks a reader.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import trio

from vaultfs import errors
from vaultfs.client import Download

__all__ = ["BlobCache", "BlobHandle", "Fetch"]

log = logging.getLogger(__name__)

#: opens the download of a key's content from a byte offset
Fetch = Callable[[int], AbstractAsyncContextManager[Download]]

#: bytes gathered from the network before readers wake and the disk writer gets them;
#: small, so that the first read waits for little more than the bytes it asks for
CHUNK = 1 << 17
#: batches queued for the disk writer before the download waits for the disk (memory bound)
_QUEUED_CHUNKS = 32
#: the last bytes received that a download keeps in memory for its readers
_RECENT = 2 << 20
#: a write to the cache file longer than this (seconds) sends a download's writes to a
#: worker thread
_SLOW_WRITE = 0.005
#: the most buffers one ``writev`` takes
_IOV_MAX = os.sysconf("SC_IOV_MAX")
_SIZES_FILE = "sizes.json"
#: seconds between two saves of ``sizes.json`` while sizes keep being learned
_SIZES_SAVE_INTERVAL = 2.0


class _Lru:
    """File name -> size, least recently used first, under a byte bound: what does not
    fit goes, oldest first, except the files ``keeps`` says are pinned (kept for
    offline, ``content.pins``), which count against the bound and are never evicted;
    evicting a file deletes it. A pinned file met by an eviction moves to the recent
    end, so the next one does not walk past it again (a cache full of pinned files
    costs each insertion O(1) on average, not a scan)."""

    def __init__(self, maxsize: int, directory: Path, keeps: Callable[[str], bool]) -> None:
        self.maxsize = maxsize
        self.currsize = 0
        self._directory = directory
        self._keeps = keeps
        self._sizes: OrderedDict[str, int] = OrderedDict()

    def __contains__(self, name: object) -> bool:
        return name in self._sizes

    def __len__(self) -> int:
        return len(self._sizes)

    @staticmethod
    def _cost(size: int) -> int:
        return max(size, 1)  # an empty file still takes an entry

    def load(self, name: str, size: int) -> None:
        """Take a file found on disk (the newest last), without evicting: the files
        to keep are known once the mount's parts are built (``evict`` then)."""
        self.discard(name)
        self._sizes[name] = size
        self.currsize += self._cost(size)

    def add(self, name: str, size: int) -> None:
        """A complete file, the most recently used; evicts what no longer fits."""
        self.load(name, size)
        self.evict()

    def touch(self, name: str) -> None:
        self._sizes.move_to_end(name)

    def discard(self, name: str) -> None:
        size = self._sizes.pop(name, None)
        if size is not None:
            self.currsize -= self._cost(size)

    def clear(self) -> None:
        """Forget every file (their deletion is the caller's)."""
        self._sizes.clear()
        self.currsize = 0

    def evict(self) -> None:
        """Delete the least recently used files that are not pinned until the rest fits
        (the newest file too, when only pinned ones are older: it is served to the
        handles open on it and read again later)."""
        passed = 0
        while self.currsize > self.maxsize and passed < len(self._sizes):
            name = next(iter(self._sizes))
            if self._keeps(name):
                self._sizes.move_to_end(name)
                passed += 1
                continue
            size = self._sizes.pop(name)
            self.currsize -= self._cost(size)
            with contextlib.suppress(FileNotFoundError):
                (self._directory / name).unlink()
            log.debug("cache: evicted %s (%d bytes)", name, size)


class _Download:
    """A download in progress: the bytes received so far, the last of them in memory,
    and how many of them are in the ``.part`` file."""

    def __init__(self, key: str, part: Path) -> None:
        self.key = key
        self.part = part
        #: bytes received, and bytes written to the ``.part`` file (never more)
        self.received = 0
        self.have = 0
        #: the last pieces received, (offset, bytes), oldest first, ``_RECENT`` bytes
        #: or a little more: a reader keeping up with the download is answered from
        #: them, without reading back what was just written
        self._recent: deque[tuple[int, bytes]] = deque()
        self._recent_bytes = 0
        #: the exact length, when the response said it
        self.length: int | None = None
        #: the response has begun (its length, when sent, is remembered by then)
        self.started = False
        self.done = False
        self.error: BaseException | None = None
        self.progress = trio.Event()

    def notify(self) -> None:
        self.progress.set()
        self.progress = trio.Event()

    def arrived(self, pieces: list[bytes]) -> None:
        """``pieces`` came, following what came before: readers may have them now."""
        recent = self._recent
        for piece in pieces:
            recent.append((self.received, piece))
            self.received += len(piece)
            self._recent_bytes += len(piece)
        while self._recent_bytes - len(recent[0][1]) >= _RECENT:
            self._recent_bytes -= len(recent.popleft()[1])
        self.notify()

    def recent(self, offset: int, end: int) -> bytes | None:
        """Bytes ``offset`` to ``end`` (received already) from memory; None when some
        of them are no longer there."""
        recent = self._recent
        if not recent or offset < recent[0][0]:
            return None
        parts: list[bytes | memoryview] = []
        for start, piece in recent:
            stop = start + len(piece)
            if stop <= offset:
                continue
            if start >= end:
                break
            if start >= offset and stop <= end:
                parts.append(piece)
            else:
                view = memoryview(piece)
                parts.append(view[max(offset - start, 0) : min(end, stop) - start])
        if len(parts) == 1 and isinstance(parts[0], bytes):
            return parts[0]
        return b"".join(parts)

    def finished(self) -> None:
        """The download ended (whole or failed): what it holds is read from the file."""
        self._recent.clear()
        self._recent_bytes = 0
        self.notify()


class BlobHandle:
    """An open content of one key: random reads that wait for the bytes they need."""

    def __init__(self, cache: BlobCache, key: str, fd: int, download: _Download | None):
        self._cache = cache
        self.key = key
        self._fd = fd
        self._download = download

    @property
    def complete(self) -> bool:
        return self._download is None or self._download.done

    async def _wait(self, ready: Callable[[_Download], bool]) -> None:
        dl = self._download
        if dl is None:
            return
        with trio.move_on_after(self._cache.read_timeout) as scope:
            while not ready(dl) and dl.error is None:
                await dl.progress.wait()
        if scope.cancelled_caught:
            raise errors.VaultUnavailable(f"no progress downloading {self.key}")
        if dl.error is not None and not ready(dl):
            if isinstance(dl.error, errors.VaultError):
                raise dl.error  # what the vault said (gone, no access, unreachable)
            raise errors.VaultUnavailable(f"download of {self.key} failed: {dl.error}")

    async def wait_started(self) -> None:
        """Wait until the download's response began (so its length is known, if sent)."""
        await self._wait(lambda dl: dl.started or dl.done)

    async def wait_complete(self) -> None:
        await self._wait(lambda dl: dl.done)

    async def read(self, offset: int, size: int) -> bytes:
        dl = self._download
        if dl is not None and not dl.done:

            def end_of(dl: _Download) -> int:
                return offset + size if dl.length is None else min(offset + size, dl.length)

            await self._wait(lambda dl: dl.done or dl.received >= end_of(dl))
            if not dl.done:
                data = dl.recent(offset, end_of(dl))
                if data is not None:
                    return data
                # Received long ago (the reader lags the download): on disk by now,
                # or soon.
                await self._wait(lambda dl: dl.done or dl.have >= end_of(dl))
        return os.pread(self._fd, size, offset)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class BlobCache:
    def __init__(self, directory: Path, max_bytes: int, *, read_timeout: float = 60.0) -> None:
        self.directory = directory
        self.max_bytes = max_bytes
        #: longest a read waits for the next chunk before it fails with EIO
        self.read_timeout = read_timeout
        self._blobs = directory / "blobs"
        self._blobs.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(directory, 0o700)
        os.chmod(self._blobs, 0o700)
        #: whether the cache file named so (``file_of``) must not be evicted: the
        #: pinned documents' content (``content.pins``, subscribed by the builder)
        self.keeps: Callable[[str], bool] = lambda name: False
        self._lru = _Lru(max_bytes, self._blobs, lambda name: self.keeps(name))
        self._active: dict[str, _Download] = {}
        self._sizes: dict[str, int] = self._load_sizes()
        #: called with a content key whose exact size was just learned
        self.on_size: list[Callable[[str], None]] = []
        self._sizes_dirty = trio.Event()
        self._nursery: trio.Nursery | None = None
        #: background work (``spawn``) started and not finished: a prefetch's calls are
        #: sent only once its task runs, so ``downloading`` alone misses those queued
        self._background = 0
        self._rebuild()

    # --- state kept on disk ------------------------------------------------------

    def _rebuild(self) -> None:
        """Refill the LRU from the files left by an earlier run, oldest use first."""
        files: list[tuple[float, str, int]] = []
        for path in self._blobs.iterdir():
            if path.name.endswith(".part"):
                path.unlink(missing_ok=True)  # an interrupted download
                continue
            st = path.stat()
            files.append((max(st.st_atime, st.st_mtime), path.name, st.st_size))
        for _, name, size in sorted(files):
            self._lru.load(name, size)

    def _load_sizes(self) -> dict[str, int]:
        try:
            data = json.loads((self.directory / _SIZES_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return {str(k): int(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def remember_size(self, key: str, size: int) -> None:
        """Record ``key``'s exact size (told by a download, or known from an upload).

        Saved to disk within ``_SIZES_SAVE_INTERVAL`` while the cache runs (and when it
        stops), not on every call: a walk downloading many files would otherwise rewrite
        the whole file once per file."""
        if self._sizes.get(key) == size:
            return
        self._sizes[key] = size
        for callback in self.on_size:
            callback(key)
        if self._nursery is None:
            self._save_sizes()
        else:
            self._sizes_dirty.set()

    def _save_sizes(self) -> None:
        target = self.directory / _SIZES_FILE
        tmp = target.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(self._sizes, f)
        tmp.replace(target)

    @staticmethod
    @functools.lru_cache(maxsize=4096)
    def _name(key: str) -> str:
        # Kept for the keys used lately: a warm walk asks it a few times per file opened.
        return hashlib.sha256(key.encode()).hexdigest()[:40]

    @classmethod
    def file_of(cls, key: str) -> str:
        """The name of the cache file that holds ``key``'s content (what ``keeps`` is
        asked about)."""
        return cls._name(key)

    # --- queries -----------------------------------------------------------------

    def exact_size(self, key: str) -> int | None:
        """The content's exact byte size, when a download has told it."""
        size = self._sizes.get(key)
        if size is None and self.is_cached(key):
            with contextlib.suppress(OSError):
                size = (self._blobs / self._name(key)).stat().st_size
        return size

    def is_cached(self, key: str) -> bool:
        return self._name(key) in self._lru

    def room(self) -> int:
        """Bytes the cache may still take before it evicts anything."""
        return max(0, self.max_bytes - int(self._lru.currsize))

    def usage(self) -> dict[str, Any]:
        return {
            "bytes": int(self._lru.currsize),
            "limit": self.max_bytes,
            "files": len(self._lru),
            "downloading": len(self._active),
            "read_ahead": self._background,
        }

    # --- running -----------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the download tasks until cancelled (``nursery.start(cache.run)``)."""
        # What an earlier run left over the bound (a smaller cache_size) goes now that
        # the pinned files are known.
        self._lru.evict()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            try:
                while True:
                    await self._sizes_dirty.wait()
                    self._sizes_dirty = trio.Event()
                    self._save_sizes()
                    await trio.sleep(_SIZES_SAVE_INTERVAL)
            finally:
                self._nursery = None
                if self._sizes_dirty.is_set():
                    self._save_sizes()

    def spawn(self, work: Callable[..., Awaitable[None]], *args: Any) -> bool:
        """Run background work that fills the cache (a prefetch) alongside its
        downloads; False when the cache is not running."""
        if self._nursery is None:
            return False
        self._background += 1
        self._nursery.start_soon(self._counted, work, args)
        return True

    async def _counted(self, work: Callable[..., Awaitable[None]], args: tuple[Any, ...]) -> None:
        try:
            await work(*args)
        finally:
            self._background -= 1

    async def cached_path(self, key: str, fetch: Fetch) -> Path:
        """The path of ``key``'s complete content, downloading it first when needed."""
        handle = await self.open(key, fetch)
        try:
            await handle.wait_complete()
        finally:
            handle.close()
        return self._blobs / self._name(key)

    async def open(self, key: str, fetch: Fetch) -> BlobHandle:
        """Open ``key``'s content, starting its download when it is not cached."""
        name = self._name(key)
        path = self._blobs / name
        if name in self._lru:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                self._lru.discard(name)
            else:
                self._lru.touch(name)  # marks it most recently used
                return BlobHandle(self, key, fd, None)
        dl = self._active.get(key)
        if dl is None:
            if self._nursery is None:
                raise errors.VaultUnavailable("content cache is not running")
            dl = _Download(key, self._blobs / (name + ".part"))
            wfd = os.open(dl.part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            self._active[key] = dl
            self._nursery.start_soon(self._download, dl, wfd, fetch)
        return BlobHandle(self, key, os.open(dl.part, os.O_RDONLY), dl)

    async def _download(self, dl: _Download, wfd: int, fetch: Fetch) -> None:
        final = self._blobs / self._name(dl.key)
        try:
            async with fetch(0) as download:
                dl.length = download.length
                if download.length is not None:
                    self.remember_size(dl.key, download.length)
                dl.started = True
                dl.notify()
                send, receive = trio.open_memory_channel[list[bytes]](_QUEUED_CHUNKS)
                async with trio.open_nursery() as writer:
                    writer.start_soon(_write_to_disk, dl, wfd, receive)
                    async with send:
                        # Gathered (not joined: no copy) into batches of at least
                        # CHUNK, so that readers wake and writes go once per batch.
                        batch: list[bytes] = []
                        held = 0
                        async for piece in download.pieces():
                            batch.append(piece)
                            held += len(piece)
                            if held >= CHUNK:
                                dl.arrived(batch)
                                await send.send(batch)
                                batch, held = [], 0
                        if batch:
                            dl.arrived(batch)
                            await send.send(batch)
            os.replace(dl.part, final)
            dl.done = True
            self.remember_size(dl.key, dl.have)
            if dl.have > self.max_bytes:
                final.unlink()  # bigger than the whole cache: serve the open handles only
            else:
                self._lru.add(final.name, dl.have)
        except Exception as exc:
            dl.error = _cause(exc)
            log.warning("download of %s failed: %s", dl.key, dl.error)
        finally:
            os.close(wfd)
            if not dl.done:
                dl.part.unlink(missing_ok=True)
            self._active.pop(dl.key, None)
            dl.finished()


def _cause(exc: BaseException) -> BaseException:
    """The one error inside the exception groups the writer's nursery wraps it in, so
    readers see what the vault said (gone, no access) rather than a group."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def _write_to_disk(
    dl: _Download, wfd: int, receive: trio.MemoryReceiveChannel[list[bytes]]
) -> None:
    """Write the batches of ``dl``, waking readers as bytes land.

    A write lands in the page cache and takes tens of microseconds, less than handing it
    to a worker thread and back costs (two futex wakeups and the loop's wakeup: about 15 %
    of the daemon's CPU in a cold read). So batches are written in the loop's thread
    until one write takes longer than ``_SLOW_WRITE`` (a disk that throttles its
    writers): from then on this download's writes go to a worker thread, and the loop
    keeps serving reads and receiving meanwhile. What queued up while the disk was busy
    goes in one ``writev``."""
    slow = False
    async with receive:
        async for batch in receive:
            pieces = list(batch)
            with contextlib.suppress(trio.WouldBlock, trio.EndOfChannel):
                while True:
                    pieces += receive.receive_nowait()
            if slow:
                dl.have += await trio.to_thread.run_sync(_write_all, wfd, pieces)
            else:
                started = time.perf_counter()
                dl.have += _write_all(wfd, pieces)
                slow = time.perf_counter() - started > _SLOW_WRITE
            dl.notify()


def _write_all(fd: int, pieces: list[bytes]) -> int:
    """Write ``pieces`` at the file's end, ``_IOV_MAX`` at a time (the network's pieces
    can be small, and ``writev`` refuses more)."""
    total = 0
    for first in range(0, len(pieces), _IOV_MAX):
        group = pieces[first : first + _IOV_MAX]
        size = sum(len(p) for p in group)
        written = os.writev(fd, group)
        if written < size:  # a short write (rare on a regular file): finish it plainly
            rest = memoryview(b"".join(group))[written:]
            while rest:
                rest = rest[os.write(fd, rest) :]
        total += size
    return total
