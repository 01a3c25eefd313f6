"""Files dropped into a document's folder, on a real mount of a real vault: ``cp`` (and
a file manager's paste) into a document's directory makes an attachment of the
document once the grace is over; editors' temporary files there are never uploaded;
a drop the vault refuses stays in lost+found, is named by the status and by
``vaultfs umount``, and is still there after the mount restarts."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.bridge.desktop import Watcher
from tests.conftest import VIEWER
from vaultfs.testing.mount_process import MountProcess, calls_since, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

NOTES = b"notes dropped into a document's folder\n" + bytes(range(256)) * 8


@pytest.fixture(scope="module")
def vault(module_vault: VaultProcess) -> VaultProcess:
    return module_vault


_taken: set[int] = set()


def document(api: httpx.Client) -> int:
    """A demo document with a source file that no other test of the module uses."""
    for doc_id in range(1, 40):
        if doc_id in _taken:
            continue
        body = api.get(f"/objects/documents/{doc_id}").json()
        if body.get("responseStatus") == "SUCCESS" and body["document"].get("filename__v"):
            _taken.add(doc_id)
            return doc_id
    raise AssertionError("no such demo document left")


def document_dir(mount: MountProcess, doc_id: int) -> Path:
    """Document ``doc_id``'s directory, found by listing folders only: looking into no
    document, it starts no read-ahead that would count in the calls measured."""
    folders = [mount.mountpoint]
    while folders:
        folder = folders.pop()
        for entry in os.scandir(folder):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            try:
                found = int(os.getxattr(entry.path, "user.vault.id"))
            except OSError:
                folders.append(Path(entry.path))  # a folder, not a document
                continue
            if found == doc_id:
                return Path(entry.path)
    raise AssertionError(f"document {doc_id} is not in the mount")


def attachments(api: httpx.Client, doc_id: int) -> dict[str, dict[str, Any]]:
    data = api.get(f"/objects/documents/{doc_id}/attachments").json().get("data") or []
    return {a["filename__v"]: a for a in data}


def attachment_bytes(api: httpx.Client, doc_id: int, attachment_id: int) -> bytes:
    return api.get(f"/objects/documents/{doc_id}/attachments/{attachment_id}/file").content


def cp(source: Path, target: Path, program: str = "cp") -> None:
    """``cp``, or ``gio copy`` (a file manager's paste) of ``source`` into ``target``."""
    argv = ["gio", "copy"] if program == "gio" else ["cp"]
    subprocess.run([*argv, str(source), str(target)], check=True, timeout=60)


@pytest.mark.parametrize("program", ["cp", "gio"])
def test_cp_into_a_document_folder_makes_an_attachment(
    mount: MountProcess, api: httpx.Client, tmp_path: Path, program: str
) -> None:
    if program == "gio" and shutil.which("gio") is None:
        pytest.skip("needs gio (Debian package libglib2.0-bin)")
    doc_id = document(api)
    doc_dir = document_dir(mount, doc_id)
    os.listdir(doc_dir / "attachments")  # the details are read: not the drop's cost
    local = tmp_path / "notes.txt"
    local.write_bytes(NOTES)
    before = mount.quiet_calls()
    cp(local, doc_dir, program)
    # Within the grace the file is where it was put, and the status says it waits.
    dropped = [f for f in mount.status()["new_files"] if f["state"] == "dropped"]
    assert [f["path"].rsplit("/", 1)[-1] for f in dropped] == ["notes.txt"], dropped
    wait_until(lambda: "notes.txt" in attachments(api, doc_id), timeout=30, what="the attachment")
    kept = attachments(api, doc_id)["notes.txt"]
    assert attachment_bytes(api, doc_id, kept["id"]) == NOTES
    mount.settle()
    # It moved: it is the document's attachment now, and the drop place is empty again.
    assert (doc_dir / "attachments" / "notes.txt").read_bytes() == NOTES
    assert "notes.txt" not in os.listdir(doc_dir)
    cost = calls_since(before, mount.quiet_calls())
    print("a dropped file:", cost)
    # The upload, the document's details read to compare (an attachment of that name
    # and content is not sent again) and again to show it, and the test's own read.
    assert cost.pop("POST /objects/documents/{id}/attachments") == 1, cost
    assert sum(n for e, n in cost.items() if e.endswith("/file")) == 1, cost
    assert cost.get("GET /objects/documents/{id}", 0) <= 2, cost
    assert cost.get("GET /objects/documents/{id}/attachments", 0) <= 2, cost
    assert sum(cost.values()) <= 5, cost


def test_a_dropped_file_that_became_an_attachment_is_deleted_for_the_folders_watchers(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """A file manager's window showing the document's folder learns the file went (it
    shows it under attachments/ now), as it learns a pasted file became a document."""
    doc_id = document(api)
    doc_dir = document_dir(mount, doc_id)
    local = tmp_path / "watched notes.txt"
    local.write_bytes(NOTES)
    with Watcher(doc_dir) as watcher:
        cp(local, doc_dir)
        watcher.wait_for("CLOSE_WRITE", "watched notes.txt")
        wait_until(
            lambda: "watched notes.txt" in attachments(api, doc_id), timeout=30, what="the drop"
        )
        watcher.wait_for("DELETE", "watched notes.txt", timeout=10)
    assert "watched notes.txt" not in os.listdir(doc_dir)
    assert "watched notes.txt" in os.listdir(doc_dir / "attachments")


def test_editors_temporary_files_are_never_uploaded(
    mount: MountProcess, api: httpx.Client, tmp_path: Path
) -> None:
    doc_id = document(api)
    doc_dir = document_dir(mount, doc_id)
    temporary = [".~lock.other.odt#", ".notes.txt.swp", "4913", "draft.tmp", "~$report.docx"]
    temporary += [".goutputstream-AB12CD", "notes.txt~"]
    for name in temporary:
        (doc_dir / name).write_bytes(b"an editor's temporary file\n")
    # A real drop made after them: once it is in, their grace is long over.
    local = tmp_path / "marker.txt"
    local.write_bytes(b"marker\n")
    cp(local, doc_dir)
    wait_until(lambda: "marker.txt" in attachments(api, doc_id), timeout=30, what="the marker drop")
    mount.settle()
    assert set(attachments(api, doc_id)) == {"marker.txt"}
    # They stay the mount's own, as an editor expects to find them.
    assert set(temporary) <= set(os.listdir(doc_dir))
    assert mount.status()["lost_and_found"] == []


def _vaultfs(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vaultfs", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_refused_drop_is_kept_listed_named_at_umount_and_survives_a_restart(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    doc_id = document(api)
    local = tmp_path / "viewer notes.txt"
    local.write_bytes(NOTES)
    viewer = MountProcess(vault.url, tmp_path / "viewer", user=VIEWER)
    try:
        viewer.start()
        cp(local, document_dir(viewer, doc_id))
        wait_until(lambda: viewer.status()["lost_and_found"], timeout=30, what="the refusal")
        status = viewer.settle()
        [lost] = status["lost_and_found"]
        assert lost["filename"] == "viewer notes.txt"
        assert "INSUFFICIENT_ACCESS" in lost["error"]
        assert lost["saved_as"].endswith("/attachments/viewer notes.txt"), lost
        assert (viewer.mountpoint / lost["mount_path"]).read_bytes() == NOTES
        on_disk = viewer.cache_dir / "spool" / "lost+found" / lost["file"]
        assert stat.S_IMODE(on_disk.stat().st_mode) == 0o600
        shown = _vaultfs("status", str(viewer.mountpoint))
        assert "viewer notes.txt" in shown.stdout, shown.stdout + shown.stderr

        done = _vaultfs("umount", str(viewer.mountpoint), "--timeout", "30")
        assert done.returncode == 0, done.stderr
        assert "refused" in done.stderr and "viewer notes.txt" in done.stderr, done.stderr
        assert not os.path.ismount(viewer.mountpoint)
        viewer.stop()

        viewer.start()  # the same cache directory
        [again] = viewer.status()["lost_and_found"]
        assert again["file"] == lost["file"]
        assert (viewer.mountpoint / again["mount_path"]).read_bytes() == NOTES
    finally:
        viewer.stop()
    assert "viewer notes.txt" not in attachments(api, doc_id)


def test_a_drop_in_its_grace_when_the_mount_stops_is_kept_for_the_next_start(
    vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    doc_id = document(api)
    local = tmp_path / "left behind.txt"
    local.write_bytes(NOTES)
    process = MountProcess(vault.url, tmp_path / "stopped")
    try:
        process.start()
        cp(local, document_dir(process, doc_id))
        assert [f["state"] for f in process.status()["new_files"]] == ["dropped"]
        process.stop()  # unmounted within the grace: nothing was sent

        process.start()  # the same cache directory
        [kept] = process.status()["lost_and_found"]
        assert kept["filename"] == "left behind.txt"
        assert "DAEMON_STOPPED" in kept["error"], kept
        assert (process.mountpoint / kept["mount_path"]).read_bytes() == NOTES
    finally:
        process.stop()
    assert "left behind.txt" not in attachments(api, doc_id)
