"""A file GNOME Files copies into a document's folder (its own copy job, what a paste or
a drag runs), on a fresh mount of a real vault: it becomes an attachment of the
document, and the window showing the folder sees it arrive and then move to
``attachments/`` (docs/user-guide.md, "On the desktop")."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import login
from tests.desktop.conftest import MARKS
from vaultfs.testing.mount_process import MountProcess, calls_since
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = MARKS

API = "/api/v25.1"
NOTES = b"notes dropped from the file manager\n" + bytes(range(256)) * 4


def attachments(api: httpx.Client, doc_id: int) -> dict[str, dict[str, Any]]:
    data = api.get(f"/objects/documents/{doc_id}/attachments").json().get("data") or []
    return {a["filename__v"]: a for a in data}


def test_a_file_the_file_manager_copies_into_a_document_folder_becomes_its_attachment(
    module_vault: VaultProcess, fresh_mount: MountProcess, desktop: Any, tmp_path: Path
) -> None:
    doc_dir = fresh_mount.mountpoint / "General" / "Release Checklist"
    doc_id = int(os.getxattr(doc_dir, "user.vault.id"))
    local = tmp_path / "notes.txt"
    local.write_bytes(NOTES)
    files = desktop(doc_dir)
    assert "Release_Checklist.md" in files.wait_for(lambda v: bool(v.rows)).names
    before = fresh_mount.quiet_calls()

    files.copy([local], doc_dir)
    # The window shows the file where it was put, while the mount waits out its grace
    # (5 s: an editor's save would rename it over the document's file meanwhile; the
    # status's "dropped" is tests/bridge/test_drop_mount.py's, as a busy machine may
    # show the window late) ...
    files.wait_for(lambda v: "notes.txt" in v.names, timeout=10)
    # ... then sees it go (the mount raises the delete for its watchers): it is the
    # document's attachment now, and shown as one.
    files.wait_for(lambda v: "notes.txt" not in v.names and bool(v.rows), timeout=20)
    with httpx.Client(
        base_url=module_vault.url + API, headers={"Authorization": login(module_vault.url)}
    ) as api:
        wait_until(lambda: "notes.txt" in attachments(api, doc_id), timeout=10, what="it")
        kept = attachments(api, doc_id)["notes.txt"]
        content = api.get(f"/objects/documents/{doc_id}/attachments/{kept['id']}/file").content
    assert content == NOTES
    fresh_mount.settle()
    assert (doc_dir / "attachments" / "notes.txt").read_bytes() == NOTES
    assert "notes.txt" not in os.listdir(doc_dir)
    assert fresh_mount.status()["lost_and_found"] == []
    cost = calls_since(before, fresh_mount.quiet_calls())
    print("a file GNOME Files dropped:", cost)
    # One upload; the document and its attachments read to compare and again to show
    # it, the test's own read of the file, and the document's relationships read again
    # (the change drops what the mount kept of the document): 7 calls, seen each time.
    assert cost.pop("POST /objects/documents/{id}/attachments") == 1, cost
    assert cost.get("GET /objects/documents/{id}", 0) <= 2, cost
    assert cost.get("GET /objects/documents/{id}/attachments", 0) <= 2, cost
    assert sum(cost.values()) <= 6, cost
