"""What the fast read path promises: reads wake as bytes land, the kernel's page cache
is used only with the exact size, and estimated sizes never cut or pad what programs read."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio.testing

from tests.conftest import login
from vaultfs import errors
from vaultfs.bridge.content.blobcache import CHUNK, BlobCache
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until

from .fakevault import FakeDownload, FakeVault
from .fsdriver import listdir, read_all, running, walk

API = "/api/v25.1"


@dataclass
class _BrokenMidway(FakeDownload):
    """Sends its first piece, then fails the way a vault that lost the document does."""

    async def pieces(self) -> AsyncIterator[bytes]:
        yield self.data[: self.piece]
        raise errors.InvalidDocument("gone while downloading")


async def test_a_read_returns_once_its_bytes_landed_without_waiting_for_more(
    tmp_path: Path,
) -> None:
    data = os.urandom(4 * CHUNK + 5)
    gate = trio.Event()

    @asynccontextmanager
    async def fetch(offset: int) -> AsyncIterator[FakeDownload]:
        yield FakeDownload(data, offset, gate=gate)

    async with running(BlobCache(tmp_path, 1 << 30)) as cache:
        handle = await cache.open("k", fetch)
        await handle.wait_started()
        # Only the first chunk can arrive (the rest waits at the gate).
        assert await handle.read(0, CHUNK) == data[:CHUNK]
        assert not handle.complete
        gate.set()
        # A read past the end waits for the known length only, not for more bytes.
        assert await handle.read(len(data) - 5, 1 << 20) == data[-5:]
        await handle.wait_complete()
        handle.close()


async def test_an_error_midway_reaches_the_reader_as_the_vault_said_it(tmp_path: Path) -> None:
    @asynccontextmanager
    async def fetch(offset: int) -> AsyncIterator[FakeDownload]:
        yield _BrokenMidway(b"x" * (3 * CHUNK), offset)

    async with running(BlobCache(tmp_path, 1 << 30)) as cache:
        handle = await cache.open("k", fetch)
        with pytest.raises(errors.InvalidDocument):
            await handle.read(0, 3 * CHUNK)
        handle.close()
        assert not cache.is_cached("k")
        assert not list((tmp_path / "blobs").iterdir())  # no .part file left


async def test_learned_sizes_are_saved_when_the_cache_stops(tmp_path: Path) -> None:
    async with running(BlobCache(tmp_path, 1 << 30)) as cache:
        cache.remember_size("a", 10)
        cache.remember_size("b", 20)
    assert json.loads((tmp_path / "sizes.json").read_text()) == {"a": 10, "b": 20}
    assert (tmp_path / "sizes.json").stat().st_mode & 0o777 == 0o600
    assert BlobCache(tmp_path, 1 << 30).exact_size("b") == 20


async def test_the_kernel_drops_pages_when_the_latest_file_changes_content(
    core,
    vault,
) -> None:
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    assert await read_all(core, ino) == b"guide\n"
    same = await core.open(ino, os.O_RDONLY)
    assert same.keep_cache
    await core.release(same.fh)
    vault.new_version(2, b"guide, second version\n")
    await core.tree.index.refresh()
    # The same inode now stands for other content: the kernel's pages must go.
    changed = await core.open(ino, os.O_RDONLY)
    assert not changed.keep_cache and not changed.direct_io
    await core.release(changed.fh)
    assert await read_all(core, ino) == b"guide, second version\n"


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_an_open_whose_pages_the_kernel_keeps_opens_the_cache_file_at_a_read(
    core: FileSystem, vault: FakeVault
) -> None:
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    assert await read_all(core, ino) == b"guide\n"
    await _until(lambda: not core.blobs.usage()["downloading"])  # in the cache now
    fds = _open_fds()
    kept = await core.open(ino, os.O_RDONLY)
    assert kept.keep_cache and kept.noflush
    # A warm walk's open: nothing to read yet (the kernel has the pages).
    assert _open_fds() == fds
    await core.release(kept.fh)
    assert _open_fds() == fds
    # A page the kernel dropped since is read from the cache file, opened then; a
    # cache file evicted meanwhile is downloaded again (the content is immutable).
    again = await core.open(ino, os.O_RDONLY)
    for blob in (core.blobs.directory / "blobs").iterdir():
        blob.unlink()
    core.blobs._lru.clear()
    vault.calls.clear()
    assert await core.read(again.fh, 0, 1 << 17) == b"guide\n"
    assert vault.calls["download_file"] == 1
    await _until(lambda: not core.blobs.usage()["downloading"])
    # The handle every such open shares (``Opened.shared``) holds no cache file: no
    # release says when the last of its opens ends, so each read opens it anew.
    assert again.shared and _open_fds() == fds
    assert await core.read(again.fh, 0, 1 << 17) == b"guide\n"
    assert vault.calls["download_file"] == 1  # read from the cache file this time
    await core.release(again.fh)
    assert _open_fds() == fds


async def test_read_only_opens_of_any_kind_need_no_flush(core: FileSystem) -> None:
    ino = await walk(core, "Reference", "Guide", "guide.txt")
    reader = await core.open(ino, os.O_RDONLY)
    assert reader.noflush
    await core.release(reader.fh)
    status = await walk(core, ".vaultfs", "status")
    snapshot = await core.open(status, os.O_RDONLY)
    assert snapshot.noflush and snapshot.direct_io
    await core.release(snapshot.fh)


async def test_a_warm_walk_starts_no_read_ahead_and_a_cold_one_each_document_once(
    core: FileSystem, vault: FakeVault, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(20):
        vault.add(f"Walked {number:02d}", f"walked {number}\n".encode(), filename="w.txt")
    await core.tree.index.refresh()
    started: list[tuple[str, int]] = []
    spawn = core.blobs.spawn

    def counting(work: Callable[..., Any], mark: tuple[str, int], *args: Any) -> bool:
        started.append(mark)
        return spawn(work, mark, *args)

    monkeypatch.setattr(core.blobs, "spawn", counting)

    async def grep_r() -> list[bytes]:
        """What ``grep -r`` opens: each document's file and its ``versions/`` twin."""
        folder = await walk(core, "Reference")
        found = []
        for name in sorted(await listdir(core, folder)):
            if not name.startswith("Walked"):
                continue
            doc = await walk(core, "Reference", name)
            versions = (await core.lookup(doc, "versions")).ino
            version = (await core.lookup(versions, "0.1")).ino
            found.append(await read_all(core, (await core.lookup(version, "w.txt")).ino))
            found.append(await read_all(core, await walk(core, "Reference", name, "w.txt")))
        return found

    cold = await grep_r()
    await _until(lambda: not core.blobs.usage()["downloading"])
    assert len(cold) == 40
    assert started and len(started) == len(set(started))  # no document twice
    assert {what for what, _ in started} == {"source"}
    started.clear()
    vault.calls.clear()
    assert await grep_r() == cold
    assert started == []  # everything ahead is cached: no task at all
    assert sum(vault.calls.values()) == 0


