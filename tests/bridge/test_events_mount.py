"""Document events through a real mount: ``<doc>/.events.jsonl`` read with real
programs, and ``vaultfs event`` (the ``user.vault.event`` xattr) logging one."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.programs import run, vaultfs
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VIEWER, VaultProcess

pytestmark = pytest.mark.mount

EVENTS = ".events.jsonl"
_READ_EVENTS = "GET /objects/documents/{id}/events"


_USED: set[int] = set()


def document(api: httpx.Client) -> int:
    """A document of the test's own (events are never removed)."""
    body = api.get("/objects/documents", params={"limit": 200}).json()
    for item in body["documents"]:
        doc_id = int(item["document"]["id"])
        if doc_id not in _USED:
            _USED.add(doc_id)
            return doc_id
    raise AssertionError("no document left")


def api_events(api: httpx.Client, doc_id: int) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while True:
        body = api.get(f"/objects/documents/{doc_id}/events", params={"start": len(events)}).json()
        assert body["responseStatus"] == "SUCCESS", body
        events += body["events"]
        if not body["events"] or len(events) >= body["responseDetails"]["total"]:
            return events


def log_through_api(api: httpx.Client, doc_id: int, n: int) -> None:
    version = api.get(f"/objects/documents/{doc_id}").json()["document"]
    path = (
        f"/objects/documents/{doc_id}/versions/{version['major_version_number__v']}/"
        f"{version['minor_version_number__v']}/events"
    )
    for i in range(n):
        r = api.post(
            path,
            data={
                "event_type__v": "distribution__v",
                "event_subtype__v": "approved_email__v",
                "classification__v": "sent__v",
                "recipient_email__v": f"r{i}@example.com",
            },
        ).json()
        assert r["responseStatus"] == "SUCCESS", r


def test_events_file_is_complete_and_in_order(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = document(api)
    # More than one page of the events list (200), so every page has to be read.
    log_through_api(api, doc_id, 205)
    path = mount.document_dir(doc_id) / EVENTS
    cat = run("cat", path)
    assert cat.returncode == 0, cat.stderr
    lines = cat.stdout.splitlines()
    expected = api_events(api, doc_id)
    assert len(lines) == len(expected) == 205
    assert [json.loads(line)["id"] for line in lines] == [e["id"] for e in expected]
    assert json.loads(lines[-1])["recipient_email__v"] == "r204@example.com"
    tail = run("tail", "-n", "1", path)
    assert json.loads(tail.stdout)["recipient_email__v"] == "r204@example.com"
    # fstat after open (what tail and cp do) sees the exact size.
    with open(path, "rb") as f:
        assert os.fstat(f.fileno()).st_size == len(f.read()) == len(cat.stdout.encode())


def test_events_file_is_hidden_read_only_and_cheap(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = document(api)
    directory = mount.document_dir(doc_id)
    assert EVENTS not in os.listdir(directory)
    assert EVENTS not in run("ls", "-a", directory).stdout

    def event_reads() -> int:
        return int(mount.status()["api_calls_by_endpoint"].get(_READ_EVENTS, 0))

    before = event_reads()
    info = os.stat(directory / EVENTS)
    assert info.st_mode & 0o777 == 0o444
    # A stat reads no events (a cold find stats every document's file); an open does.
    assert event_reads() == before
    with pytest.raises(OSError) as refused:
        os.open(directory / EVENTS, os.O_WRONLY)
    assert refused.value.errno in (errno.EACCES, errno.EPERM)
    with pytest.raises(OSError) as not_removed:
        os.unlink(directory / EVENTS)
    assert not_removed.value.errno == errno.EPERM
    assert run("cat", directory / EVENTS).stdout == ""
    assert event_reads() == before + 1


def test_event_command_logs_one(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = document(api)
    directory = mount.document_dir(doc_id)
    result = vaultfs(
        "event",
        directory,
        "distribution__v",
        "Approved Email",
        "--classification",
        "Sent",
        "--set",
        "recipient_email__v=ann@example.com",
        "--set",
        "template_name__v=Launch",
    )
    assert result.returncode == 0, result.stderr
    (event,) = api_events(api, doc_id)
    assert event["event_subtype__v"] == "approved_email__v"
    assert event["recipient_email__v"] == "ann@example.com"
    (line,) = (directory / EVENTS).read_text().splitlines()
    assert json.loads(line)["id"] == event["id"]


def test_event_refusals_name_the_properties(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = document(api)
    directory = mount.document_dir(doc_id)
    missing = vaultfs(
        "event", directory, "distribution__v", "approved_email__v", "--classification", "sent__v"
    )
    assert missing.returncode == 1
    assert "PARAMETER_REQUIRED" in missing.stderr and "recipient_email__v" in missing.stderr
    invalid = vaultfs(
        "event",
        directory,
        "distribution__v",
        "controlled_copy__v",
        "--classification",
        "issued__v",
        "--set",
        "copy_number__v=many",
    )
    assert invalid.returncode == 1
    assert "INVALID_DATA" in invalid.stderr and "copy_number__v" in invalid.stderr
    with pytest.raises(OSError) as refused:
        os.setxattr(directory, "user.vault.event", b'{"event_type__v": "distribution__v"}')
    assert refused.value.errno == errno.EINVAL
    assert api_events(api, doc_id) == []


def test_viewer_may_not_log_events(
    module_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    doc_id = document(api)
    with MountProcess(module_vault.url, tmp_path, user=VIEWER) as viewer:
        directory = viewer.document_dir(doc_id)
        result = vaultfs(
            "event",
            directory,
            "distribution__v",
            "approved_email__v",
            "--classification",
            "sent__v",
            "--set",
            "recipient_email__v=ann@example.com",
        )
        assert result.returncode == 1
        assert "INSUFFICIENT_ACCESS" in result.stderr
        with pytest.raises(OSError) as refused:
            os.setxattr(
                directory,
                "user.vault.event",
                json.dumps(
                    {
                        "event_type__v": "distribution__v",
                        "event_subtype__v": "approved_email__v",
                        "classification__v": "sent__v",
                        "recipient_email__v": "ann@example.com",
                    }
                ).encode(),
            )
        assert refused.value.errno == errno.EACCES
    assert api_events(api, doc_id) == []
