"""The file system by path: the entry a front that names nodes by path uses (WebDAV).

Owns turning a '/'-separated path into the node it names and running the file
system's operations on it, through the very code the FUSE layer calls: each name is
looked up in its parent by ``FileSystem.lookup`` (the overlay, the node families,
the names' rules), so a path names exactly what the mount shows at that path. A
lookup takes a reference to an inode, as the kernel's does; every reference taken
here is given back before the operation returns (a folder listed a page at a time,
when its listing is closed), so a front holds no inode between requests. Paths are
split on '/' only after the front decoded them; '.', '..' and empty names are
refused, so no path leaves the tree whatever its encoding.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from vaultfs import errors
from vaultfs.bridge.fs.attributes import Attr
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.inodes import ROOT_INODE
from vaultfs.bridge.tree.keys import Kind, NodeKey, SourceKey

__all__ = ["Entry", "Listing", "PathFileSystem", "split"]

#: links followed in one path at most (Linux's limit)
_MAX_LINKS = 40
#: the mode of a file a front creates (its document's source file once closed)
_NEW_FILE_MODE = 0o644


def split(path: str) -> list[str]:
    """The names of ``path`` from the top of the tree; refuses what could leave it."""
    names = [name for name in path.split("/") if name]
    for name in names:
        if name in (".", "..") or "\0" in name:
            raise errors.InvalidName(f"no such name in a path: {name!r}")
    return names


def _joined(parents: list[str], target: str) -> list[str]:
    """``parents`` (the folder of a link) and the link's relative ``target``."""
    if target.startswith("/"):
        raise errors.NotFound(f"a link out of the tree: {target}")
    names = list(parents)
    for name in target.split("/"):
        if name in ("", "."):
            continue
        if name == "..":
            if not names:
                raise errors.NotFound(f"a link out of the tree: {target}")
            names.pop()
        else:
            names.append(name)
    return names


@dataclass(frozen=True)
class Entry:
    """A name in a listing and what it is."""

    name: str
    attr: Attr

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.attr.mode)


#: a page of a listing (``PathFileSystem.next_page``)
Page = list[Entry]


@dataclass
class Listing:
    """A folder opened for listing by ``PathFileSystem.open_listing``."""

    names: list[str]
    fh: int
    #: the inodes its path holds until it is closed
    held: list[int]
    #: where the next page starts (the readdir position the last one ended at)
    position: int = 0
    #: the client it is listed for (a walk's calls are its: ``tree.walks``); None:
    #: asked for directly
    client: str | None = None


