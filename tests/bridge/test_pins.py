"""Documents kept for offline (``content.pins``) over the fake vault: what a pin
downloads and how fast, that eviction never takes pinned content, the refusal of a
pin the cache cannot hold (with its numbers), new versions fetched in the background,
offline, unpinning, and the set surviving a restart."""

from __future__ import annotations

import errno
import json
import stat
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from vaultfs import errors
from vaultfs.bridge.commands import pin as pin_command
from vaultfs.bridge.commands.manage import format_status
from vaultfs.bridge.content.blobcache import BlobCache
from vaultfs.bridge.content.pins import PIN_XATTR, pins_file_name
from vaultfs.bridge.core.build import Daemon, build_daemon
from vaultfs.bridge.fs.options import Options
from vaultfs.client import Reach

from .fakevault import FakeVault
from .fsdriver import read_all, walk

#: bytes of each document's content: two chunks of the cache's downloads, so a gate
#: holds a download after its first
SIZE = 200_000
#: what the index says each takes (``size__v`` is in KB, rounded up by the fake)
ESTIMATE = (SIZE + 1023) // 1024 * 1024
OPTIONS = Options(url="http://vault", user="me")


@pytest.fixture
def vault() -> FakeVault:
    """Five documents in Reference, three in Promotional Piece/Brochure."""
    vault = FakeVault()
    for n in range(5):
        vault.add(f"Pinned {n}", bytes([n]) * SIZE, filename=f"p{n}.bin")
    for n in range(3):
        vault.add(
            f"Other {n}",
            bytes([100 + n]) * SIZE,
            type_="promotional_piece__c",
            subtype="brochure__c",
            filename=f"o{n}.bin",
        )
    return vault


@asynccontextmanager
async def running(vault: FakeVault, directory: Path, cache_size: int) -> AsyncIterator[Daemon]:
    """A read-only daemon over ``vault`` (its content cache in ``directory``), with the
    content cache and the pins' downloads running."""
    daemon = build_daemon(vault, OPTIONS, content_dir=directory, cache_size=cache_size)
    await daemon.index.build()
    async with trio.open_nursery() as nursery:
        await nursery.start(daemon.blobs.run)
        await nursery.start(daemon.pins.run)
        yield daemon
        nursery.cancel_scope.cancel()


async def until(condition: Callable[[], bool]) -> None:
    """Let the background work run until ``condition`` holds (5 s at most; disk writes
    run in threads, which count as blocked tasks, hence the loop)."""
    with trio.fail_after(5):
        while not condition():
            await trio.testing.wait_all_tasks_blocked(cushion=0.01)


def pinned(daemon: Daemon) -> dict[str, Any]:
    status: dict[str, Any] = daemon.filesystem.status()["pinned"]
    return status


def key_of(daemon: Daemon, doc_id: int) -> str:
    content = daemon.filesystem.parts.pins._contents.latest_source(doc_id)
    assert content is not None
    return content.key


async def test_a_pinned_folder_is_downloaded_two_at_a_time_and_never_evicted(
    vault: FakeVault, tmp_path: Path
) -> None:
    async with running(vault, tmp_path, cache_size=1_500_000) as daemon:
        core = daemon.filesystem
        reference = await walk(core, "Reference")
        vault.calls.clear()
        vault.gate = trio.Event()  # every download waits after its first chunk
        await core.setxattr(reference, PIN_XATTR, b"1")  # no spool: nothing is written
        await until(lambda: daemon.blobs.usage()["downloading"] == 2)
        await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        # Paced: two at a time, one call each; none of them a listing (the index says
        # what the folder holds).
        assert vault.calls == {"download_file": 2}
        assert pinned(daemon)["downloading"] == 2 and pinned(daemon)["waiting"] == 5
        vault.gate.set()
        await until(lambda: pinned(daemon)["waiting"] == 0)
        assert vault.calls == {"download_file": 5}
        status = pinned(daemon)
        assert status["documents"] == 5 and status["downloads"] == 5
        assert status["bytes"] == 5 * SIZE and status["to_download"] == 0
        assert sorted(status["paths"]) == [f"Reference/Pinned {n}" for n in range(5)]
        assert status["more"] == 0 and status["failed"] == []
        # The set is on disk, 0600, by document id.
        path = tmp_path / pins_file_name(OPTIONS.url, OPTIONS.user)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert json.loads(path.read_text())["documents"] == [1, 2, 3, 4, 5]
        # Reading more than the rest of the cache holds evicts only what is not pinned.
        for n in range(3):
            ino = await walk(core, "Promotional Piece", "Brochure", f"Other {n}", f"o{n}.bin")
            assert await read_all(core, ino) == bytes([100 + n]) * SIZE
        await until(lambda: not daemon.blobs.usage()["downloading"])
        assert all(daemon.blobs.is_cached(key_of(daemon, d)) for d in range(1, 6))
        assert not daemon.blobs.is_cached(key_of(daemon, 6))  # the oldest unpinned read
        assert daemon.blobs.usage()["bytes"] <= 1_500_000
        # Asking again costs nothing: all of it is pinned and kept.
        await core.setxattr(reference, PIN_XATTR, b"1")
        await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        assert vault.calls["download_file"] == 5 + 3


