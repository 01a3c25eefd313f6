"""The write wiring of the core: a document's latest source file opened for writing.

Owns the minimal check-out/check-in path over the spool (``bridge.spool``): open for
writing checks the document out and starts the spool file from the current content
(unless O_TRUNC); writes, reads and truncation go to the spool entry while it exists;
the flush of the last writer checks the content in (errors reach close() as EIO).
Editor save patterns (scratch files, rename-over), new documents, field changes and
deletion build on this module.
"""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING, Any

from vaultfs.errors import VaultError

from .blobcache import BlobCache
from .content import content_of
from .tree import Tree

if TYPE_CHECKING:
    from .spool import Spool, SpoolEntry
else:  # the spool is optional: a read-only build of the bridge works without it
    Spool = SpoolEntry = Any

__all__ = ["EditHandle", "Editing", "Spool"]

log = logging.getLogger(__name__)


class EditHandle:
    """One open of a source file for writing (several may share a spool entry)."""

    def __init__(self, entry: SpoolEntry, *, writer: bool) -> None:
        self.entry = entry
        self.doc_id: int = entry.doc_id
        self.writer = writer

    async def read(self, offset: int, size: int) -> bytes:
        return bytes(self.entry.pread(offset, size))

    def write(self, offset: int, data: bytes) -> int:
        return int(self.entry.pwrite(offset, data))

    def fsync(self) -> None:
        self.entry.fsync()

    def close(self) -> None:
        pass


class Editing:
    def __init__(self, tree: Tree, blobs: BlobCache, spool: Spool | None) -> None:
        self.tree = tree
        self.blobs = blobs
        self.spool = spool
        #: open writer handles per document
        self._writers: dict[int, int] = {}

    def entry(self, doc_id: int) -> SpoolEntry | None:
        return self.spool.entry(doc_id) if self.spool is not None else None

    def pending(self) -> list[dict[str, Any]]:
        return list(self.spool.pending()) if self.spool is not None else []

    def reader(self, doc_id: int) -> EditHandle:
        """A read handle on the spool content of a document being edited."""
        entry = self.entry(doc_id)
        if entry is None:
            raise OSError(errno.ENOENT, f"document {doc_id} is not being edited")
        return EditHandle(entry, writer=False)

    async def open(self, doc_id: int, *, truncate: bool) -> EditHandle:
        if self.spool is None:
            raise OSError(errno.EROFS, "this mount has no write-back spool")
        entry = self.spool.entry(doc_id)
        if entry is None:
            record = self.tree.record(doc_id)
            initial = None
            if not truncate:
                content = await content_of(self.tree, ("src", doc_id))
                initial = await self.blobs.cached_path(content.key, content.fetch)
            entry = await self.spool.begin(
                doc_id,
                filename=str(record.get("filename__v") or doc_id),
                base_md5=record.get("md5checksum__v"),
                initial=initial,
            )
        elif truncate:
            entry.truncate(0)
        self._writers[doc_id] = self._writers.get(doc_id, 0) + 1
        return EditHandle(entry, writer=True)

    async def flush(self, handle: EditHandle) -> None:
        """Check in when ``handle`` is the last writer of its document."""
        if self.spool is None or not handle.writer or self._writers.get(handle.doc_id, 0) > 1:
            return
        await self.spool.commit(handle.entry)
        try:
            # Show the new draft now rather than at the next poll.
            await self.tree.index.refresh()
        except VaultError as exc:
            log.warning("index refresh after check-in of %d failed: %s", handle.doc_id, exc)

    def release(self, handle: EditHandle) -> None:
        if not handle.writer:
            return
        left = self._writers.get(handle.doc_id, 0) - 1
        if left > 0:
            self._writers[handle.doc_id] = left
        else:
            self._writers.pop(handle.doc_id, None)

    def truncate(self, doc_id: int, size: int) -> None:
        entry = self.entry(doc_id)
        if entry is None:
            raise OSError(errno.EACCES, "truncate needs the file open for writing")
        entry.truncate(size)
