"""The attributes the kernel is given for a node: type, mode, size, times.

Owns how ``stat`` data is made, for the node families (``bridge.nodes``), which tell
what their nodes are: directories (writable where names may be made), vault files
(exact sizes once the content cache knows them, the record's estimate until then,
reported through ``estimated`` so that the kernel is corrected when the size is
learned), a document's times, and how long the kernel may keep each: long for the
vault's nodes (``fs.freshness`` tells the kernel of their changes), short for the
mount's own (``local``). Times are the vault's and stable, so ``make``, ``rsync`` and
editors see a file change only when it did.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.sources import Contents
from vaultfs.bridge.fs.options import Options
from vaultfs.bridge.tree.index_store import Times
from vaultfs.bridge.tree.keys import NodeKey
from vaultfs.bridge.tree.tree import Tree
from vaultfs.wire import time_ns

if TYPE_CHECKING:
    from vaultfs.bridge.write.spool.entry import SpoolEntry

__all__ = ["BLOCK", "Attr", "Attributes", "ns"]

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


#: a vault time (``2024-05-01T10:00:00.000Z``) in nanoseconds; 0 for none
ns = time_ns


class Attributes:
    def __init__(
        self,
        tree: Tree,
        blobs: BlobCache,
        contents: Contents,
        options: Options,
        *,
        started: float,
        estimated: Callable[[int, str], None],
    ) -> None:
        """``estimated(ino, content key)``: the kernel is given an estimate of the size
        of ``ino``, whose content is ``content key``."""
        self._tree = tree
        self._blobs = blobs
        self._contents = contents
        self._options = options
        self.started_ns = int(started * 1e9)
        self._estimated = estimated

    def make(self, ino: int, mode: int, size: int, mtime: int, ctime: int) -> Attr:
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

    def local(self, attr: Attr, *, fixed: bool = False) -> Attr:
        """``attr`` of a node of the mount alone: nothing announces its changes, so the
        kernel keeps it briefly; ``fixed``: its name is there for the mount's whole
        life, and the kernel keeps the name (a status read is then one getattr)."""
        if not fixed:
            attr.entry_timeout = self._options.local_timeout
        attr.timeout = min(attr.timeout, self._options.local_timeout)
        return attr

    def directory(
        self, ino: int, mtime: int, ctime: int, *, writable: bool = False, new: bool = False
    ) -> Attr:
        """A directory; ``writable``: names may be made in it (on a writable mount);
        ``new``: a new file in it becomes a new document (write bits only for a user
        who may create documents)."""
        return self.make(ino, self._directory_mode(writable, new), BLOCK, mtime, ctime)

    def _directory_mode(self, writable: bool, new: bool = False) -> int:
        writable = writable and not self._options.read_only
        if new and not self._options.may_create:
            writable = False
        return stat.S_IFDIR | (0o755 if writable else 0o555)

    def file(self, ino: int, mode: int, size: int, mtime: int, ctime: int) -> Attr:
        """A regular file whose size changes under the kernel (not kept)."""
        attr = self.make(ino, stat.S_IFREG | mode, size, mtime, ctime)
        attr.timeout = 0
        return attr

    def document_directories(self, doc_ids: list[int], inos: list[int]) -> list[Attr | None]:
        """The attributes of the directories of ``doc_ids`` (inodes ``inos``), a page of
        a listing at a time (None: not in the index); as ``directory`` with
        ``document_times(directory=True)``, made with the times of the whole page read
        together (at 100,000 documents, one by one cost `ls -l` a second)."""
        mode = self._directory_mode(writable=True)
        uid, gid, keep = self._options.uid, self._options.gid, self._options.attr_timeout
        times = self._tree.times_of(doc_ids)
        return [
            None if t is None else Attr(i, mode, BLOCK, 2, *_times(t, True), uid, gid, keep, keep)
            for i, t in zip(inos, times, strict=True)
        ]

    async def document_times(
        self, doc_id: int, *, version: tuple[int, int] | None = None, directory: bool = False
    ) -> tuple[int, int]:
        """(mtime, ctime) of a node of a document; of one of its ``version``; the
        document's ``directory`` (and its fixed subdirectories) is born with the
        document. Under ``versions/`` both are the version's creation: a version's
        content never changes, and an mtime that moved with its metadata (a lock, a
        field) would make ``rsync -a`` copy it again."""
        if version is not None:
            record = await self._tree.version_record(doc_id, *version)
            created = ns(record.get("version_creation_date__v"))
            created = created or ns(record.get("version_modified_date__v"))
            return created, created
        # The times alone, from the index's columns: no record decoded (a listing of a
        # big folder asks this of every document in it).
        return _times(self._tree.times(doc_id), directory)

    async def vault_file(
        self,
        key: NodeKey,
        ino: int,
        mtime: int,
        ctime: int,
        *,
        writable: bool = False,
        entry: SpoolEntry | None = None,
    ) -> Attr:
        """A file of the vault's content (``content.sources``), or being edited
        (``entry``: its spool entry holds the content)."""
        writable = writable and not self._options.read_only
        attr = self.make(ino, stat.S_IFREG | (0o644 if writable else 0o444), 0, mtime, ctime)
        if entry is not None:
            attr.size, attr.timeout = entry.size(), 0
            return attr
        content = await self._contents.of(key)
        exact = self._blobs.exact_size(content.key)
        if exact is None:
            # The normal timeout all the same (a tree walk would otherwise stat every
            # such file again): open() tells the kernel the exact size.
            attr.size = content.estimate
            self._estimated(ino, content.key)
        else:
            attr.size = exact
        return attr


def _times(times: Times, directory: bool) -> tuple[int, int]:
    """(mtime, ctime) of a document's node from its index times (``Tree.times``)."""
    mtime, created, born = times
    return mtime, (born if directory else created) or mtime
