"""The FUSE operations: the only module that imports pyfuse3.

Each operation unpacks the kernel's arguments, calls the core, and builds the reply,
inside one error-translation context: ``vaultfs.errors`` and ``OSError`` become the
errno of ``errors.errno_for``; anything unexpected is logged with its context and
becomes EIO. Nothing but ``pyfuse3.FUSEError`` (and trio's cancellation) escapes.

With a pyfuse3 that offers it (``capabilities``), the kernel keeps directory listings:
OPENDIR is answered ENOSYS (``no_opendir``), so that a warm walk sends no request for a
directory at all, and readdir is given the directory's inode; or (``cache_readdir``)
directories of the vault are opened with ``cache_readdir`` and ``keep_cache``, and a
warm walk sends an OPENDIR and a RELEASEDIR per directory, no READDIRPLUS. The kernel
drops a kept listing itself when this mount creates, links, renames or deletes in the
directory; for every other change the listing goes with the directory's attributes:
``invalidate_attr`` (called for the inodes of each document the index learns a change
of, and for every folder) drops the kept listing of a directory it was given for. The
mount's own directories (``.vaultfs``, lost+found, a new folder) are never kept.
"""

from __future__ import annotations

import errno
import logging
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pyfuse3
import trio

from vaultfs import errors
from vaultfs.bridge.daemon.capabilities import Capabilities, detect
from vaultfs.bridge.daemon.creates import CreateEvents
from vaultfs.bridge.daemon.readahead import raise_read_ahead
from vaultfs.bridge.fs.filesystem import Attr, FileSystem

__all__ = [
    "FuseOps",
    "capabilities",
    "close",
    "default_options",
    "forget_entry",
    "init",
    "invalidate_attr",
    "invalidate_entry",
    "main",
    "request_counts",
    "terminate",
]

log = logging.getLogger(__name__)

#: seconds between two log lines about the same unreachable-vault failure
_REPEAT_LOG_AFTER = 60.0
#: answers a file system gives in ordinary use (a name probed that does not exist, an
#: attribute it does not have): not worth a log line
_ORDINARY = frozenset(
    {errno.ENOENT, errno.ENODATA, errno.ENOTSUP, errno.ENOTDIR, errno.EISDIR, errno.EEXIST}
)


def capabilities() -> Capabilities:
    """What of the installed pyfuse3 the mount uses (see ``capabilities``)."""
    offered = set(getattr(pyfuse3, "features", ()))
    if not hasattr(pyfuse3.FileInfo(), "cache_readdir"):
        offered.discard("cache_readdir")
    return detect(offered)


