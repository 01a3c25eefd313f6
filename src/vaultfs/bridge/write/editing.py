"""Check-out and check-in of a document's latest source file, as the core sees it.

Owns the path from POSIX writes to the spool (``bridge.spool``): open for writing checks
the document out and starts the spool file from the current content (unless O_TRUNC);
writes, reads and truncation go to the spool entry while it exists; the flush of the
last writer checks the content in (errors reach close() as EIO). A file renamed over
the source file (``check_in_file``) and a truncate without an open file check in the
same way. The content an edit starts from is read once the lock is held
(``_start``); after any check-in the document is read again (``show_check_in``, which
the spool calls), so the tree shows the draft.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import content_of
from vaultfs.bridge.tree.nodes import Kind
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.spool.entry import EDITING
from vaultfs.bridge.write.spool.spool import Start, StartFrom
from vaultfs.bridge.write.writers import Writers
from vaultfs.errors import InsufficientAccess, NotFound, ReadOnly, VaultError

if TYPE_CHECKING:  # only for annotations: the spool is handed in by the mount
    from vaultfs.bridge.write.spool.entry import SpoolEntry
    from vaultfs.bridge.write.spool.spool import Spool

__all__ = ["EditHandle", "Editing", "show_check_in"]

log = logging.getLogger(__name__)


class EditHandle:
    """One open of a source file for writing (several may share a spool entry)."""

    def __init__(self, entry: SpoolEntry, *, writer: bool, append: bool = False) -> None:
        self.entry = entry
        self.doc_id: int = entry.doc_id
        self.writer = writer
        #: O_APPEND: every write lands at the end of the content, wherever the kernel
        #: (which may hold the listing's size estimate) says it should go
        self.append = append

    async def read(self, offset: int, size: int) -> bytes:
        return bytes(self.entry.pread(offset, size))

    def fsync(self) -> None:
        self.entry.fsync()

    def close(self) -> None:
        pass


async def show_check_in(tree: Tree, blobs: BlobCache, doc_id: int, size: int) -> None:
    """Show a draft the spool just checked in: read the document again (one call) and
    remember its exact size, rather than wait for the next poll."""
    await tree.reload(doc_id)
    content = await content_of(tree, (Kind.SRC, doc_id))
    blobs.remember_size(content.key, size)


class Editing:
    def __init__(self, tree: Tree, blobs: BlobCache, spool: Spool | None) -> None:
        self.tree = tree
        self.blobs = blobs
        self.spool = spool
        self._docs: dict[int, Writers] = {}
        #: documents the vault refused this user a check-out of (INSUFFICIENT_ACCESS):
        #: shown read-only until an open for writing succeeds again
        self.refused: set[int] = set()

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

    async def open(self, doc_id: int, *, truncate: bool, append: bool = False) -> EditHandle:
        # An O_TRUNC open is a change too, but it is checked in by release, not by the
        # first flush: a shell's ``>`` flushes a duplicate descriptor before writing.
        entry = await self._new_writer(doc_id, truncate=truncate, copy=not truncate)
        return EditHandle(entry, writer=True, append=append)

    async def _new_writer(self, doc_id: int, *, truncate: bool, copy: bool) -> SpoolEntry:
        """Count one more writer of the document and check it out (or join the edit
        under way); the writer is counted before anything waits (see ``Writers``)."""
        writers = self._docs.setdefault(doc_id, Writers())
        writers.count += 1
        try:
            async with writers.lock:
                entry = await self._entry_for_writing(doc_id, truncate=truncate, copy=copy)
        except BaseException as exc:
            writers.count -= 1
            self._drop_if_idle(doc_id)
            if isinstance(exc, InsufficientAccess):
                self.refused.add(doc_id)
            raise
        self.refused.discard(doc_id)
        return entry

    def _drop_if_idle(self, doc_id: int) -> None:
        writers = self._docs.get(doc_id)
        if writers is not None and writers.count == 0 and not writers.lock.locked():
            del self._docs[doc_id]

    def _start(self, doc_id: int, *, copy: bool) -> StartFrom:
        """The starting point of a check-out: the document as the vault has it once
        the lock is held (one call), and its content unless the edit starts empty."""

        async def start() -> Start:
            record = await self.tree.reload(doc_id)
            content = None
            if copy:
                latest = await content_of(self.tree, (Kind.SRC, doc_id))
                content = await self.blobs.cached_path(latest.key, latest.fetch)
            return Start(
                content, record.get("md5checksum__v"), str(record.get("filename__v") or doc_id)
            )

        return start

    async def _entry_for_writing(self, doc_id: int, *, truncate: bool, copy: bool) -> SpoolEntry:
        if self.spool is None:
            raise ReadOnly("this mount has no write-back spool")
        # begin() on an existing entry (an edit still pending upload) makes no API call
        # and marks it being edited again, so the retry worker leaves it alone.
        entry = await self.spool.begin(doc_id, self._start(doc_id, copy=copy))
        if truncate:
            entry.truncate(0)
        return entry

    async def write(self, handle: EditHandle, offset: int, data: bytes) -> int:
        writers = self._docs[handle.doc_id]
        if self.entry(handle.doc_id) is not handle.entry:
            # Checked in by the flush of a duplicate descriptor (a shell's ``>>`` closes
            # one after dup2): check out again, from the content just checked in.
            async with writers.lock:
                handle.entry = await self._entry_for_writing(
                    handle.doc_id, truncate=False, copy=True
                )
        writers.written = True
        if handle.append:
            offset = handle.entry.size()  # no await from here to the write: atomic
        written = int(handle.entry.pwrite(offset, data))
        if self.spool is not None:
            self.spool.wrote(handle.entry)
        return written

    async def flush(self, handle: EditHandle) -> None:
        """Check in when ``handle`` is the last writer of a changed document."""
        writers = self._docs.get(handle.doc_id)
        if not handle.writer or writers is None or not writers.flush_takes():
            return
        async with writers.lock:
            if writers.count == 1:
                await self._commit(handle.doc_id, writers)

    async def _commit(self, doc_id: int, writers: Writers) -> None:
        """Check in the document's entry; ``writers.lock`` is held."""
        entry = self.spool.entry(doc_id) if self.spool is not None else None
        if self.spool is None or entry is None or entry.state != EDITING:
            return  # nothing open, or a check-in was tried already: the worker carries on
        writers.written = False
        await self.spool.commit(entry)

    async def release(self, handle: EditHandle) -> None:
        """The last writer gone: an entry still open (nothing was written) is checked in,
        which uploads nothing and releases the lock."""
        if not handle.writer:
            return
        writers = self._docs[handle.doc_id]
        writers.count -= 1
        if writers.count > 0:
            return
        try:
            async with writers.lock:
                if writers.count == 0:  # nobody opened it again meanwhile
                    await self._commit(handle.doc_id, writers)
        except (VaultError, OSError) as exc:
            log.warning(
                "check-in of %d on close failed (kept in the spool): %s", handle.doc_id, exc
            )
        finally:
            self._drop_if_idle(handle.doc_id)

    async def truncate(self, doc_id: int, size: int) -> None:
        """truncate(2) of the source file: of the open edit, or else one whole save."""
        entry = self.entry(doc_id)
        if entry is not None and doc_id in self._docs:
            entry.truncate(size)
            self._docs[doc_id].written = True
            return
        handle = await self.open(doc_id, truncate=size == 0)
        handle.entry.truncate(size)
        self._docs[doc_id].written = True
        try:
            await self.flush(handle)
        finally:
            await self.release(handle)

    async def check_in_file(self, doc_id: int, source: Path) -> None:
        """Make ``source`` the document's content: a file renamed over the source file.

        Checks the document out (EBUSY when another user holds it), takes the content
        into the spool and checks it in; returns once the vault has it. While the
        source file is open for writing the content only replaces the edit's, and the
        last writer's close checks it in.
        """
        entry = self.entry(doc_id)
        writers = self._docs.get(doc_id)
        if entry is not None and writers is not None and writers.count > 0:
            await trio.to_thread.run_sync(_replace_content, entry, source)
            writers.written = True
            return
        handle = EditHandle(await self._new_writer(doc_id, truncate=False, copy=False), writer=True)
        try:
            # A new entry started empty; one still pending held an older save.
            await trio.to_thread.run_sync(_replace_content, handle.entry, source)
            self._docs[doc_id].written = True
            await self.flush(handle)
        finally:
            await self.release(handle)


def _replace_content(entry: SpoolEntry, source: Path) -> None:
    """Copy ``source`` over an entry's content (blocking: run in a worker thread)."""
    entry.truncate(0)
    offset = 0
    with open(source, "rb") as f:
        while chunk := f.read(1 << 20):
            offset += entry.pwrite(offset, chunk)
    entry.fsync()
