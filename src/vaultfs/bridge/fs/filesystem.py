"""POSIX semantics over the vault, testable without a kernel.

Owns the file-system operations as plain async methods (lookup, getattr, readdir,
open/create/read/write/flush/release, setattr, xattrs, mkdir/unlink/rmdir/rename,
symlink/readlink, statfs) and what they share: inode references, the handle table and
the order of the checks every operation makes (a writable mount, an index read, a name
that may be made). What a node does is its family's (``bridge.nodes``): each operation
finds the family of the key it acts on once, in the registry, and asks it. Names go
through the overlay (``overlay``). It raises ``vaultfs.errors`` classes; turning
those into FUSE replies is the job of ``daemon.fuse``. Every part is given by the
builder (``core.build``).
"""

from __future__ import annotations

import logging
import os
from itertools import groupby, islice
from typing import Any, NoReturn

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.fs.attributes import BLOCK, Attr
from vaultfs.bridge.fs.desktop import is_trash_name
from vaultfs.bridge.fs.dir_entries import DirEntries
from vaultfs.bridge.fs.families import Change, Move, Parts, is_writing
from vaultfs.bridge.fs.freshness import no_entry_invalidation, no_invalidation
from vaultfs.bridge.fs.handles import HandleTable
from vaultfs.bridge.fs.inodes import InodeTable
from vaultfs.bridge.fs.new_names import MAX_NAME_BYTES, NameRules
from vaultfs.bridge.fs.opening import Opened
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.tree import keys, nodes, xattrs
from vaultfs.bridge.tree.keys import (
    ROOT,
    ControlKey,
    FolderKey,
    NodeKey,
    SourceKey,
    typed,
)
from vaultfs.bridge.write.scratch import makes_document

__all__ = ["Attr", "FileSystem", "Opened", "Options", "no_entry_invalidation", "no_invalidation"]

log = logging.getLogger(__name__)

#: entries one readdir answer is made of: more than a reply buffer of 4 KiB, or of
#: 128 KiB with readdirplus, ever holds (names of 20 bytes: about 80 and 500)
READDIR_BATCH = 512

#: rename(2) flags (linux/fs.h)
_RENAME_NOREPLACE = 1
_RENAME_EXCHANGE = 2


