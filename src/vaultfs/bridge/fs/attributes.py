"""The attributes the kernel is given for each node: type, mode, size, times.

Owns how a node's record becomes ``stat`` data: directories (writable where names may
be made), vault files (exact sizes once the content cache knows them, the record's
estimate until then, reported through ``estimated`` so that the kernel is corrected
when the size is learned), scratch and lost+found files, the status file,
relationship links and the search folders and views, and how
long the kernel may keep each: long for the vault's nodes (``fs.freshness`` tells the
kernel of their changes), short for the mount's own (scratch files, new folders,
``.vaultfs``). Times are the vault's and
stable, so ``make``, ``rsync`` and editors see a file change only when it did.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vaultfs import errors
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import content_of
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.lifecycle.events import EventsStat
from vaultfs.bridge.lifecycle.states import is_steady
from vaultfs.bridge.tree import nodes
from vaultfs.bridge.tree.nodes import FOLDERS, Kind, NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.bridge.write.editing import Editing
from vaultfs.bridge.write.namespace import Namespace
from vaultfs.wire import parse_datetime

__all__ = ["BLOCK", "Attr", "Attributes"]

#: the block size the file system reports
BLOCK = 4096


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
    #: seconds the kernel may keep the name that leads to it
    entry_timeout: float


def _ns(text: Any) -> int:
    if not text:
        return 0
    try:
        return int(parse_datetime(str(text)).timestamp() * 1_000_000_000)
    except ValueError:
        return 0


class Attributes:
    def __init__(
        self,
        tree: Tree,
        blobs: BlobCache,
        editing: Editing,
        namespace: Namespace,
        options: Options,
        *,
        started: float,
        status_size: Callable[[], int],
        estimated: Callable[[int, str], None],
        local: Callable[[int], bool],
        events_stat: Callable[[int], EventsStat | None] = lambda doc_id: None,
    ) -> None:
        """``estimated(ino, content key)``: the kernel is given an estimate of the size
        of ``ino``, whose content is ``content key``; ``local(ino)``: the kernel was
        given ``ino`` as a node of the mount alone (a scratch file stays one for the
        kernel after it became a document's source file)."""
        self._tree = tree
        self._blobs = blobs
        self._editing = editing
        self._namespace = namespace
        self._options = options
        self._started_ns = int(started * 1e9)
        self._status_size = status_size
        self._estimated = estimated
        self._local = local
        self._events_stat = events_stat

    def _attr(self, ino: int, mode: int, size: int, mtime: int, ctime: int) -> Attr:
        is_dir = stat.S_ISDIR(mode)
        return Attr(
            ino=ino,
            mode=mode,
            size=size,
            nlink=2 if is_dir else 1,
            mtime_ns=mtime,
            ctime_ns=ctime,
            uid=self._options.uid,
            gid=self._options.gid,
            timeout=self._options.attr_timeout,
            entry_timeout=self._options.attr_timeout,
        )

    async def of(self, key: NodeKey, ino: int) -> Attr:
        """The attributes of node ``key`` (inode ``ino``)."""
        attr = await self._of(key, ino)
        # Nothing announces changes of the mount's own nodes: short timeouts.
        if key[0] in nodes.LOCAL_NODES or self._local(ino):
            attr.entry_timeout = self._options.local_timeout
            attr.timeout = min(attr.timeout, self._options.local_timeout)
        return attr

    async def _of(self, key: NodeKey, ino: int) -> Attr:
        if nodes.is_file(key):
            return await self._file(key, ino)
        if key[0] in nodes.LINKS:  # a relationship or a document found: its text's size
            links = self._tree.queries if key[0] in nodes.QUERY_NODES else self._tree.relationships
            size, created = await links.link_stat(key)
            return self._attr(ino, stat.S_IFLNK | 0o777, size, _ns(created), _ns(created))
        kind = nodes.kind(key)
        mtime = ctime = 0
        if kind in nodes.QUERY_NODES:  # a search's folder or a view: as of its answer
            answered = self._tree.queries.answered(key)
            mtime = ctime = int(answered * 1e9) if answered else self._started_ns
            writable = self._tree.queries.writable(key) and not self._options.read_only
            return self._attr(
                ino, stat.S_IFDIR | (0o755 if writable else 0o555), BLOCK, mtime, ctime
            )
        if kind == Kind.NEWDIR:
            mtime = ctime = self._namespace.new_folder(key).ctime_ns
        elif kind == Kind.ROOT or kind in FOLDERS:
            if not self._tree.folder_exists(key) and kind != Kind.ROOT:
                raise errors.NotFound("folder no longer exists")
            mtime = ctime = _ns(self._tree.folder_mtime(key))
        elif kind in (Kind.CTL, Kind.LOST):
            mtime = ctime = self._started_ns
        else:
            mtime, ctime = await self._document_times(key)
        writable = kind in nodes.WRITABLE_DIRS and not self._options.read_only
        if kind in nodes.NEW_DOCUMENT_DIRS and not self._options.may_create:
            writable = False
        mode = stat.S_IFDIR | (0o755 if writable else 0o555)
        return self._attr(ino, mode, BLOCK, mtime, ctime)

    async def _document_times(self, key: NodeKey) -> tuple[int, int]:
        """(mtime, ctime) of a node of a document. Under ``versions/`` both are the
        version's creation: a version's content never changes, and an mtime that moved
        with its metadata (a lock, a field) would make ``rsync -a`` copy it again."""
        doc_id = nodes.doc_id(key)
        if key[0] in nodes.VERSION_NODES:
            version = await self._tree.version_record(doc_id, *nodes.version(key))
            created = _ns(version.get("version_creation_date__v"))
            created = created or _ns(version.get("version_modified_date__v"))
            return created, created
        record = self._tree.record(doc_id)
        mtime = _ns(record.get("version_modified_date__v"))
        born = "document_creation_date__v" if key[0] in nodes.DOCUMENT_DIR_NODES else None
        ctime = _ns(record.get(born or "version_creation_date__v")) or mtime
        return mtime, ctime

    async def _file(self, key: NodeKey, ino: int) -> Attr:
        kind = nodes.kind(key)
        if kind == Kind.STATUS:
            attr = self._attr(ino, 0o444, self._status_size(), time.time_ns(), self._started_ns)
            attr.timeout = 0
        elif kind == Kind.SCRATCH:
            scratch = self._namespace.scratch_file(key)
            attr = self._attr(ino, scratch.mode, scratch.size(), scratch.mtime_ns, scratch.ctime_ns)
            attr.timeout = 0
        elif kind == Kind.EVENTS:
            # Read at open: the size of the last read (0 before), served with direct_io.
            known = self._events_stat(nodes.doc_id(key))
            mtime, ctime = await self._document_times(key)
            if known is not None:
                mtime = known.read_ns
            attr = self._attr(ino, 0o444, known.size if known else 0, mtime, ctime)
            attr.timeout = 0
        elif kind == Kind.LOSTF:
            info = os.stat(self._namespace.lost_path(key))
            attr = self._attr(ino, 0o444, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        else:
            attr = await self._vault_file(key, ino)
        attr.mode |= stat.S_IFREG
        return attr

    async def _vault_file(self, key: NodeKey, ino: int) -> Attr:
        kind = nodes.kind(key)
        doc_id = nodes.doc_id(key)
        mtime, ctime = await self._document_times(key)
        if kind == Kind.ATT:
            attachment = (await self._tree.details(doc_id)).attachments.get(nodes.number(key))
            if attachment is None:
                raise errors.NotFound("attachment no longer exists")
            ctime = mtime = _ns(attachment.get("created_date__v")) or mtime
        entry = self._editing.entry(doc_id) if kind == Kind.SRC else None
        writable = kind in (Kind.SRC, *nodes.UPLOADED_FILES) and not self._options.read_only
        if writable and kind == Kind.SRC and entry is None:
            # What the caller may not edit shows no write bits: checked out by someone
            # else, or refused to this user before (the vault's INSUFFICIENT_ACCESS).
            record = self._tree.record(doc_id)
            writable = not record.get("locked__v") and doc_id not in self._editing.refused
            writable = writable and not is_steady(record)  # approved: read-only
        if kind == Kind.SRC:
            # Written through this mount: the time of its last write, as a local disk
            # shows it, also once checked in (an editor's next save must not take the
            # vault's time of the check-in for someone else's change).
            saved = self._tree.saved_mtime(doc_id, self._tree.record(doc_id))
            mtime = entry.mtime_ns if entry is not None else saved or mtime
        attr = self._attr(ino, 0o644 if writable else 0o444, 0, mtime, ctime)
        if entry is not None:
            attr.size, attr.timeout = entry.size(), 0
            return attr
        content = await content_of(self._tree, key)
        exact = self._blobs.exact_size(content.key)
        if exact is None:
            # The normal timeout all the same (a tree walk would otherwise stat every
            # such file again): open() tells the kernel the exact size.
            attr.size = content.estimate
            self._estimated(ino, content.key)
        else:
            attr.size = exact
        return attr
