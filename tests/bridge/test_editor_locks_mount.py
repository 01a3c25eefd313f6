"""Editors' lock files on a real mount: LibreOffice's ``.~lock.NAME#`` beside a source
file checks the document out in the vault, its removal ends the check-out, a killed
mount's check-out is ended at the next start, and another user's mount shows the
check-out as LibreOffice's lock file naming the holder."""

from __future__ import annotations

import errno
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import EDITOR
from vaultfs.testing.mount_process import MountProcess, calls_since, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount


def document(api: httpx.Client, doc_id: int) -> dict[str, Any]:
    body = api.get(f"/objects/documents/{doc_id}").json()
    assert body["responseStatus"] == "SUCCESS", body
    return body


def locked(api: httpx.Client, doc_id: int) -> bool:
    return bool(document(api, doc_id)["document"]["locked__v"])


def version_count(api: httpx.Client, doc_id: int) -> int:
    return len(document(api, doc_id)["versions"])


def lock_file(source: Path) -> Path:
    return source.parent / f".~lock.{source.name}#"


@pytest.fixture
def editor_mount(module_vault: VaultProcess, tmp_path: Path) -> Iterator[MountProcess]:
    """A second mount of the module's vault, as the demo editor."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    process = MountProcess(module_vault.url, tmp_path, user=EDITOR)
    try:
        yield process.start()
    finally:
        process.stop()


def test_a_lock_file_checks_out_and_its_removal_undoes_it(
    mount: MountProcess, api: httpx.Client
) -> None:
    source = mount.source_file(2)
    versions = version_count(api, 2)
    source.read_bytes()  # a reader checks nothing out
    assert not locked(api, 2)
    # (from a quiet mount: a read may look like a walk's and download the next files)
    before = mount.quiet_calls()
    lock = lock_file(source)
    with open(lock, "x") as f:  # as LibreOffice makes it
        f.write(",Someone,host,27.11.2026 10:00,file:///home/someone;")
    made = calls_since(before, mount.quiet_calls())
    assert locked(api, 2)
    # looked at before (another client of this user?), taken, the document read (what
    # saves under the check-out start from)
    assert made == {
        "GET /objects/documents/{id}/lock": 1,
        "POST /objects/documents/{id}/lock": 1,
        "GET /objects/documents/{id}": 1,
    }, made
    assert lock.read_text().startswith(",Someone,")  # a scratch file, as written
    held = mount.status()["checked_out"]
    assert [h["why"] for h in held if h["doc_id"] == 2] == [["editor's lock file"]], held
    assert source.stat().st_mode & 0o200  # this mount's check-out: writable here
    lock.unlink()
    assert not locked(api, 2)
    assert version_count(api, 2) == versions  # undone: no new version
    assert all(h["doc_id"] != 2 for h in mount.status()["checked_out"])
    assert calls_since(before, mount.quiet_calls()) == {
        "GET /objects/documents/{id}/lock": 1,
        "POST /objects/documents/{id}/lock": 1,
        "GET /objects/documents/{id}": 1,
        "DELETE /objects/documents/{id}/lock": 1,
    }
    assert not lock.exists()


def test_a_save_while_the_lock_file_stands_is_one_version(
    mount: MountProcess, api: httpx.Client
) -> None:
    source = mount.source_file(3)
    versions = version_count(api, 3)
    lock = lock_file(source)
    lock.write_text(",Someone,host,27.11.2026 10:00,file:///home/someone;")
    assert locked(api, 3)
    expected = source.read_bytes() + b"saved with the lock file\n"
    with open(source, "ab") as f:
        f.write(b"saved with the lock file\n")
    mount.settle()
    # The save is in, and the document stays checked out while the editor has it.
    assert version_count(api, 3) == versions + 1
    assert locked(api, 3)
    lock.unlink()
    mount.settle()
    assert not locked(api, 3)
    assert version_count(api, 3) == versions + 1
    assert api.get("/objects/documents/3/file").content == expected
    assert source.read_bytes() == expected


def test_an_unmount_ends_the_check_out(
    module_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    process = MountProcess(module_vault.url, tmp_path).start()
    try:
        lock_file(process.source_file(6)).write_text(",Someone,host,27.11.2026 10:00,x;")
        assert locked(api, 6)
    finally:
        process.stop()
    assert not locked(api, 6)


def test_a_killed_mount_s_check_out_ends_at_the_next_start(
    module_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    first = MountProcess(module_vault.url, tmp_path / "one").start()
    try:
        lock_file(first.source_file(4)).write_text(",Someone,host,27.11.2026 10:00,x;")
        assert locked(api, 4)
        assert first.proc is not None
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=10)
    finally:
        first.stop()
    assert locked(api, 4)  # nobody ended it
    second = MountProcess(module_vault.url, tmp_path / "one").start()
    try:
        wait_until(lambda: not locked(api, 4), timeout=30, what="the check-out ended")
        # The lock file was a scratch file, gone with the mount; the check-out the
        # index knew of is shown ended as soon as it is (no lock file shown either).
        lock = lock_file(second.source_file(4))
        wait_until(lambda: not lock.exists(), timeout=10, what="no lock file shown")
    finally:
        second.stop()


def test_another_user_sees_the_holder_and_cannot_take_the_lock_file(
    mount: MountProcess, api: httpx.Client, editor_mount: MountProcess
) -> None:
    source = mount.source_file(5)
    theirs = editor_mount.source_file(5)  # listed before the check-out
    lock = lock_file(source)
    lock.write_text(",Someone,host,27.11.2026 10:00,x;")
    try:
        # The editor's index does not know of the check-out yet: the vault refuses.
        with pytest.raises(OSError) as refused:
            os.close(os.open(lock_file(theirs), os.O_CREAT | os.O_WRONLY | os.O_EXCL, 0o644))
        assert refused.value.errno == errno.EBUSY
        editor_mount.refresh()
        before = editor_mount.quiet_calls()
        assert lock_file(theirs).name in os.listdir(theirs.parent)
        line = lock_file(theirs).read_text()
        users = api.get("/objects/users").json()["users"]
        admin = next(u["user"] for u in users if u["user"]["user_name__v"] == mount.user)
        fields = line.rstrip(";").split(",")
        assert line.endswith(";") and len(fields) == 5, line
        assert fields[1] == admin["user_name__v"]
        assert admin["user_first_name__v"] in fields[0]
        assert calls_since(before, editor_mount.quiet_calls()).keys() <= {
            "GET /objects/documents/{id}/lock",
            "GET /objects/users",
        }
        assert sum(calls_since(before, editor_mount.quiet_calls()).values()) <= 2
        # Shown read-only: writing it (or making it anew) is busy, removing it refused.
        assert lock_file(theirs).stat().st_mode & 0o222 == 0
        with pytest.raises(OSError) as busy:
            os.close(os.open(lock_file(theirs), os.O_CREAT | os.O_WRONLY, 0o644))
        assert busy.value.errno == errno.EBUSY
        with pytest.raises(OSError) as removed:
            lock_file(theirs).unlink()
        assert removed.value.errno == errno.EPERM
        assert locked(api, 5)
    finally:
        lock.unlink()
    assert not locked(api, 5)
    editor_mount.refresh()
    assert lock_file(theirs).name not in os.listdir(theirs.parent)
