"""Inodes: stable while referenced, freed on the last forget; a document's own nodes
numbered from its id, every other number never reused."""

from __future__ import annotations

from vaultfs.bridge.fs.inodes import ROOT_INODE, InodeTable
from vaultfs.bridge.tree import keys


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
    assert table.lookup(("doc", 1)) == ino  # a document's node: numbered from its id
    version = table.lookup(("ver", 1, 0, 1))
    table.forget(version, 1)
    assert table.key(version) is None
    assert table.lookup(("ver", 1, 0, 1)) != version  # any other: never reused


def test_root_survives_forget() -> None:
    table = InodeTable(("root",))
    table.lookup(("root",))
    table.forget(ROOT_INODE, 5)
    assert table.key(ROOT_INODE) == ("root",)


def test_a_pinned_inode_outlives_more_forgets_than_it_counted() -> None:
    """The node pyfuse3 hands out itself (``shared_entries``): the kernel forgets
    references the table never counted, and the number stays the node's."""
    table = InodeTable(("root",))
    ino = table.pin(("hidden",))
    assert table.lookup(("hidden",)) == ino
    table.forget(ino, 1000)
    assert table.key(ino) == ("hidden",) and table.lookups(ino) == 0
    assert table.lookup(("hidden",)) == ino and table.lookups(ino) == 1


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


def test_a_documents_own_nodes_cost_one_entry_and_are_told_while_held() -> None:
    """A walk holds a document's directory and its four sub-directories: the table
    keeps one int for them, gives each its own number, and says which the kernel holds."""
    table = InodeTable(("root",))
    own = [keys.document(7), keys.versions(7), keys.renditions(7), keys.attachments(7),
           keys.relationships(7), keys.source(7), keys.events(7)]  # fmt: skip
    inos = [table.lookup(key) for key in own]
    assert len(set(inos)) == len(own) and len(table) == 1 + len(own)
    assert [table.key(ino) for ino in inos] == own
    assert all(InodeTable.of_document(ino) for ino in inos)
    assert table.key(inos[-1] + 1) is None  # the block's spare place: nothing
    assert table.lookup(keys.document(8)) not in inos
    assert sorted(table.document_nodes(7)) == sorted(inos)

    table.inode(keys.version(7, 0, 1))  # a version's directory: counted out
    assert not InodeTable.of_document(table.known(keys.version(7, 0, 1)) or 0)
    table.forget(inos[1], 1)
    assert table.key(inos[1]) is None and table.known(keys.versions(7)) is None
    assert table.lookups(inos[1]) == 0 and inos[1] not in table.document_nodes(7)
    unheld = table.inode(keys.versions(7))  # numbered again, not held: not told
    assert unheld == inos[1] and unheld not in table.document_nodes(7)
    for ino in inos:
        table.forget(ino, 1)
    table.forget(unheld, 0)
    assert table.document_nodes(7) == [] and len(table) == 3  # root, 8, the version
    assert table.peak == 10
