"""Check-out and check-in of a document's latest source file, as the core sees it.

Owns the path from POSIX writes to the spool (``bridge.spool``): open for writing checks
the document out and starts the spool file from the current content (unless O_TRUNC);
writes, reads and truncation go to the spool entry while it exists; the flush of the
last writer checks the content in (errors reach close() as EIO). A file renamed over
the source file (``check_in_file``) and a truncate without an open file check in the
same way. After a check-in the document is read again, so the tree shows the draft.
"""

from __future__ import annotations

import errno
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import content_of
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.spool.spool import EDITING
from vaultfs.errors import NotFound, VaultError

if TYPE_CHECKING:  # only for annotations: the spool is handed in by the mount
    from vaultfs.bridge.write.spool.spool import Spool, SpoolEntry

__all__ = ["EditHandle", "Editing"]

log = logging.getLogger(__name__)


class EditHandle:
    """One open of a source file for writing (several may share a spool entry)."""

    def __init__(self, entry: SpoolEntry, *, writer: bool) -> None:
        self.entry = entry
        self.doc_id: int = entry.doc_id
        self.writer = writer

    async def read(self, offset: int, size: int) -> bytes:
        return bytes(self.entry.pread(offset, size))

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
        #: documents changed since their last check-in: the flush of a writer that
        #: changed nothing (a shell's ``>>`` closes a dup'ed descriptor first) waits
        self._dirty: set[int] = set()

    def entry(self, doc_id: int) -> SpoolEntry | None:
        return self.spool.entry(doc_id) if self.spool is not None else None

    def pending(self) -> list[dict[str, Any]]:
        return list(self.spool.pending()) if self.spool is not None else []

    def lost_records(self) -> list[dict[str, Any]]:
        return self.spool.lost_records() if self.spool is not None else []

    def reader(self, doc_id: int) -> EditHandle:
        """A read handle on the spool content of a document being edited."""
        entry = self.entry(doc_id)
        if entry is None:
            raise NotFound(f"document {doc_id} is not being edited")
        return EditHandle(entry, writer=False)

    async def open(self, doc_id: int, *, truncate: bool) -> EditHandle:
        # An O_TRUNC open is a change too, but it is checked in by release, not by the
        # first flush: a shell's ``>`` flushes a duplicate descriptor before writing.
        entry = await self._entry_for_writing(doc_id, truncate=truncate)
        self._writers[doc_id] = self._writers.get(doc_id, 0) + 1
        return EditHandle(entry, writer=True)

    async def _entry_for_writing(self, doc_id: int, *, truncate: bool) -> SpoolEntry:
        if self.spool is None:
            raise OSError(errno.EROFS, "this mount has no write-back spool")
        record = self.tree.record(doc_id)
        initial = None
        if self.spool.entry(doc_id) is None and not truncate:
            content = await content_of(self.tree, ("src", doc_id))
            initial = await self.blobs.cached_path(content.key, content.fetch)
        # begin() on an existing entry (an edit still pending upload) makes no API call
        # and marks it being edited again, so the retry worker leaves it alone.
        entry = await self.spool.begin(
            doc_id,
            filename=str(record.get("filename__v") or doc_id),
            base_md5=record.get("md5checksum__v"),
            initial=initial,
        )
        if truncate:
            entry.truncate(0)
        return entry

    async def write(self, handle: EditHandle, offset: int, data: bytes) -> int:
        if self.entry(handle.doc_id) is not handle.entry:
            # Checked in by the flush of a duplicate descriptor (a shell's ``>>`` closes
            # one after dup2): check out again, from the content just checked in.
            handle.entry = await self._entry_for_writing(handle.doc_id, truncate=False)
        self._dirty.add(handle.doc_id)
        return int(handle.entry.pwrite(offset, data))

    async def flush(self, handle: EditHandle) -> None:
        """Check in when ``handle`` is the last writer of a changed document."""
        doc_id = handle.doc_id
        if not handle.writer or doc_id not in self._dirty or self._writers.get(doc_id, 0) > 1:
            return
        await self._commit(handle)

    async def _commit(self, handle: EditHandle) -> None:
        if self.spool is None or self.spool.entry(handle.doc_id) is not handle.entry:
            return
        if handle.entry.state != EDITING:
            return  # a check-in was tried already; the spool's worker carries on
        self._dirty.discard(handle.doc_id)
        size, base = handle.entry.size(), handle.entry.record.base_md5
        await self.spool.commit(handle.entry)
        if handle.entry.record.base_md5 == base:
            return  # unchanged: nothing was uploaded, the index is still right
        try:
            # Show the new draft now rather than at the next poll, with its exact size.
            await self.tree.reload(handle.doc_id)
            content = await content_of(self.tree, ("src", handle.doc_id))
            self.blobs.remember_size(content.key, size)
        except VaultError as exc:
            log.warning("reading document %d after its check-in failed: %s", handle.doc_id, exc)

    async def release(self, handle: EditHandle) -> None:
        """The last writer gone: an entry still open (nothing was written) is checked in,
        which uploads nothing and releases the lock."""
        if not handle.writer:
            return
        left = self._writers.get(handle.doc_id, 0) - 1
        if left > 0:
            self._writers[handle.doc_id] = left
            return
        self._writers.pop(handle.doc_id, None)
        try:
            await self._commit(handle)
        except (VaultError, OSError) as exc:
            log.warning(
                "check-in of %d on close failed (kept in the spool): %s", handle.doc_id, exc
            )

    async def truncate(self, doc_id: int, size: int) -> None:
        """truncate(2) of the source file: of the open edit, or else one whole save."""
        entry = self.entry(doc_id)
        if entry is not None:
            entry.truncate(size)
            self._dirty.add(doc_id)
            return
        handle = await self.open(doc_id, truncate=size == 0)
        handle.entry.truncate(size)
        self._dirty.add(doc_id)
        await self.flush(handle)
        await self.release(handle)

    async def check_in_file(self, doc_id: int, source: Path) -> None:
        """Make ``source`` the document's content: a file renamed over the source file.

        Checks the document out (EBUSY when another user holds it), takes the content
        into the spool and checks it in; returns once the vault has it. While the
        source file is open for writing the content only replaces the edit's, and the
        last writer's close checks it in.
        """
        entry = self.entry(doc_id)
        if entry is not None and self._writers.get(doc_id, 0) > 0:
            await trio.to_thread.run_sync(_replace_content, entry, source)
            self._dirty.add(doc_id)
            return
        if entry is not None:  # closed, not yet checked in: the rename is newer
            handle = await self.open(doc_id, truncate=False)
            await trio.to_thread.run_sync(_replace_content, handle.entry, source)
        else:
            handle = await self._open_from(doc_id, source)
        self._dirty.add(doc_id)
        try:
            await self.flush(handle)
        finally:
            await self.release(handle)

    async def _open_from(self, doc_id: int, source: Path) -> EditHandle:
        if self.spool is None:
            raise OSError(errno.EROFS, "this mount has no write-back spool")
        record = self.tree.record(doc_id)
        entry = await self.spool.begin(
            doc_id,
            filename=str(record.get("filename__v") or doc_id),
            base_md5=record.get("md5checksum__v"),
            initial=source,
        )
        self._writers[doc_id] = self._writers.get(doc_id, 0) + 1
        return EditHandle(entry, writer=True)


def _replace_content(entry: SpoolEntry, source: Path) -> None:
    """Copy ``source`` over an entry's content (blocking: run in a worker thread)."""
    entry.truncate(0)
    offset = 0
    with open(source, "rb") as f:
        while chunk := f.read(1 << 20):
            offset += entry.pwrite(offset, chunk)
    entry.fsync()
