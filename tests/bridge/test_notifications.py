"""Desktop notifications: what the status says a user must know reaches a real session
bus (``dbus-daemon --session``) and the notification server on it (a recording one,
``tests.notification_server``), once per file and kind of event, a few a minute."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from tests.conftest import ADMIN, DEMO_PASSWORD, EDITOR, upload_draft
from vaultfs.bridge.daemon import notifications
from vaultfs.bridge.daemon.notifications import Notifier, run_notifications
from vaultfs.testing.mount_process import MountProcess, can_mount
from vaultfs.testing.vault_process import VaultProcess, end_process, wait_until

CHECKLIST = "General/Release Checklist/Release_Checklist.md"


@dataclass
class SessionBus:
    address: str
    record: Path

    def received(self) -> list[dict[str, str]]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def wait_for(self, summary: str, timeout: float = 30.0) -> dict[str, str]:
        wait_until(
            lambda: any(n["summary"] == summary for n in self.received()),
            timeout=timeout,
            what=f"a notification {summary!r}",
        )
        [notice] = [n for n in self.received() if n["summary"] == summary]
        return notice


@pytest.fixture
def session_bus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SessionBus]:
    """A session bus of the test's own with a recording notification server on it; the
    test's processes (and a mount it starts) find it through DBUS_SESSION_BUS_ADDRESS."""
    if shutil.which("dbus-daemon") is None:
        if os.environ.get("CI"):
            pytest.fail("dbus-daemon is missing (./run installs it)")
        pytest.skip("needs dbus-daemon")
    address = f"unix:path={tmp_path / 'bus'}"
    daemon = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--nopidfile", f"--address={address}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server: subprocess.Popen[str] | None = None
    try:
        wait_until(lambda: (tmp_path / "bus").exists(), timeout=10, what="the session bus")
        env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=address)
        record = tmp_path / "notifications.jsonl"
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.notification_server", str(record)],
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert server.stdout is not None and server.stdout.readline().strip() == "ready"
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        yield SessionBus(address, record)
    finally:
        if server is not None:
            end_process(server)
        end_process(daemon)


def _failing(attempts: int) -> dict[str, Any]:
    """The status of a mount whose one save has failed ``attempts`` times."""
    return {
        "mountpoint": "/home/u/vault",
        "pending_uploads": [
            {
                "doc_id": 7,
                "path": "General/Plan/Plan.txt",
                "attempts": attempts,
                "age_seconds": 600.0,
                "last_error": "SERVER_EXCEPTION: 503",
            }
        ],
    }


async def test_twenty_failing_retries_of_one_upload_send_one_notification(
    session_bus: SessionBus,
) -> None:
    """Through the real session bus: one save failing twenty times in a row is told
    once, naming its file and that it is safe in the spool."""
    snapshots = iter([_failing(n) for n in range(1, 21)])
    last = _failing(20)

    def status() -> dict[str, Any]:
        return next(snapshots, last)

    with trio.move_on_after(2):  # a check every 10 ms until then: the 20, then more
        await run_notifications(status, interval=0.01)
    [notice] = session_bus.received()
    assert notice["summary"] == "A save keeps failing"
    assert "/home/u/vault/General/Plan/Plan.txt" in notice["body"]
    assert "local spool" in notice["body"]