async def test_a_pin_the_cache_cannot_hold_is_refused_with_the_numbers(
    vault: FakeVault, tmp_path: Path
) -> None:
    async with running(vault, tmp_path, cache_size=700_000) as daemon:
        core = daemon.filesystem
        reference = await walk(core, "Reference")
        vault.calls.clear()
        with pytest.raises(errors.CacheTooSmall) as refused:
            await core.setxattr(reference, PIN_XATTR, b"1")
        assert errors.errno_for(refused.value) == errno.ENOSPC
        message = str(refused.value)
        assert f"({5 * ESTIMATE} bytes)" in message and "holds 700000" in message
        # What the command reads back to say it: the numbers of the refusal.
        described = json.loads(await core.getxattr(reference, PIN_XATTR))
        assert described == {
            "documents": 5,
            "pinned": 0,
            "bytes": 5 * ESTIMATE,
            "adds_bytes": 5 * ESTIMATE,
            "to_download": 0,
            "pinned_bytes": 0,
            "cache_bytes": 700_000,
        }
        assert pinned(daemon)["documents"] == 0 and vault.calls == {}
        # One document fits; then the folder is refused counting what is pinned (its
        # exact size once downloaded), and the one pinned stays pinned.
        one = await walk(core, "Reference", "Pinned 0")
        await core.setxattr(one, PIN_XATTR, b"1")
        await until(lambda: pinned(daemon)["waiting"] == 0)
        with pytest.raises(errors.CacheTooSmall) as again:
            await core.setxattr(reference, PIN_XATTR, b"1")
        assert f"pinned now: {SIZE} bytes in 1 document(s)" in str(again.value)
        described = json.loads(await core.getxattr(reference, PIN_XATTR))
        assert described["pinned"] == 1 and described["adds_bytes"] == 4 * ESTIMATE
        assert described["pinned_bytes"] == SIZE
        assert pinned(daemon)["documents"] == 1


async def test_a_new_version_of_a_pinned_document_comes_in_the_background(
    vault: FakeVault, tmp_path: Path
) -> None:
    async with running(vault, tmp_path, cache_size=1 << 30) as daemon:
        core = daemon.filesystem
        source = await walk(core, "Reference", "Pinned 0", "p0.bin")
        await core.setxattr(source, PIN_XATTR, b"1")  # a document's file pins it too
        await until(lambda: pinned(daemon)["waiting"] == 0)
        old = key_of(daemon, 1)
        vault.calls.clear()
        vault.new_version(1, b"the new version\n")
        await daemon.index.refresh()
        await until(lambda: pinned(daemon)["waiting"] == 0)
        assert vault.calls["download_file"] == 1
        new = key_of(daemon, 1)
        assert new != old and daemon.blobs.is_cached(new)
        # Only the latest content is kept: the older one may be evicted now.
        pins = core.parts.pins
        assert pins.keeps(BlobCache.file_of(new)) and not pins.keeps(BlobCache.file_of(old))
        assert pinned(daemon)["bytes"] == len(b"the new version\n")


async def test_offline_a_pin_waits_for_the_vault(vault: FakeVault, tmp_path: Path) -> None:
    async with running(vault, tmp_path, cache_size=1 << 30) as daemon:
        core = daemon.filesystem
        document = await walk(core, "Reference", "Pinned 2")
        vault.calls.clear()
        vault.reach.move(Reach.OFFLINE, "test")
        await core.setxattr(document, PIN_XATTR, b"1")  # accepted: the set is local
        await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        assert vault.calls == {}
        assert pinned(daemon)["waiting"] == 1 and pinned(daemon)["to_download"] == ESTIMATE
        vault.reach.move(Reach.ONLINE)
        await until(lambda: pinned(daemon)["waiting"] == 0)
        assert vault.calls == {"download_file": 1}


