"""The path a user knows a node by (``fs.paths``), from the tree the mount has: the
status and the log lines name files by it, and it never costs an API call."""

from __future__ import annotations

from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.tree.nodes import Kind
from vaultfs.bridge.tree.tree import rendition_filename

from .fakevault import FakeVault
from .fsdriver import listdir, walk


async def test_a_nodes_path_is_the_path_the_mount_lists_it_under(
    core: FileSystem, vault: FakeVault
) -> None:
    paths = core.report.paths
    vault.calls.clear()
    # Nothing listed yet: the records alone give a path (API names, no sibling suffix).
    assert paths.of_key((Kind.SRC, 3)) == "reference__c/Guide/guide.txt"

    await listdir(core, await walk(core, "Reference"))
    guide = await walk(core, "Reference", "Guide [3]")
    await listdir(core, guide)
    rendition = rendition_filename("viewable_rendition__v")
    await walk(core, "Promotional Piece", "Brochure", "Brochure A", "renditions", rendition)
    calls = sum(vault.calls.values())

    assert paths.of_key((Kind.SRC, 3)) == "Reference/Guide [3]/guide.txt"
    assert paths.of_key((Kind.DOC, 4)) == "Reference/..%2F..%2Fetc"
    assert paths.of_key((Kind.VER, 3, 0, 1)) == "Reference/Guide [3]/versions/0.1"
    assert paths.of_key((Kind.REND, 1, "viewable_rendition__v")) == (
        f"Promotional Piece/Brochure/Brochure A/renditions/{rendition}"
    )
    assert paths.of_key((Kind.STATUS,)) == ".vaultfs/status"
    assert paths.show_inode(guide) == "Reference/Guide [3]"
    assert paths.show_inode(guide, "new.txt") == "Reference/Guide [3]/new.txt"
    assert sum(vault.calls.values()) == calls  # none of it asked the vault

    # What has no path says what it is, never a key's repr.
    assert paths.of_key((Kind.DOC, 99)) is None
    assert paths.show((Kind.DOC, 99)) == "doc 99"
    assert paths.show_inode(123456) == "inode 123456"
