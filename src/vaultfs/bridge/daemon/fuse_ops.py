"""The FUSE operations: the only module that imports pyfuse3.

Each operation unpacks the kernel's arguments, calls the core, and builds the reply,
inside one error-translation context: ``vaultfs.errors`` and ``OSError`` become the
errno of ``errors.errno_for``; anything unexpected is logged with its context and
becomes EIO. Nothing but ``pyfuse3.FUSEError`` (and trio's cancellation) escapes.
"""

from __future__ import annotations

import errno
import logging
import os
import queue
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pyfuse3

from vaultfs import errors
from vaultfs.bridge.daemon.creates import CreateEvents
from vaultfs.bridge.fs.filesystem import Attr, FileSystem

__all__ = [
    "FuseOps",
    "close",
    "default_options",
    "forget_entry",
    "init",
    "invalidate_attr",
    "invalidate_entry",
    "main",
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


class FuseOps(pyfuse3.Operations):
    def __init__(self, core: FileSystem, creates: CreateEvents | None = None) -> None:
        """``creates``: raises IN_CREATE for names the daemon made appear; its own
        lookups and mkdirs are answered apart (``daemon.creates``)."""
        super().__init__()
        self.core = core
        self.creates = creates
        self._logged: dict[tuple[str, Any], float] = {}
        #: open file handle -> its inode, so that a log line about a read, a write or a
        #: close names the file
        self._fh_inodes: dict[int, int] = {}

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
        for ino, nlookup in inode_list:
            self.core.forget(ino, nlookup)

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

    async def opendir(self, inode: int, ctx: pyfuse3.RequestContext) -> int:
        with self._errors("opendir", inode):
            return await self.core.opendir(inode)

    async def readdir(self, fh: int, start_id: int, token: pyfuse3.ReaddirToken) -> None:
        with self._errors("readdir"):
            entries = await self.core.readdir(fh, start_id)
            for n, (next_id, name, _, attr) in enumerate(entries):
                if not pyfuse3.readdir_reply(token, os.fsencode(name), self._entry(attr), next_id):
                    # The kernel took no reference to these: give theirs back.
                    self.core.entries_not_returned(entries[n:])
                    break

    async def releasedir(self, fh: int) -> None:
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


def invalidate_attr(inode: int) -> None:
    """Make the kernel ask for ``inode``'s attributes again. Attributes only: that never
    waits for the kernel (no pages to write back), so it is safe inside a request."""
    try:
        pyfuse3.invalidate_inode(inode, attr_only=True)
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
    pyfuse3.init(ops, mountpoint, options)


async def main() -> None:
    await pyfuse3.main()


def terminate() -> None:
    pyfuse3.terminate()


def close(*, unmount: bool) -> None:
    _stop_notifier()  # before the session it writes to goes
    pyfuse3.close(unmount=unmount)


def default_options() -> set[str]:
    return set(pyfuse3.default_options)