class FuseOps(pyfuse3.Operations):
    def __init__(
        self,
        core: FileSystem,
        using: Capabilities | None = None,
        *,
        creates: CreateEvents | None = None,
    ) -> None:
        """``using``: the kernel-cache features of pyfuse3 the mount uses (None: those
        detected); ``creates``: raises IN_CREATE for names the daemon made appear, its
        own lookups and mkdirs answered apart (``daemon.creates``)."""
        super().__init__()
        self.core = core
        self.creates = creates
        self.using = capabilities() if using is None else using
        if self.using.no_opendir:
            # A listing the kernel kept reaches the mount no more: a walk is taken from
            # its first document.
            core.parts.prefetch.listings_seen = False
        if self.using.xattr_namespaces:
            # The only namespace with attributes here: pyfuse3 answers other names.
            self.xattr_namespaces = (b"user.",)
            # Declaring POSIX ACLs makes the kernel ask for an inode's ACLs once and keep
            # the answer (none) instead of sending the probes of every ``ls -l``; the
            # kernel then leaves the umask to the file system (``create``).
            self.enable_acl = True
        self._logged: dict[tuple[str, Any], float] = {}
        #: open file handle -> its inode, so that a log line about a read, a write or a
        #: close names the file
        self._fh_inodes: dict[int, int] = {}
        #: without OPENDIR: directory inode -> the core's handle of the listing being read
        self._reading: dict[int, int] = {}

    # --- error translation -------------------------------------------------------

    @contextmanager
    def _errors(
        self,
        op: str,
        ino: int | None = None,
        name: bytes | None = None,
        *,
        fh: int | None = None,
        attribute: bytes | None = None,
    ) -> Iterator[None]:
        """``ino`` (with ``name`` for an operation on a name in a directory), or the
        open file ``fh``, says what a log line is about; ``attribute``: an xattr's name."""
        _requests[op] += 1
        try:
            yield
        except pyfuse3.FUSEError:
            raise
        except (errors.VaultError, OSError) as exc:
            number = errors.errno_for(exc)
            what = self._what(ino, name, fh, attribute)
            if number not in _ORDINARY:
                self._log_once(op, what, exc)  # a refusal or a failure: the user's answer
            elif isinstance(exc, errors.VaultError):
                log.debug("%s(%s): %s -> %s", op, what, exc, errno.errorcode[number])
            raise pyfuse3.FUSEError(number) from None
        except Exception:
            log.exception("%s(%s) failed unexpectedly", op, self._what(ino, name, fh, attribute))
            raise pyfuse3.FUSEError(errno.EIO) from None

    def _what(
        self, ino: int | None, name: bytes | None, fh: int | None, attribute: bytes | None
    ) -> str:
        """The path the user knows (relative to the mount point), never a node key."""
        if ino is None and fh is not None:
            ino = self._fh_inodes.get(fh)
        if ino is None:
            what = "" if fh is None else f"file handle {fh}"
        else:
            what = self.core.report.paths.show_inode(
                ino, None if name is None else os.fsdecode(name)
            )
        return what if attribute is None else f"{what}, {os.fsdecode(attribute)}"

    def _log_once(self, op: str, what: str, exc: BaseException) -> None:
        mark = (op, what)
        now = time.monotonic()
        if now - self._logged.get(mark, -_REPEAT_LOG_AFTER) >= _REPEAT_LOG_AFTER:
            self._logged[mark] = now
            log.warning("%s(%s) failed: %s", op, what, exc)

    def _entry(self, attr: Attr) -> pyfuse3.EntryAttributes:
        entry = pyfuse3.EntryAttributes()
        entry.st_ino = attr.ino
        entry.generation = 0
        entry.entry_timeout = attr.entry_timeout
        entry.attr_timeout = attr.timeout
        entry.st_mode = attr.mode
        entry.st_nlink = attr.nlink
        entry.st_uid = attr.uid
        entry.st_gid = attr.gid
        entry.st_rdev = 0
        entry.st_size = attr.size
        entry.st_blksize = 1 << 17
        entry.st_blocks = (attr.size + 511) // 512
        entry.st_atime_ns = attr.mtime_ns
        entry.st_mtime_ns = attr.mtime_ns
        entry.st_ctime_ns = attr.ctime_ns
        return entry

    # --- names and attributes ----------------------------------------------------

    async def lookup(
        self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext | None = None
    ) -> pyfuse3.EntryAttributes:
        if ctx is not None and self._creating(ctx, parent_inode, name):
            raise pyfuse3.FUSEError(errno.ENOENT)  # then the mkdir that raises IN_CREATE
        with self._errors("lookup", parent_inode, name):
            return self._entry(await self.core.lookup(parent_inode, os.fsdecode(name)))

    async def forget(self, inode_list: Sequence[tuple[int, int]]) -> None:
        _requests["forget"] += 1
        for ino, nlookup in inode_list:
            self.core.forget(ino, nlookup)
            if ino in _kept and self.core.inodes.key(ino) is None:
                _kept.discard(ino)  # the kernel dropped the inode, and its listing

    async def getattr(
        self, inode: int, ctx: pyfuse3.RequestContext | None = None
    ) -> pyfuse3.EntryAttributes:
        with self._errors("getattr", inode):
            return self._entry(await self.core.getattr(inode))

    async def setattr(
        self,
        inode: int,
        attr: pyfuse3.EntryAttributes,
        fields: pyfuse3.SetattrFields,
        fh: int | None,
        ctx: pyfuse3.RequestContext,
    ) -> pyfuse3.EntryAttributes:
        with self._errors("setattr", inode):
            return self._entry(
                await self.core.setattr(
                    inode,
                    attr.st_size if fields.update_size else None,
                    fh,
                    mode=attr.st_mode if fields.update_mode else None,
                    mtime_ns=attr.st_mtime_ns if fields.update_mtime else None,
                )
            )

    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        with self._errors("statfs"):
            numbers = self.core.statfs()
            data = pyfuse3.StatvfsData()
            data.f_bsize = data.f_frsize = numbers["bsize"]
            data.f_blocks = numbers["blocks"]
            data.f_bfree = data.f_bavail = numbers["bfree"]
            data.f_files = numbers["files"]
            data.f_ffree = data.f_favail = numbers["ffree"]
            data.f_namemax = numbers["namemax"]
            return data

    # --- directories -------------------------------------------------------------

    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int | pyfuse3.FileInfo:
        if self.using.no_opendir:
            raise pyfuse3.FUSEError(errno.ENOSYS)
        with self._errors("opendir", inode):
            # Opened as before (the listing is built, refusals are the open's), so
            # that the kernel holding a listing changes nothing else.
            fh = await self.core.opendir(inode)
            key = self.core.inodes.key(inode)
            if not self.using.cache_readdir or key is None or self.core.registry.is_local(key):
                # The mount's own directories (and the search folders) change with
                # nothing announcing it: their listings are never kept.
                return fh
            _kept.add(inode)
            # Both flags: without keep_cache the kernel drops the listing at every open.
            return pyfuse3.FileInfo(fh=fh, keep_cache=True, cache_readdir=True)

    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        if self.using.no_opendir:
            await self._readdir_by_inode(fh, start_id, token)
            return
        with self._errors("readdir"):
            self._reply_entries(await self.core.readdir(fh, start_id), token)

    async def _readdir_by_inode(self, ino: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        """Without OPENDIR the kernel names the directory by its inode: the listing is
        made at its first read and kept until a read finds its end."""
        with self._errors("readdir", ino):
            fh = self._reading.pop(ino, None) if start_id == 0 else self._reading.get(ino)
            if start_id == 0 and fh is not None:
                self.core.releasedir(fh)  # a listing not read to its end
                fh = None
            if fh is None:
                fh = self._reading[ino] = await self.core.opendir(ino)
            entries = await self.core.readdir(fh, start_id)
            if not entries:
                del self._reading[ino]
                self.core.releasedir(fh)
            key = self.core.inodes.key(ino)
            if key is not None and self.core.registry.is_local(key):
                # The mount's own directories change with nothing announcing it: what
                # the kernel kept of the listing so far is dropped before each answer
                # (its pages are written by then: this read came after them), so the
                # listing is never complete in the kernel and is asked for anew.
                _drop_listing(ino)
            else:
                _kept.add(ino)  # from the first part on: the kernel serves parts too
            self._reply_entries(entries, token)

    def _reply_entries(
        self, entries: list[tuple[int, str, Any, Attr]], token: pyfuse3.ReaddirToken
    ) -> None:
        for n, (next_id, name, _, attr) in enumerate(entries):
            if not pyfuse3.readdir_reply(token, os.fsencode(name), self._entry(attr), next_id):
                # The kernel took no reference to these: give theirs back.
                self.core.entries_not_returned(entries[n:])
                break

    async def releasedir(self, fh: int) -> None:
        _requests["releasedir"] += 1
        self.core.releasedir(fh)

    async def mkdir(
        self, parent_inode: int, name: bytes, mode: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        if self.creates is not None and self.creates.own(ctx.pid):
            # The create event's mkdir: the existing directory, never a new one.
            if not self._creating(ctx, parent_inode, name):
                raise pyfuse3.FUSEError(errno.ENOENT)
            with self._errors("mkdir", parent_inode, name):
                return self._entry(await self.core.lookup(parent_inode, os.fsdecode(name)))
        with self._errors("mkdir", parent_inode, name):
            return self._entry(await self.core.mkdir(parent_inode, os.fsdecode(name)))

    def _creating(self, ctx: pyfuse3.RequestContext, parent_inode: int, name: bytes) -> bool:
        creates = self.creates
        return creates is not None and creates.pending(ctx.pid, parent_inode, os.fsdecode(name))

    async def rmdir(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        with self._errors("rmdir", parent_inode, name):
            await self.core.rmdir(parent_inode, os.fsdecode(name))

    async def unlink(self, parent_inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        with self._errors("unlink", parent_inode, name):
            await self.core.unlink(parent_inode, os.fsdecode(name))

    async def symlink(
        self, parent_inode: int, name: bytes, target: bytes, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        with self._errors("symlink", parent_inode, name):
            return self._entry(
                await self.core.symlink(parent_inode, os.fsdecode(name), os.fsdecode(target))
            )

    async def readlink(self, inode: int, ctx: pyfuse3.RequestContext) -> bytes:
        with self._errors("readlink", inode):
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
        with self._errors("rename", parent_inode_old, name_old):
            await self.core.rename(
                parent_inode_old,
                os.fsdecode(name_old),
                parent_inode_new,
                os.fsdecode(name_new),
                flags,
            )

    # --- files -------------------------------------------------------------------

    async def open(self, inode: int, flags: int, ctx: pyfuse3.RequestContext) -> pyfuse3.FileInfo:
        with self._errors("open", inode):
            opened = await self.core.open(inode, flags)
            self._fh_inodes[opened.fh] = inode
            return pyfuse3.FileInfo(
                fh=opened.fh, direct_io=opened.direct_io, keep_cache=opened.keep_cache
            )

    async def create(
        self,
        parent_inode: int,
        name: bytes,
        mode: int,
        flags: int,
        ctx: pyfuse3.RequestContext,
    ) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        with self._errors("create", parent_inode, name):
            if self.enable_acl:
                mode &= ~ctx.umask
            opened, attr = await self.core.create(parent_inode, os.fsdecode(name), mode, flags)
            self._fh_inodes[opened.fh] = attr.ino
            info = pyfuse3.FileInfo(
                fh=opened.fh, direct_io=opened.direct_io, keep_cache=opened.keep_cache
            )
            return info, self._entry(attr)

    async def read(self, fh: int, off: int, size: int) -> bytes:
        with self._errors("read", fh=fh):
            return await self.core.read(fh, off, size)

    async def write(self, fh: int, off: int, buf: bytes) -> int:
        with self._errors("write", fh=fh):
            return await self.core.write(fh, off, buf)

    async def flush(self, fh: int) -> None:
        with self._errors("flush", fh=fh):
            await self.core.flush(fh)

    async def fsync(self, fh: int, datasync: bool) -> None:
        with self._errors("fsync", fh=fh):
            await self.core.fsync(fh)

    async def release(self, fh: int) -> None:
        try:
            with self._errors("release", fh=fh):
                await self.core.release(fh)
        finally:
            self._fh_inodes.pop(fh, None)

    # --- extended attributes -----------------------------------------------------

    async def listxattr(self, inode: int, ctx: pyfuse3.RequestContext) -> list[bytes]:
        with self._errors("listxattr", inode):
            return [os.fsencode(n) for n in await self.core.listxattr(inode)]

    async def getxattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> bytes:
        with self._errors("getxattr", inode, attribute=name):
            return await self.core.getxattr(inode, os.fsdecode(name))

    async def setxattr(
        self, inode: int, name: bytes, value: bytes, ctx: pyfuse3.RequestContext
    ) -> None:
        with self._errors("setxattr", inode, attribute=name):
            await self.core.setxattr(inode, os.fsdecode(name), value)

    async def removexattr(self, inode: int, name: bytes, ctx: pyfuse3.RequestContext) -> None:
        with self._errors("removexattr", inode, attribute=name):
            await self.core.setxattr(inode, os.fsdecode(name), None)


#: directory inodes whose listings the kernel may keep (opened with cache_readdir)
_kept: set[int] = set()
#: requests that reached Python, by operation: what a walk costs (``.vaultfs/status``)
_requests: Counter[str] = Counter()


def _drop_listing(inode: int) -> None:
    try:
        pyfuse3.invalidate_inode(inode, attr_only=False)
    except OSError as exc:
        log.debug("dropping the listing of inode %d: %s", inode, exc)


def request_counts() -> dict[str, int]:
    """The requests that reached the mount's Python code so far, by operation (a
    getxattr answered inside pyfuse3 is not one)."""
    return dict(_requests)


def invalidate_attr(inode: int) -> None:
    """Make the kernel ask for ``inode``'s attributes again, and list it again when it is
    a directory whose listing it may keep. Attributes only for files: that never waits
    for the kernel (no pages to write back), so it is safe inside a request. A kept
    listing's pages are never locked while the kernel waits for this mount (it fills
    them from a reply already received), so dropping them is safe there too."""
    try:
        pyfuse3.invalidate_inode(inode, attr_only=inode not in _kept)
    except OSError as exc:  # the kernel forgot the inode already (or is not mounted)
        log.debug("invalidating inode %d: %s", inode, exc)


def invalidate_entry(parent: int, name: str, deleted: int = 0) -> None:
    """Make the kernel forget ``name`` in directory ``parent``; with ``deleted`` (the
    inode it gave for the name, gone from there) as a delete, which raises
    ``IN_DELETE`` to inotify watchers. Queued to a thread of its own: the kernel call
    waits for requests on that directory, so made from a request handler (or the trio
    loop) it could deadlock."""
    global _notifier
    if _notifier is None:
        _notifier = threading.Thread(target=_notify_entries, name="entry-notify", daemon=True)
        _notifier.start()
    _entries.put((parent, os.fsencode(name), deleted))


def forget_entry(parent: int, name: str) -> None:
    """Make the kernel forget ``name`` in ``parent`` now; waits for requests on that
    directory, so only for a thread of its own (``creates.CreateEvents``)."""
    pyfuse3.invalidate_entry(parent, os.fsencode(name))


_entries: queue.SimpleQueue[tuple[int, bytes, int] | None] = queue.SimpleQueue()
_notifier: threading.Thread | None = None


def _notify_entries() -> None:
    """Send queued entry notifications, one at a time (pyfuse3's own queue logs every
    refusal as a failure; here a refused delete falls back to forgetting the name)."""
    while (entry := _entries.get()) is not None:
        parent, name, deleted = entry
        try:
            try:
                pyfuse3.invalidate_entry(parent, name, deleted)
            except OSError as exc:
                if exc.errno == errno.ENOENT or not deleted:
                    continue  # the kernel does not hold that name (or that inode for it)
                # A directory with entries in use below it (ENOTEMPTY) or a mount point
                # (EBUSY) cannot be deleted: forgetting its name is what is left.
                log.debug("delete notification of %r refused: %s", name, exc)
                pyfuse3.invalidate_entry(parent, name)
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                log.debug("forgetting %r in %d: %s", name, parent, exc)


def _stop_notifier() -> None:
    global _notifier
    if _notifier is not None:
        _entries.put(None)
        _notifier.join()
        _notifier = None


def init(ops: FuseOps, mountpoint: str, options: set[str]) -> None:
    log.info("pyfuse3 %s, kernel cache features: %s", pyfuse3.__version__, ops.using.describe())
    global _mountpoint
    _kept.clear()
    _mountpoint = mountpoint
    pyfuse3.init(ops, mountpoint, options)


_mountpoint: str | None = None


async def main() -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_after_init)
        await pyfuse3.main()
        nursery.cancel_scope.cancel()


async def _after_init() -> None:
    """Once the kernel answers for the mount (INIT is done): the read-ahead."""
    if _mountpoint is None or os.geteuid() != 0:
        return
    await trio.to_thread.run_sync(os.stat, _mountpoint, abandon_on_cancel=True)
    raise_read_ahead(_mountpoint)


def terminate() -> None:
    pyfuse3.terminate()


def close(*, unmount: bool) -> None:
    _stop_notifier()  # before the session it writes to goes
    pyfuse3.close(unmount=unmount)


def default_options() -> set[str]:
    return set(pyfuse3.default_options)
