"""An inode the kernel holds stays known, whatever a slow vault call is doing.

The kernel may forget an earlier reference to an inode (it dropped the name: memory
pressure, an invalidation) while a lookup or a listing of the same node waits for the
vault, which is slow under a spent call budget. The answer must still name an inode
the mount knows: the reference is counted before the wait, not after it. Before,
the forget freed the number, the answer handed it back to the kernel anyway, and every
later use of it failed with "inode N is not known" (ENOENT on a path that exists).
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from vaultfs.bridge.fs.filesystem import Attr, FileSystem
from vaultfs.bridge.tree.nodes import Kind

from .fakevault import FakeVault
from .fsdriver import walk


@pytest.fixture
def vault() -> FakeVault:
    """One document of two versions: reading the attributes of ``versions/0.1`` (not
    the latest) takes a call."""
    vault = FakeVault()
    doc_id = vault.add("Guide", b"first\n", filename="guide.txt")
    vault.new_version(doc_id, b"second\n")
    return vault


def held(vault: FakeVault, gate: trio.Event) -> None:
    """Make the fake's version reads wait for ``gate``."""
    vault.version_gate = gate


async def _versions(core: FileSystem) -> tuple[int, int]:
    """The inode of Guide's ``versions`` directory, and the document's id."""
    doc = await walk(core, "Reference", "Guide")
    key = core.inodes.key(doc)
    assert key is not None and key[0] == Kind.DOC
    return await walk(core, "Reference", "Guide", "versions"), int(key[1])


async def test_a_forget_during_a_slow_lookup_leaves_the_answered_inode_known(
    core: FileSystem, vault: FakeVault
) -> None:
    versions, doc_id = await _versions(core)
    first = await core.lookup(versions, "0.1")  # the kernel holds it
    await core.tree.children((Kind.VERS, doc_id))
    core.tree.invalidate(doc_id)  # its version records are read again: slowly
    await core.tree.children((Kind.VERS, doc_id))  # (the listing itself is quick)
    gate = trio.Event()
    held(vault, gate)
    answers: list[Attr] = []

    async def look_up_again() -> None:
        answers.append(await core.lookup(versions, "0.1"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(look_up_again)
        await trio.testing.wait_all_tasks_blocked()
        core.forget(first.ino, 1)  # the kernel dropped its earlier reference meanwhile
        gate.set()
    [again] = answers
    assert core.inodes.key(again.ino) == (Kind.VER, doc_id, 0, 1)
    assert core.inodes.lookups(again.ino) == 1
    await core.getattr(again.ino)  # known: no "inode N is not known"
    assert await core.lookup(again.ino, "renditions")


async def test_a_forget_during_a_slow_listing_leaves_every_listed_inode_known(
    core: FileSystem, vault: FakeVault
) -> None:
    versions, doc_id = await _versions(core)
    first = await core.lookup(versions, "0.1")
    core.tree.invalidate(doc_id)
    fh = await core.opendir(versions)
    gate = trio.Event()
    held(vault, gate)
    listed: list[tuple[int, str, Any, Attr]] = []

    async def list_again() -> None:
        listed.extend(await core.readdir(fh, 0))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(list_again)
        await trio.testing.wait_all_tasks_blocked()
        core.forget(first.ino, 1)
        gate.set()
    core.releasedir(fh)
    assert [name for _, name, _, _ in listed] == ["0.1", "0.2"]
    for _, _, key, attr in listed:  # each handed to the kernel, which holds it now
        assert core.inodes.key(attr.ino) == key
        assert core.inodes.lookups(attr.ino) == 1
        await core.getattr(attr.ino)


async def test_entries_the_kernel_was_not_handed_are_given_back(core: FileSystem) -> None:
    versions, _ = await _versions(core)
    fh = await core.opendir(versions)
    entries = await core.readdir(fh, 0)
    core.releasedir(fh)
    core.entries_not_returned(entries)  # a full readdir buffer: none was taken
    for _, _, key, attr in entries:
        assert core.inodes.key(attr.ino) is None
        assert core.inodes.inode(key) != attr.ino  # freed; numbers are never reused
