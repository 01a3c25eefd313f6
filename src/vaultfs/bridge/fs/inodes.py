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
        self._lookups: dict[int, int] = {}

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
        return ino

    def lookup(self, key: NodeKey) -> int:
        """The inode of ``key``, counting one kernel reference to it."""
        ino = self.inode(key)
        self._lookups[ino] = self._lookups.get(ino, 0) + 1
        return ino

    def held(self, key: NodeKey) -> int | None:
        """The inode of ``key`` when the kernel holds a reference to it, else None."""
        ino = self._by_key.get(key)
        return ino if ino is not None and self.lookups(ino) > 0 else None

    def key(self, ino: int) -> NodeKey | None:
        """The node an inode stands for, None when it was freed (or never existed)."""
        return self._by_inode.get(ino)

    def lookups(self, ino: int) -> int:
        return self._lookups.get(ino, 0)

    def forget(self, ino: int, nlookup: int) -> None:
        """Drop ``nlookup`` kernel references; free the number when none are left."""
        left = self._lookups.get(ino, 0) - nlookup
        if left > 0:
            self._lookups[ino] = left
            return
        self._lookups.pop(ino, None)
        if ino == ROOT_INODE:
            return
        key = self._by_inode.pop(ino, None)
        if key is not None and self._by_key.get(key) == ino:
            del self._by_key[key]
