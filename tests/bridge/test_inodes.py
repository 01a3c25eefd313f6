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


def test_a_numbered_inode_is_not_held_until_looked_up() -> None:
    table = InodeTable(("root",))
    ino = table.inode(("doc", 1))
    assert table.lookups(ino) == 0 and table.held(("doc", 1)) is None
    assert table.lookup(("doc", 1)) == ino
    assert table.lookups(ino) == 1 and table.held(("doc", 1)) == ino
    table.lookup(("doc", 1))
    table.lookup(("doc", 1))
    table.forget(ino, 2)
    assert table.lookups(ino) == 1  # counts of one are kept apart from the others
    table.forget(ino, 1)
    assert table.lookups(ino) == 0 and table.key(ino) is None
    table.forget(ino, 1)  # a forget of a freed number changes nothing
    assert table.lookups(ino) == 0 and len(table) == 1


def test_the_roots_count_goes_up_and_down_and_never_frees_it() -> None:
    table = InodeTable(("root",))
    assert table.lookups(ROOT_INODE) == 0
    table.lookup(("root",))
    assert table.lookups(ROOT_INODE) == 1
    table.lookup(("root",))
    table.forget(ROOT_INODE, 1)
    assert table.lookups(ROOT_INODE) == 1
    table.forget(ROOT_INODE, 1)
    assert table.lookups(ROOT_INODE) == 0 and table.key(ROOT_INODE) == ("root",)
