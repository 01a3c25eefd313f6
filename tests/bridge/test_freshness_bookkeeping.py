"""What ``fs.freshness`` keeps per inode: a document's inodes and the estimated sizes,
in tuples (the smallest containers), followed through seen, forgotten and exact."""

from __future__ import annotations

from vaultfs.bridge.fs.freshness import Freshness
from vaultfs.bridge.fs.inodes import ROOT_INODE, InodeTable
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.nodes import ROOT, NodeKey


async def _nowhere(parent: NodeKey, name: str) -> NodeKey | None:
    return None


def _freshness(invalidated: list[int]) -> tuple[Freshness, InodeTable]:
    inodes = InodeTable(ROOT)
    return Freshness(inodes, _nowhere, invalidate_attr=invalidated.append), inodes


def test_a_documents_inodes_are_told_once_each_until_forgotten() -> None:
    invalidated: list[int] = []
    freshness, inodes = _freshness(invalidated)
    doc, source = keys.document(7), keys.source(7)
    doc_ino, source_ino = inodes.lookup(doc), inodes.lookup(source)
    freshness.seen(ROOT_INODE, "Seven", doc, doc_ino)
    freshness.seen(doc_ino, "seven.txt", source, source_ino)
    freshness.seen(doc_ino, "seven.txt", source, source_ino)  # seen again: kept once
    freshness.document_changed(7)
    assert sorted(i for i in invalidated if i != ROOT_INODE) == [doc_ino, source_ino]

    invalidated.clear()
    freshness.forgotten(source_ino, source)
    freshness.document_changed(7)
    assert [i for i in invalidated if i != ROOT_INODE] == [doc_ino]

    invalidated.clear()
    freshness.forgotten(doc_ino, doc)
    freshness.document_changed(7)
    assert [i for i in invalidated if i != ROOT_INODE] == []


def test_estimates_of_one_content_are_forgotten_together_and_one_by_one() -> None:
    invalidated: list[int] = []
    freshness, _ = _freshness(invalidated)
    freshness.estimated(10, "src/7/0.1/abc")
    freshness.estimated(11, "src/7/0.1/abc")  # the same content as a version's file
    freshness.estimated(11, "src/7/0.1/abc")
    freshness.estimated(12, "src/8/0.1/def")
    assert all(freshness.is_estimated(i) for i in (10, 11, 12))

    assert freshness.exact(10) is True
    assert freshness.exact(10) is False  # once only
    freshness.size_known("src/7/0.1/abc")
    assert invalidated == [11]
    assert not freshness.is_estimated(11) and freshness.is_estimated(12)
    freshness.size_known("src/7/0.1/abc")
    assert invalidated == [11]  # nothing is left of that content

    freshness.forgotten(12, keys.source(8))
    assert not freshness.is_estimated(12)
