"""POSIX semantics over the vault, testable without a kernel.

Owns the file-system operations as plain async methods (lookup, getattr, readdir,
open/create/read/write/flush/release, setattr, xattrs, mkdir/unlink/rmdir/rename,
statfs): inode references, open handles, attributes from records (exact sizes once
known, stable times), and the ``.vaultfs`` files (status, lost+found). It raises
``vaultfs.errors`` classes or ``OSError`` with an errno; turning those into FUSE
replies is ``fuse_ops``' job. Check-out and check-in are ``editing``'s, what new and
changed names mean is ``namespace``'s, field changes are ``field_edits``'.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import trio

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobCache, BlobHandle
from vaultfs.bridge.content.prefetch import Prefetcher
from vaultfs.bridge.content.sources import content_of
from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.tree import nodes, xattrs
from vaultfs.bridge.tree.nodes import FOLDERS, ROOT, Kind, NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.editing import EditHandle, Editing
from vaultfs.bridge.write.fields import FieldEditor
from vaultfs.bridge.write.namespace import Namespace
from vaultfs.bridge.write.scratch import ScratchFile
from vaultfs.wire import parse_datetime

if TYPE_CHECKING:
    from vaultfs.bridge.write.spool.spool import Spool

__all__ = ["Attr", "Core", "Opened", "Options"]

log = logging.getLogger(__name__)

_BLOCK = 4096
#: rename(2) flags (linux/fs.h)
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


@dataclass
class Options:
    """What the mount tells the core about itself."""

    url: str = ""
    user: str = ""
    read_only: bool = False
    allow_delete: bool = False
    attr_timeout: float = 1.0
    #: longest an operation waits for the first index build
    index_wait: float = 60.0
    uid: int = field(default_factory=os.getuid)
    gid: int = field(default_factory=os.getgid)


@dataclass
class Attr:
    ino: int
    mode: int
    size: int
    nlink: int
    mtime_ns: int
    ctime_ns: int
    uid: int
    gid: int
    #: seconds the kernel may keep this (0 for files whose size changes under it)
    timeout: float


@dataclass
class Opened:
    fh: int
    direct_io: bool = False
    keep_cache: bool = False


class _Handle(Protocol):
    async def read(self, offset: int, size: int) -> bytes: ...
    def close(self) -> None: ...


class _ScratchHandle:
    """One open of a scratch file."""

    def __init__(self, scratch: ScratchFile, *, writer: bool) -> None:
        self.scratch = scratch
        self.writer = writer

    async def read(self, offset: int, size: int) -> bytes:
        return self.scratch.pread(offset, size)

    def close(self) -> None:
        pass


class _LostFile:
    """A read-only open of a lost+found file."""

    def __init__(self, path: str) -> None:
        self._fd = os.open(path, os.O_RDONLY)

    async def read(self, offset: int, size: int) -> bytes:
        return os.pread(self._fd, size, offset)

    def close(self) -> None:
        os.close(self._fd)


class _Snapshot:
    """A generated file (status): its bytes as of open()."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    async def read(self, offset: int, size: int) -> bytes:
        return self.data[offset : offset + size]

    def close(self) -> None:
        pass


def _ns(text: Any) -> int:
    if not text:
        return 0
    try:
        return int(parse_datetime(str(text)).timestamp() * 1_000_000_000)
    except ValueError:
        return 0


