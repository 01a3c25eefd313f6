"""Reads from the kernel's page cache on a real mount, each way of ``PYFUSE3_WAYS``: a
file read again is served by the kernel (no READ reaches the mount), yet a save through
the mount and another client's new version are read at once (never the pages of the
content before); a read-only close sends no FLUSH where pyfuse3 offers ``noflush``,
while OPEN and RELEASE still reach the mount and a writer's close still flushes. Where
pyfuse3 offers ``kept_opens``, a file opened read-only once its pages are kept is
answered without the mount at all, and each of those changes still reaches the next
open; so does an edit under way."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyfuse3
import pytest

from tests.conftest import admin_client, upload_draft
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = [pytest.mark.mount, pytest.mark.usefixtures("pyfuse3_features")]


def _requests(mount: MountProcess) -> Counter[str]:
    """The requests that reached the mount so far, by operation (0 for none). The
    status is read in one read(2) of a buffer larger than it and one that finds its
    end, so that reading it costs the same requests each time, whatever its length."""
    fd = os.open(mount.mountpoint / ".vaultfs" / "status", os.O_RDONLY)
    try:
        text = os.read(fd, 1 << 20)
        assert os.read(fd, 1 << 20) == b"", "the status is larger than the buffer"
    finally:
        os.close(fd)
    status = json.loads(text)
    return Counter({op: int(n) for op, n in status["fuse_requests"].items()})


def _cost(mount: MountProcess, action: Callable[[], object]) -> Counter[str]:
    """The requests ``action`` sent to the mount, by operation: those of reading the
    status itself (measured by reading it twice) left out."""
    first = _requests(mount)
    second = _requests(mount)
    action()
    third = _requests(mount)
    ops = set(first) | set(second) | set(third)
    # Counter's own subtraction drops what falls below zero: spelled out instead.
    return Counter({op: third[op] - second[op] - (second[op] - first[op]) for op in ops})


def _noflush(features: str) -> bool:
    """Whether mounts of this way open read-only files with ``noflush``."""
    return features == "default" and "noflush" in getattr(pyfuse3, "features", ())


def _kept_opens(features: str) -> bool:
    """Whether mounts of this way have pyfuse3 answer warm read-only opens."""
    return features == "default" and "kept_opens" in getattr(pyfuse3, "features", ())


def _held(mount: MountProcess, source: Path, features: str) -> bytes:
    """Read ``source`` until the kernel holds its pages and, where offered, pyfuse3
    answers its read-only opens: its content. The handle is shared from the open that
    finds the content in the cache (the download goes in as it ends, around the first
    read's close), and kept from the first such open during which the mount invalidated
    nothing (a new mount's first look at the vault invalidates what it learns)."""
    content = source.read_bytes()  # the first read: READs reach the mount
    # The pages are kept from the first open that finds the content in the cache: on a
    # busy machine the download may go in after the second open (a run under load saw
    # the second read reach the mount), so the look is repeated until one does.
    wait_until(
        lambda: _cost(mount, source.read_bytes)["read"] == 0,
        timeout=20,
        what="the kernel keeping the file's pages",
    )
    cost = _cost(mount, source.read_bytes)
    assert cost["read"] == 0, cost
    if _kept_opens(features):
        wait_until(
            lambda: _cost(mount, source.read_bytes)["open"] == 0,
            timeout=20,
            what="a read-only open answered without the mount",
        )
    else:
        assert cost["open"] == 1, cost
    assert source.read_bytes() == content
    return content


def test_a_file_read_again_comes_from_the_kernels_pages(own_mount: MountProcess) -> None:
    source = own_mount.source_file(5)
    content = source.read_bytes()  # the first read: READs reach the mount
    assert content
    # The download goes into the cache as it ends, which on a busy machine may be after
    # the next open (then that open cannot keep the pages): wait for it.
    own_mount.quiet()
    cost = _cost(own_mount, source.read_bytes)
    # keep_cache: the kernel kept the pages across the open; only OPEN (and RELEASE,
    # which the kernel sends after close returned) reached the mount.
    assert cost["read"] == 0, cost
    assert cost["open"] == 1, cost
    assert source.read_bytes() == content


def test_a_file_opened_again_is_answered_without_the_mount_where_offered(
    own_mount: MountProcess, pyfuse3_features: str
) -> None:
    source = own_mount.source_file(5)
    version = next((source.parent / "versions").iterdir()) / source.name
    # A latest rendition and attachment too (a warm ``grep -r`` opens every one).
    uploaded = [
        next(p for p in own_mount.mountpoint.glob(f"**/{kind}/*") if p.is_file())
        for kind in ("renditions", "attachments")
    ]
    for path in (source, version, *uploaded):
        content = _held(own_mount, path, pyfuse3_features)
        cost = _cost(own_mount, path.read_bytes)
        kept = _kept_opens(pyfuse3_features)
        assert cost["open"] == (0 if kept else 1), cost
        assert cost["read"] == 0, cost
        assert path.read_bytes() == content
        with path.open("rb") as f:  # a descriptor of its own, read from its end
            f.seek(-10, os.SEEK_END)
            assert f.read() == content[-10:]


def test_a_save_through_the_mount_is_read_at_once_not_the_kept_pages(
    own_mount: MountProcess, pyfuse3_features: str
) -> None:
    source = own_mount.source_file(6)
    old = _held(own_mount, source, pyfuse3_features)  # the old content's pages kept
    # The same length: only the content tells the pages apart.
    new = bytes(b ^ 0xFF for b in old)
    source.write_bytes(new)
    assert source.read_bytes() == new  # while the check-in runs
    own_mount.settle()
    assert source.read_bytes() == new  # the vault's new version
    assert source.read_bytes() == new  # and again, from the kernel's pages
    assert _held(own_mount, source, pyfuse3_features) == new


def test_a_file_renamed_over_a_kept_file_is_read_at_once(
    own_mount: MountProcess, pyfuse3_features: str
) -> None:
    source = own_mount.source_file(6)
    old = _held(own_mount, source, pyfuse3_features)
    new = bytes(b ^ 0xFF for b in old)
    temporary = source.parent / f".{source.name}.Ab12Cd"  # rsync's name for it
    temporary.write_bytes(new)
    os.rename(temporary, source)  # the check-in, inside the rename
    # The name leads to another inode from now on (the renamed file's, then the source
    # file's anew): the kept open of the one before is never asked again.
    assert source.read_bytes() == new
    own_mount.settle()
    assert _held(own_mount, source, pyfuse3_features) == new


def test_an_edit_under_way_is_read_by_a_new_open_not_the_kept_pages(
    own_mount: MountProcess, pyfuse3_features: str
) -> None:
    source = own_mount.source_file(6)
    old = _held(own_mount, source, pyfuse3_features)
    patch = b"EDITED"
    fd = os.open(source, os.O_WRONLY)  # no O_TRUNC: the edit starts from the content
    try:
        assert os.pwrite(fd, patch, 0) == len(patch)
        # Not closed yet: another descriptor reads what is written so far.
        assert source.read_bytes() == patch + old[len(patch) :]
    finally:
        os.close(fd)
    own_mount.settle()
    assert source.read_bytes() == patch + old[len(patch) :]


def test_another_clients_version_of_the_same_size_is_read_after_the_poll(
    own_mount: MountProcess, fresh_vault: VaultProcess, pyfuse3_features: str
) -> None:
    source = own_mount.source_file(5)
    old = _held(own_mount, source, pyfuse3_features)  # kept by the kernel
    before = source.stat()
    new = bytes(b ^ 0xFF for b in old)
    with admin_client(fresh_vault.url) as api:
        upload_draft(api, 5, source.name, new)
    # What the poll (now: a refresh) tells the kernel: the file's attributes changed.
    own_mount.refresh()
    assert source.stat().st_mtime_ns != before.st_mtime_ns
    # (Its size is the vault's estimate until the new content is opened.)
    assert source.read_bytes() == new
    assert source.stat().st_size == len(new)


def test_a_read_only_close_sends_no_flush_where_offered(
    own_mount: MountProcess, pyfuse3_features: str
) -> None:
    source = own_mount.source_file(7)
    source.read_bytes()
    cost = _cost(own_mount, source.read_bytes)
    assert cost["open"] == 1, cost
    assert cost["flush"] == (0 if _noflush(pyfuse3_features) else 1), cost

    # Where the second open's handle became the one pyfuse3 answers opens with, pyfuse3
    # answers its release too: at most one release fewer reaches the mount.
    kept = 1 if _kept_opens(pyfuse3_features) else 0

    def every_open_released() -> bool:
        # The kernel sends RELEASE after close(2) returned: once it came, every open so
        # far has its release, but the status file's being read right now.
        counts = _requests(own_mount)
        expected = counts["open"] + counts["create"] - 1
        assert counts["release"] <= expected, counts
        return counts["release"] >= expected - kept

    wait_until(every_open_released, what="the releases")


def test_a_writers_close_still_flushes_and_saves(own_mount: MountProcess) -> None:
    source = own_mount.source_file(7)
    new = b"written through the mount, then closed\n"
    cost = _cost(own_mount, lambda: source.write_bytes(new))
    assert cost["open"] == 1, cost
    assert cost["flush"] == 1, cost  # close(2) of a writer: what it wrote is made durable
    own_mount.settle()
    assert source.read_bytes() == new


def test_a_file_managers_count_of_a_document_folder_costs_its_listing(
    own_mount: MountProcess, pyfuse3_features: str
) -> None:
    """GNOME Files counts the items of every document folder it shows: GIO lists the
    folder and reads its ``.hidden``. Where the kernel keeps listings and opens, that
    reaches the mount as the listing and the lookup of ``.hidden`` (one node for every
    document folder, its pages kept): the lookup is answered by pyfuse3 itself where it
    offers ``shared_entries``, and the listing's end asked again (the kernel's look past
    the last entry it keeps, twice) without listing the folder again, by pyfuse3 where
    it offers ``kept_listings`` (no request reaches Python)."""
    if shutil.which("gio") is None:
        pytest.skip("needs gio (Debian package libglib2.0-bin)")
    general = own_mount.mountpoint / "General"
    folders = sorted(p for p in general.iterdir() if (p / "versions").is_dir())[:4]

    def count(folder: Path) -> Callable[[], object]:
        argv = ["gio", "list", "-a", "standard::name,standard::type,standard::is-hidden"]
        return lambda: subprocess.run([*argv, str(folder)], check=True, capture_output=True)

    _cost(own_mount, count(folders[0]))  # the first .hidden: opened and read once
    relisted = own_mount.log_path.read_text().count("listed from entry")
    for folder in folders[1:]:
        cost = +_cost(own_mount, count(folder))
        print(folder.name, dict(cost))
        if pyfuse3_features == "default" and _kept_opens(pyfuse3_features):
            offered = getattr(pyfuse3, "features", ())
            ends = 0 if "kept_listings" in offered else 2
            lookups = 0 if "shared_entries" in offered else 1
            assert +cost == +Counter({"lookup": lookups, "readdir": 1 + ends}), cost
        else:
            assert cost["lookup"] <= 1 and cost["read"] <= 1, cost
    if pyfuse3_features == "default" and _kept_opens(pyfuse3_features):
        assert own_mount.log_path.read_text().count("listed from entry") == relisted
    assert (folders[-1] / ".hidden").read_bytes() == b"versions\n"
    assert os.stat(folders[1] / ".hidden").st_ino == os.stat(folders[2] / ".hidden").st_ino
