"""The FUSE operations: each unpacks the kernel's arguments, calls the core, and builds
the reply (``replies``), inside the request's error translation (``requests``).

With a pyfuse3 that offers it (``capabilities``), the kernel keeps directory listings:
OPENDIR is answered ENOSYS (``no_opendir``), so that a warm walk sends no request for a
directory at all, and readdir is given the directory's inode (``listing_by_inode``); or
(``cache_readdir``) directories of the vault are opened with ``cache_readdir`` and
``keep_cache``, and a warm walk sends an OPENDIR and a RELEASEDIR per directory, no
READDIRPLUS. How a kept listing is dropped: ``kernel_cache``. The mount's own
directories (``.vaultfs``, lost+found, a new folder) are never kept. A file opened
read-only is opened with ``noflush`` where offered: its close sends no FLUSH. A file
whose read-only opens all share one handle (``Opened.shared``) is kept open
(``kernel_cache.kept_opens``): pyfuse3 answers its next read-only opens and their
releases itself.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence

import pyfuse3

from vaultfs.bridge.daemon.capabilities import Capabilities, detect
from vaultfs.bridge.daemon.fuse.kernel_cache import (
    invalidations,
    kept,
    kept_opens,
    shared_entries,
)
from vaultfs.bridge.daemon.fuse.listing_by_inode import ListingsByInode
from vaultfs.bridge.daemon.fuse.listing_pages import ListingPages
from vaultfs.bridge.daemon.fuse.replies import (
    entry_attributes,
    is_plain,
    reply_entries,
    reply_plain,
    stand_in,
    statvfs,
)
from vaultfs.bridge.daemon.fuse.requests import RequestErrors, count
from vaultfs.bridge.daemon.name_events import Event, NameEvents, Sort
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.inodes import DOCUMENT_DIRS

__all__ = ["FuseOps", "capabilities"]


def _pid(ctx: pyfuse3.RequestContext | None) -> int | None:
    return None if ctx is None else ctx.pid


def capabilities() -> Capabilities:
    """What of the installed pyfuse3 the mount uses (see ``capabilities``)."""
    offered = set(getattr(pyfuse3, "features", ()))
    info = pyfuse3.FileInfo()
    for field in ("cache_readdir", "noflush"):
        if not hasattr(info, field):
            offered.discard(field)
    return detect(offered)


class FuseOps(pyfuse3.Operations):
    def __init__(
        self,
        core: FileSystem,
        using: Capabilities | None = None,
        *,
        events: NameEvents | None = None,
    ) -> None:
        """``using``: the kernel-cache features of pyfuse3 the mount uses (None: those
        detected); ``events``: raises IN_CREATE and IN_DELETE for names the daemon made
        appear or go, its own requests answered apart (``daemon.name_events``)."""
        super().__init__()
        self.core = core
        self.events = events
        self.using = capabilities() if using is None else using
        if self.using.xattr_namespaces:
            # The only namespace with attributes here: pyfuse3 answers other names
            # (ENOTSUP, the ACL names included: ``tree.xattrs``).
            self.xattr_namespaces = (b"user.",)
        # Attributes in a listing only where the kernel wants them (``ls -l``); with
        # ``plus_names``, where ``listing_pages`` sees a program that stats.
        self.readdirplus_auto = self.using.readdirplus_auto
        self.cache_symlinks = self.using.cache_symlinks
        self.errors = RequestErrors(core)
        #: without OPENDIR: the listings being read, by directory inode
        self.by_inode = ListingsByInode(
            core, self.errors, ListingPages() if self.using.plus_names else None
        )
        #: open directory handle -> the process that opened it (its walk's share)
        self._listers: dict[int, int] = {}

    async def share_entries(self) -> None:
        """Hand pyfuse3 the names that are one node in every document's directory
        (``kernel_cache.shared_entries``), where it offers that."""
        if shared_entries is None or not self.using.shared_entries:
            return
        first, step = DOCUMENT_DIRS
        for name, attr in (await self.core.shared_entries()).items():
            shared_entries[os.fsencode(name)] = (entry_attributes(attr), first, step)

    # --- names and attributes ----------------------------------------------------

    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext | None = None
    ) -> pyfuse3.EntryAttributes:
        event = self._event(ctx, parent_inode, name)
        if event is not None and ctx is not None:
            if not event.creates:
                # then the unlink (rmdir) that raises IN_DELETE
                return stand_in(event.stand_in, event.sort is not Sort.DELETE_FILE, ctx)
            if not event.held():
                raise pyfuse3.FUSEError(errno.ENOENT)  # then the mkdir that raises IN_CREATE
            # Looked up since the create was announced: the kernel's look again is
            # answered as any other, and the mkdir fails in the kernel (no event).
        # What only a walk needs of the vault is paid from the walks' share
        # (``tree.walks``): of a listing, and of a lookup or stat by a process that lists.
        walks = self.core.tree.walks
        pid = _pid(ctx)
        self.by_inode.looked_up(parent_inode, pid)
        with self.errors.handling("lookup", parent_inode, name), walks.naming(pid):
            return entry_attributes(await self.core.lookup(parent_inode, os.fsdecode(name)))

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        count("forget")
        for ino, nlookup in inode_list:
            self.core.forget(ino, nlookup)
            if self.core.inodes.key(ino) is None:
                # The kernel dropped the inode, and its listing (its opens are closed).
                kept.pop(ino, None)
                kept_opens.pop(ino, None)
                self.by_inode.forget(ino)

    async def getattr(
        self, inode: int, ctx: pyfuse3.RequestContext | None = None
    ) -> pyfuse3.EntryAttributes:
        walks = self.core.tree.walks
        with self.errors.handling("getattr", inode), walks.naming(_pid(ctx)):
            return entry_attributes(await self.core.getattr(inode))

    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        with self.errors.handling("setattr", inode):
            return entry_attributes(
                await self.core.setattr(
                    inode,
                    attr.st_size if fields.update_size else None,
                    fh,
                    mode=attr.st_mode if fields.update_mode else None,
                    mtime_ns=attr.st_mtime_ns if fields.update_mtime else None,
                )
            )

    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        with self.errors.handling("statfs"):
            return statvfs(self.core.statfs())

    # --- directories -------------------------------------------------------------

    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int | pyfuse3.FileInfo:
        if self.using.no_opendir:
            raise pyfuse3.FUSEError(errno.ENOSYS)
        walks = self.core.tree.walks
        with self.errors.handling("opendir", inode), walks.listing(_pid(ctx)):
            # Opened as before (the listing is built, refusals are the open's), so
            # that the kernel holding a listing changes nothing else.
            fh = await self.core.opendir(inode)
            self._listers[fh] = _pid(ctx) or 0
            key = self.core.inodes.key(inode)
            if not self.using.cache_readdir or key is None or self.core.registry.is_local(key):
                # The mount's own directories (and the search folders) change with
                # nothing announcing it: their listings are never kept.
                return fh
            kept.setdefault(inode, 0)
            # Both flags: without keep_cache the kernel drops the listing at every open.
            return pyfuse3.FileInfo(fh=fh, keep_cache=True, cache_readdir=True)

    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        # The process listing: the token's (the patch's ``readdir_pid``: without
        # OPENDIR no other request of that process names it), else the one that opened
        # the directory, else unknown.
        pid = getattr(token, "pid", None) or self._listers.get(fh)
        with self.core.tree.walks.listing(pid):
            await self._readdir(fh, start_id, token, pid)

    async def _readdir(
        self, fh: int, start_id: int, token: pyfuse3.ReaddirToken, pid: int | None
    ) -> None:
        if self.using.no_opendir:
            await self.by_inode.readdir(fh, start_id, token, pid)
            return
        with self.errors.handling("readdir"):
            if is_plain(token):
                reply_plain(self.core, fh, start_id, token)
            else:
                reply_entries(self.core, await self.core.readdir(fh, start_id), token)

    async def releasedir(self, fh: int) -> None:
        count("releasedir")
        self._listers.pop(fh, None)
        self.core.releasedir(fh)

    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        if self._apart(Sort.CREATE_DIR, ctx, parent_inode, name):
            # The create event's mkdir: the existing directory, never a new one.
            with self.errors.handling("mkdir", parent_inode, name):
                return entry_attributes(await self.core.lookup(parent_inode, os.fsdecode(name)))
        with self.errors.handling("mkdir", parent_inode, name):
            return entry_attributes(await self.core.mkdir(parent_inode, os.fsdecode(name)))

    def _event(
        self, ctx: pyfuse3.RequestContext | None, parent_inode: int, name: bytes
    ) -> Event | None:
        """The name event a request is the call (or the lookup) of, if any."""
        if self.events is None or ctx is None:
            return None
        return self.events.pending(ctx.pid, parent_inode, os.fsdecode(name))

    def _apart(
        self, sort: Sort, ctx: pyfuse3.RequestContext, parent_inode: int, name: bytes
    ) -> bool:
        """Whether a request is the name events' thread's call of ``sort`` for its
        event, answered as ``name_events`` says; any other call of that thread changes
        nothing (ENOENT)."""
        if self.events is None or not self.events.own(ctx.pid):
            return False
        event = self._event(ctx, parent_inode, name)
        if event is None or event.sort is not sort:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return True

    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        if self._apart(Sort.DELETE_DIR, ctx, parent_inode, name):
            return  # the delete event's rmdir: nothing is deleted
        with self.errors.handling("rmdir", parent_inode, name):
            await self.core.rmdir(parent_inode, os.fsdecode(name))

    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        if self._apart(Sort.DELETE_FILE, ctx, parent_inode, name):
            return  # the delete event's unlink: nothing is deleted
        with self.errors.handling("unlink", parent_inode, name):
            await self.core.unlink(parent_inode, os.fsdecode(name))

    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        with self.errors.handling("symlink", parent_inode, name):
            return entry_attributes(
                await self.core.symlink(parent_inode, os.fsdecode(name), os.fsdecode(target))
            )

    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        with self.errors.handling("readlink", inode):
            return os.fsencode(await self.core.readlink(inode))

    async def rename(
        self,
        parent_inode_old: int,
        name_old: bytes,
        parent_inode_new: int,
        name_new: bytes,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> None:
        with self.errors.handling("rename", parent_inode_old, name_old):
            await self.core.rename(
                parent_inode_old,
                os.fsdecode(name_old),
                parent_inode_new,
                os.fsdecode(name_new),
                flags,
            )

    # --- files -------------------------------------------------------------------

    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        with self.errors.handling("open", inode):
            before = invalidations()
            opened = await self.core.open(inode, flags)
            self.errors.fh_inodes[opened.fh] = inode
            info = pyfuse3.FileInfo(
                fh=opened.fh, direct_io=opened.direct_io, keep_cache=opened.keep_cache
            )
            if opened.noflush and self.using.noflush:
                # No FLUSH at close: a round trip per file of a warm ``grep -r`` spared.
                info.noflush = True
            if opened.shared and self.using.kept_opens and invalidations() == before:
                # pyfuse3 answers the next read-only opens (and releases) itself; not
                # when an invalidation came while this open awaited (its answer may be
                # older than that).
                kept_opens[inode] = opened.fh
            return info

    async def create(
        self,
        parent_inode: int,
        name: bytes,
        mode: int,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        with self.errors.handling("create", parent_inode, name):
            opened, attr = await self.core.create(parent_inode, os.fsdecode(name), mode, flags)
            self.errors.fh_inodes[opened.fh] = attr.ino
            info = pyfuse3.FileInfo(
                fh=opened.fh, direct_io=opened.direct_io, keep_cache=opened.keep_cache
            )
            return info, entry_attributes(attr)

    async def read(self, fh: int, off: int, size: int) -> bytes:
        with self.errors.handling("read", fh=fh):
            return await self.core.read(fh, off, size)

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        with self.errors.handling("write", fh=fh):
            return await self.core.write(fh, off, buf)

    async def flush(self, fh: int) -> None:
        with self.errors.handling("flush", fh=fh):
            await self.core.flush(fh)

    async def fsync(self, fh: int, datasync: bool) -> None:
        with self.errors.handling("fsync", fh=fh):
            await self.core.fsync(fh)

    async def release(self, fh: int) -> None:
        try:
            with self.errors.handling("release", fh=fh):
                await self.core.release(fh)
        finally:
            self.errors.fh_inodes.pop(fh, None)

    # --- extended attributes -----------------------------------------------------

    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        with self.errors.handling("listxattr", inode):
            return [os.fsencode(n) for n in await self.core.listxattr(inode)]

    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        with self.errors.handling("getxattr", inode, attribute=name):
            return await self.core.getxattr(inode, os.fsdecode(name))

    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        with self.errors.handling("setxattr", inode, attribute=name):
            await self.core.setxattr(inode, os.fsdecode(name), value)

    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        with self.errors.handling("removexattr", inode, attribute=name):
            await self.core.setxattr(inode, os.fsdecode(name), None)
