"""Inodes: stable while referenced, freed on the last forget, never reused."""

from __future__ import annotations

from vaultfs.bridge.fs.inodes import ROOT_INODE, InodeTable


def test_inodes_are_stable_counted_and_freed_on_forget() -> None:
    table = InodeTable(("root",))
    assert table.key(ROOT_INODE) == ("root",)
    ino = table.lookup(("doc", 1))
    assert table.lookup(("doc", 1)) == ino
    assert table.inode(("doc", 1)) == ino
    assert table.lookups(ino) == 2
    table.forget(ino, 1)
    assert table.key(ino) == ("doc", 1)
    table.forget(ino, 1)
    assert table.key(ino) is None
    again = table.lookup(("doc", 1))
    assert again != ino  # numbers are never reused within a mount


def test_root_survives_forget() -> None:
    table = InodeTable(("root",))
    table.lookup(("root",))
    table.forget(ROOT_INODE, 5)
    assert table.key(ROOT_INODE) == ("root",)
