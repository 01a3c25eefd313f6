"""Open files and directories: the handle protocol, its kinds, and the handle table.

Every kind of open file answers the same five calls (``OpenFile``): read, write,
flush (close(2) of one descriptor), fsync and release (the last close). The table
gives out the numbers the kernel knows handles by; the file system asks it for a
handle and calls the protocol, never asking which kind it holds.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Protocol

import trio

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobHandle
from vaultfs.bridge.content.sources import Content
from vaultfs.bridge.fs.dir_entries import DirEntries
from vaultfs.bridge.write.editing import EditHandle, Editing
from vaultfs.bridge.write.new_documents import NewDocuments
from vaultfs.bridge.write.scratch import ScratchFile

__all__ = [
    "CachedContent",
    "HandleTable",
    "LatestSource",
    "LostFile",
    "OpenFile",
    "ScratchOpen",
    "SharedContent",
    "Snapshot",
    "SourceEdit",
]

log = logging.getLogger(__name__)


class OpenFile(Protocol):
    """``flush`` (close(2) of one descriptor) does nothing for an open that neither
    writes nor truncates: the kernel is told so at open (``Opened.noflush``) and may
    not send it."""

    async def read(self, offset: int, size: int) -> bytes: ...
    async def write(self, offset: int, data: bytes) -> int: ...
    async def flush(self) -> None: ...
    async def fsync(self) -> None: ...
    async def release(self) -> None: ...


class _ReadOnly:
    """What every read-only open file does besides reading: refuses writes."""

    async def write(self, offset: int, data: bytes) -> int:
        raise errors.BadHandle("not open for writing")

    async def flush(self) -> None:
        pass

    async def fsync(self) -> None:
        pass

    async def release(self) -> None:
        pass


class CachedContent(_ReadOnly):
    """Vault content (a source file, rendition or attachment) read through the cache:
    ``blob`` opened already, or ``open_blob`` at the first read (an open whose pages
    the kernel keeps may never read)."""

    def __init__(
        self,
        blob: BlobHandle | None = None,
        open_blob: Callable[[], Awaitable[BlobHandle]] | None = None,
    ) -> None:
        self._blob = blob
        self._open_blob = open_blob

    async def read(self, offset: int, size: int) -> bytes:
        blob = self._blob
        if blob is None:
            if self._open_blob is None:
                raise errors.BadHandle("file handle is not open")
            blob = await self._open_blob()
            if self._blob is None:
                self._blob = blob
            else:  # another read opened it meanwhile
                blob.close()
                blob = self._blob
        return await blob.read(offset, size)

    async def release(self) -> None:
        if self._blob is not None:
            self._blob.close()


class LatestSource(_ReadOnly):
    """A document's latest source file read through the cache, following the latest
    version: a descriptor held open across a save (this mount's, or another client's
    the index learned of) reads the save's bytes, as a file changed in place does, and
    never the bytes before it under the save's size (the inode stays the document's
    source file, and its size is the latest's). ``edit(offset, size)``: the bytes of a
    save not checked in yet (its spool entry), None when there is none; ``latest``: the
    vault's content now; ``open_content``: its blob opened; ``blob`` of ``content``:
    opened already."""

    def __init__(
        self,
        edit: Callable[[int, int], bytes | None],
        latest: Callable[[], Awaitable[Content]],
        open_content: Callable[[Content], Awaitable[BlobHandle]],
        content: Content,
        blob: BlobHandle | None = None,
    ) -> None:
        self._edit = edit
        self._latest = latest
        self._open_content = open_content
        self._key = content.key
        self._blob = blob

    async def read(self, offset: int, size: int) -> bytes:
        edited = self._edit(offset, size)
        if edited is not None:
            return edited
        try:
            content = await self._latest()
        except errors.InvalidDocument:
            if self._blob is None:
                raise
            # Gone from the vault: what was open stays readable, as a deleted file's
            # descriptor does.
            return await self._blob.read(offset, size)
        if self._blob is None or content.key != self._key:
            blob = await self._open_content(content)
            if self._blob is not None and self._key == content.key:
                blob.close()  # another read opened it meanwhile
            else:
                old, self._blob, self._key = self._blob, blob, content.key
                if old is not None:
                    old.close()
        assert self._blob is not None
        return await self._blob.read(offset, size)

    async def release(self) -> None:
        if self._blob is not None:
            self._blob.close()


class SharedContent(_ReadOnly):
    """Vault content whose one handle every read-only open of an inode shares
    (``Opened.shared``): the kernel keeps its pages, so a read reaches it only for a
    page the kernel dropped since. No release says when the last of those opens ends,
    so the cache file is opened for each such read rather than held. ``edit``, for a
    latest source file: the bytes of a save not checked in yet, as ``LatestSource``."""

    def __init__(
        self,
        open_blob: Callable[[], Awaitable[BlobHandle]],
        edit: Callable[[int, int], bytes | None] | None = None,
    ) -> None:
        self._open_blob = open_blob
        self._edit = edit

    async def read(self, offset: int, size: int) -> bytes:
        edited = self._edit(offset, size) if self._edit is not None else None
        if edited is not None:
            return edited
        blob = await self._open_blob()
        try:
            return await blob.read(offset, size)
        finally:
            blob.close()


class LostFile(_ReadOnly):
    """A lost+found file."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDONLY)

    async def read(self, offset: int, size: int) -> bytes:
        return os.pread(self._fd, size, offset)

    async def release(self) -> None:
        os.close(self._fd)


