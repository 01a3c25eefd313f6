"""Inode numbers of the tree: one per node key, with the kernel's lookup counts.

A node key (``tree.nodes``) names a node of the tree. A key keeps its inode number
while the kernel holds a reference (lookup count above zero); the number is freed when
the kernel forgets the last reference, never on unlink, so an open file keeps working
after its document leaves the tree. Numbers are never reused
within one mount, so a stale kernel reference can never reach a different node.
"""

from __future__ import annotations

from vaultfs.bridge.tree.nodes import NodeKey

__all__ = ["ROOT_INODE", "InodeTable"]

#: FUSE's root inode number
ROOT_INODE = 1


class InodeTable:
    def __init__(self, root_key: NodeKey) -> None:
        self._next = ROOT_INODE + 1
        self._by_key: dict[NodeKey, int] = {root_key: ROOT_INODE}
        self._by_inode: dict[int, NodeKey] = {ROOT_INODE: root_key}
        #: lookup counts other than 1 of the inodes in ``_by_inode`` (0: numbered, not
        #: held). After a walk nearly every inode is held once: keeping only the other
        #: counts saves a third of the table (a dict entry per inode, 5 MiB for 90,000).
        self._counts: dict[int, int] = {ROOT_INODE: 0}
        #: the most inodes numbered at once (the kernel forgets names it is told to
        #: only between requests: a walk may hold more than ``max_inodes`` for a while)
        self.peak = 1

    def __len__(self) -> int:
        return len(self._by_inode)

    def inode(self, key: NodeKey) -> int:
        """The inode of ``key``, allocating one when it has none (no reference taken)."""
        ino = self._by_key.get(key)
        if ino is None:
            ino = self._next
            self._next += 1
            self._by_key[key] = ino
            self._by_inode[ino] = key
            self._counts[ino] = 0
            self.peak = max(self.peak, len(self._by_inode))
        return ino

    def lookup(self, key: NodeKey) -> int:
        """The inode of ``key``, counting one kernel reference to it."""
        ino = self.inode(key)
        self._count(ino, self.lookups(ino) + 1)
        return ino

    def known(self, key: NodeKey) -> int | None:
        """The inode of ``key`` when it has one (held or not), else None; allocates none."""
        return self._by_key.get(key)

    def held(self, key: NodeKey) -> int | None:
        """The inode of ``key`` when the kernel holds a reference to it, else None."""
        ino = self._by_key.get(key)
        return ino if ino is not None and self.lookups(ino) > 0 else None

    def key(self, ino: int) -> NodeKey | None:
        """The node an inode stands for, None when it was freed (or never existed)."""
        return self._by_inode.get(ino)

    def lookups(self, ino: int) -> int:
        if ino not in self._by_inode:
            return 0
        return self._counts.get(ino, 1)

    def _count(self, ino: int, count: int) -> None:
        if count == 1:
            self._counts.pop(ino, None)
        else:
            self._counts[ino] = count

    def forget(self, ino: int, nlookup: int) -> None:
        """Drop ``nlookup`` kernel references; free the number when none are left."""
        left = self.lookups(ino) - nlookup
        if left > 0:
            self._count(ino, left)
            return
        if ino == ROOT_INODE:
            self._counts[ino] = 0
            return
        self._counts.pop(ino, None)
        key = self._by_inode.pop(ino, None)
        if key is not None and self._by_key.get(key) == ino:
            del self._by_key[key]
