"""Lifecycle actions through a real mount: ``user.vault.actions``/``user.vault.action``
xattrs, and the ``vaultfs actions`` and ``vaultfs do`` commands run as programs."""

from __future__ import annotations

import errno
import json
import os
import stat
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.programs import run, vaultfs
from vaultfs.testing.mount_process import MountProcess
from vaultfs.testing.vault_process import VaultProcess, wait_until

pytestmark = pytest.mark.mount


def record(api: httpx.Client, doc_id: int) -> dict[str, Any]:
    body = api.get(f"/objects/documents/{doc_id}").json()
    assert body["responseStatus"] == "SUCCESS", body
    document: dict[str, Any] = body["document"]
    return document


def drafts(api: httpx.Client, *, with_country: bool) -> list[int]:
    """Draft documents of the General Lifecycle that have a source file, with or without
    ``country__v`` (the approve action's Document-scope requirement)."""
    body = api.get("/objects/documents", params={"limit": 200}).json()
    found = []
    for item in body["documents"]:
        doc = item["document"]
        if (
            doc.get("status__v") == "Draft"
            and doc.get("lifecycle__v") == "General Lifecycle"
            and doc.get("filename__v")
            and bool(doc.get("country__v")) == with_country
        ):
            found.append(int(doc["id"]))
    assert found, "the demo has such drafts"
    return found


_TAKEN: set[int] = set()


def take(api: httpx.Client, *, with_country: bool) -> int:
    """A document of this module's own: each test changes a different one."""
    doc_id = next(d for d in drafts(api, with_country=with_country) if d not in _TAKEN)
    _TAKEN.add(doc_id)
    return doc_id


def source(path: Path) -> Path:
    return path / os.getxattr(path, "user.vault.filename__v").decode()


