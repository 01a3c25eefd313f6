"""readdir without OPENDIR (``Capabilities.no_opendir``): the kernel names the
directory by its inode, and the listing the core makes at the first read is kept here
until a read finds its end. Each page is answered with attributes or names only as the
kernel asks (``readdirplus_auto``) or as ``listing_pages`` decides (``plus_names``)."""

from __future__ import annotations

import logging

import pyfuse3

from vaultfs.bridge.daemon.fuse.kernel_cache import drop_listing, kept
from vaultfs.bridge.daemon.fuse.listing_pages import ListingPages
from vaultfs.bridge.daemon.fuse.replies import is_plain, reply_entries, reply_plain
from vaultfs.bridge.daemon.fuse.requests import RequestErrors
from vaultfs.bridge.fs.filesystem import FileSystem

__all__ = ["ListingsByInode"]

log = logging.getLogger(__name__)


class ListingsByInode:
    def __init__(self, core: FileSystem, errors: RequestErrors, pages: ListingPages | None) -> None:
        """``pages``: which pages carry attributes (None: as the kernel asks)."""
        self.core = core
        self.errors = errors
        self.pages = pages
        #: directory inode -> the core's handle of the listing being read
        self._reading: dict[int, int] = {}

    async def readdir(
        self, ino: int, start_id: int, token: pyfuse3.ReaddirToken, pid: int | None
    ) -> None:
        """Without OPENDIR the kernel names the directory by its inode: the listing is
        made at its first read and kept until a read finds its end."""
        with self.errors.handling("readdir", ino):
            fh = self._reading.pop(ino, None) if start_id == 0 else self._reading.get(ino)
            if start_id == 0 and fh is not None:
                self.core.releasedir(fh)  # a listing not read to its end
                fh = None
            if fh is None and start_id and kept.get(ino) == start_id:
                # The end of a listing the kernel keeps whole, asked for again (the
                # kernel looks in what it keeps for an entry after the last, and asks
                # the mount when it finds none): nothing after it, as nothing dropped
                # the listing since. An empty reply, with no listing made for it.
                return
            if fh is None:
                if start_id:
                    # No listing under way, yet not from the start: the kernel served the
                    # start from the listing it kept and found a later page of it gone
                    # (reclaimed by its memory management, nothing this mount did); it
                    # drops the whole listing and asks for the rest from here.
                    log.debug(
                        "inode %d listed from entry %d on: a page of the listing the "
                        "kernel kept was reclaimed",
                        ino,
                        start_id,
                    )
                if kept.get(ino):
                    # Where the last listing ended is no answer while this one is read
                    # (pyfuse3 answers a read from there empty: ``kernel_cache.kept``).
                    kept[ino] = 0
                fh = self._reading[ino] = await self.core.opendir(ino)
            plain = is_plain(token) or (
                self.pages is not None and not self.pages.with_attributes(ino, start_id, pid)
            )
            listing = self.core.handles.dir(fh)
            key = self.core.inodes.key(ino)
            local = key is not None and self.core.registry.is_local(key)
            if local:
                # The mount's own directories change with nothing announcing it: what
                # the kernel kept of the listing so far is dropped before each answer
                # (its pages are written by then: this read came after them), so the
                # listing is never complete in the kernel and is asked for anew.
                drop_listing(ino)
            # Where the listing ends: here (nothing from ``start_id``), or within this
            # answer (a kept listing only: the kernel's next read, at the end, is then
            # answered empty at once, with no listing made or read for it: a document
            # folder's listing is made once); None: it goes on.
            end: int | None = start_id
            if plain:
                # Names only: nothing awaits, the reply is written as it is made.
                if not listing.ended(start_id):
                    end = reply_plain(self.core, fh, start_id, token)
            else:
                entries = await self.core.readdir(fh, start_id)
                if entries:
                    whole = reply_entries(self.core, entries, token)
                    last = entries[-1][0]
                    end = last if whole and listing.ended(last) else None
            if local and end != start_id:
                end = None  # ended only where a read finds nothing: never kept
            if end is not None:
                del self._reading[ino]
                self.core.releasedir(fh)
            if not local:
                # From the first part on: the kernel serves parts too.
                kept[ino] = end if end is not None else kept.get(ino, 0)

    def forget(self, ino: int) -> None:
        """The kernel forgot directory ``ino``."""
        if self.pages is not None:
            self.pages.forget(ino)

    def looked_up(self, parent: int, pid: int | None) -> None:
        """A name was looked up in ``parent``: where that shows a program that stats its
        way through a listing the kernel keeps whole, the kept listing is dropped, so
        that its next read reaches the mount and gets attributes."""
        if self.pages is not None and self.pages.looked_up(parent, pid) and kept.get(parent):
            drop_listing(parent)
