"""The node families (``bridge.nodes``): every kind of node has one family, found
from its key's type; typed keys are the plain tuples they stand for; a new family is
one module and one registration, reached through the tree without touching it."""

from __future__ import annotations

from typing import ClassVar

import pytest

from vaultfs import errors
from vaultfs.bridge.core.build import families
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.nodes.family import Family
from vaultfs.bridge.nodes.registry import Registry
from vaultfs.bridge.tree import keys
from vaultfs.bridge.tree.catalog import TypeCatalog
from vaultfs.bridge.tree.index import DocumentIndex
from vaultfs.bridge.tree.keys import ROOT, Kind, NodeKey, SourceKey, typed
from vaultfs.bridge.tree.tree import Tree

from .fakevault import FakeVault
from .fsdriver import listdir


class ShelfKey(NodeKey):
    """A family made up for this test: a shelf at the root, and its one file."""

    __slots__ = ()
    KINDS = frozenset({"shelf", "shelf-file"})
    FILE_KINDS = frozenset({"shelf-file"})


SHELF = ShelfKey("shelf")


class Shelf(Family):
    key_type = ShelfKey
    root_names: ClassVar = {".shelf": SHELF}

    async def children(self, tree: Tree, key: NodeKey) -> dict[str, NodeKey]:
        if key != SHELF:
            return await super().children(tree, key)
        return {f"{len(tree.index.documents)}-documents": ShelfKey("shelf-file", 1)}


def test_every_kind_has_one_family_found_from_its_keys_type() -> None:
    registry = families(None)
    for kind in Kind:
        key = typed((kind, 1))
        family = registry.of(key)
        assert type(key) is family.key_type
        assert kind in family.key_type.KINDS
    assert registry.of((Kind.SRC, 3)) is registry.of(keys.source(4))


def test_a_typed_key_is_the_plain_tuple_it_stands_for() -> None:
    source = keys.source(12)
    assert isinstance(source, SourceKey)
    assert source == (Kind.SRC, 12) == ("src", 12)
    assert hash(source) == hash(("src", 12))
    assert {source: "a"}[("src", 12)] == "a"
    assert typed(("src", 12)) == source and type(typed(("src", 12))) is SourceKey
    assert keys.version(3, 1, 2).version == (1, 2)
    assert keys.folder("t", "s") == (Kind.SUB, "t", "s")


def test_a_key_tells_what_it_names_and_what_it_is() -> None:
    """What code outside the families asks of a key, instead of its positions."""
    assert keys.folder("t", "s", "c").labels == ("t", "s", "c")
    assert keys.folder("t", "s").ancestors == [keys.folder("t"), keys.folder("t", "s")]
    assert ROOT.labels == () and ROOT.ancestors == []
    latest, of_version = keys.rendition(5, "viewable"), keys.version_rendition(5, 2, 1, "x")
    assert latest.of_version is None and latest.rtype == "viewable"
    assert latest.directory == keys.renditions(5)
    assert of_version.of_version == (2, 1) and of_version.directory == keys.version_renditions(
        5, 2, 1
    )
    assert keys.version_renditions(5, 2, 1).rendition("x") == of_version
    assert keys.renditions(5).rendition("viewable") == latest
    assert keys.attachment(5, 9).directory == keys.attachments(5)
    assert keys.relationship_type(5, "supporting").relationship_type == "supporting"
    assert keys.relationship_link(5, 77).relationship_id == 77
    # Files and the mount's own nodes, as the families answer for them.
    registry = families(None)
    for kind in Kind:
        key = typed((kind, 1, 2, 3))
        assert key.is_file == registry.is_file(key)
        assert key.is_local == registry.is_local(key)
    assert keys.source(1).is_file and not keys.document(1).is_file
    assert keys.events(1).is_local and keys.scratch(1).is_local and not keys.source(1).is_local


def test_a_kind_belongs_to_one_family_only() -> None:
    with pytest.raises(ValueError, match="belongs to"):

        class Again(NodeKey):  # the source file's kind is SourceKey's
            KINDS = frozenset({Kind.SRC})


async def test_a_new_family_is_one_class_and_one_registration(vault: FakeVault) -> None:
    registry = Registry([*families(None).families, Shelf()])
    index = DocumentIndex(vault)
    await index.build()
    tree = Tree(vault, index, TypeCatalog(vault), registry)

    # Reachable by its root name, not listed at the root (as .vaultfs).
    assert await tree.lookup(ROOT, ".shelf") == SHELF
    assert ".shelf" not in await tree.children(ROOT)
    listing = await tree.children(SHELF)
    assert listing == {f"{len(index.documents)}-documents": ("shelf-file", 1)}
    assert registry.is_file(listing[f"{len(index.documents)}-documents"])
    # What the family does not have, it refuses as the protocol says.
    with pytest.raises(errors.NotADirectory):
        await tree.children(ShelfKey("shelf-file", 1))


async def test_the_file_system_asks_the_families(core: FileSystem) -> None:
    """The root listing, ``.vaultfs`` and a document's unlisted events file, as the
    families answer them through the file system."""
    names = await listdir(core, 1)
    assert ".vaultfs" not in names
    control = await core.lookup(1, ".vaultfs")
    assert set(await listdir(core, control.ino)) == {"status", "lost+found"}
