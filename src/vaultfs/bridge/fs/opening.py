"""Opening files: the handle an open gives the kernel and how the kernel may cache it.

Owns ``Opened`` (the handle number and the page-cache flags) and ``Opener``, which the
node families open their files through: a file served without the page cache
(``direct``), a source file's read-write open (``writer``, through the page cache so
that it can be mapped), a scratch file, and the vault's content read through the content cache,
whose pages the kernel keeps between opens while the inode stands for the same
immutable content. Which handle a node gets is its family's (``bridge.nodes``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from vaultfs.bridge.content.blobcache import BlobCache, BlobHandle
from vaultfs.bridge.content.sources import Content, Contents
from vaultfs.bridge.fs.freshness import Freshness
from vaultfs.bridge.fs.handles import (
    CachedContent,
    HandleTable,
    LatestSource,
    OpenFile,
    ScratchOpen,
    SharedContent,
    Snapshot,
)
from vaultfs.bridge.tree.keys import NodeKey
from vaultfs.bridge.write.new_documents import NewDocuments
from vaultfs.bridge.write.scratch import ScratchFile

__all__ = ["Opened", "Opener"]


@dataclass
class Opened:
    fh: int
    direct_io: bool = False
    keep_cache: bool = False
    #: the kernel need not send a flush at close: the open has nothing to flush
    noflush: bool = False
    #: the handle serves every read-only open of the inode while its content stays the
    #: same (kept pages, nothing to release): such opens may be answered without the mount
    shared: bool = False


class Opener:
    def __init__(
        self,
        contents: Contents,
        blobs: BlobCache,
        handles: HandleTable,
        new_documents: NewDocuments,
        freshness: Freshness,
        invalidate_attr: Callable[[int], None],
    ) -> None:
        self._contents = contents
        self._blobs = blobs
        self._handles = handles
        self._new_documents = new_documents
        self._freshness = freshness
        self.invalidate_attr = invalidate_attr
        #: inode -> the content key its last open served (its pages in the kernel)
        self._page_keys: dict[int, str] = {}
        #: inode -> content key -> the handle its read-only opens of that content share
        #: (an older content's handle stays while opens of it may still read)
        self._shared: dict[int, dict[str, int]] = {}

    def forgotten(self, ino: int) -> None:
        self._page_keys.pop(ino, None)
        for fh in self._shared.pop(ino, {}).values():
            self._handles.drop_shared(fh)

    def direct(self, handle: OpenFile) -> Opened:
        """``handle`` served without the page cache (its size may change under it)."""
        return Opened(self._handles.add_file(handle), direct_io=True)

    def constant(self, ino: int, data: bytes) -> Opened:
        """``data``, the same for ``ino``'s life: one handle for every read-only open,
        its pages kept by the kernel (``Opened.shared``), so that only the first open and
        read reach the mount."""
        handles = self._shared.setdefault(ino, {})
        fh = handles.get("")
        if fh is None:
            fh = handles[""] = self._handles.add_shared(Snapshot(data))
        return Opened(fh, keep_cache=True, shared=True)

    def writer(self, ino: int, handle: OpenFile) -> Opened:
        """A read-write open of a source file, served through the page cache: the kernel
        maps a file shared and writable (``mmap(MAP_SHARED, PROT_WRITE)``) only then,
        a direct_io file being refused with ENODEV (libfuse 3.14 cannot ask for
        ``FUSE_DIRECT_IO_ALLOW_MMAP``). Writes stay write-through (the mount asks for no
        writeback cache): write(2) reaches ``handle`` before it returns, and a map's
        pages at msync, munmap or close, always before the release."""
        # Its pages may hold bytes the vault never takes (a check-in refused to
        # lost+found): no read-only open after it keeps them.
        self._page_keys.pop(ino, None)
        return Opened(self._handles.add_file(handle))

    def scratch(self, scratch: ScratchFile, flags: int) -> Opened:
        writer = flags & os.O_ACCMODE != os.O_RDONLY
        if flags & os.O_TRUNC:
            scratch.truncate(0)
        return self.direct(ScratchOpen(self._new_documents, scratch, writer=writer))

    async def vault_content(
        self,
        key: NodeKey,
        ino: int,
        sized: Callable[[int], None] | None = None,
        *,
        share: bool = False,
        follow: bool = False,
    ) -> Opened:
        """The vault's content of file ``key`` read through the cache; ``sized`` is told
        its exact size when known at open. ``share``: what this inode's read-only opens
        get stays the same until the mount invalidates its attributes (the family's
        word): once the kernel keeps its pages, they share one handle (``Opened.shared``).
        ``follow``: ``key``'s content changes (a document's latest source file), and a
        descriptor held open reads the content of the moment it reads
        (``handles.LatestSource``)."""
        content = await self._contents.of(key)
        if self._page_keys.get(ino) == content.key and self._blobs.is_cached(content.key):
            size = self._blobs.exact_size(content.key)
            if size is not None:
                # The kernel keeps this inode's pages of this content (``keep_cache``):
                # only a page it dropped since is read here, so the cache file is opened
                # at the first read that comes, not at every open of a warm walk.
                open_blob = (
                    self.vault_reader(key)
                    if follow
                    else functools.partial(self._blobs.open, content.key, content.fetch)
                )
                if share:
                    edit = self._edit_of(key) if follow else None
                    fh = self._shared_handle(ino, content.key, open_blob, edit)
                elif follow:
                    fh = self._handles.add_file(self._latest(key, content))
                else:
                    fh = self._handles.add_file(CachedContent(open_blob=open_blob))
                if sized is not None:
                    sized(size)
                opened = self._opened_content(ino, fh, content.key, size)
                opened.shared = share
                return opened
        blob = await self._blobs.open(content.key, content.fetch)
        if not blob.complete:
            # Wait for the response to begin: its length is the exact size.
            try:
                await blob.wait_started()
            except BaseException:
                blob.close()
                raise
        fh = self._handles.add_file(
            self._latest(key, content, blob) if follow else CachedContent(blob)
        )
        size = self._blobs.exact_size(content.key)
        if sized is not None and size is not None:
            sized(size)
        return self._opened_content(ino, fh, content.key, size)

    def _latest(
        self, key: NodeKey, content: Content, blob: BlobHandle | None = None
    ) -> LatestSource:
        """A handle of ``key``'s content that follows it as it changes: asked again
        only when the index learned a change (a big read is thousands of reads)."""
        contents = self._contents
        seen = (contents.generation(), content)

        async def latest() -> Content:
            nonlocal seen
            if contents.generation() != seen[0]:
                generation = contents.generation()
                seen = (generation, await contents.of(key))
            return seen[1]

        async def open_content(now: Content) -> BlobHandle:
            return await self._blobs.open(now.key, now.fetch)

        return LatestSource(self._edit_of(key), latest, open_content, content, blob)

    def _shared_handle(
        self,
        ino: int,
        content_key: str,
        open_blob: Callable[[], Awaitable[BlobHandle]],
        edit: Callable[[int, int], bytes | None] | None,
    ) -> int:
        """The one handle of ``ino``'s read-only opens of ``content_key``."""
        handles = self._shared.setdefault(ino, {})
        fh = handles.get(content_key)
        if fh is None:
            shared = SharedContent(open_blob, edit)
            fh = handles[content_key] = self._handles.add_shared(shared)
        return fh

    def _edit_of(self, key: NodeKey) -> Callable[[int, int], bytes | None]:
        """Reads the bytes of ``key``'s document's save not checked in yet, if any."""
        editing, doc_id = self._new_documents.editing, key.doc_id

        def edit(offset: int, size: int) -> bytes | None:
            return editing.read_edit(doc_id, offset, size)

        return edit

    async def exact_size_known(self, key: NodeKey) -> BlobHandle | None:
        """The vault's content of ``key`` opened, when its exact size is not known yet
        (the download's first answer tells it: the call a read would make anyway)."""
        content = await self._contents.of(key)
        if self._blobs.exact_size(content.key) is not None:
            return None
        blob = await self._blobs.open(content.key, content.fetch)
        try:
            if not blob.complete:
                await blob.wait_started()
        except BaseException:
            blob.close()
            raise
        return blob

    async def cached_path(self, key: NodeKey) -> Path:
        """The vault's content of ``key`` as a file of the content cache (downloaded
        first when it is not there)."""
        content = await self._contents.of(key)
        return await self._blobs.cached_path(content.key, content.fetch)

    def open_file(self, fh: int) -> OpenFile:
        """The open file behind handle ``fh`` (EBADF: none)."""
        return self._handles.file(fh)

    def vault_reader(self, key: NodeKey) -> Callable[[], Awaitable[BlobHandle]]:
        """Opens the vault's content of ``key`` for reading (through the cache)."""

        async def open_vault() -> BlobHandle:
            content = await self._contents.of(key)
            return await self._blobs.open(content.key, content.fetch)

        return open_vault

    def _opened_content(self, ino: int, fh: int, content_key: str, size: int | None) -> Opened:
        """How the kernel reads a file of vault content: through its page cache once the
        exact size is known, and keeping the pages of earlier opens while the inode
        still stands for the same (immutable) content."""
        if size is None:
            return Opened(fh, direct_io=True)  # no length sent: read until a short read
        if self._freshness.exact(ino):
            # The kernel may hold the estimate: it would cut reads short (or pad them).
            self.invalidate_attr(ino)
        keep_cache = self._page_keys.get(ino) == content_key
        self._page_keys[ino] = content_key
        return Opened(fh, keep_cache=keep_cache)
