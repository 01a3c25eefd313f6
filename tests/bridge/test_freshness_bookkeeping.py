"""What ``fs.freshness`` keeps per inode: a document's inodes and the estimated sizes,
in tuples (the smallest containers), followed through seen, forgotten and exact."""

from __future__ import annotations

from vaultfs.bridge.fs.freshness import Freshness
from vaultfs.bridge.fs.inodes import ROOT_INODE, InodeTable
from vaultfs.bridge.nodes.search import SearchKey, SearchKind
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
    inodes.forget(source_ino, 1)  # as ``FileSystem.forget``: the table, then this
    freshness.forgotten(source_ino, source)
    freshness.document_changed(7)
    assert [i for i in invalidated if i != ROOT_INODE] == [doc_ino]

    invalidated.clear()
    inodes.forget(doc_ino, 1)
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


def test_an_answers_names_that_went_are_forgotten_and_links_are_dropped_per_change() -> None:
    """A view's links the kernel holds: when the view shows other links, the names that
    no longer lead to the same link are forgotten as deleted (the others stay); a
    relationship's link has what the kernel keeps of it dropped at every index change."""
    entries: list[tuple[int, str, int]] = []
    links: list[int] = []
    generation = [0]
    inodes = InodeTable(ROOT)
    freshness = Freshness(
        inodes,
        _nowhere,
        invalidate_entry=lambda parent, name, deleted: entries.append((parent, name, deleted)),
        invalidate_link=links.append,
        generation=lambda: generation[0],
    )
    view = SearchKey(SearchKind.VIEW, "My Documents")
    one = SearchKey(SearchKind.VLINK, "My Documents", "../General/One", 1)
    two = SearchKey(SearchKind.VLINK, "My Documents", "../General/Two", 2)
    view_ino, one_ino, two_ino = inodes.lookup(view), inodes.lookup(one), inodes.lookup(two)
    freshness.seen(ROOT_INODE, "My Documents", view, view_ino)
    freshness.seen(view_ino, "One", one, one_ino)
    freshness.seen(view_ino, "Two", two, two_ino)
    renamed = SearchKey(SearchKind.VLINK, "My Documents", "../General/Deux", 2)
    freshness.answer_changed(view, {"One": one, "Deux": renamed})
    freshness._forget_answers()
    assert entries == [(view_ino, "Two", two_ino)]
    freshness._forget_answers()  # told once
    assert entries == [(view_ino, "Two", two_ino)]

    rlink = keys.RelationshipKey(keys.Kind.RLINK, 1, 99)
    rlink_ino = inodes.lookup(rlink)
    freshness.seen(view_ino + 100, "linked", rlink, rlink_ino)
    generation[0] += 1
    freshness.document_changed(5)
    freshness.document_changed(6)  # the same batch of changes: told once
    assert links == [rlink_ino]
    generation[0] += 1
    freshness.document_changed(7)
    assert links == [rlink_ino, rlink_ino]
    freshness.forgotten(rlink_ino, rlink)
    generation[0] += 1
    freshness.document_changed(8)
    assert links == [rlink_ino, rlink_ino]