async def test_no_session_bus_no_notifications(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DBUS_SESSION_BUS_ADDRESS", raising=False)
    monkeypatch.setattr(notifications, "session_bus_address", lambda: None)
    with trio.fail_after(5):
        await run_notifications(lambda: _failing(20))  # returns at once


async def test_a_few_a_minute_the_rest_in_one_summary_and_a_return_is_told_again() -> None:
    sent: list[str] = []
    now = [0.0]

    async def send(summary: str, body: str) -> None:
        sent.append(body)

    waiting = [
        {"path": f"Clinical/Protocol/Final Protocol/f{i}.txt", "missing": ["study_number__c"]}
        for i in range(6)
    ]
    state: dict[str, Any] = {"mountpoint": "/m", "pending_new_documents": waiting}
    notifier = Notifier(lambda: state, send, per_minute=3, clock=lambda: now[0])
    await notifier.check()
    assert len(sent) == 3  # two files, then one summary of the four others
    assert "f0.txt" in sent[0] and "f1.txt" in sent[1]
    assert "vaultfs status" in sent[2]
    await notifier.check()
    now[0] = 120.0
    await notifier.check()
    assert len(sent) == 3  # each told once while it lasts
    state["pending_new_documents"] = []
    await notifier.check()
    state["pending_new_documents"] = waiting[:1]
    await notifier.check()
    assert len(sent) == 4 and "f0.txt" in sent[3]  # it came back: told again


@pytest.mark.mount
def test_a_conflict_a_waiting_document_and_a_refused_sign_in_each_send_one(
    session_bus: SessionBus, tmp_path: Path
) -> None:
    """On a real mount at the default poll interval: the user without a terminal learns
    of a save that went to lost+found, of a new file waiting for its fields and of a
    sign-in the vault refused, each once, with the file and what to do."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    # Sessions end after 3 s without a call: the mount signs in again, and is refused
    # once the account is locked out.
    with (
        VaultProcess(tmp_path / "data", extra_args=["--session-timeout", "0.05"]) as vault,
        httpx.Client(base_url=vault.url + "/api/v25.1", timeout=60) as anon,
        httpx.Client(base_url=vault.url + "/api/v25.1", timeout=60) as admin,
        MountProcess(vault.url, tmp_path / "m", user=EDITOR) as mount,
    ):
        # 1. A save whose check-out an admin undid, with a version of theirs since.
        path = mount.mountpoint / CHECKLIST
        doc_id = int(os.getxattr(path.parent, "user.vault.id"))
        with open(path, "ab", buffering=0) as f:
            f.write(b"the editor's line\n")
            admin.headers["Authorization"] = _login(anon, ADMIN)
            admin.delete(f"/objects/documents/{doc_id}/lock")
            admin.post(f"/objects/documents/{doc_id}/lock")
            upload_draft(admin, doc_id, "Release_Checklist.md", b"the admin's version\n")
            admin.delete(f"/objects/documents/{doc_id}/lock")
        lost = session_bus.wait_for("A save went to lost+found")
        assert f"{mount.mountpoint}/{CHECKLIST}" in lost["body"]
        assert f"{mount.mountpoint}/.vaultfs/lost+found/" in lost["body"]
        # 2. A new file lacking a required field.
        folder = mount.mountpoint / "Clinical" / "Protocol" / "Final Protocol"
        (folder / "study.txt").write_bytes(b"a study\n")
        waiting = session_bus.wait_for("A new document waits for fields")
        assert f"{folder}/study.txt" in waiting["body"]
        assert "setfattr -n user.vault.study_number__c" in waiting["body"]
        # 3. The account is locked out; the mount's session ends; its next call fails.
        for _ in range(6):
            anon.post("/auth", data={"username": EDITOR, "password": "wrong"})
        wait_until(lambda: _signed_in_again_fails(mount), timeout=60, what="a refusal")
        refused = session_bus.wait_for("Vault sign-in refused")
        assert EDITOR in refused["body"] and "locked" in refused["body"].lower()
        # Each once, however often the status was looked at.
        summaries = [n["summary"] for n in session_bus.received()]
        assert len(summaries) == 3, summaries


def _login(client: httpx.Client, user: str) -> str:
    body = client.post("/auth", data={"username": user, "password": DEMO_PASSWORD}).json()
    assert body["responseStatus"] == "SUCCESS", body
    return str(body["sessionId"])


def _signed_in_again_fails(mount: MountProcess) -> bool:
    """Ask the mount to look at the vault now (its session has ended by then); True
    once its sign-in was refused."""
    with contextlib.suppress(AssertionError):  # no answer while it cannot sign in
        mount.refresh(timeout=10)
    return bool(mount.status()["session_state"] == "refused")


@pytest.mark.mount
def test_a_refused_delete_says_why_once(
    session_bus: SessionBus, fresh_vault: VaultProcess, tmp_path: Path
) -> None:
    """A file manager's Delete of several files on a mount without allow_delete: the
    refusal says why (the option, the commands) in one notification."""
    if not can_mount():
        pytest.skip("needs /dev/fuse and fusermount3")
    with MountProcess(fresh_vault.url, tmp_path / "m") as mount:
        source = mount.mountpoint / CHECKLIST
        for _ in range(3):
            with pytest.raises(PermissionError):
                source.unlink()
        refused = session_bus.wait_for("Deleting is off on this drive")
        assert str(source) in refused["body"]
        assert "-o allow_delete" in refused["body"]
        assert [r["op"] for r in mount.status()["refusals"]] == ["unlink"] * 3
        assert len(session_bus.received()) == 1


def test_a_refused_dropped_file_is_told_as_an_attachment_kept_in_lost_and_found() -> None:
    status = {
        "mountpoint": "/mnt/vault",
        "lost_and_found": [
            {
                "file": "7-notes.txt",
                "target": "attachment",
                "filename": "notes.txt",
                "error": "INSUFFICIENT_ACCESS: no",
                "mount_path": ".vaultfs/lost+found/7-notes.txt",
                "saved_as": "General/Plan/attachments/notes.txt",
            }
        ],
    }
    [notice] = notifications.notices(status)
    assert notice.summary == "An attachment went to lost+found"
    assert "/mnt/vault/General/Plan/attachments/notes.txt" in notice.body
    assert "/mnt/vault/.vaultfs/lost+found/7-notes.txt" in notice.body
    assert "copy it back" not in notice.body


async def test_going_offline_and_coming_back_are_each_told_once() -> None:
    sent: list[str] = []

    async def send(summary: str, body: str) -> None:
        sent.append(summary)

    since = datetime.now(UTC).isoformat(timespec="seconds")
    state: dict[str, Any] = {
        "mountpoint": "/m",
        "vault_url": "https://vault.example.com",
        "vault": {"state": "offline", "since": since, "last_away": None},
        "pending_uploads": [{"path": "General/Plan/plan.txt", "attempts": 0}],
    }
    notifier = Notifier(lambda: state, send)
    await notifier.check()
    await notifier.check()
    assert sent == ["Working offline"]  # once while it lasts
    state["vault"] = {
        "state": "online",
        "since": since,
        "last_away": {"from": since, "until": since},
    }
    await notifier.check()
    await notifier.check()
    assert sent == ["Working offline", "Back online"]
    # Long after, the return is not told again (nor is anything else).
    old = (datetime.now(UTC) - timedelta(hours=1)).isoformat(timespec="seconds")
    state["vault"] = {"state": "online", "since": old, "last_away": {"from": old, "until": old}}
    notifier = Notifier(lambda: state, send)
    await notifier.check()
    assert sent == ["Working offline", "Back online"]