async def _until(condition: Callable[[], bool]) -> None:
    """Let the background work of the core run until ``condition`` holds (5 s at most;
    disk writes run in threads, which count as blocked tasks, hence the loop)."""
    with trio.fail_after(5):
        while not condition():
            await trio.testing.wait_all_tasks_blocked(cushion=0.01)


async def test_a_walk_reads_the_next_documents_ahead(core: FileSystem, vault: FakeVault) -> None:
    await listdir(core, await walk(core, "Reference"))  # the walk's order: etc, Guide, Guide [3]
    first = await walk(core, "Reference", "..%2F..%2Fetc")
    await listdir(core, (await core.lookup(first, "versions")).ino)
    await read_all(core, await walk(core, "Reference", "..%2F..%2Fetc", "..%2Fpasswd"))
    await trio.testing.wait_all_tasks_blocked()
    assert not core.tree.has_details(3)  # one document is no walk yet
    # The second document in the listing's order makes it one: the next is read ahead.
    second = await walk(core, "Reference", "Guide")
    vault.calls.clear()
    await listdir(core, (await core.lookup(second, "versions")).ino)
    await _until(lambda: core.tree.has_details(3))
    assert vault.calls["get_document"] == 2
    await read_all(core, await walk(core, "Reference", "Guide", "guide.txt"))
    await _until(
        lambda: vault.calls["download_file"] == 2 and not core.blobs.usage()["downloading"]
    )
    # The rest of the walk finds everything in the caches.
    vault.calls.clear()
    doc = await walk(core, "Reference", "Guide [3]")
    await listdir(core, (await core.lookup(doc, "versions")).ino)
    assert await read_all(core, await walk(core, "Reference", "Guide [3]", "guide.txt"))
    assert sum(vault.calls.values()) == 0