def actions(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(os.getxattr(path, "user.vault.actions"))
    return value


# --- reading ------------------------------------------------------------------------


def test_actions_xattr_lists_actions_and_requirements(
    mount: MountProcess, api: httpx.Client
) -> None:
    doc_id = take(api, with_country=False)
    path = mount.document_dir(doc_id)
    out = run("getfattr", "--only-values", "-n", "user.vault.actions", path)
    assert out.returncode == 0, out.stderr
    description = json.loads(out.stdout)
    assert description["id"] == doc_id
    assert description["status__v"] == "Draft"
    by_name = {a["name"]: a for a in description["actions"]}
    assert by_name["approve"]["type"] == "stateChange"
    assert by_name["startApproval"]["type"] == "workflow"
    (country,) = by_name["approve"]["requirements"]
    assert country["name"] == "country__v"
    assert country["scope"] == "Document"
    assert country["required"] is True
    assert country["met"] is False
    activation = {r["name"]: r for r in by_name["startApproval"]["requirements"]}
    assert activation["dueDate"]["scope"] == "WorkflowActivation"
    assert activation["dueDate"]["type"] == "Date"
    assert activation["Approver"]["type"] == "ObjectReference"
    # The source file answers the same.
    assert actions(source(path))["actions"] == description["actions"]


def test_met_requirement_shows_its_setting(mount: MountProcess, api: httpx.Client) -> None:
    path = mount.document_dir(drafts(api, with_country=True)[0])
    (country,) = next(a for a in actions(path)["actions"] if a["name"] == "approve")["requirements"]
    assert country["met"] is True
    assert country["currentSetting"]


def test_lifecycle_xattrs_are_not_listed_and_copying_back_is_harmless(
    mount: MountProcess, api: httpx.Client
) -> None:
    path = mount.document_dir(drafts(api, with_country=True)[0])
    listed = os.listxattr(path)
    assert "user.vault.status__v" in listed
    for name in ("user.vault.actions", "user.vault.action", "user.vault.event"):
        assert name not in listed
    dump = run("getfattr", "-d", path)
    assert "user.vault.actions" not in dump.stdout
    before = record(api, int(os.getxattr(path, "user.vault.id")))
    with pytest.raises(OSError) as refused:
        os.setxattr(path, "user.vault.actions", os.getxattr(path, "user.vault.actions"))
    assert refused.value.errno == errno.EPERM
    assert record(api, int(before["id"])) == before


def test_actions_command(mount: MountProcess, api: httpx.Client) -> None:
    path = mount.document_dir(drafts(api, with_country=False)[0])
    result = vaultfs("actions", path)
    assert result.returncode == 0, result.stderr
    assert "status Draft" in result.stdout
    assert "approve  Approve  (stateChange)" in result.stdout
    assert "country__v" in result.stdout and "NOT met" in result.stdout
    assert "--set dueDate=YYYY-MM-DD" in result.stdout
    as_json = vaultfs("actions", source(path), "--json")
    assert as_json.returncode == 0
    assert {a["name"] for a in json.loads(as_json.stdout)["actions"]} == {
        "approve",
        "startApproval",
    }


def test_actions_command_outside_a_mount(tmp_path: Path) -> None:
    result = vaultfs("actions", tmp_path)
    assert result.returncode == 1
    assert "not a document on a vaultfs mount" in result.stderr


# --- starting -----------------------------------------------------------------------


def test_approve_refused_without_requirement(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = take(api, with_country=False)
    path = mount.document_dir(doc_id)
    result = vaultfs("do", path, "approve")
    assert result.returncode == 1
    assert "country__v" in result.stderr
    assert record(api, doc_id)["status__v"] == "Draft"
    # Through the xattr, the vault itself refuses: EINVAL, a log line naming the field,
    # and the refusal readable for scripts.
    with pytest.raises(OSError) as refused:
        os.setxattr(path, "user.vault.action", b"approve")
    assert refused.value.errno == errno.EINVAL
    last = json.loads(os.getxattr(path, "user.vault.last_error"))
    assert last["type"] == "INVALID_DATA"
    assert "country__v" in json.dumps(last["errors"])
    wait_until(lambda: "approve refused" in mount.log() and "country__v" in mount.log())
    assert record(api, doc_id)["status__v"] == "Draft"


def test_approve_after_setting_requirement(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = take(api, with_country=False)
    path = mount.document_dir(doc_id)
    assert os.stat(source(path)).st_mode & 0o222
    set_country = run("setfattr", "-n", "user.vault.country__v", "-v", "united_states__v", path)
    assert set_country.returncode == 0, set_country.stderr
    result = vaultfs("do", path, "approve")
    assert result.returncode == 0, result.stderr
    assert "status is now Approved" in result.stdout
    assert record(api, doc_id)["status__v"] == "Approved"
    shown = run("getfattr", "--only-values", "-n", "user.vault.status__v", path)
    assert shown.stdout == "Approved"
    # Steady state: the latest file is read-only at once; nothing more to approve.
    assert stat.S_IMODE(os.stat(source(path)).st_mode) == 0o444
    assert "approve" not in {a["name"] for a in actions(path)["actions"]}


def test_do_sets_document_requirement_first(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = take(api, with_country=False)
    path = mount.document_dir(doc_id)
    result = vaultfs("do", source(path), "approve", "--set", "country__v=united_states__v")
    assert result.returncode == 0, result.stderr
    document = record(api, doc_id)
    assert document["status__v"] == "Approved"
    assert document["country__v"]


def test_action_not_offered(mount: MountProcess, api: httpx.Client) -> None:
    path = mount.document_dir(drafts(api, with_country=True)[0])
    result = vaultfs("do", path, "publish")
    assert result.returncode == 1
    assert "publish is not offered" in result.stderr and "approve" in result.stderr
    with pytest.raises(OSError) as refused:
        os.setxattr(path, "user.vault.action", b"publish")
    assert refused.value.errno == errno.EINVAL


def test_start_approval_with_workflow_values(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = take(api, with_country=False)
    path = mount.document_dir(doc_id)
    missing = vaultfs("do", path, "startApproval", "--set", "dueDate=2026-12-01")
    assert missing.returncode == 1
    assert "Approver" in missing.stderr
    bad_date = vaultfs(
        "do", path, "startApproval", "--set", "dueDate=1.12.2026", "--set", "Approver=user:1"
    )
    assert bad_date.returncode == 1 and "YYYY-MM-DD" in bad_date.stderr
    nobody = vaultfs(
        "do", path, "startApproval", "--set", "dueDate=2026-12-01", "--set", "Approver=nobody"
    )
    assert nobody.returncode == 1 and "nobody" in nobody.stderr
    assert record(api, doc_id)["status__v"] == "Draft"
    # A user name and a group label, translated to ids by the daemon.
    result = vaultfs(
        "do",
        path,
        "startApproval",
        "--set",
        "dueDate=2026-12-01",
        "--set",
        "Approver=editor@vaultfs.demo,Approvers",
    )
    assert result.returncode == 0, result.stderr
    assert record(api, doc_id)["status__v"] == "In Review"
    # In a workflow no action is offered.
    assert actions(path)["actions"] == []


def test_start_approval_through_json_xattr(mount: MountProcess, api: httpx.Client) -> None:
    doc_id = take(api, with_country=False)
    path = mount.document_dir(doc_id)
    value = {"action": "startApproval", "params": {"dueDate": "2026-12-01", "Approver": "user:1"}}
    os.setxattr(path, "user.vault.action", json.dumps(value).encode())
    assert record(api, doc_id)["status__v"] == "In Review"
    assert os.getxattr(path, "user.vault.status__v") == b"In Review"


def test_change_by_another_client_shows_within_a_poll(
    mount: MountProcess, api: httpx.Client
) -> None:
    doc_id = take(api, with_country=False)
    path = mount.document_dir(doc_id)
    file = source(path)
    assert os.stat(file).st_mode & 0o222
    r = api.put(f"/objects/documents/{doc_id}", data={"status__v": "Approved"}).json()
    assert r["responseStatus"] == "SUCCESS", r
    mount.refresh()
    wait_until(lambda: os.getxattr(path, "user.vault.status__v") == b"Approved", timeout=20)
    wait_until(lambda: stat.S_IMODE(os.stat(file).st_mode) == 0o444, timeout=20)


def test_viewer_may_not_start_actions(
    module_vault: VaultProcess, api: httpx.Client, tmp_path: Path
) -> None:
    from vaultfs.testing.vault_process import VIEWER

    doc_id = drafts(api, with_country=True)[-1]
    with MountProcess(module_vault.url, tmp_path, user=VIEWER) as viewer:
        path = viewer.document_dir(doc_id)
        result = vaultfs("do", path, "approve")
        assert result.returncode == 1
        assert "INSUFFICIENT_ACCESS" in result.stderr
        with pytest.raises(OSError) as refused:
            os.setxattr(path, "user.vault.action", b"approve")
        assert refused.value.errno == errno.EACCES
    assert record(api, doc_id)["status__v"] == "Draft"