class FileSystem:
    def __init__(
        self,
        parts: Parts,
        inodes: InodeTable,
        handles: HandleTable,
        blobs: BlobCache,
        names: NameRules,
    ) -> None:
        """``inodes``: the numbers the kernel knows nodes by (``parts``' freshness watches
        the same); ``blobs``: the content cache statfs tells of; ``names``: new names."""
        self.parts = parts
        self.registry = parts.registry
        self.overlay = parts.overlay
        self.tree = parts.tree
        self.blobs = blobs
        self.options = parts.options
        self.freshness = parts.freshness
        self.life = parts.life
        self.pins = parts.pins
        self.report = parts.report
        self.inodes = inodes
        self.handles = handles
        self.names = names
        #: open directory handle -> the directory's inode (names the kernel is given)
        self._dir_inodes: dict[int, int] = {}

    # --- nodes -------------------------------------------------------------------

    def _key(self, ino: int) -> NodeKey:
        key = self.inodes.key(ino)
        if key is None:
            raise errors.NotFound(f"inode {ino} is not known")
        return typed(self.overlay.resolve(key))

    async def _ready(self, key: NodeKey | None = None) -> None:
        """Wait for the index's first reading, unless ``key`` needs none (``.vaultfs``
        and what it holds answer at once)."""
        if isinstance(key, ControlKey):
            return
        # A first build is waited for however long it takes: a listing is never
        # partial, and never an error because the index is still being read.
        await self.tree.index.wait_ready()

    async def _attributes(self, key: NodeKey, ino: int) -> Attr:
        """The attributes of node ``key`` (inode ``ino``)."""
        attr = await self.registry.of(key).attributes(self.parts, key, ino)
        return self._local_timeouts(key, attr)

    def _local_timeouts(self, key: NodeKey, attr: Attr) -> Attr:
        """``attr`` of node ``key``, with short timeouts if it is the mount's own:
        nothing announces their changes. A scratch file stays one for the kernel after
        it became a document's source file (a document's own number is never a local
        node's)."""
        local = self.registry.is_local
        ino = attr.ino
        if local(key) or (not self.inodes.of_document(ino) and local(self.inodes.key(ino) or ROOT)):
            fixed = isinstance(key, ControlKey) and key.fixed
            self.parts.attributes.local(attr, fixed=fixed)
        return attr

    async def shared_entries(self) -> dict[str, Attr]:
        """The names that are one node in every document's directory, with that
        node's attributes: a front may answer their lookups in the directories
        ``inodes.DOCUMENT_DIRS`` numbers itself. Their inodes are held for the mount's
        life (``InodeTable.pin``): the references such answers hand out are not
        counted."""
        family = self.registry.of(keys.document(0))  # the family of documents' directories
        return {
            name: await self._attributes(key, self.inodes.pin(key))
            for name, key in family.shared_names().items()
        }

    async def lookup(self, parent: int, name: str) -> Attr:
        parent_key = self._key(parent)
        at_root = parent_key == ROOT
        if (
            at_root
            and name[:1] == "."
            and name not in self.registry.root_names
            and not self.tree.index.ready.is_set()
        ):
            # What desktops probe a new mount for (``.Trash``, ``.Trash-0``, ``.hidden``,
            # ``.xdg-volume-info``) is not there: answered at once, not after the build
            # or catch-up (no vault type is named so). A waiting lookup of the root held
            # the kernel's other lookups there, ``.vaultfs`` too, until the index was
            # ready: a desktop session made a mount's status wait for its catch-up.
            raise errors.NotFound(name)
        if not (at_root and name in self.registry.root_names):
            await self._ready(parent_key)
        child = await self.overlay.child(parent_key, name)
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
            attr = await self._attributes(key, ino)
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
            self.parts.opener.forgotten(ino)

    async def getattr(self, ino: int) -> Attr:
        key = self._key(ino)
        if key != ROOT:
            await self._ready(key)
        return await self._attributes(key, ino)

    # --- directories -------------------------------------------------------------

    async def opendir(self, ino: int) -> int:
        key = self._key(ino)
        if self.registry.is_file(key):
            raise errors.NotADirectory("not a directory")
        if key.kind in nodes.DETAILS_DIRS:  # listed from its details: read ahead
            self.parts.prefetch.details_needed(key.doc_id)
        await self._ready(key)
        children = await self.overlay.children(key)
        if isinstance(key, FolderKey) and key != ROOT:
            # A folder's entries: its child folders, then its documents read from the
            # index a page at a time as the kernel asks (``FolderListing``: a folder of
            # a million documents is never held whole), the mount's scratch files first.
            listing = DirEntries(children.items)
            self.parts.prefetch.folder_listed(children)  # the order a walk visits
        else:
            # Subdirectories before files: an ``rm -r`` walk of a version directory then
            # empties its renditions before the version file's removal deletes it.
            entries = sorted(
                children.items(),
                key=lambda item: (self.registry.is_file(item[1]), item[0]),  # unique names
            )
            listing = DirEntries(lambda: entries)
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
        # At most a reply's worth: the kernel asks again from where a reply ended, so
        # each request costs the same at the end of a big folder as at its start (the
        # attributes of every entry left were made, then given back, per request).
        batch = list(islice(listing.entries(start), READDIR_BATCH))
        try:
            # A family's run of entries at a time (a folder's page of documents is one):
            # their attributes made together, the times of a page read in a few queries.
            for family, run in groupby(batch, key=lambda entry: self.registry.of(entry[2])):
                listed = list(run)
                inos = [self.inodes.lookup(key) for _, _, key in listed]
                try:
                    attrs = await family.listed_attributes(
                        self.parts, [key for _, _, key in listed], inos
                    )
                except BaseException:
                    for ino in inos:
                        self.forget(ino, 1)
                    raise
                shown = []
                for (position, name, key), ino, attr in zip(listed, inos, attrs, strict=True):
                    if attr is None:
                        self.forget(ino, 1)
                        continue  # left the vault since opendir
                    self._local_timeouts(key, attr)
                    entries.append((position, name, key, attr))
                    shown.append((name, key, ino))
                self.freshness.seen_all(parent, shown)
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

    async def create(self, parent: int, name: str, mode: int, flags: int) -> tuple[Opened, Attr]:
        """A new file ``name`` in ``parent``, opened with ``flags``."""
        self.parts.writable()
        await self._ready()
        parent_key = self._key(parent)
        self.names.check(parent_key, name, directory=False)
        if makes_document(parent_key, name):
            self.parts.may_create(name)
        key = await self.registry.of(parent_key).create(self.parts, parent_key, name, mode)
        if isinstance(key, SourceKey):  # the source file written anew after a rename: empty
            opened = await self.open(self.inodes.inode(key), flags | os.O_TRUNC)
        else:
            opened = self.parts.opener.scratch(self.overlay.scratch_file(key), flags)
        return opened, await self._entry(key, parent, name)

    async def open(self, ino: int, flags: int) -> Opened:
        key = self._key(ino)
        opened = await self.registry.of(key).open(self.parts, key, ino, flags)
        # The flush of an open that neither writes nor truncates has nothing to do,
        # whatever the file (``handles.OpenFile``): its close need not reach the mount.
        # The release does.
        opened.noflush = not is_writing(flags)
        return opened

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
        change = Change(size, fh, mode, mtime_ns)
        await self.registry.of(key).setattr(self.parts, key, change)
        return await self._attributes(key, ino)

    # --- extended attributes -----------------------------------------------------

    async def _fields(self, key: NodeKey) -> dict[str, Any]:
        return await self.registry.of(key).fields(self.parts, key)

    async def listxattr(self, ino: int) -> list[str]:
        return xattrs.names_of(await self._fields(self._key(ino)))

    async def getxattr(self, ino: int, name: str) -> bytes:
        if self.pins.owns(name):  # what pinning the node means: not a field, never listed
            await self._ready()  # a folder's documents are the index's
            return await self.pins.describe(self._key(ino))
        if self.life.owns(name):  # actions, events: not fields, never listed
            key = self._key(ino)
            return await self.life.get(self.registry.of(key).lifecycle_of(key), name)
        field_name = xattrs.field_of(name)
        if field_name is None:  # ls -l's security and ACL probes: answered at once
            if not xattrs.in_our_namespaces(name):
                raise errors.Unsupported(name)
            raise errors.NoSuchAttribute(name)
        fields = await self._fields(self._key(ino))
        if field_name not in fields:
            raise errors.NoSuchAttribute(name)
        return xattrs.value_of(fields[field_name])

    async def setxattr(self, ino: int, name: str, value: bytes | None) -> None:
        """Set (or with None remove) a field; or pin or unpin (``user.vaultfs.pin``)."""
        if self.pins.owns(name):
            # Keeping content for offline changes nothing in the vault: not refused
            # as a write (a ``-o ro`` mount's kernel refuses every setxattr itself).
            await self._ready()
            await self.pins.set(self._key(ino), value)
            return
        self.parts.writable()
        key = self._key(ino)
        if self.life.owns(name):
            await self.life.set(self.registry.of(key).lifecycle_of(key), name, value)
            return
        await self.registry.of(key).set_field(self.parts, key, name, value)

    # --- names -------------------------------------------------------------------

    async def mkdir(self, parent: int, name: str) -> Attr:
        self.parts.writable()
        await self._ready()
        parent_key = self._key(parent)
        if parent_key == ROOT and is_trash_name(name):
            self._no_trash(name)
        self.names.check(parent_key, name, directory=True)
        self.parts.may_create(name)
        key = self.registry.of(parent_key).mkdir(self.parts, parent_key, name)
        return await self._entry(key, parent, name)

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
        self.parts.writable()
        await self._ready()
        parent_key = self._key(parent)
        await self.registry.of(parent_key).unlink_in(self.parts, parent_key, name)

    async def symlink(self, parent: int, name: str, target: str) -> Attr:
        """ln -s: a relationship (see ``write.linking``)."""
        self.parts.writable()
        await self._ready()
        parent_key = self._key(parent)
        self.names.check(parent_key, name, directory=False)
        family = self.registry.of(parent_key)
        key = await family.symlink(self.parts, parent_key, name, target)
        return await self._entry(key, parent, name)

    async def readlink(self, ino: int) -> str:
        key = self._key(ino)
        return await self.registry.of(key).readlink(self.parts, key)

    async def rmdir(self, parent: int, name: str) -> None:
        self.parts.writable()
        await self._ready()
        parent_key = self._key(parent)
        key = await self.overlay.child(parent_key, name)
        if key is None:
            if self.overlay.deleted_version(parent_key, name):
                return  # its file's removal deleted it, in the same rm -r walk
            raise errors.NotFound(name)
        await self.registry.of(key).rmdir(self.parts, parent_key, key, name)

    async def rename(self, old: int, old_name: str, new: int, new_name: str, flags: int) -> None:
        """rename(2); ``flags``: RENAME_NOREPLACE is honoured, RENAME_EXCHANGE refused."""
        self.parts.writable()
        await self._ready()
        old_key, new_key = self._key(old), self._key(new)
        if flags & _RENAME_EXCHANGE:
            raise errors.Unsupported("exchanging names is not supported")
        source = await self.overlay.child(old_key, old_name)
        moved_dir = source is not None and not self.registry.is_file(source)
        self.names.check(new_key, new_name, directory=moved_dir)
        if flags & _RENAME_NOREPLACE and await self.overlay.child(new_key, new_name):
            raise errors.AlreadyExists(new_name)
        if source is None:
            raise errors.NotFound(old_name)
        target = await self.overlay.child(new_key, new_name)
        if source == target:
            return
        move = Move(source, target, old_key, new_key, new_name)
        await self.registry.of(source).rename(self.parts, move)

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
