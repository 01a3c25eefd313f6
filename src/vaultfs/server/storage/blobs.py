"""The content-addressed blob directory, the default content store: every stored file
in a directory, named by its sha256.

Layout: ``blobs/<aa>/<bb>/<sha256>`` (files mode 0600) and ``blobs/tmp/`` for files
being received (``content.BlobWriter``), on the same filesystem so that a complete
file is fsynced and renamed into place in one step.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from .content import (
    BlobInfo,
    BlobWriter,
    ContentStore,
    RangeNotSatisfiable,
    Reading,
    StoredFile,
    TooLarge,
    media_type,
    mtime,
    sweep_incoming,
)

# The shared names are re-exported: most of the server knows them from here.
__all__ = ["BlobInfo", "BlobStore", "BlobWriter", "StoredFile", "TooLarge", "media_type"]


class BlobStore(ContentStore):
    def __init__(self, root: Path, *, shared: bool = False) -> None:
        self.root = root
        self.tmp = root / "tmp"
        self.incoming = self.tmp
        self.shared = shared

    def __str__(self) -> str:
        return f"the directory {self.root}"

    def open(self) -> None:
        self.tmp.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.root.chmod(0o700)

    def path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256[2:4] / sha256

    def local_path(self, sha256: str) -> Path | None:
        return self.path(sha256)

    def keep(self, received: Path, blob: BlobInfo) -> None:
        final = self.path(blob.sha256)
        try:
            final.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            # Same content already stored: identical bytes, keep the old file (made
            # young again, so another process's sweep spares it until the record
            # commits).
            if final.exists():
                received.unlink(missing_ok=True)
                with contextlib.suppress(OSError):
                    os.utime(final)
            else:
                os.replace(received, final)
                _fsync_dir(final.parent)
        finally:
            received.unlink(missing_ok=True)

    def size(self, sha256: str) -> int | None:
        try:
            return self.path(sha256).stat().st_size
        except FileNotFoundError:
            return None

    def read(self, sha256: str, first: int | None = None, last: int | None = None) -> Reading:
        body = self.path(sha256).open("rb")
        try:
            size = os.fstat(body.fileno()).st_size
            start, length = _window(size, first, last)
            body.seek(start)
        except BaseException:
            body.close()
            raise
        return Reading(body=body, start=start, length=length, size=size)

    def names(self) -> Iterator[str]:
        for path in self.root.glob("??/??/*"):
            yield path.name

    def sweep(self, referenced: Iterable[str], min_age_seconds: float = 0.0) -> int:
        """Remove temp files and blobs no record references (blocking; run before serving).

        ``min_age_seconds`` spares younger files: on a directory several server
        processes share, another process may be writing them, or about to commit the
        record that references them.
        """
        keep = set(referenced)
        removed = sweep_incoming(self.tmp, min_age_seconds)
        cutoff = time.time() - min_age_seconds
        for path in self.root.glob("??/??/*"):
            if path.name in keep or (min_age_seconds and mtime(path) > cutoff):
                continue
            path.unlink(missing_ok=True)
            removed += 1
        return removed


def _window(size: int, first: int | None, last: int | None) -> tuple[int, int]:
    """(start, length) of a byte range of a file of ``size`` bytes (see ``read``)."""
    if first is None and last is None:
        return 0, size
    if first is None:
        assert last is not None
        length = min(last, size)
        return size - length, length
    if first >= size:
        raise RangeNotSatisfiable(size)
    end = size - 1 if last is None else min(last, size - 1)
    return first, end - first + 1


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
