"""Which names the mount announces to a folder's watchers (``fs.desktop``), over the
fake vault: the events are recorded, not raised (the real ones: test_desktop_mount.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import trio

from vaultfs.bridge.core.build import build_daemon
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.fs.options import Options

from .fakevault import FakeVault
from .fsdriver import listdir, walk


class Recorded:
    """A ``fs.desktop.NameEvents`` that keeps what it was asked to raise."""

    def __init__(self) -> None:
        self.creates: list[tuple[int, str, str]] = []
        self.held: dict[str, Callable[[], bool]] = {}
        self.deletes: list[tuple[int, str, str, int, bool]] = []

    def created(self, parent: int, parent_path: str, name: str, held: Callable[[], bool]) -> None:
        self.creates.append((parent, parent_path, name))
        self.held[name] = held

    def deleted(self, parent: int, parent_path: str, name: str, ino: int, is_dir: bool) -> None:
        self.deletes.append((parent, parent_path, name, ino, is_dir))


@pytest.fixture
async def announced(vault: FakeVault, tmp_path: Path) -> AsyncIterator[tuple[FileSystem, Recorded]]:
    recorded = Recorded()
    daemon = build_daemon(
        vault,
        Options(url="http://vault", user="me"),
        content_dir=tmp_path / "cache",
        cache_size=1 << 30,
        name_events=recorded,
    )
    await daemon.index.build()
    # The first check after the index is built, as at a mount's start: the kernel
    # holds no folder yet, nothing is announced.
    await daemon.filesystem.freshness.check_names()
    assert recorded.creates == recorded.deletes == []
    async with trio.open_nursery() as nursery:
        await nursery.start(daemon.blobs.run)
        yield daemon.filesystem, recorded
        nursery.cancel_scope.cancel()


async def _poll(fs: FileSystem) -> None:
    await fs.tree.index.refresh()
    await fs.freshness.check_names()


async def test_a_new_document_and_a_renamed_ones_new_name_are_announced(
    announced: tuple[FileSystem, Recorded], vault: FakeVault
) -> None:
    fs, recorded = announced
    reference = await walk(fs, "Reference")
    names = await listdir(fs, reference)  # a window lists the folder
    assert "Guide" in names
    second = await walk(fs, "Reference", "Guide [3]")
    vault.add("Made elsewhere", b"new\n", filename="new.txt")
    vault.rename(2, "Handbook")
    await _poll(fs)
    assert sorted(name for _, _, name in recorded.creates) == ["Handbook", "Made elsewhere"]
    assert {(parent, path) for parent, path, _ in recorded.creates} == {(reference, "Reference")}
    # "Guide" is the second guide's name now (it leads elsewhere: forgotten, no event);
    # "Guide [3]" leads nowhere: deleted, as the directory the kernel was given. A
    # window that listed Guide and Guide [3] now shows Guide and Handbook.
    assert recorded.deletes == [(reference, "Reference", "Guide [3]", second, True)]
    # Looked up before the call is made: the kernel holds the name then, and the call
    # is answered as any lookup (``daemon.name_events``).
    assert not recorded.held["Made elsewhere"]()
    await walk(fs, "Reference", "Made elsewhere")
    assert recorded.held["Made elsewhere"]()


async def test_a_changed_document_that_kept_its_name_is_not_announced(
    announced: tuple[FileSystem, Recorded], vault: FakeVault
) -> None:
    fs, recorded = announced
    reference = await walk(fs, "Reference")
    await listdir(fs, reference)
    await walk(fs, "Reference", "Guide")
    vault.new_version(2, b"guide v2\n")
    await _poll(fs)
    assert recorded.creates == [] and recorded.deletes == []


async def test_nothing_is_announced_in_a_folder_the_kernel_does_not_hold(
    announced: tuple[FileSystem, Recorded], vault: FakeVault
) -> None:
    fs, recorded = announced
    vault.add("Made elsewhere", b"new\n", filename="new.txt")
    await _poll(fs)
    assert recorded.creates == []


async def test_a_deleted_documents_name_is_announced_as_a_directory(
    announced: tuple[FileSystem, Recorded], vault: FakeVault
) -> None:
    fs, recorded = announced
    reference = await walk(fs, "Reference")
    folder = await walk(fs, "Reference", "Guide [3]")
    await walk(fs, "Reference", "Guide [3]", "guide.txt")
    vault.delete(3)
    await _poll(fs)
    assert (reference, "Reference", "Guide [3]", folder, True) in recorded.deletes
    assert recorded.creates == []
