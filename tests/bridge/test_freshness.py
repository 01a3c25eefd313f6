"""Long kernel timeouts kept honest: what changes in the vault is pushed to the kernel
(attributes forgotten at once, names that no longer hold forgotten after a check)."""

from __future__ import annotations

import hashlib

import pytest

from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.inodes import ROOT_INODE
from vaultfs.bridge.write.editing import show_check_in
from vaultfs.bridge.write.spool.spool import CheckIn

from .fakevault import FakeVault
from .fsdriver import listdir, walk


@pytest.fixture
def fs(core: FileSystem) -> FileSystem:
    """The file system over the fake vault (tests/bridge/conftest.py)."""
    return core


async def test_vault_nodes_get_long_timeouts_local_ones_short(fs: FileSystem) -> None:
    guide = await walk(fs, "Reference", "Guide")
    for ino in (ROOT_INODE, guide, await walk(fs, "Reference", "Guide", "guide.txt")):
        attr = await fs.getattr(ino)
        assert attr.timeout >= 600 and attr.entry_timeout >= 600
    # ``.vaultfs`` and its ``status`` are there for the mount's life: the kernel keeps
    # their names (a status read costs no lookup) and asks for their attributes often.
    ctl = await fs.lookup(ROOT_INODE, ".vaultfs")
    assert ctl.entry_timeout >= 600 and ctl.timeout <= 1
    status = await fs.lookup(ctl.ino, "status")
    assert status.entry_timeout >= 600 and status.timeout == 0


async def test_a_change_seen_by_the_poller_makes_the_kernel_forget_attributes(
    fs: FileSystem, vault: FakeVault, invalidated: list[int]
) -> None:
    guide = await walk(fs, "Reference", "Guide")
    source = await walk(fs, "Reference", "Guide", "guide.txt")
    reference = await walk(fs, "Reference")
    other = await walk(fs, "Reference", "Guide [3]")
    invalidated.clear()
    vault.new_version(2, b"guide v2, longer\n")
    await fs.tree.index.refresh()
    assert {guide, source, reference, ROOT_INODE} <= set(invalidated)
    assert other not in invalidated  # another document: its attributes stay cached
    assert (await fs.getattr(source)).mtime_ns != 0


async def test_a_renamed_document_loses_its_old_name_only(
    fs: FileSystem, vault: FakeVault, forgotten_names: list[tuple[int, str]]
) -> None:
    reference = await walk(fs, "Reference")
    await listdir(fs, reference)  # the kernel is given every name of the folder
    await walk(fs, "Reference", "Guide", "guide.txt")
    vault.rename(2, "Handbook")
    await fs.tree.index.refresh()
    await fs.freshness.check_names()
    # "Guide [3]" is plain "Guide" now: both names the kernel holds lead elsewhere.
    assert sorted(forgotten_names) == [(reference, "Guide"), (reference, "Guide [3]")]
    forgotten_names.clear()
    vault.new_version(3, b"second guide v2\n")  # changed, same names: nothing to forget
    await fs.tree.index.refresh()
    await fs.freshness.check_names()
    assert forgotten_names == []


async def test_a_deleted_document_loses_its_name(
    fs: FileSystem, vault: FakeVault, forgotten_names: list[tuple[int, str]]
) -> None:
    folder = await walk(fs, "Reference")
    await walk(fs, "Reference", "Guide [3]", "guide.txt")
    vault.delete(3)
    await fs.tree.index.refresh()
    await fs.freshness.check_names()
    assert (folder, "Guide [3]") in forgotten_names


async def test_an_estimate_is_forgotten_when_the_exact_size_is_learned(
    fs: FileSystem, invalidated: list[int]
) -> None:
    source = await walk(fs, "Reference", "Guide", "guide.txt")
    content_key = next(iter(fs.freshness._estimated.values()))
    invalidated.clear()
    fs.blobs.remember_size(content_key, 6)
    assert invalidated == [source]
    assert not fs.freshness.is_estimated(source)


async def test_a_name_the_kernel_learns_anew_makes_it_forget_the_old_one(
    fs: FileSystem, vault: FakeVault, forgotten_names: list[tuple[int, str]]
) -> None:
    reference = await walk(fs, "Reference")
    await walk(fs, "Reference", "Guide")
    vault.rename(2, "Handbook")
    await fs.tree.index.refresh()
    await listdir(fs, reference)  # the new name arrives before the names are checked
    assert (reference, "Guide") in forgotten_names


async def test_a_check_in_shown_in_the_tree_makes_the_kernel_forget_attributes(
    fs: FileSystem, vault: FakeVault, invalidated: list[int]
) -> None:
    """What the spool's background check-in calls (``show_check_in``) ends in the same
    invalidation as a poll, without waiting for one."""
    source = await walk(fs, "Reference", "Guide", "guide.txt")
    invalidated.clear()
    content = b"checked in by the spool\n"
    vault.new_version(2, content)
    version = (
        vault.docs[2][-1].record["major_version_number__v"],
        vault.docs[2][-1].record["minor_version_number__v"],
    )
    done = CheckIn(version, hashlib.md5(content).hexdigest(), len(content), 1_000_000_000)
    await show_check_in(fs.tree, fs.blobs, 2, done)  # no call: the record is patched
    assert source in invalidated
    attr = await fs.getattr(source)
    assert attr.size == len(content) and attr.mtime_ns == 1_000_000_000
    assert attr.mode & 0o222  # unlocked: writable
