"""The content store: where the files of documents, renditions and attachments live,
each named by its sha256 and written once.

Two stores implement ``ContentStore``: the directory (``blobs.BlobStore``, the
default) and an S3-compatible bucket (``s3.S3Store``). Both receive a file the same
way: a ``BlobWriter`` streams it into a private temp file on local disk (the store's
``incoming`` directory) while hashing md5 (the API's checksum) and sha256 (the name),
so the name is known before the file reaches the store and nothing is ever whole in
memory; once the file is complete the store ``keep``s it (the directory renames it
into place, the bucket uploads it under its name, never over an object that is
there). An aborted writer removes its temp file, so an interrupted upload leaves
nothing a reader can see. Files are kept before the database transaction that
references them commits: a crash leaves at most an orphan, which ``sweep`` removes at
a later start.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import mimetypes
import os
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, BinaryIO

import trio

__all__ = [
    "BlobInfo",
    "BlobWriter",
    "ContentStore",
    "ContentUnavailable",
    "Inspect",
    "RangeNotSatisfiable",
    "Reading",
    "StoredFile",
    "TooLarge",
    "WrongContent",
    "media_type",
    "sweep_incoming",
]

#: Writes are gathered to this size before one thread hop writes them.
_WRITE_BATCH = 1024 * 1024

#: Reads a complete received file (its local path) before it goes to the store; the
#: uploads use it to extract the searchable text while the file is on local disk.
Inspect = Callable[[Path], str | None]


class TooLarge(Exception):
    """More bytes arrived than the writer's limit allows."""


class ContentUnavailable(Exception):
    """The store refused or failed a write or a read; the message says why (it never
    holds credentials). The HTTP layer turns it into an API error."""


class WrongContent(Exception):
    """A file whose sha256 is not the one it was expected to have (it is not stored)."""


class RangeNotSatisfiable(Exception):
    """A byte range that starts past the end of the file."""

    def __init__(self, size: int) -> None:
        super().__init__(f"range not satisfiable (size {size})")
        self.size = size


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
    """A received file: its blob, the name the client gave it and, when asked for, its
    searchable text (extracted while the file was on local disk)."""

    blob: BlobInfo
    filename: str
    text: str | None = None

    @property
    def format(self) -> str:
        return media_type(self.filename)


@dataclass
class Reading:
    """An open read of (part of) a stored file: ``length`` bytes from ``start`` of a
    file of ``size`` bytes; ``body`` is closed by whoever reads it."""

    body: BinaryIO
    start: int
    length: int
    size: int


class ContentStore(ABC):
    """Files by sha256, written once. ``incoming`` is the local directory where files
    being received are kept until they are complete."""

    incoming: Path
    #: whether other processes may use the store at the same time (their uploads in
    #: flight must survive a sweep)
    shared: bool = False

    @abstractmethod
    def open(self) -> None:
        """Make the local directories and check the store can be reached (blocking)."""

    @abstractmethod
    def keep(self, received: Path, blob: BlobInfo) -> None:
        """Make the complete file ``received`` the stored ``blob`` (blocking); the file
        is the store's afterwards (moved or removed), also when this raises."""

    @abstractmethod
    def local_path(self, sha256: str) -> Path | None:
        """The file on local disk, when the store keeps files there (else None)."""

    @abstractmethod
    def size(self, sha256: str) -> int | None:
        """The size of a stored file, None when it is not there (blocking)."""

    @abstractmethod
    def read(self, sha256: str, first: int | None = None, last: int | None = None) -> Reading:
        """Open a stored file for reading (blocking): all of it, or bytes ``first`` to
        ``last`` inclusive (``first`` None: the last ``last`` bytes; ``last`` None: to
        the end). FileNotFoundError when it is not there, RangeNotSatisfiable when
        ``first`` is past its end."""

    @abstractmethod
    def names(self) -> Iterator[str]:
        """The sha256 of every stored file (blocking)."""

    @abstractmethod
    def sweep(self, referenced: Iterable[str], min_age_seconds: float = 0.0) -> int:
        """Remove unfinished uploads and files no record references (blocking; run
        before serving); younger ones than ``min_age_seconds`` are spared."""

    def writer(self, max_size: int, inspect: Inspect | None = None) -> BlobWriter:
        return BlobWriter(self, max_size, inspect)

    def put_bytes(self, data: bytes) -> BlobInfo:
        """Store ``data`` (blocking; for small generated files such as demo content)."""
        return self.put_stream(io.BytesIO(data), len(data))

    def put_stream(
        self,
        source: IO[bytes],
        max_size: int,
        chunk: int = 1 << 20,
        *,
        expect: str | None = None,
    ) -> BlobInfo:
        """Store what ``source`` reads until its end (blocking; the caller checked the
        size against ``max_size``); nothing is left behind when that fails. ``expect``:
        the sha256 the content must have (else WrongContent, and nothing is stored)."""
        writer = BlobWriter(self, max_size, expect=expect)
        writer.open_sync()
        try:
            while data := source.read(chunk):
                writer.size += len(data)
                writer.write_sync(data)
            return writer.finish_sync()
        except BaseException:
            writer.abort_sync()
            raise


class BlobWriter:
    """Receives one file: ``write`` chunks, then ``finish`` (or ``abort``)."""

    def __init__(
        self,
        store: ContentStore,
        max_size: int,
        inspect: Inspect | None = None,
        *,
        expect: str | None = None,
    ) -> None:
        self.store = store
        self._expect = expect
        self.max_size = max_size
        self.size = 0
        #: what ``inspect`` said of the complete file (set by ``finish``)
        self.text: str | None = None
        self._inspect = inspect
        self._md5 = hashlib.md5(usedforsecurity=False)
        self._sha = hashlib.sha256()
        self._buffer: list[bytes] = []
        self._buffered = 0
        self._file: int | None = None
        self._tmp_path: Path | None = None

    # blocking parts (run in worker threads) ------------------------------------------

    def open_sync(self) -> None:
        fd, name = tempfile.mkstemp(dir=self.store.incoming, prefix="upload-")
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
        received, self._tmp_path = self._tmp_path, None
        info = BlobInfo(sha256=self._sha.hexdigest(), md5=self._md5.hexdigest(), size=self.size)
        try:
            if self._expect is not None and info.sha256 != self._expect:
                raise WrongContent(f"the content's sha256 is {info.sha256}, not {self._expect}")
            if self._inspect is not None:
                self.text = self._inspect(received)
        except BaseException:
            received.unlink(missing_ok=True)
            raise
        self.store.keep(received, info)
        return info

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


def sweep_incoming(incoming: Path, min_age_seconds: float) -> int:
    """Remove received files an aborted process left in ``incoming`` (blocking)."""
    cutoff = time.time() - min_age_seconds
    removed = 0
    for path in incoming.iterdir():
        if min_age_seconds and mtime(path) > cutoff:
            continue
        path.unlink(missing_ok=True)
        removed += 1
    return removed


def mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
