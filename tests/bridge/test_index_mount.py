"""The document index on disk, on real mounts at the default poll interval: a second
mount catches up instead of reading every page, a kill -9 never leaves an index that
lies, an old or corrupt or foreign index is built again."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import API, login
from tests.faultproxy import FaultProxy
from vaultfs.bridge.tree.index_store import index_file_name
from vaultfs.testing.mount_process import MountProcess, calls_but_polls, can_mount
from vaultfs.testing.vault_process import EDITOR, VaultProcess, wait_until

pytestmark = pytest.mark.skipif(not can_mount(), reason="needs /dev/fuse and fusermount3")

#: documents made in bulk (two list pages and a bit)
COUNT = 450


@pytest.fixture
def api(fresh_vault: VaultProcess) -> Iterator[httpx.Client]:
    headers = {"Authorization": login(fresh_vault.url)}
    with httpx.Client(base_url=fresh_vault.url + API, headers=headers, timeout=60) as client:
        yield client


def bulk_create(
    api: httpx.Client, count: int, prefix: str = "bulk", *, same_name: bool = False
) -> list[int]:
    """``count`` documents of type General named ``prefix N`` (``same_name``: all named
    ``prefix``), one CSV request per 500 rows."""
    ids: list[int] = []
    for first in range(0, count, 500):
        rows = ["name__v,type__v,lifecycle__v"]
        rows += [
            f"{prefix if same_name else f'{prefix} {i}'},General,General Lifecycle"
            for i in range(first, min(count, first + 500))
        ]
        r = api.post(
            "/objects/documents/batch",
            content="\n".join(rows).encode(),
            headers={"Content-Type": "text/csv"},
        )
        r.raise_for_status()
        ids += [row["id"] for row in r.json()["data"]]
    return ids


def names(mount: MountProcess) -> list[str]:
    return sorted(os.listdir(mount.mountpoint / "General"))


def calls(mount: MountProcess) -> int:
    return calls_but_polls(mount.status())  # (a poll may fall in the window counted)


def index_file(mount: MountProcess) -> Path:
    return mount.cache_dir / "index" / index_file_name(mount.url, mount.user)


def test_second_mount_catches_up_in_a_few_calls_and_sees_changes_made_meanwhile(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    ids = bulk_create(api, COUNT)
    first = MountProcess(fresh_vault.url, tmp_path / "a", cache_dir=tmp_path / "cache").start()
    try:
        before = names(first)
        assert sum(n.startswith("bulk ") for n in before) == COUNT
        assert index_file(first).stat().st_mode & 0o777 == 0o600
    finally:
        first.stop()
    # Another client deletes one document and renames another while no mount runs.
    api.delete(f"/objects/documents/{ids[0]}").raise_for_status()
    api.put(
        f"/objects/documents/{ids[1]}", data={"name__v": "renamed meanwhile"}
    ).raise_for_status()
    second = MountProcess(fresh_vault.url, tmp_path / "b", cache_dir=tmp_path / "cache").start()
    try:
        start_calls = calls(second)
        listing = names(second)
        # The whole first listing: a page of catch-up, the deletions, the deleted one's check.
        assert calls(second) - start_calls <= 5
        assert "bulk 0" not in listing and "bulk 1" not in listing
        assert "renamed meanwhile" in listing
        assert len(listing) == len(before) - 1 and len(set(listing)) == len(listing)
        log = second.log_path.read_text(errors="replace")
        assert "catching up" in log and "caught up" in log
    finally:
        second.stop()


def test_listing_during_the_first_build_waits_and_is_whole(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    bulk_create(api, COUNT)
    mount = MountProcess(fresh_vault.url, tmp_path, options="ro").start(wait_index=False)
    try:
        # The mount answers before its index is read: .vaultfs at once, and the
        # folder's listing waits for the build, then is whole.
        assert isinstance(mount.status()["index"]["ready"], bool)
        listing = names(mount)
        assert sum(n.startswith("bulk ") for n in listing) == COUNT
        status = mount.status()["index"]
        assert status["ready"] and status["indexed"] >= COUNT and status["total"] >= COUNT
        # The progress lines a foreground mount prints (its log here), the last at 100 %.
        log = mount.log_path.read_text(errors="replace")
        assert f"of {status['total']} documents (100 %)" in log
        assert "index: built, " in log
    finally:
        mount.stop()


def test_documents_sharing_one_name_across_pages_are_each_listed_and_found(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """A folder's listing is read from the index a page at a time (512 documents): a
    name shared by more documents than a page holds is named as one group."""
    ids = sorted(bulk_create(api, 600, "Same", same_name=True))
    mount = MountProcess(fresh_vault.url, tmp_path, options="ro").start()
    try:
        before = calls(mount)
        listing = os.listdir(mount.mountpoint / "General")  # in the order read
        shared = [n for n in listing if n == "Same" or n.startswith("Same [")]
        assert sorted(shared) == sorted(["Same"] + [f"Same [{i}]" for i in ids[1:]])
        assert len(set(listing)) == len(listing)
        for name in ("Same", f"Same [{ids[-1]}]"):  # looked up, not listed
            assert (mount.mountpoint / "General" / name).is_dir()
        assert not (mount.mountpoint / "General" / f"Same [{ids[0]}]").exists()
        assert calls(mount) - before == 0  # the index answers, not the vault
    finally:
        mount.stop()


def test_a_walk_past_max_inodes_lets_the_oldest_names_go_and_loses_nothing(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """Past ``max_inodes`` the kernel is made to forget the documents it was given
    longest ago (and the nodes below them): the mount's inodes stay bounded, and the
    walk, and a walk again, see everything."""
    bulk_create(api, COUNT)
    mount = MountProcess(fresh_vault.url, tmp_path, options="ro,max_inodes=300").start()
    try:
        general = mount.mountpoint / "General"
        walk = ["find", str(general), "-maxdepth", "2"]  # each document and what it holds
        first = subprocess.run(walk, capture_output=True, text=True, check=True).stdout
        documents = [p for p in first.splitlines() if p.count("/") == str(general).count("/") + 1]
        assert sum(Path(p).name.startswith("bulk ") for p in documents) == COUNT
        # Five nodes or more per document were looked up: the kernel let most go.
        assert len(first.splitlines()) > 5 * COUNT
        wait_until(lambda: mount.status()["inodes"] < 2 * COUNT, timeout=30)
        before = calls(mount)
        again = subprocess.run(walk, capture_output=True, text=True, check=True).stdout
        assert sorted(again.splitlines()) == sorted(first.splitlines())
        assert calls(mount) == before  # looked up again from the index, not the vault
    finally:
        mount.stop()


def _kill(mount: MountProcess) -> None:
    """kill -9 the daemon, and take its mount point back."""
    os.kill(mount.pid, signal.SIGKILL)
    assert mount.proc is not None
    mount.proc.wait(timeout=10)
    subprocess.run(["fusermount3", "-u", "-z", str(mount.mountpoint)], check=False)


def _within(seconds: float, probe: Callable[[], object]) -> object:
    """``probe()``'s answer, which must come within ``seconds`` (run in a thread: a
    request the mount holds blocks its caller)."""
    answer: list[object] = []
    thread = threading.Thread(target=lambda: answer.append(probe()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert answer, f"no answer within {seconds} s"
    return answer[0]


def _meta(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as db:
        return dict(db.execute("SELECT key, value FROM meta").fetchall())


def test_kill_9_during_a_build_then_every_document_once_and_no_ghost(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    ids = bulk_create(api, COUNT)
    cache = tmp_path / "cache"
    with FaultProxy(fresh_vault.port, seed=1, share=0.0) as proxy:
        # The build's last page is held: two pages are written when the daemon dies.
        held = proxy.hold("GET", "start=400")
        killed = MountProcess(proxy.url, tmp_path / "a", cache_dir=cache)
        try:
            killed.start(wait_index=False)
            wait_until(held.holding.is_set, timeout=60, what="the build's last page")
            _kill(killed)
        finally:
            held.release()
            killed.stop()
        assert _meta(index_file(killed))["complete"] == "0"
        api.delete(f"/objects/documents/{ids[-1]}").raise_for_status()  # on a written page
        mount = MountProcess(proxy.url, tmp_path / "b", cache_dir=cache).start()
        try:
            bulk = [n for n in names(mount) if n.startswith("bulk ")]
            assert len(bulk) == len(set(bulk)) == COUNT - 1
            assert f"bulk {COUNT - 1}" not in bulk
            assert "an interrupted build" in mount.log_path.read_text(errors="replace")
        finally:
            mount.stop()


def test_kill_9_during_a_catch_up_leaves_the_last_poll_then_every_change_shows(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    ids = bulk_create(api, COUNT)
    cache = tmp_path / "cache"
    with FaultProxy(fresh_vault.port, seed=1, share=0.0) as proxy:
        MountProcess(proxy.url, tmp_path / "a", cache_dir=cache).start().stop()
        path = index_file(MountProcess(proxy.url, tmp_path / "a", cache_dir=cache))
        polled = _meta(path)["last_poll"]
        api.delete(f"/objects/documents/{ids[5]}").raise_for_status()
        api.put(f"/objects/documents/{ids[6]}", data={"name__v": "moved on"}).raise_for_status()
        # The catch-up has read the changed page when its deletions answer is held.
        held = proxy.hold("GET", "/objects/deletions/documents")
        killed = MountProcess(proxy.url, tmp_path / "b", cache_dir=cache)
        try:
            killed.start(wait_index=False)
            wait_until(held.holding.is_set, timeout=60, what="the catch-up's deletions")
            # A desktop's probes of a new mount answer meanwhile, and so does the status
            # (the kernel held it behind a probe waiting for the catch-up).
            assert _within(5.0, lambda: (killed.mountpoint / ".Trash-0").exists()) is False
            assert _within(5.0, lambda: killed.status()["index"]["ready"]) is False
            _kill(killed)
        finally:
            held.release()
            killed.stop()
        # All or nothing: nothing of the catch-up was kept.
        assert _meta(path)["last_poll"] == polled
        mount = MountProcess(proxy.url, tmp_path / "c", cache_dir=cache).start()
        try:
            listing = names(mount)
            bulk = [n for n in listing if n.startswith("bulk ")]
            assert len(bulk) == len(set(bulk)) == COUNT - 2
            assert "bulk 5" not in bulk and "bulk 6" not in bulk and "moved on" in listing
        finally:
            mount.stop()


def _set_last_poll(path: Path, when: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE meta SET value = ? WHERE key = 'last_poll'", (when,))


def test_an_old_index_and_a_corrupt_one_are_built_again(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    bulk_create(api, COUNT)
    cache = tmp_path / "cache"
    mount = MountProcess(fresh_vault.url, tmp_path / "a", cache_dir=cache).start()
    path = index_file(mount)
    try:
        assert len(names(mount)) >= COUNT
    finally:
        mount.stop()
    _set_last_poll(path, "2000-01-01T00:00:00+00:00")
    mount = MountProcess(fresh_vault.url, tmp_path / "b", cache_dir=cache).start()
    try:
        assert len(names(mount)) >= COUNT
        assert "older than the vault keeps deletions" in mount.log_path.read_text(errors="replace")
    finally:
        mount.stop()
    path.write_bytes(b"not an index at all" * 100)
    for side in path.parent.glob(path.name + "-*"):
        side.unlink()
    mount = MountProcess(fresh_vault.url, tmp_path / "c", cache_dir=cache).start()
    try:
        assert sum(n.startswith("bulk ") for n in names(mount)) == COUNT
        assert "set aside" in mount.log_path.read_text(errors="replace")
        assert list(path.parent.glob(path.name + ".corrupt-*"))
    finally:
        mount.stop()


def test_one_users_index_is_never_read_for_another(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    bulk_create(api, 10)
    cache = tmp_path / "cache"
    admin = MountProcess(fresh_vault.url, tmp_path / "a", cache_dir=cache).start()
    try:
        names(admin)
    finally:
        admin.stop()
    other = MountProcess(fresh_vault.url, tmp_path / "b", cache_dir=cache, user=EDITOR).start()
    try:
        names(other)
        assert index_file(other) != index_file(admin)
        assert "building from the start: no index yet" in other.log_path.read_text(errors="replace")
    finally:
        other.stop()