async def test_a_failed_download_is_shown_and_tried_again_when_asked(
    vault: FakeVault, tmp_path: Path
) -> None:
    async with running(vault, tmp_path, cache_size=1 << 30) as daemon:
        core = daemon.filesystem
        document = await walk(core, "Reference", "Pinned 3")
        vault.forbidden.add(4)
        await core.setxattr(document, PIN_XATTR, b"1")
        await until(lambda: bool(pinned(daemon)["failed"]))
        [failed] = pinned(daemon)["failed"]
        assert failed["doc_id"] == 4 and failed["path"] == "Reference/Pinned 3/p3.bin"
        assert "no access" in failed["error"] and pinned(daemon)["waiting"] == 1
        vault.forbidden.clear()
        await core.setxattr(document, PIN_XATTR, b"1")  # pinning again retries
        await until(lambda: pinned(daemon)["waiting"] == 0)
        assert pinned(daemon)["failed"] == []


async def test_unpinning_keeps_the_content_and_the_set_survives_a_restart(
    vault: FakeVault, tmp_path: Path
) -> None:
    async with running(vault, tmp_path, cache_size=1 << 30) as daemon:
        core = daemon.filesystem
        await core.setxattr(await walk(core, "Reference"), PIN_XATTR, b"1")
        await until(lambda: pinned(daemon)["waiting"] == 0)
    vault.calls.clear()
    async with running(vault, tmp_path, cache_size=1 << 30) as daemon:
        core = daemon.filesystem
        await trio.testing.wait_all_tasks_blocked(cushion=0.05)
        assert pinned(daemon)["documents"] == 5 and pinned(daemon)["waiting"] == 0
        assert vault.calls["download_file"] == 0  # kept in the cache: nothing to fetch
        # ``setfattr -x``, or "0", unpins; the content stays in the cache.
        await core.setxattr(await walk(core, "Reference", "Pinned 1"), PIN_XATTR, None)
        assert pinned(daemon)["documents"] == 4
        await core.setxattr(await walk(core, "Reference"), PIN_XATTR, b"0")
        assert pinned(daemon)["documents"] == 0 and pinned(daemon)["bytes"] == 0
        assert all(daemon.blobs.is_cached(key_of(daemon, d)) for d in range(1, 6))
        assert not core.parts.pins.keeps(BlobCache.file_of(key_of(daemon, 1)))
    path = tmp_path / pins_file_name(OPTIONS.url, OPTIONS.user)
    assert json.loads(path.read_text())["documents"] == []


async def test_what_cannot_be_pinned_and_what_a_pin_takes(vault: FakeVault, tmp_path: Path) -> None:
    async with running(vault, tmp_path, cache_size=1 << 30) as daemon:
        core = daemon.filesystem
        renditions = await walk(core, "Reference", "Pinned 0", "renditions")
        with pytest.raises(errors.Unsupported):
            await core.setxattr(renditions, PIN_XATTR, b"1")
        with pytest.raises(errors.Unsupported):
            await core.getxattr(await walk(core, ".vaultfs"), PIN_XATTR)
        document = await walk(core, "Reference", "Pinned 0")
        with pytest.raises(errors.InvalidData):
            await core.setxattr(document, PIN_XATTR, b"maybe")
        # Never listed: getfattr -d, cp --preserve=xattr and rsync -X leave it alone.
        assert PIN_XATTR not in await core.listxattr(document)
        # The root is every document.
        described = json.loads(await core.getxattr(1, PIN_XATTR))
        assert described["documents"] == 8 and described["bytes"] == 8 * ESTIMATE
    # The command writes the attribute the daemon reads.
    assert pin_command.PIN == PIN_XATTR
    # One set per vault and user: another's document ids are never taken for these.
    assert pins_file_name("http://vault/", "me") == pins_file_name("http://vault", "me")
    assert pins_file_name("http://vault", "you") != pins_file_name("http://vault", "me")


def test_the_status_line_of_what_is_pinned() -> None:
    pinned = {
        "documents": 3,
        "bytes": 3 << 20,
        "to_download": 1 << 20,
        "waiting": 1,
        "paths": ["General/A", "General/B"],
        "more": 1,
        "failed": [{"doc_id": 7, "path": "General/C/c.pdf", "error": "no access"}],
    }
    shown = format_status({"pinned": pinned, "vault": {"state": "offline"}})
    assert (
        "pinned           3 documents, 3.0 MiB, 1.0 MiB to download (1): waiting for the vault"
        in shown
    )
    assert "    General/A\n    General/B\n    ... and 1 more\n" in shown
    assert "not downloaded: General/C/c.pdf: no access" in shown
    assert "pinned           none" in format_status({"pinned": {"documents": 0}})
