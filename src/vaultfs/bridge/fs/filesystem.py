"""POSIX semantics over the vault, testable without a kernel.

Owns the file-system operations as plain async methods (lookup, getattr, readdir,
open/create/read/write/flush/release, setattr, xattrs, mkdir/unlink/rmdir/rename,
statfs) and what they share: inode references and the handle table. Attributes are
``attributes``', the status file ``status``', each kind of open file is a ``handles``
class. It raises ``vaultfs.errors`` classes; turning those into FUSE replies is
``daemon.fuse_ops``' job. Check-out and check-in are ``write.editing``'s, what new and
changed names mean is ``write.namespace``'s, field changes are ``write.fields``',
lifecycle actions and events (their xattrs, ``.events.jsonl``) are ``lifecycle``'s;
relationship links (readlink, symlink, unlink in ``relationships/``) ``write.linking``'s;
the search folders and views (their links, ``Favorites``) ``tree.search_folders``'.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import trio

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobCache, BlobHandle
from vaultfs.bridge.content.prefetch import Prefetcher
from vaultfs.bridge.content.sources import content_of
from vaultfs.bridge.fs.attributes import BLOCK, Attr, Attributes
from vaultfs.bridge.fs.desktop import is_trash_name
from vaultfs.bridge.fs.freshness import Freshness, no_entry_invalidation, no_invalidation
from vaultfs.bridge.fs.handles import (
    CachedContent,
    HandleTable,
    LostFile,
    OpenFile,
    ScratchOpen,
    Snapshot,
    SourceEdit,
)
from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.fs.new_names import MAX_NAME_BYTES, NameRules
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.fs.status import StatusReport
from vaultfs.bridge.lifecycle.attributes import LifeAttributes
from vaultfs.bridge.tree import nodes, xattrs
from vaultfs.bridge.tree.nodes import FOLDERS, ROOT, Kind, NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.editing import Editing
from vaultfs.bridge.write.fields import FieldEditor
from vaultfs.bridge.write.linking import Linker
from vaultfs.bridge.write.namespace import Namespace
from vaultfs.bridge.write.scratch import ScratchFile, makes_document

__all__ = ["Attr", "FileSystem", "Opened", "Options", "no_entry_invalidation", "no_invalidation"]

log = logging.getLogger(__name__)

#: rename(2) flags (linux/fs.h)
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


@dataclass
class Opened:
    fh: int
    direct_io: bool = False
    keep_cache: bool = False


class FileSystem:
    def __init__(
        self,
        tree: Tree,
        blobs: BlobCache,
        options: Options,
        *,
        editing: Editing,
        namespace: Namespace,
        fields: FieldEditor,
        prefetch: Prefetcher,
        status_extra: Callable[[], dict[str, Any]] = dict,
        invalidate_attr: Callable[[int], None] = no_invalidation,
        invalidate_entry: Callable[[int, str, int], None] = no_entry_invalidation,
    ) -> None:
        """``status_extra``: what the mount adds to the status file;
        ``invalidate_attr``: tells the kernel to forget an inode's attributes;
        ``invalidate_entry``: tells it to forget a name in a directory (never waits)."""
        self.tree = tree
        self.blobs = blobs
        self.options = options
        self.editing = editing
        self.namespace = namespace
        self.fields = fields
        self.prefetch = prefetch
        self.links = Linker(tree, tree.client, options.mountpoint)
        #: what a new name may be (``new_names``)
        self.names = NameRules(tree.catalog)
        self.inodes = InodeTable(ROOT)
        self.handles = HandleTable()
        self.freshness = Freshness(
            self.inodes,
            namespace.child,
            invalidate_attr=invalidate_attr,
            invalidate_entry=invalidate_entry,
            generation=lambda: tree.index.generation,
        )
        # Every change the index learns of (poll, save, field change, check-in) and
        # every exact size the content cache learns is pushed to the kernel's caches.
        tree.index.on_change.append(self.freshness.document_changed)
        blobs.on_size.append(self.freshness.size_known)
        self._invalidate_attr = invalidate_attr
        #: lifecycle actions and events (xattrs, .events.jsonl)
        self.life = LifeAttributes(tree)
        #: open directory handle -> the directory's inode (names the kernel is given)
        self._dir_inodes: dict[int, int] = {}
        self.report = StatusReport(
            options,
            tree.client,
            tree.index,
            blobs,
            editing,
            namespace,
            self.inodes,
            extra=status_extra,
        )
        self.attributes = Attributes(
            tree,
            blobs,
            editing,
            namespace,
            options,
            started=self.report.started,
            status_size=lambda: len(self.report.as_bytes()),
            estimated=self.freshness.estimated,
            local=lambda ino: (self.inodes.key(ino) or ROOT)[0] in nodes.LOCAL_NODES,
            events_stat=self.life.events.stat,
        )
        #: inode -> the content key its last open served (its pages in the kernel)
        self._page_keys: dict[int, str] = {}

    # --- nodes -------------------------------------------------------------------

    def _key(self, ino: int) -> NodeKey:
        key = self.inodes.key(ino)
        if key is None:
            raise errors.NotFound(f"inode {ino} is not known")
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
            raise errors.NotFound(name)
        return await self._entry(child, parent, name)

    async def _entry(self, key: NodeKey, parent: int, name: str) -> Attr:
        """The attributes of ``key``, ``name`` in ``parent``, for the kernel, which
        takes a reference to it."""
        # The reference is counted before anything awaits: the kernel may forget an
        # earlier reference to this inode meanwhile (it dropped the name, and asks for
        # it again now), and that forget must not free the number this answer gives.
        ino = self.inodes.lookup(key)
        try:
            attr = await self.attributes.of(key, ino)
        except BaseException:
            self.forget(ino, 1)
            raise
        self.freshness.seen(parent, name, key, ino)
        return attr

    def forget(self, ino: int, nlookup: int) -> None:
        key = self.inodes.key(ino)
        self.inodes.forget(ino, nlookup)
        if key is not None and self.inodes.key(ino) is None:  # freed: never reused
            self.freshness.forgotten(ino, key)
            self._page_keys.pop(ino, None)

    async def getattr(self, ino: int) -> Attr:
        key = self._key(ino)
        if key != ROOT:
            await self._ready()
        return await self.attributes.of(key, ino)

    # --- directories -------------------------------------------------------------

    async def opendir(self, ino: int) -> int:
        key = self._key(ino)
        if nodes.is_file(key):
            raise errors.NotADirectory("not a directory")
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
        fh = self.handles.add_dir(listing)
        self._dir_inodes[fh] = ino
        return fh

    async def readdir(self, fh: int, start: int) -> list[tuple[int, str, NodeKey, Attr]]:
        """Entries from position ``start``: (next position, name, key, attributes).

        Each entry holds a reference to its inode, taken before its attributes are
        awaited (see ``_entry``): the kernel takes one for each entry it is handed
        (readdirplus, as with lookup); the caller gives back those of the entries it
        could not hand over with ``entries_not_returned``.
        """
        listing = self.handles.dir(fh)
        parent = self._dir_inodes[fh]
        entries: list[tuple[int, str, NodeKey, Attr]] = []
        try:
            for position in range(start, len(listing)):
                name, key = listing[position]
                ino = self.inodes.lookup(key)
                try:
                    attr = await self.attributes.of(key, ino)
                except (errors.InvalidDocument, errors.NotFound, FileNotFoundError):
                    self.forget(ino, 1)
                    continue  # left the vault since opendir
                except BaseException:
                    self.forget(ino, 1)
                    raise
                self.freshness.seen(parent, name, key, attr.ino)
                entries.append((position + 1, name, key, attr))
        except BaseException:
            self.entries_not_returned(entries)
            raise
        return entries

    def entries_not_returned(self, entries: list[tuple[int, str, NodeKey, Attr]]) -> None:
        """Give back the references of readdir entries the kernel was not handed."""
        for _, _, _, attr in entries:
            self.forget(attr.ino, 1)

    def releasedir(self, fh: int) -> None:
        self.handles.pop_dir(fh)
        self._dir_inodes.pop(fh, None)

    # --- files -------------------------------------------------------------------

    def _open_scratch(self, scratch: ScratchFile, flags: int) -> Opened:
        writer = flags & os.O_ACCMODE != os.O_RDONLY
        if flags & os.O_TRUNC:
            scratch.truncate(0)
        fh = self.handles.add_file(ScratchOpen(self.namespace, scratch, writer=writer))
        return Opened(fh, direct_io=True)

    def _open_direct(self, handle: OpenFile) -> Opened:
        return Opened(self.handles.add_file(handle), direct_io=True)

    async def create(self, parent: int, name: str, mode: int, flags: int) -> tuple[Opened, Attr]:
        """A new file ``name`` in ``parent``, opened with ``flags``."""
        self._writable()
        await self._ready()
        parent_key = self._key(parent)
        self.names.check(parent_key, name, directory=False)
        if makes_document(parent_key, name):
            self._may_create(name)
        key = await self.namespace.create(parent_key, name, mode)
        if key[0] == Kind.SRC:  # the source file written anew after a rename: starts empty
            opened = await self.open(self.inodes.inode(key), flags | os.O_TRUNC)
        else:
            opened = self._open_scratch(self.namespace.scratch_file(key), flags)
        return opened, await self._entry(key, parent, name)

    async def open(self, ino: int, flags: int) -> Opened:
        key = self._key(ino)
        kind = key[0]
        if not nodes.is_file(key):
            raise errors.IsADirectory("is a directory")
        writing = flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC
        if kind == Kind.SCRATCH:
            return self._open_scratch(self.namespace.scratch_file(key), flags)
        if kind == Kind.LOSTF and not writing:
            return self._open_direct(LostFile(str(self.namespace.lost_path(key))))
        if writing:
            self._writable()
            if kind in nodes.UPLOADED_FILES:  # replaced by what is written (``files_in``)
                truncate = bool(flags & os.O_TRUNC)
                scratch = await self.namespace.open_uploaded(key, truncate=truncate)
                self._invalidate_attr(ino)  # its size is the scratch file's now
                return self._open_scratch(scratch, flags)
            if kind != Kind.SRC:
                raise errors.AccessDenied("only a document's latest source file is writable")
            doc_id = nodes.doc_id(key)
            try:
                handle = await self.editing.open(
                    doc_id, truncate=bool(flags & os.O_TRUNC), append=bool(flags & os.O_APPEND)
                )
            except (errors.InsufficientAccess, errors.LockedByOther):
                self._invalidate_attr(ino)  # its mode loses the write bits now
                raise
            # The kernel may hold the listing's estimate (or the size before another
            # client's save): a stat or a seek from the end after open() must see the
            # content's exact size, which getattr answers from the spool entry, or
            # from the content cache, which learns it as the download starts.
            vault = None
            if handle.entry is None and self.editing.entry(doc_id) is None:
                try:
                    vault = await self._exact_size_known(key)
                except BaseException:
                    await self.editing.release(handle)  # the open failed: not a writer
                    raise
            self.freshness.exact(ino)
            self._invalidate_attr(ino)
            edit = SourceEdit(self.editing, handle, self._vault_reader(key), vault)
            return self._open_direct(edit)
        if kind == Kind.STATUS:
            return self._open_direct(Snapshot(self.report.as_bytes()))
        if kind == Kind.EVENTS:  # read now; fstat after open sees its exact size
            opened = self._open_direct(Snapshot(await self.life.events.content(nodes.doc_id(key))))
            self._invalidate_attr(ino)
            return opened
        doc_id = nodes.doc_id(key)
        if kind == Kind.SRC and self.editing.entry(doc_id) is not None:
            # The edit's bytes while it lasts; the vault's once it is checked in.
            reader = SourceEdit(self.editing, self.editing.reader(doc_id), self._vault_reader(key))
            return self._open_direct(reader)
        content = await content_of(self.tree, key)
        blob = await self.blobs.open(content.key, content.fetch)
        if not blob.complete:
            # Wait for the response to begin: its length is the exact size.
            try:
                await blob.wait_started()
            except BaseException:
                blob.close()
                raise
        fh = self.handles.add_file(CachedContent(blob))
        size = self.blobs.exact_size(content.key)
        if kind in (Kind.SRC, Kind.VSRC) and size is not None:
            self.prefetch.source_opened(doc_id, size)
        return self._opened_content(ino, fh, content.key, size)

    async def _exact_size_known(self, key: NodeKey) -> BlobHandle | None:
        """The vault's content of ``key`` opened, when its exact size is not known yet
        (the download's first answer tells it: the call a read would make anyway)."""
        content = await content_of(self.tree, key)
        if self.blobs.exact_size(content.key) is not None:
            return None
        blob = await self.blobs.open(content.key, content.fetch)
        try:
            if not blob.complete:
                await blob.wait_started()
        except BaseException:
            blob.close()
            raise
        return blob

    def _vault_reader(self, key: NodeKey) -> Callable[[], Awaitable[BlobHandle]]:
        """Opens the vault's content of ``key`` for reading (through the cache)."""

        async def open_vault() -> BlobHandle:
            content = await content_of(self.tree, key)
            return await self.blobs.open(content.key, content.fetch)

        return open_vault

    def _opened_content(self, ino: int, fh: int, content_key: str, size: int | None) -> Opened:
        """How the kernel reads a file of vault content: through its page cache once the
        exact size is known, and keeping the pages of earlier opens while the inode
        still stands for the same (immutable) content."""
        if size is None:
            return Opened(fh, direct_io=True)  # no length sent: read until a short read
        if self.freshness.exact(ino):
            # The kernel may hold the estimate: it would cut reads short (or pad them).
            self._invalidate_attr(ino)
        keep_cache = self._page_keys.get(ino) == content_key
        self._page_keys[ino] = content_key
        return Opened(fh, keep_cache=keep_cache)

    async def read(self, fh: int, offset: int, size: int) -> bytes:
        return await self.handles.file(fh).read(offset, size)

    async def write(self, fh: int, offset: int, data: bytes) -> int:
        return await self.handles.file(fh).write(offset, data)

    async def flush(self, fh: int) -> None:
        """close(): checks in (or creates a document) when the last writer closes a
        changed file; the errors of that are what close() reports."""
        await self.handles.file(fh).flush()

    async def fsync(self, fh: int) -> None:
        await self.handles.file(fh).fsync()

    async def release(self, fh: int) -> None:
        handle = self.handles.pop_file(fh)
        if handle is not None:
            await handle.release()
            # A new file's last release makes its document: its name in the folder goes.
            self.freshness.new_file_done()

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
            scratch = self.namespace.scratch_file(key)
            if size is not None:
                scratch.truncate(size)
            if mode is not None:
                scratch.mode = stat.S_IMODE(mode)
            if mtime_ns is not None:
                scratch.mtime_ns = mtime_ns
        elif size is not None:
            self._writable()
            if key[0] != Kind.SRC:
                raise errors.AccessDenied("only a document's latest source file is writable")
            handle = self.handles.file(fh) if fh is not None else None
            if isinstance(handle, SourceEdit):  # ftruncate(2)
                await handle.truncate(size)
            else:
                await self.editing.truncate(nodes.doc_id(key), size)
        # Times and modes of vault files are the vault's: changes are accepted and ignored.
        return await self.attributes.of(key, ino)

    # --- extended attributes -----------------------------------------------------

    async def _fields(self, key: NodeKey) -> dict[str, Any]:
        kind = key[0]
        if kind in nodes.NEW_FIELD_NODES:
            return self.namespace.new_fields_of(key)
        if kind in (Kind.DOC, Kind.SRC):
            return self.tree.record(nodes.doc_id(key))
        if kind in (Kind.VER, Kind.VSRC):
            doc_id, (major, minor) = nodes.doc_id(key), nodes.version(key)
            return await self.tree.version_record(doc_id, major, minor)
        if kind in nodes.QUERY_NODES:
            return await self.tree.queries.fields(key)
        return {}

    async def listxattr(self, ino: int) -> list[str]:
        return xattrs.names_of(await self._fields(self._key(ino)))

    async def getxattr(self, ino: int, name: str) -> bytes:
        if self.life.owns(name):  # actions, events: not fields, never listed
            return await self.life.get(self._key(ino), name)
        field_name = xattrs.field_of(name)
        if field_name is None:  # ls -l's security and ACL probes: answered at once
            raise errors.NoSuchAttribute(name)
        fields = await self._fields(self._key(ino))
        if field_name not in fields:
            raise errors.NoSuchAttribute(name)
        return xattrs.value_of(fields[field_name])

    async def setxattr(self, ino: int, name: str, value: bytes | None) -> None:
        """Set (or with None remove) a field."""
        self._writable()
        key = self._key(ino)
        if self.life.owns(name):
            await self.life.set(key, name, value)
            return
        if key[0] in nodes.NEW_FIELD_NODES:
            await self.namespace.set_new_field(key, name, value)
            self.freshness.new_file_done()  # the fields complete: the document is made
            return
        await self.fields.set(key, await self._fields(key), name, value)

    # --- names -------------------------------------------------------------------

    def _may_create(self, name: str) -> None:
        """Refuse a new document now, not at close, when the vault said (at mount time)
        that this user may not create documents."""
        if not self.options.may_create:
            log.warning("new %r refused: this user may not create documents", name)
            raise errors.AccessDenied("this user may not create documents")

    def _writable(self) -> None:
        if self.options.read_only:
            raise errors.ReadOnly("mounted read-only")

    async def mkdir(self, parent: int, name: str) -> Attr:
        self._writable()
        await self._ready()
        parent_key = self._key(parent)
        if parent_key == ROOT and is_trash_name(name):
            self._no_trash(name)
        self.names.check(parent_key, name, directory=True)
        self._may_create(name)
        return await self._entry(self.namespace.mkdir(parent_key, name), parent, name)

    def _no_trash(self, name: str) -> NoReturn:
        """A desktop's trash (``gio trash``, a file manager's Delete) makes ``.Trash-<uid>``
        at the top of the mount to move files into: refused, so nothing is moved or
        deleted. ENOTSUP: GIO reports the trash as not supported, and a file manager
        offers to delete at once, which deletes in the vault only with allow_delete."""
        if self.options.allow_delete:
            how = "Delete Immediately (Shift+Delete, gio remove, rm) deletes in the vault"
        else:
            how = "deleting is off too (mount with -o allow_delete to delete in the vault)"
        log.warning("no trash on this mount (%s refused): %s", name, how)
        raise errors.Unsupported("this mount has no trash")

    async def unlink(self, parent: int, name: str) -> None:
        self._writable()
        await self._ready()
        parent_key = self._key(parent)
        if parent_key[0] == Kind.RELT:
            await self.links.unlink(parent_key, name)
            return
        if parent_key[0] in nodes.QUERY_NODES:  # Favorites: unmark; the rest: EPERM
            await self.tree.queries.unlink(parent_key, name)
            return
        await self.namespace.unlink(parent_key, name)

    async def symlink(self, parent: int, name: str, target: str) -> Attr:
        """ln -s: a relationship (see ``write.linking``)."""
        self._writable()
        await self._ready()
        parent_key = self._key(parent)
        self.names.check(parent_key, name, directory=False)
        if parent_key[0] in nodes.QUERY_NODES:  # ln -s into Favorites: mark
            key = await self.tree.queries.symlink(parent_key, name, target, self.options.mountpoint)
        else:
            key = await self.links.symlink(parent_key, name, target)
        return await self._entry(key, parent, name)

    async def readlink(self, ino: int) -> str:
        key = self._key(ino)
        if key[0] not in nodes.LINKS:
            raise errors.InvalidData("not a symbolic link")
        if key[0] in nodes.QUERY_NODES:
            return await self.tree.queries.link_text(key)
        return await self.tree.relationships.link_text(key)

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
            raise errors.Unsupported("exchanging names is not supported")
        if old_key[0] in nodes.QUERY_NODES or new_key[0] in nodes.QUERY_NODES:
            raise errors.OperationNotPermitted("a search's or a view's links are its answer")
        source = await self.namespace.child(old_key, old_name)
        moved_dir = source is not None and not nodes.is_file(source)
        self.names.check(new_key, new_name, directory=moved_dir)
        if flags & _RENAME_NOREPLACE and await self.namespace.child(new_key, new_name):
            raise errors.AlreadyExists(new_name)
        await self.namespace.rename(old_key, old_name, new_key, new_name)

    # --- the file system ---------------------------------------------------------

    def statfs(self) -> dict[str, int]:
        usage = self.blobs.usage()
        total = max(1, self.blobs.max_bytes // BLOCK)
        free = max(0, (self.blobs.max_bytes - usage["bytes"]) // BLOCK)
        return {
            "bsize": BLOCK,
            "blocks": total,
            "bfree": free,
            "files": len(self.tree.index.documents),
            "ffree": 0,
            "namemax": MAX_NAME_BYTES,
        }

    def status(self) -> dict[str, Any]:
        return self.report.document()
