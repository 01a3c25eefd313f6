"""What ``vaultfs sync`` makes of a mount's status, and what ``status`` and ``umount``
print, from status documents as the daemon writes them (no mount: the real-mount
cases are in tests/bridge/test_sync_mount.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vaultfs.bridge.commands.manage import _refusal, format_status
from vaultfs.bridge.commands.sync import find_pending, under

DRAFT = {
    "doc_id": 8,
    "filename": "Release_Checklist.md",
    "path": "General/Release Checklist/Release_Checklist.md",
    "state": "pending",
    "attempts": 2,
    "last_error": "SERVICE_UNAVAILABLE: try later",
    "age_seconds": 3.0,
}
WAITING = {
    "file": "Study Plan.txt",
    "folder": ["cls", "Clinical", "Protocol", "Final Protocol"],
    "missing": ["study_number__c"],
    "error": "study_number__c is required",
    "path": "Clinical/Protocol/Final Protocol/Study Plan.txt",
}
LOST = {
    "file": "8-Release_Checklist.md",
    "path": "/cache/spool/lost+found/8-Release_Checklist.md",
    "doc_id": 8,
    "filename": "Release_Checklist.md",
    "error": "INVALID_DATA: refused",
    "mount_path": ".vaultfs/lost+found/8-Release_Checklist.md",
    "saved_as": "General/Release Checklist/Release_Checklist.md",
}
NEW_LOST = {**LOST, "doc_id": None, "saved_as": None, "file": "new-x.txt"}


def status(**parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"mountpoint": "/mnt", "pid": 1, **parts}


def test_under_is_the_path_or_below_it() -> None:
    assert under("General/a/b.txt", "General/a") and under("General/a", "General/a")
    assert not under("General/ab/b.txt", "General/a")
    assert under(None, "") and not under(None, "General")


def test_only_what_is_under_a_path_counts() -> None:
    doc = "General/Release Checklist"
    found = find_pending(status(pending_uploads=[DRAFT]), [doc])
    assert [(p.path, p.on_its_way, p.open) for p in found] == [(DRAFT["path"], True, False)]
    assert "last error: SERVICE_UNAVAILABLE" in found[0].why and "2 tries" in found[0].why
    assert find_pending(status(pending_uploads=[DRAFT]), ["General/Other"]) == []
    # A spool entry whose path is not known is waited for by every sync of its mount.
    unknown = find_pending(status(pending_uploads=[{**DRAFT, "path": None}]), ["X"])
    assert len(unknown) == 1 and "document 8" in unknown[0].why
    # A create waiting in the queue: no document yet, so no path; every sync waits.
    create = {**DRAFT, "doc_id": None, "path": None, "state": "creating", "filename": "n.txt"}
    [waiting] = find_pending(status(pending_uploads=[create]), ["X"])
    assert waiting.on_its_way and waiting.why.startswith("new document n.txt: not in the vault")


def test_files_open_waiting_or_lost_say_why() -> None:
    opened = {**DRAFT, "state": "editing"}
    new = {"path": "General/n.txt", "state": "creating"}
    found = find_pending(
        status(
            pending_uploads=[opened],
            new_files=[new],
            pending_new_documents=[WAITING],
            lost_and_found=[LOST, NEW_LOST],
        ),
        [""],
    )
    why = {p.path: p for p in found if "lost+found" not in p.why}
    assert why[DRAFT["path"]].open and "open for writing by a program" in why[DRAFT["path"]].why
    assert "being created" in why["General/n.txt"].why and why["General/n.txt"].on_its_way
    waiting = why[WAITING["path"]]
    assert not waiting.on_its_way and "waiting for fields: study_number__c" in waiting.why
    assert "study_number__c is required" in waiting.why
    lost = [p for p in found if "lost+found" in p.why]
    assert len(lost) == 2 and not any(p.on_its_way for p in lost)
    # A lost+found file of unknown origin counts for the whole mount only.
    only_doc = find_pending(status(lost_and_found=[LOST, NEW_LOST]), ["General"])
    assert [p.path for p in only_doc] == [LOST["saved_as"]]


def test_status_lists_waiting_files_and_lost_and_found_by_path() -> None:
    text = format_status(
        status(pending_uploads=[DRAFT], pending_new_documents=[WAITING], lost_and_found=[LOST])
    )
    assert "pending uploads  1" in text and DRAFT["path"] in text
    assert "waiting fields   1" in text
    line = next(line for line in text.splitlines() if WAITING["path"] in line)
    assert "study_number__c" in line and "is required" in line
    assert ".vaultfs/lost+found/8-Release_Checklist.md" in text
    assert f"saved as {LOST['saved_as']}: INVALID_DATA: refused" in text


def test_umount_names_an_open_file_and_says_to_close_it() -> None:
    opened = {**DRAFT, "state": "editing"}
    message = _refusal(Path("/mnt"), [opened])
    assert f"/mnt/{DRAFT['path']} is open for writing by a program; close it first" in message
    assert "reachable" not in message
    both = _refusal(Path("/mnt"), [opened, {**DRAFT, "path": "General/b.txt"}])
    assert "close it first" in both and "once the vault is reachable" in both