class Core:
    def __init__(
        self,
        tree: Tree,
        blobs: BlobCache,
        options: Options | None = None,
        *,
        spool: Spool | None = None,
    ) -> None:
        self.tree = tree
        self.blobs = blobs
        self.options = options or Options()
        self.inodes = InodeTable(ROOT)
        self.editing = Editing(tree, blobs, spool)
        self.namespace = Namespace(
            tree, blobs, self.editing, spool, allow_delete=self.options.allow_delete
        )
        self.fields = FieldEditor(tree)
        self.prefetch = Prefetcher(tree, blobs)
        self._handles: dict[int, _Handle | EditHandle | _ScratchHandle] = {}
        self._dirs: dict[int, list[tuple[str, NodeKey]]] = {}
        self._next_fh = 1
        self._started = time.time()
        #: extra status fields supplied by the mount (e.g. the daemon's pid)
        self.status_extra: Callable[[], dict[str, Any]] = dict
        #: tells the kernel to forget an inode's attributes (set by the FUSE layer)
        self.invalidate_attr: Callable[[int], None] = lambda ino: None
        #: inodes whose size the kernel was given as an estimate
        self._estimated: set[int] = set()
        #: inode -> the content key its last open served (its pages in the kernel)
        self._page_keys: dict[int, str] = {}

    # --- nodes -------------------------------------------------------------------

    def _key(self, ino: int) -> NodeKey:
        key = self.inodes.key(ino)
        if key is None:
            raise OSError(errno.ENOENT, f"inode {ino} is not known")
        return self.namespace.resolve(key)

    async def _ready(self) -> None:
        if self.tree.index.ready.is_set():
            return
        with trio.move_on_after(self.options.index_wait):
            await self.tree.index.ready.wait()
        if not self.tree.index.ready.is_set():
            raise errors.VaultUnavailable("the document index could not be read yet")

    async def _children(self, key: NodeKey) -> dict[str, NodeKey]:
        await self._ready()
        return await self.namespace.children(key)

    async def lookup(self, parent: int, name: str) -> Attr:
        await self._ready()
        child = await self.namespace.child(self._key(parent), name)
        if child is None:
            raise OSError(errno.ENOENT, name)
        return await self._entry(child)

    async def _entry(self, key: NodeKey) -> Attr:
        """The attributes of ``key`` for the kernel, which takes a reference to it."""
        attr = await self._attr(key, self.inodes.inode(key))
        self.inodes.lookup(key)
        return attr

    def forget(self, ino: int, nlookup: int) -> None:
        self.inodes.forget(ino, nlookup)
        if self.inodes.key(ino) is None:  # freed: numbers are never reused
            self._estimated.discard(ino)
            self._page_keys.pop(ino, None)

    async def getattr(self, ino: int) -> Attr:
        key = self._key(ino)
        if key != ROOT:
            await self._ready()
        return await self._attr(key, ino)

    # --- attributes --------------------------------------------------------------

    async def _attr(self, key: NodeKey, ino: int) -> Attr:
        kind = key[0]
        if kind in nodes.FILES:
            return await self._file_attr(key, ino)
        mtime = ctime = 0
        if kind == Kind.NEWDIR:
            folder = self.namespace.scratch.folder(key) if self.namespace.scratch else None
            if folder is None:
                raise OSError(errno.ENOENT, "directory no longer exists")
            mtime = ctime = folder.ctime_ns
        elif kind == Kind.ROOT or kind in FOLDERS:
            if not self.tree.folder_exists(key) and kind != Kind.ROOT:
                raise OSError(errno.ENOENT, "folder no longer exists")
            mtime = ctime = _ns(self.tree.folder_mtime(key))
        elif kind in (Kind.CTL, Kind.LOST):
            mtime = ctime = int(self._started * 1e9)
        else:
            doc_id = nodes.doc_id(key)
            record = self.tree.record(doc_id)
            if kind == Kind.VER:
                major, minor = nodes.version(key)
                record = await self.tree.version_record(doc_id, major, minor)
            mtime = _ns(record.get("version_modified_date__v"))
            ctime = _ns(record.get("document_creation_date__v")) or mtime
        writable = kind in nodes.WRITABLE_DIRS and not self.options.read_only
        return Attr(
            ino=ino,
            mode=stat.S_IFDIR | (0o755 if writable else 0o555),
            size=_BLOCK,
            nlink=2,
            mtime_ns=mtime,
            ctime_ns=ctime,
            uid=self.options.uid,
            gid=self.options.gid,
            timeout=self.options.attr_timeout,
        )

    async def _file_attr(self, key: NodeKey, ino: int) -> Attr:
        kind = key[0]
        timeout = self.options.attr_timeout
        if kind == Kind.STATUS:
            size, mtime, ctime = len(self.status_bytes()), time.time_ns(), int(self._started * 1e9)
            timeout = 0
            mode = 0o444
        elif kind == Kind.SCRATCH:
            scratch = self._scratch_file(key)
            size, mtime, ctime, mode, timeout = (
                scratch.size(),
                scratch.mtime_ns,
                scratch.ctime_ns,
                scratch.mode,
                0,
            )
        elif kind == Kind.LOSTF:
            info = os.stat(self.namespace.lost_path(key))
            size, mtime, ctime, mode = info.st_size, info.st_mtime_ns, info.st_ctime_ns, 0o444
        else:
            doc_id = nodes.doc_id(key)
            record = self.tree.record(doc_id)
            if kind == Kind.VSRC:
                major, minor = nodes.version(key)
                record = await self.tree.version_record(doc_id, major, minor)
            mtime = _ns(record.get("version_modified_date__v"))
            ctime = _ns(record.get("version_creation_date__v")) or mtime
            if kind == Kind.ATT:
                attachment = (await self.tree.details(doc_id)).attachments.get(nodes.number(key))
                if attachment is None:
                    raise OSError(errno.ENOENT, "attachment no longer exists")
                ctime = mtime = _ns(attachment.get("created_date__v")) or mtime
            entry = self.editing.entry(doc_id) if kind == Kind.SRC else None
            if entry is not None:
                size, timeout = entry.size(), 0
            else:
                content = await content_of(self.tree, key)
                exact = self.blobs.exact_size(content.key)
                if exact is None:
                    # The normal timeout all the same (a tree walk would otherwise stat
                    # every such file again): open() tells the kernel the exact size.
                    size = content.estimate
                    self._estimated.add(ino)
                else:
                    size = exact
            writable = kind == Kind.SRC and not self.options.read_only
            mode = 0o644 if writable else 0o444
        return Attr(
            ino=ino,
            mode=stat.S_IFREG | mode,
            size=size,
            nlink=1,
            mtime_ns=mtime,
            ctime_ns=ctime,
            uid=self.options.uid,
            gid=self.options.gid,
            timeout=timeout,
        )

    # --- directories -------------------------------------------------------------

    async def opendir(self, ino: int) -> int:
        key = self._key(ino)
        if nodes.is_file(key):
            raise OSError(errno.ENOTDIR, "not a directory")
        kind = key[0]
        if kind in nodes.DETAILS_DIRS:
            self.prefetch.details_needed(nodes.doc_id(key))
        # Subdirectories before files: an ``rm -r`` walk of a version directory then
        # empties its renditions before the version file's removal deletes the version.
        listing = sorted(
            (await self._children(key)).items(), key=lambda item: (nodes.is_file(item[1]), item)
        )
        if kind == Kind.ROOT or kind in FOLDERS:
            # The order a walk visits the documents in: what the prefetch reads ahead.
            documents = [k[1] for _, k in listing if k[0] == Kind.DOC]
            self.prefetch.folder_listed([int(d) for d in documents])
        fh = self._new_fh()
        self._dirs[fh] = listing
        return fh

    async def readdir(self, fh: int, start: int) -> list[tuple[int, str, NodeKey, Attr]]:
        """Entries from position ``start``: (next position, name, key, attributes).

        The caller reports each entry it handed to the kernel with ``entry_returned``
        (the kernel takes a reference to it, as with lookup).
        """
        listing = self._dirs.get(fh)
        if listing is None:
            raise OSError(errno.EBADF, "directory handle is not open")
        entries = []
        for position in range(start, len(listing)):
            name, key = listing[position]
            try:
                attr = await self._attr(key, self.inodes.inode(key))
            except (errors.InvalidDocument, FileNotFoundError):
                continue  # left the vault since opendir
            except OSError as exc:
                if exc.errno == errno.ENOENT:
                    continue
                raise
            entries.append((position + 1, name, key, attr))
        return entries

    def entry_returned(self, key: NodeKey) -> None:
        self.inodes.lookup(key)

    def releasedir(self, fh: int) -> None:
        self._dirs.pop(fh, None)

    # --- files -------------------------------------------------------------------

    def _new_fh(self) -> int:
        fh = self._next_fh
        self._next_fh += 1
        return fh

    def _scratch_file(self, key: NodeKey) -> ScratchFile:
        scratch = self.namespace.scratch.file(key) if self.namespace.scratch else None
        if scratch is None:
            raise OSError(errno.ENOENT, "scratch file no longer exists")
        return scratch

    def _open_scratch(self, scratch: ScratchFile, flags: int) -> Opened:
        writer = flags & os.O_ACCMODE != os.O_RDONLY
        if flags & os.O_TRUNC:
            scratch.truncate(0)
        scratch.handles += 1
        scratch.writers += writer
        fh = self._new_fh()
        self._handles[fh] = _ScratchHandle(scratch, writer=writer)
        return Opened(fh, direct_io=True)

    async def create(self, parent: int, name: str, mode: int, flags: int) -> tuple[Opened, Attr]:
        """A new file ``name`` in ``parent``, opened with ``flags``."""
        self._writable()
        await self._ready()
        key = await self.namespace.create(self._key(parent), name, mode)
        if key[0] == Kind.SRC:  # the source file written anew after a rename: starts empty
            opened = await self.open(self.inodes.inode(key), flags | os.O_TRUNC)
        else:
            opened = self._open_scratch(self._scratch_file(key), flags)
        return opened, await self._entry(key)

    async def open(self, ino: int, flags: int) -> Opened:
        key = self._key(ino)
        kind = key[0]
        if kind not in nodes.FILES:
            raise OSError(errno.EISDIR, "is a directory")
        writing = flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC
        if kind == Kind.SCRATCH:
            return self._open_scratch(self._scratch_file(key), flags)
        if kind == Kind.LOSTF and not writing:
            fh = self._new_fh()
            self._handles[fh] = _LostFile(str(self.namespace.lost_path(key)))
            return Opened(fh, direct_io=True)
        if writing:
            if self.options.read_only:
                raise OSError(errno.EROFS, "mounted read-only")
            if kind != Kind.SRC:
                raise OSError(errno.EACCES, "only a document's latest source file is writable")
            doc_id = nodes.doc_id(key)
            handle = await self.editing.open(doc_id, truncate=bool(flags & os.O_TRUNC))
            fh = self._new_fh()
            self._handles[fh] = handle
            return Opened(fh, direct_io=True)
        if kind == Kind.STATUS:
            fh = self._new_fh()
            self._handles[fh] = _Snapshot(self.status_bytes())
            return Opened(fh, direct_io=True)
        doc_id = nodes.doc_id(key)
        if kind == Kind.SRC and self.editing.entry(doc_id) is not None:
            fh = self._new_fh()
            self._handles[fh] = self.editing.reader(doc_id)
            return Opened(fh, direct_io=True)
        content = await content_of(self.tree, key)
        blob: BlobHandle = await self.blobs.open(content.key, content.fetch)
        if not blob.complete:
            # Wait for the response to begin: its length is the exact size.
            try:
                await blob.wait_started()
            except BaseException:
                blob.close()
                raise
        fh = self._new_fh()
        self._handles[fh] = blob
        size = self.blobs.exact_size(content.key)
        if kind in (Kind.SRC, Kind.VSRC) and size is not None:
            self.prefetch.source_opened(doc_id, size)
        return self._opened_content(ino, fh, content.key, size)

    def _opened_content(self, ino: int, fh: int, content_key: str, size: int | None) -> Opened:
        """How the kernel reads a file of vault content: through its page cache once the
        exact size is known, and keeping the pages of earlier opens while the inode
        still stands for the same (immutable) content."""
        if size is None:
            return Opened(fh, direct_io=True)  # no length sent: read until a short read
        if ino in self._estimated:
            # The kernel may hold the estimate: it would cut reads short (or pad them).
            self._estimated.discard(ino)
            self.invalidate_attr(ino)
        keep_cache = self._page_keys.get(ino) == content_key
        self._page_keys[ino] = content_key
        return Opened(fh, keep_cache=keep_cache)

    def _handle(self, fh: int) -> _Handle | EditHandle | _ScratchHandle:
        handle = self._handles.get(fh)
        if handle is None:
            raise OSError(errno.EBADF, "file handle is not open")
        return handle

    async def read(self, fh: int, offset: int, size: int) -> bytes:
        return await self._handle(fh).read(offset, size)

    async def write(self, fh: int, offset: int, data: bytes) -> int:
        handle = self._handle(fh)
        if isinstance(handle, _ScratchHandle) and handle.writer:
            return handle.scratch.pwrite(offset, data)
        if not isinstance(handle, EditHandle) or not handle.writer:
            raise OSError(errno.EBADF, "not open for writing")
        return await self.editing.write(handle, offset, data)

    async def flush(self, fh: int) -> None:
        """close(): checks in (or creates a document) when the last writer closes a
        changed file; the errors of that are what close() reports."""
        handle = self._handle(fh)
        if isinstance(handle, EditHandle):
            await self.editing.flush(handle)
        elif isinstance(handle, _ScratchHandle):
            scratch = handle.scratch
            if handle.writer and scratch.written and scratch.writers == 1:
                await self.namespace.take(scratch)

    async def fsync(self, fh: int) -> None:
        handle = self._handle(fh)
        if isinstance(handle, EditHandle):
            await trio.to_thread.run_sync(handle.fsync)
        elif isinstance(handle, _ScratchHandle):
            await trio.to_thread.run_sync(handle.scratch.fsync)

    async def release(self, fh: int) -> None:
        handle = self._handles.pop(fh, None)
        if isinstance(handle, EditHandle):
            await self.editing.release(handle)
        elif isinstance(handle, _ScratchHandle):
            await self._release_scratch(handle)
        elif handle is not None:
            handle.close()

    async def _release_scratch(self, handle: _ScratchHandle) -> None:
        scratch = handle.scratch
        scratch.handles -= 1
        scratch.writers -= handle.writer
        try:
            if handle.writer and scratch.writers == 0 and scratch.dirty:
                # Made and closed without a flush that took it (``touch``, ``: >``).
                await self.namespace.take(scratch)
        except (errors.VaultError, OSError) as exc:
            log.warning("new document from %r failed on release: %s", scratch.name, exc)
        finally:
            if self.namespace.scratch is not None:
                self.namespace.scratch.closed(scratch)

    async def setattr(
        self,
        ino: int,
        size: int | None,
        fh: int | None,
        *,
        mode: int | None = None,
        mtime_ns: int | None = None,
    ) -> Attr:
        key = self._key(ino)
        if key[0] == Kind.SCRATCH:
            scratch = self._scratch_file(key)
            if size is not None:
                scratch.truncate(size)
            if mode is not None:
                scratch.mode = stat.S_IMODE(mode)
            if mtime_ns is not None:
                scratch.mtime_ns = mtime_ns
        elif size is not None:
            if key[0] != Kind.SRC or self.options.read_only:
                raise OSError(errno.EROFS if self.options.read_only else errno.EACCES, "read-only")
            await self.editing.truncate(nodes.doc_id(key), size)
        # Times and modes of vault files are the vault's: changes are accepted and ignored.
        return await self._attr(key, ino)

    # --- extended attributes -----------------------------------------------------

    async def _fields(self, key: NodeKey) -> dict[str, Any]:
        kind = key[0]
        if kind in (Kind.DOC, Kind.SRC):
            return self.tree.record(nodes.doc_id(key))
        if kind in (Kind.VER, Kind.VSRC):
            doc_id, (major, minor) = nodes.doc_id(key), nodes.version(key)
            return await self.tree.version_record(doc_id, major, minor)
        return {}

    async def listxattr(self, ino: int) -> list[str]:
        return xattrs.names_of(await self._fields(self._key(ino)))

    async def getxattr(self, ino: int, name: str) -> bytes:
        field_name = xattrs.field_of(name)
        if field_name is None:  # ls -l's security and ACL probes: answered at once
            raise OSError(errno.ENODATA, name)
        fields = await self._fields(self._key(ino))
        if field_name not in fields:
            raise OSError(errno.ENODATA, name)
        return xattrs.value_of(fields[field_name])

    async def setxattr(self, ino: int, name: str, value: bytes | None) -> None:
        """Set (or with None remove) a field."""
        self._writable()
        key = self._key(ino)
        await self.fields.set(key, await self._fields(key), name, value)

    # --- names -------------------------------------------------------------------

    def _writable(self) -> None:
        if self.options.read_only:
            raise OSError(errno.EROFS, "mounted read-only")

    async def mkdir(self, parent: int, name: str) -> Attr:
        self._writable()
        await self._ready()
        return await self._entry(self.namespace.mkdir(self._key(parent), name))

    async def unlink(self, parent: int, name: str) -> None:
        self._writable()
        await self._ready()
        await self.namespace.unlink(self._key(parent), name)

    async def rmdir(self, parent: int, name: str) -> None:
        self._writable()
        await self._ready()
        await self.namespace.rmdir(self._key(parent), name)

    async def rename(self, old: int, old_name: str, new: int, new_name: str, flags: int) -> None:
        """rename(2); ``flags``: RENAME_NOREPLACE is honoured, RENAME_EXCHANGE refused."""
        self._writable()
        await self._ready()
        old_key, new_key = self._key(old), self._key(new)
        if flags & _RENAME_EXCHANGE:
            raise OSError(errno.EINVAL, "exchanging names is not supported")
        if flags & _RENAME_NOREPLACE and await self.namespace.child(new_key, new_name):
            raise OSError(errno.EEXIST, new_name)
        await self.namespace.rename(old_key, old_name, new_key, new_name)

    # --- the file system ---------------------------------------------------------

    def statfs(self) -> dict[str, int]:
        usage = self.blobs.usage()
        total = max(1, self.blobs.max_bytes // _BLOCK)
        free = max(0, (self.blobs.max_bytes - usage["bytes"]) // _BLOCK)
        return {
            "bsize": _BLOCK,
            "blocks": total,
            "bfree": free,
            "files": len(self.tree.index.documents),
            "ffree": 0,
            "namemax": 255,
        }

    def status(self) -> dict[str, Any]:
        client = self.tree.client
        index = self.tree.index
        budget = client.budget
        refreshed = index.last_refresh
        status: dict[str, Any] = {
            "vault_url": self.options.url,
            "user": self.options.user,
            "session_state": client.session_state,
            "read_only": self.options.read_only,
            "index": {
                "documents": len(index.documents),
                "ready": index.ready.is_set(),
                "age_seconds": None
                if refreshed is None
                else round(time.monotonic() - refreshed, 3),
            },
            "cache": self.blobs.usage(),
            "api_calls": budget.calls,
            "api_calls_by_endpoint": dict(budget.by_endpoint),
            "budget_remaining": {"burst": budget.burst_remaining, "daily": budget.daily_remaining},
            "pending_uploads": self.editing.pending(),
            "lost_and_found": self.editing.lost_records(),
            "inodes": len(self.inodes),
        }
        # What the mount adds never replaces what the core reports itself.
        return {**self.status_extra(), **status}

    def status_bytes(self) -> bytes:
        return (json.dumps(self.status(), indent=2, sort_keys=True) + "\n").encode()