class Snapshot(_ReadOnly):
    """A generated file (status): its bytes as of open()."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    async def read(self, offset: int, size: int) -> bytes:
        return self._data[offset : offset + size]


class SourceEdit:
    """An open of a document's source file for writing (or while it is checked out):
    check-out, writes and check-in are ``Editing``'s. Until the document is checked
    out, reads come from the vault's content (``open_vault``, opened at the first)."""

    def __init__(
        self,
        editing: Editing,
        handle: EditHandle,
        open_vault: Callable[[], Awaitable[BlobHandle]] | None = None,
        vault: BlobHandle | None = None,
    ) -> None:
        self._editing = editing
        self._handle = handle
        self._open_vault = open_vault
        self._vault = vault

    async def read(self, offset: int, size: int) -> bytes:
        data = self._editing.read(self._handle, offset, size)
        if data is not None:
            return data
        if self._open_vault is None:
            raise errors.NotFound(f"document {self._handle.doc_id} is not being edited")
        if self._vault is None:
            self._vault = await self._open_vault()
        return await self._vault.read(offset, size)

    async def write(self, offset: int, data: bytes) -> int:
        if not self._handle.writer:
            raise errors.BadHandle("not open for writing")
        return await self._editing.write(self._handle, offset, data)

    async def truncate(self, size: int) -> None:
        await self._editing.ftruncate(self._handle, size)

    async def flush(self) -> None:
        await self._editing.flush(self._handle)

    async def fsync(self) -> None:
        await trio.to_thread.run_sync(self._handle.fsync)

    async def release(self) -> None:
        if self._vault is not None:
            self._vault.close()
        await self._editing.release(self._handle)


class ScratchOpen:
    """One open of a scratch file; the close of its last writer may make a document."""

    def __init__(self, documents: NewDocuments, scratch: ScratchFile, *, writer: bool) -> None:
        self._documents = documents
        self._scratch = scratch
        self._writer = writer
        scratch.handles += 1
        scratch.writers.count += writer

    async def read(self, offset: int, size: int) -> bytes:
        return self._scratch.pread(offset, size)

    async def write(self, offset: int, data: bytes) -> int:
        if not self._writer:
            raise errors.BadHandle("not open for writing")
        return self._scratch.pwrite(offset, data)

    async def flush(self) -> None:
        # close(2) of one descriptor: durable, nothing more. The document is made by
        # the release of the last writer (``{ a; b; } > file`` closes one per child).
        if self._writer:
            await trio.to_thread.run_sync(self._scratch.fsync)

    async def fsync(self) -> None:
        await trio.to_thread.run_sync(self._scratch.fsync)

    async def release(self) -> None:
        scratch = self._scratch
        scratch.writers.count -= self._writer
        try:
            if self._writer and scratch.writers.count == 0 and scratch.dirty:
                await self._documents.make_document(scratch)
        except (errors.VaultError, OSError) as exc:
            log.warning("new document from %r failed on release: %s", scratch.name, exc)
        finally:
            # Counted until its take is done: the content stays while it is being read.
            scratch.handles -= 1
            self._documents.scratch_closed(scratch)


class HandleTable:
    """The numbers the kernel knows open files and directories by (never reused)."""

    def __init__(self) -> None:
        self._next = 1
        self._files: dict[int, OpenFile] = {}
        self._dirs: dict[int, DirEntries] = {}
        #: handles that stand for many opens (``add_shared``): no release ends them
        self._shared: set[int] = set()

    def _number(self) -> int:
        fh = self._next
        self._next += 1
        return fh

    def add_file(self, handle: OpenFile) -> int:
        fh = self._number()
        self._files[fh] = handle
        return fh

    def file(self, fh: int) -> OpenFile:
        handle = self._files.get(fh)
        if handle is None:
            raise errors.BadHandle("file handle is not open")
        return handle

    def add_shared(self, handle: OpenFile) -> int:
        """A handle for many opens of one file, kept until ``drop_shared``."""
        fh = self.add_file(handle)
        self._shared.add(fh)
        return fh

    def pop_file(self, fh: int) -> OpenFile | None:
        """The handle of a release, gone from the table (a shared one stays)."""
        if fh in self._shared:
            return None
        return self._files.pop(fh, None)

    def drop_shared(self, fh: int) -> None:
        self._shared.discard(fh)
        self._files.pop(fh, None)

    def add_dir(self, listing: DirEntries) -> int:
        fh = self._number()
        self._dirs[fh] = listing
        return fh

    def dir(self, fh: int) -> DirEntries:
        listing = self._dirs.get(fh)
        if listing is None:
            raise errors.BadHandle("directory handle is not open")
        return listing

    def pop_dir(self, fh: int) -> None:
        self._dirs.pop(fh, None)
