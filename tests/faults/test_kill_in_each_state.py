"""SIGKILL of the daemon in the middle of each spool state, then a new mount: the save
reaches the vault exactly once, whole, and the lock is released.

A proxy between mount and vault holds one request (the draft upload before or after
the vault took it, or the unlock) so the daemon can be killed while the spool is in
that state; the held request is then dropped, as the dead daemon would never see it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.faultproxy import FaultProxy, Hold
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount

API = "/api/v25.1"
CHECKLIST = "General/Release Checklist/Release_Checklist.md"
LINE = b"written before the crash\n"


def upload(doc_id: int) -> tuple[str, str]:
    return ("POST", f"/documents/{doc_id} HTTP")


def unlock(doc_id: int) -> tuple[str, str]:
    return ("DELETE", f"/documents/{doc_id}/lock HTTP")


# state -> (the request to hold, held after the vault answered)
HOLDS: dict[str, tuple[Callable[[int], tuple[str, str]], bool] | None] = {
    "editing": None,  # killed with the file still open
    "pending": None,  # the upload failed (503); killed before the retry
    "uploading-not-arrived": (upload, False),
    "uploading-arrived": (upload, True),
    "unlocking": (unlock, False),
}


@pytest.mark.parametrize("state", sorted(HOLDS))
def test_a_kill_in_each_spool_state_loses_and_doubles_nothing(
    fresh_vault: VaultProcess, api: httpx.Client, tmp_path: Path, state: str
) -> None:
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    port = int(fresh_vault.url.rsplit(":", 1)[1])
    with FaultProxy(port, seed=1, share=1.0, faults=("503",), methods=("POST",)) as proxy:
        first = MountProcess(proxy.url, tmp_path / "m").start()
        try:
            path = first.mountpoint / CHECKLIST
            doc_id = int(os.getxattr(path.parent, "user.vault.id"))
            original = path.read_bytes()
            versions = len(api.get(f"/objects/documents/{doc_id}").json()["versions"])
            f = open(path, "ab")  # noqa: SIM115 - closed (or abandoned) below
            f.write(LINE)
            f.flush()
            hold: Hold | None = None
            closer: threading.Thread | None = None
            if state == "pending":
                proxy.active = True  # the upload is answered 503: the check-in fails, kept
                f.close()  # safe in the spool: close() succeeds
                wait_until(
                    lambda: first.status()["pending_uploads"][0]["state"] == "uploading",
                    timeout=20,
                    what="the failed upload recorded",
                )
            elif state != "editing":
                request, after_vault = HOLDS[state]  # type: ignore[misc]
                method, part = request(doc_id)
                hold = proxy.hold(method, part, after_vault=after_vault)
                closer = threading.Thread(target=_close_quietly, args=(f,), daemon=True)
                closer.start()
                assert hold.holding.wait(timeout=30), "the request to hold never came"
            assert first.proc is not None
            first.proc.kill()
            first.proc.wait(timeout=10)
            if hold is not None:
                hold.release()
            if closer is not None:
                closer.join(timeout=30)
            if state == "editing":
                _close_quietly(f)
        finally:
            first.stop()
        proxy.active = False
        with MountProcess(proxy.url, tmp_path / "m") as second:
            wait_until(
                lambda: not second.status()["pending_uploads"],
                timeout=60,
                what="the replayed check-in",
            )
            assert second.status()["lost_and_found"] == []
    record = api.get(f"/objects/documents/{doc_id}").json()
    assert len(record["versions"]) == versions + 1
    assert api.get(f"/objects/documents/{doc_id}/file").content == original + LINE
    assert not api.get(f"/objects/documents/{doc_id}/lock").json().get("lock")


def _close_quietly(f: object) -> None:
    with contextlib.suppress(OSError):
        f.close()  # type: ignore[attr-defined]