class PathFileSystem:
    def __init__(self, filesystem: FileSystem) -> None:
        self.fs = filesystem

    @asynccontextmanager
    async def _held(
        self, names: list[str], *, follow: bool = True
    ) -> AsyncIterator[tuple[int, Attr]]:
        """The inode of ``names`` and its attributes, held while the body runs.
        ``follow``: a link at the end is followed too (links on the way always are)."""
        held: list[int] = []
        try:
            ino, attr = await self._walk(names, held, follow=follow)
            yield ino, attr
        finally:
            for taken in held:
                self.fs.forget(taken, 1)

    async def _walk(self, names: list[str], held: list[int], *, follow: bool) -> tuple[int, Attr]:
        """Look ``names`` up from the top, following the tree's links (relationships,
        views) as the kernel would: WebDAV has no links, so a client sees the folder or
        file a link leads to. A link's text is relative to its folder; one leading
        above the top of the tree, or more than ``_MAX_LINKS`` of them, is refused."""
        links = 0
        while True:
            ino, attr = ROOT_INODE, await self.fs.getattr(ROOT_INODE)
            for position, name in enumerate(names):
                attr = await self.fs.lookup(ino, name)
                held.append(attr.ino)
                last = position == len(names) - 1
                if stat.S_ISLNK(attr.mode) and (follow or not last):
                    links += 1
                    if links > _MAX_LINKS:
                        raise errors.NotFound(f"too many links in {'/'.join(names)}")
                    target = await self.fs.readlink(attr.ino)
                    names = _joined(names[:position], target) + names[position + 1 :]
                    break
                ino = attr.ino
            else:
                return ino, attr

    async def is_link(self, path: str) -> bool:
        """Whether ``path`` names a link (which the other calls follow)."""
        async with self._held(split(path), follow=False) as (_, attr):
            return stat.S_ISLNK(attr.mode)

    async def stat(self, path: str) -> Attr:
        async with self._held(split(path)) as (_, attr):
            return attr

    async def hold_new(self, path: str) -> NodeKey | None:
        """A client's lock on ``path``, a new file not yet a document (or a file
        dropped in a document's directory): it becomes one when ``let_go_new`` ends
        the hold, not at its writes' close (``NewDocuments.hold``). Its key, or None
        when ``path`` is no such file (nothing held)."""
        async with self._held(split(path)) as (ino, _):
            key = self.fs.inodes.key(ino)
            held = key is not None and self.fs.parts.write.new_documents.hold(key)
            return key if held else None

    async def let_go_new(self, key: NodeKey) -> None:
        """The end of a hold of ``hold_new`` (the lock's end)."""
        await self.fs.parts.write.new_documents.let_go(key)

    async def set_new_file_mtime(self, path: str, mtime_ns: int | None) -> bool:
        """Whether ``path`` is a new file not yet a document (a scratch file), its
        mtime then set to ``mtime_ns`` (unless None); a document's is the vault's."""
        async with self._held(split(path)) as (ino, _):
            key = self.fs.inodes.key(ino)
            if key is None or self.fs.overlay.resolve(key).kind != Kind.SCRATCH:
                return False
            if mtime_ns is not None:
                await self.fs.setattr(ino, None, None, mtime_ns=mtime_ns)
            return True

    async def source_document(self, path: str) -> int | None:
        """The document whose latest source file ``path`` is, None for anything else."""
        async with self._held(split(path)) as (ino, _):
            key = self.fs.inodes.key(ino)
            key = self.fs.overlay.resolve(key) if key is not None else None
            return key.doc_id if isinstance(key, SourceKey) else None

    async def list(self, path: str) -> list[Entry]:
        """The entries of the folder at ``path``, whole (``open_listing`` reads it a
        page at a time)."""
        listing = await self.open_listing(path)
        try:
            entries: Page = []
            while page := await self.next_page(listing):
                entries += page
            return entries
        finally:
            self.close_listing(listing)

    def _listed_for(self, client: str | None) -> contextlib.AbstractContextManager[None]:
        """What a listing for ``client`` spends is its walk's (``tree.walks``)."""
        if client is None:
            return contextlib.nullcontext()
        return self.fs.tree.walks.listing_by(client)

    async def open_listing(self, path: str, client: str | None = None) -> Listing:
        """The folder at ``path`` opened for listing a page at a time (``next_page``),
        as the kernel lists it; ``close_listing`` ends it (it holds the folder's inode
        and those on its path till then). ``client``: the WebDAV client it is listed
        for, whose walk pays for the calls (None: asked for directly)."""
        names = split(path)
        held: list[int] = []
        try:
            ino, _ = await self._walk(names, held, follow=True)
            with self._listed_for(client):
                fh = await self.fs.opendir(ino)
        except BaseException:
            for taken in held:
                self.fs.forget(taken, 1)
            raise
        return Listing(names, fh, held, client=client)

    async def next_page(self, listing: Listing) -> Page:
        """The next page of ``listing`` (a readdir batch), empty at its end; a link is
        shown as what it leads to (and left out when it leads nowhere)."""
        with self._listed_for(listing.client):
            return await self._next_page(listing)

    async def _next_page(self, listing: Listing) -> Page:
        batch = await self.fs.readdir(listing.fh, listing.position)
        self.fs.entries_not_returned(batch)  # nothing keeps them
        if not batch:
            return []
        listing.position = batch[-1][0]
        page = []
        for _, name, _, attr in batch:
            if stat.S_ISLNK(attr.mode):
                try:
                    attr = await self.stat("/".join([*listing.names, name]))
                except errors.VaultError:
                    continue
            page.append(Entry(name, attr))
        return page

    def close_listing(self, listing: Listing) -> None:
        self.fs.releasedir(listing.fh)
        held, listing.held = listing.held, []
        for taken in held:
            self.fs.forget(taken, 1)

    # --- content -------------------------------------------------------------------

    async def open_read(self, path: str) -> tuple[int, bool, Attr | None]:
        """A read-only open of the file at ``path``: (handle, shared, attributes).
        The attributes are asked after the open, which learnt the exact size (a
        listing's may be an estimate); None when no size is known (a file the mount
        reads until a short read, such as the status file)."""
        async with self._held(split(path)) as (ino, attr):
            if stat.S_ISDIR(attr.mode):
                raise errors.IsADirectory(path)
            opened = await self.fs.open(ino, os.O_RDONLY)
            if opened.direct_io:
                return opened.fh, opened.shared, None
            try:
                attr = await self.fs.getattr(ino)
            except BaseException:
                if not opened.shared:
                    await self.fs.release(opened.fh)
                raise
        return opened.fh, opened.shared, attr

    async def open_write(self, path: str) -> int:
        """An open that replaces the whole content of the file at ``path``, made when
        missing; its writes, flush and release are a save as through the mount."""
        names = split(path)
        if not names:
            raise errors.IsADirectory("the top of the tree")
        async with self._held(names[:-1]) as (parent, _):
            try:
                attr = await self.fs.lookup(parent, names[-1])
            except errors.NotFound:
                opened, attr = await self.fs.create(
                    parent, names[-1], _NEW_FILE_MODE, os.O_WRONLY | os.O_CREAT
                )
                self.fs.forget(attr.ino, 1)
                return opened.fh
            try:
                if stat.S_ISDIR(attr.mode):
                    raise errors.IsADirectory(path)
                opened = await self.fs.open(attr.ino, os.O_WRONLY | os.O_TRUNC)
            finally:
                self.fs.forget(attr.ino, 1)
        return opened.fh

    async def read(self, fh: int, offset: int, size: int) -> bytes:
        return await self.fs.read(fh, offset, size)

    async def write(self, fh: int, offset: int, data: bytes) -> int:
        return await self.fs.write(fh, offset, data)

    async def close(self, fh: int, written: bool) -> None:
        """The end of an open: a writer's content is made durable in the spool
        (flush, whose errors are raised), then the release checks it in."""
        try:
            if written:
                await self.fs.flush(fh)
        finally:
            await self.fs.release(fh)

    # --- names ---------------------------------------------------------------------

    async def mkdir(self, path: str) -> None:
        names = split(path)
        if not names:
            raise errors.AlreadyExists("the top of the tree")
        async with self._held(names[:-1]) as (parent, _):
            attr = await self.fs.mkdir(parent, names[-1])
            self.fs.forget(attr.ino, 1)

    async def delete(self, path: str) -> None:
        names = split(path)
        if not names:
            raise errors.OperationNotPermitted("the top of the tree")
        async with self._held(names[:-1]) as (parent, _):
            attr = await self.fs.lookup(parent, names[-1])  # a link itself, not followed
            self.fs.forget(attr.ino, 1)
            if stat.S_ISDIR(attr.mode):
                await self.fs.rmdir(parent, names[-1])
            else:
                await self.fs.unlink(parent, names[-1])

    async def move(self, old: str, new: str, replace: bool) -> None:
        old_names, new_names = split(old), split(new)
        if not old_names or not new_names:
            raise errors.OperationNotPermitted("the top of the tree")
        flags = 0 if replace else 1  # RENAME_NOREPLACE
        async with (
            self._held(old_names[:-1]) as (old_parent, _),
            self._held(new_names[:-1]) as (new_parent, _),
        ):
            await self.fs.rename(old_parent, old_names[-1], new_parent, new_names[-1], flags)

    # --- fields --------------------------------------------------------------------

    async def xattrs(self, path: str) -> dict[str, bytes]:
        """Every extended attribute of the node at ``path`` (its fields)."""
        async with self._held(split(path)) as (ino, _):
            values = {}
            for name in await self.fs.listxattr(ino):
                try:
                    values[name] = await self.fs.getxattr(ino, name)
                except errors.NoSuchAttribute:
                    continue
            return values

    async def set_xattr(self, path: str, name: str, value: bytes | None) -> None:
        """setfattr (or with None, setfattr -x) on the node at ``path``."""
        async with self._held(split(path)) as (ino, _):
            await self.fs.setxattr(ino, name, value)
