"""Never a silent lost update, a leaked lock or a create sent twice.

An admin who undoes a check-out and saves in between (two clients of one user:
``test_one_user_two_clients``), a daemon
killed after taking a lock and before its entry exists, and a daemon stopped while a
new document's create is in flight. Each ends with nothing a user wrote lost or
silently replaced, no lock left in the vault, and nothing created twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from pathlib import Path

import httpx
import pytest

from tests.conftest import EDITOR, upload_draft
from tests.faultproxy import FaultProxy
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

CHECKLIST = "General/Release Checklist/Release_Checklist.md"


def versions(api: httpx.Client, doc_id: int) -> list[str]:
    return [v["number"] for v in api.get(f"/objects/documents/{doc_id}").json()["versions"]]


def latest(api: httpx.Client, doc_id: int) -> bytes:
    return api.get(f"/objects/documents/{doc_id}/file").content


def lock_of(api: httpx.Client, doc_id: int) -> object:
    return api.get(f"/objects/documents/{doc_id}/lock").json().get("lock")


def total(api: httpx.Client) -> int:
    body = api.get("/objects/documents", params={"limit": 1}).json()
    return int(body["responseDetails"]["total"])


def conflict_in(mount: MountProcess) -> dict[str, object]:
    """The one lost+found file of ``mount``, which must be a conflict."""
    status = mount.settle()
    [lost] = status["lost_and_found"]
    assert "CHECK_IN_CONFLICT" in str(lost["error"]), lost
    return lost


def test_an_undone_check_out_and_another_save_meanwhile_is_a_conflict(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """The editor's check-out is undone by an admin, who saves a version of their own:
    the editor's save goes to lost+found; the admin's version stays the latest."""
    with MountProcess(fresh_vault.url, tmp_path / "e", user=EDITOR) as editor:
        path = editor.mountpoint / CHECKLIST
        doc_id = int(os.getxattr(path.parent, "user.vault.id"))
        with open(path, "ab", buffering=0) as f:
            f.write(b"the editor's line\n")
            assert lock_of(api, doc_id)
            assert api.delete(f"/objects/documents/{doc_id}/lock").json()["responseStatus"] == (
                "SUCCESS"
            )
            assert api.post(f"/objects/documents/{doc_id}/lock").json()["responseStatus"] == (
                "SUCCESS"
            )
            upload_draft(api, doc_id, "Release_Checklist.md", b"the admin's version\n")
            api.delete(f"/objects/documents/{doc_id}/lock")
        lost = conflict_in(editor)
        assert "undone" in str(lost["error"])
        assert latest(api, doc_id) == b"the admin's version\n"
        assert not lock_of(api, doc_id)


def _next(numbers: list[str]) -> str:
    major, minor = numbers[-1].split(".")
    return f"{major}.{int(minor) + 1}"


def test_a_daemon_killed_between_the_lock_and_its_entry_leaves_no_lock(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    """SIGKILL while the check-out reads the document after locking it: the next
    start releases the lock the dead daemon took."""
    port = int(fresh_vault.url.rsplit(":", 1)[1])
    with FaultProxy(port, seed=1, share=0.0) as proxy:
        first = MountProcess(proxy.url, tmp_path / "m").start()
        try:
            path = first.mountpoint / CHECKLIST
            doc_id = int(os.getxattr(path.parent, "user.vault.id"))
            path.read_bytes()  # cached: the open for writing needs no download
            hold = proxy.hold("GET", f"/documents/{doc_id} HTTP")
            writer = threading.Thread(target=_append_quietly, args=(path,), daemon=True)
            writer.start()
            assert hold.holding.wait(timeout=30), "the read after the lock never came"
            assert lock_of(api, doc_id)  # locked, and the daemon dies now
            assert first.proc is not None
            first.proc.kill()
            first.proc.wait(timeout=10)
            hold.release()
            writer.join(timeout=30)
        finally:
            first.stop()
        with MountProcess(proxy.url, tmp_path / "m") as second:
            wait_until(lambda: not lock_of(api, doc_id), timeout=30, what="the lock released")
            status = second.settle()
            assert status["pending_uploads"] == [] and status["lost_and_found"] == []


def _append_quietly(path: Path) -> None:
    try:
        with open(path, "ab", buffering=0) as f:
            f.write(b"never checked out whole\n")
    except OSError:
        pass  # the daemon was killed under it


@pytest.mark.parametrize(
    ("arrived", "stop"),
    [(True, signal.SIGKILL), (False, signal.SIGKILL), (True, signal.SIGINT)],
    ids=["killed-arrived", "killed-not-arrived", "ctrl-c"],
)
def test_a_daemon_stopped_during_a_create_makes_the_document_once(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path, arrived: bool, stop: int
) -> None:
    """The daemon killed while a new document's create is in flight (the vault did or
    did not take it): the next start finds it by its marker, or sends it. Ctrl-C while
    the vault answers it: the stop lets it finish. One document, whole, either way, and
    nothing in lost+found."""
    port = int(fresh_vault.url.rsplit(":", 1)[1])
    content = os.urandom(2 * 1024 * 1024)
    local = tmp_path / "Quarterly Figures.bin"
    local.write_bytes(content)
    before = total(api)
    with FaultProxy(port, seed=1, share=0.0) as proxy:
        first = MountProcess(proxy.url, tmp_path / "m").start()
        try:
            hold = proxy.hold("POST", "/objects/documents HTTP", after_vault=arrived)
            copy = subprocess.Popen(["cp", str(local), str(first.mountpoint / "General")])
            assert copy.wait(timeout=60) == 0  # close(): safe in the spool
            assert hold.holding.wait(timeout=30), "the create never came"
            assert first.proc is not None
            first.proc.send_signal(stop)
            hold.release()  # dropped when the daemon was killed; else answered
            first.proc.wait(timeout=60)
        finally:
            first.stop()
        with MountProcess(proxy.url, tmp_path / "m") as second:
            wait_until(lambda: total(api) == before + 1, timeout=60, what="the document")
            status = second.settle()
            assert status["lost_and_found"] == []
    assert total(api) == before + 1  # never twice
    listed = api.get("/objects/documents").json()["documents"]
    [doc_id] = [d["document"]["id"] for d in listed if d["document"]["name__v"] == local.stem]
    assert latest(api, doc_id) == content