@pytest.mark.parametrize("position", [0, 1])
async def test_one_document_opened_from_a_listing_is_no_walk(
    core: FileSystem, vault: FakeVault, position: int
) -> None:
    """A path typed in a file manager: the folder listed, one document opened, the
    first one included."""
    order = ["..%2F..%2Fetc", "Guide", "Guide [3]"]
    assert list(await listdir(core, await walk(core, "Reference"))) == order
    doc = await walk(core, "Reference", order[position])
    vault.calls.clear()
    await listdir(core, (await core.lookup(doc, "versions")).ino)
    file = "..%2Fpasswd" if position == 0 else "guide.txt"
    assert await read_all(core, await walk(core, "Reference", order[position], file))
    await trio.testing.wait_all_tasks_blocked()
    assert vault.calls == {"get_document": 1, "download_file": 1}
    assert not any(core.tree.has_details(d) for d in (2, 3) if d != position + 1)


async def test_no_read_ahead_while_the_burst_budget_runs_low(
    core: FileSystem, vault: FakeVault
) -> None:
    vault.budget.burst_remaining = 50
    await listdir(core, await walk(core, "Reference"))
    first = await walk(core, "Reference", "..%2F..%2Fetc")
    await listdir(core, (await core.lookup(first, "versions")).ino)
    second = await walk(core, "Reference", "Guide")
    vault.calls.clear()
    await listdir(core, (await core.lookup(second, "versions")).ino)
    await read_all(core, await walk(core, "Reference", "Guide", "guide.txt"))
    await trio.testing.wait_all_tasks_blocked()
    assert vault.calls == {"get_document": 1, "download_file": 1}
    assert not core.tree.has_details(3)


# --- a real mount: estimated sizes never reach a reader ----------------------------


def _create(url: str, name: str, content: bytes) -> None:
    headers = {"Authorization": login(url)}
    with httpx.Client(base_url=url + API, headers=headers) as api:
        doc = api.get("/objects/documents").json()["documents"][0]["document"]
        r = api.post(
            "/objects/documents",
            data={
                "name__v": name,
                "type__v": doc["type__v"],
                "subtype__v": doc.get("subtype__v") or "",
                "classification__v": doc.get("classification__v") or "",
                "lifecycle__v": doc["lifecycle__v"],
            },
            files={"file": (f"{name}.bin", content)},
        )
        assert r.json()["responseStatus"] == "SUCCESS", r.text


@pytest.mark.mount
def test_cat_wc_and_cp_see_the_exact_size_of_a_never_read_file(
    own_mount: MountProcess, fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    # 1500 bytes: size__v says 2 KB, so the kernel is first told 2048 bytes.
    content = os.urandom(1500)
    for tool in ("cat", "wc", "cp"):
        _create(fresh_vault.url, f"estimate-{tool}", content)
    own_mount.refresh()
    paths = {
        tool: wait_until(
            lambda tool=tool: next(own_mount.mountpoint.rglob(f"estimate-{tool}.bin"), None),
            timeout=20,
            what=f"the document for {tool}",
        )
        for tool in ("cat", "wc", "cp")
    }
    for path in paths.values():
        assert path.stat().st_size == 2048  # the estimate, now in the kernel's cache

    def run(*argv: str | Path) -> bytes:
        result = subprocess.run([str(a) for a in argv], capture_output=True, timeout=60)
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert run("cat", paths["cat"]) == content
    assert run("wc", "-c", paths["wc"]).split()[0] == b"1500"
    run("cp", paths["cp"], tmp_path / "copy")
    assert (tmp_path / "copy").read_bytes() == content
    for path in paths.values():
        assert path.stat().st_size == 1500
        assert path.read_bytes() == content  # again, from the kernel's pages
