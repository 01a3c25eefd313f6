"""The content-addressed blob directory: every stored file, named by its sha256.

Layout: ``blobs/<aa>/<bb>/<sha256>`` (files mode 0600) and ``blobs/tmp/`` for files
being received. A ``BlobWriter`` streams into a temp file while hashing md5 (the
API's checksum) and sha256 (the name), then fsyncs and renames into place; an
aborted writer removes its temp file. Blobs are written before the database
transaction that references them commits, so a crash leaves at most an orphan,
which ``sweep`` removes at the next start.
"""

from __future__ import annotations

import contextlib
import hashlib
import mimetypes
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import trio

__all__ = ["BlobInfo", "BlobStore", "BlobWriter", "StoredFile", "TooLarge", "media_type"]

#: Writes are gathered to this size before one thread hop writes them.
_WRITE_BATCH = 1024 * 1024


class TooLarge(Exception):
    """More bytes arrived than the writer's limit allows."""


@dataclass(frozen=True)
class BlobInfo:
    sha256: str
    md5: str
    size: int


def media_type(filename: str) -> str:
    """``format__v`` of a file: its media type guessed from the name."""
    return mimetypes.guess_type(filename, strict=False)[0] or "application/octet-stream"


@dataclass(frozen=True)
class StoredFile:
    """A received file: its blob and the name the client gave it."""

    blob: BlobInfo
    filename: str

    @property
    def format(self) -> str:
        return media_type(self.filename)


class BlobStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.tmp = root / "tmp"

    def open(self) -> None:
        self.tmp.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.root.chmod(0o700)

    def path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256[2:4] / sha256

    def writer(self, max_size: int) -> BlobWriter:
        return BlobWriter(self, max_size)

    def put_bytes(self, data: bytes) -> BlobInfo:
        """Store ``data`` (blocking; for small generated files such as demo content)."""
        writer = BlobWriter(self, len(data))
        writer.open_sync()
        writer.size = len(data)
        writer.write_sync(data)
        return writer.finish_sync()

    def put_stream(self, source: IO[bytes], max_size: int, chunk: int = 1 << 20) -> BlobInfo:
        """Store what ``source`` reads until its end (blocking; the caller checked the
        size against ``max_size``); nothing is left behind when that fails."""
        writer = BlobWriter(self, max_size)
        writer.open_sync()
        try:
            while data := source.read(chunk):
                writer.size += len(data)
                writer.write_sync(data)
            return writer.finish_sync()
        except BaseException:
            writer.abort_sync()
            raise

    def sweep(self, referenced: Iterable[str], min_age_seconds: float = 0.0) -> int:
        """Remove temp files and blobs no record references (blocking; run before serving).

        ``min_age_seconds`` spares younger files: on a directory several server
        processes share, another process may be writing them, or about to commit the
        record that references them.
        """
        keep = set(referenced)
        cutoff = time.time() - min_age_seconds
        removed = 0
        for path in [*self.tmp.iterdir(), *self.root.glob("??/??/*")]:
            if path.name in keep or (min_age_seconds and _mtime(path) > cutoff):
                continue
            path.unlink(missing_ok=True)
            removed += 1
        return removed


class BlobWriter:
    """Receives one file: ``write`` chunks, then ``finish`` (or ``abort``)."""

    def __init__(self, store: BlobStore, max_size: int) -> None:
        self.store = store
        self.max_size = max_size
        self.size = 0
        self._md5 = hashlib.md5(usedforsecurity=False)
        self._sha = hashlib.sha256()
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._file: int | None = None
        self._tmp_path: Path | None = None

    # blocking parts (run in worker threads) ------------------------------------------

    def open_sync(self) -> None:
        fd, name = tempfile.mkstemp(dir=self.store.tmp, prefix="upload-")
        os.fchmod(fd, 0o600)
        self._file, self._tmp_path = fd, Path(name)

    def write_sync(self, data: bytes) -> None:
        assert self._file is not None
        self._md5.update(data)
        self._sha.update(data)
        view = memoryview(data)
        while view:
            written = os.write(self._file, view)
            view = view[written:]

    def finish_sync(self) -> BlobInfo:
        assert self._file is not None and self._tmp_path is not None
        os.fsync(self._file)
        os.close(self._file)
        self._file = None
        sha = self._sha.hexdigest()
        final = self.store.path(sha)
        final.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Same content already stored: identical bytes, keep the old file (made young
        # again, so another process's sweep spares it until the record commits).
        if final.exists():
            self._tmp_path.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                os.utime(final)
        else:
            os.replace(self._tmp_path, final)
            _fsync_dir(final.parent)
        self._tmp_path = None
        return BlobInfo(sha256=sha, md5=self._md5.hexdigest(), size=self.size)

    def abort_sync(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):
                os.close(self._file)
            self._file = None
        if self._tmp_path is not None:
            self._tmp_path.unlink(missing_ok=True)
            self._tmp_path = None

    # async API ---------------------------------------------------------------------

    async def open(self) -> None:
        await trio.to_thread.run_sync(self.open_sync)

    async def write(self, data: bytes) -> None:
        """Add bytes; they reach the disk in batches of about 1 MiB."""
        self.size += len(data)
        if self.size > self.max_size:
            raise TooLarge(f"file larger than {self.max_size} bytes")
        self._buffer.append(bytes(data))
        self._buffered += len(data)
        if self._buffered >= _WRITE_BATCH:
            await self._flush()

    async def _flush(self) -> None:
        if self._buffer:
            data = b"".join(self._buffer)
            self._buffer.clear()
            self._buffered = 0
            await trio.to_thread.run_sync(self.write_sync, data)

    async def finish(self) -> BlobInfo:
        await self._flush()
        return await trio.to_thread.run_sync(self.finish_sync)

    async def abort(self) -> None:
        self._buffer.clear()
        # Shielded: the abort runs when the request is being cancelled too.
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(self.abort_sync)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
