"""Lifecycle actions and events in the core, against the fake vault (no kernel): what the
xattrs answer and cost, how refusals map, the events file, the steady-state mode."""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from typing import Any

import pytest

from vaultfs import errors
from vaultfs.bridge.fs.filesystem import FileSystem
from vaultfs.bridge.lifecycle.actions import ActionRequest, parse_request
from vaultfs.bridge.lifecycle.principals import Principals
from vaultfs.bridge.lifecycle.states import is_steady

from .fakevault import FakeVault
from .fsdriver import listdir, read_all, walk

_APPROVE = {
    "name__v": "approve",
    "label__v": "Approve",
    "lifecycle_action_type__v": "stateChange",
    "entry_requirements__v": "https://vault/approve/entry_requirements",
}
_WORKFLOW = {
    "name__v": "startApproval",
    "label__v": "Start Approval",
    "lifecycle_action_type__v": "workflow",
    "entry_requirements__v": "https://vault/startApproval/entry_requirements",
}
_REQUIREMENTS = {
    "approve": [
        {
            "name": "country__v",
            "description": "Country",
            "type": ["ObjectReference"],
            "scope": "Document",
            "required": True,
        }
    ],
    "startApproval": [
        {
            "name": "dueDate",
            "description": "Due Date",
            "type": ["Date"],
            "scope": "WorkflowActivation",
            "required": True,
        },
        {
            "name": "Approver",
            "description": "Approver",
            "type": ["ObjectReference"],
            "scope": "WorkflowActivation",
            "required": True,
        },
    ],
}


class Life:
    """The lifecycle, event, user and group calls, added to a ``FakeVault``."""

    def __init__(self, vault: FakeVault) -> None:
        self.vault = vault
        self.started: list[tuple[int, str, dict[str, str]]] = []
        self.refuse: errors.VaultError | None = None
        self.events: dict[int, list[dict[str, Any]]] = {}
        vault.user_id = 7
        vault.username = "me@example.com"
        for name in (
            "lifecycle_actions",
            "entry_requirements",
            "start_action",
            "document_events",
            "log_event",
            "list_users",
            "list_groups",
        ):
            setattr(vault, name, getattr(self, name))

    async def lifecycle_actions(self, doc_id: int, major: int, minor: int) -> list[dict[str, Any]]:
        self.vault._call("lifecycle_actions")
        status = self.vault.docs[doc_id][-1].record.get("status__v", "Draft")
        return [_APPROVE, _WORKFLOW] if status == "Draft" else []

    async def entry_requirements(
        self, doc_id: int, major: int, minor: int, action: str
    ) -> list[dict[str, Any]]:
        self.vault._call("entry_requirements")
        record = self.vault.docs[doc_id][-1].record
        result = []
        for requirement in _REQUIREMENTS[action]:
            requirement = dict(requirement)
            if requirement["scope"] == "Document" and record.get(requirement["name"]):
                requirement["currentSetting"] = record[requirement["name"]]
            result.append(requirement)
        return result

    async def start_action(
        self, doc_id: int, major: int, minor: int, action: str, params: dict[str, str]
    ) -> dict[str, Any]:
        self.vault._call("start_action")
        if self.refuse is not None:
            raise self.refuse
        self.started.append((doc_id, action, dict(params)))
        record = self.vault.docs[doc_id][-1].record
        record["status__v"] = "Approved" if action == "approve" else "In Review"
        record["version_modified_date__v"] = self.vault.tick()
        return {"responseStatus": "SUCCESS", "id": doc_id}

    async def document_events(self, doc_id: int) -> list[dict[str, Any]]:
        self.vault._call("document_events")
        return list(self.events.get(doc_id, []))

    async def log_event(
        self, doc_id: int, major: int, minor: int, fields: dict[str, str]
    ) -> dict[str, Any]:
        self.vault._call("log_event")
        if self.refuse is not None:
            raise self.refuse
        events = self.events.setdefault(doc_id, [])
        events.append({"id": len(events) + 1, **fields})
        return {"responseStatus": "SUCCESS", "id": len(events)}

    async def list_users(self) -> list[dict[str, Any]]:
        self.vault._call("list_users")
        return [{"id": 12, "user_name__v": "ann@example.com", "user_email__v": "ann@example.com"}]

    async def list_groups(self) -> list[dict[str, Any]]:
        self.vault._call("list_groups")
        return [{"id": 3, "name__v": "approvers__c", "label__v": "Approvers"}]


@pytest.fixture
def life(vault: FakeVault) -> Life:
    return Life(vault)


async def _guide(core: FileSystem) -> int:
    return await walk(core, "Reference", "Guide")


async def _actions(core: FileSystem, ino: int) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(await core.getxattr(ino, "user.vault.actions"))
    return value


# --- pure parts -------------------------------------------------------------------------


def test_parse_request() -> None:
    assert parse_request(b" approve\n") == ActionRequest("approve")
    assert parse_request(b'{"action": "startApproval", "params": {"dueDate": "2026-12-01"}}') == (
        ActionRequest("startApproval", {"dueDate": "2026-12-01"})
    )
    for bad in (b"", b"{nope", b'{"params": {}}', b'{"action": "a", "params": [1]}', b"\xff"):
        with pytest.raises(errors.InvalidData):
            parse_request(bad)


@pytest.mark.parametrize(
    ("status", "steady"),
    [
        ("Approved", True),
        ("approved__c", True),
        ("Effective", True),
        ("Draft", False),
        ("In Review", False),
        (None, False),
    ],
)
def test_steady_states(status: str | None, steady: bool) -> None:
    assert is_steady({"status__v": status}) is steady


async def test_principals_translate_names(vault: FakeVault, life: Life) -> None:
    principals = Principals(vault)
    assert await principals.resolve("Approver", "user:1,group:2") == "user:1,group:2"
    assert sum(vault.calls.values()) == 0  # ids only: no call
    assert await principals.resolve("Approver", ["Ann@Example.com", "approvers"]) == (
        "user:12,group:3"
    )
    assert await principals.resolve("Approver", "user:me@example.com,group:Approvers") == (
        "user:7,group:3"
    )
    with pytest.raises(errors.InvalidData, match="nobody"):
        await principals.resolve("Approver", "nobody")
    with pytest.raises(errors.InvalidData, match="user"):
        await principals.resolve("Approver", "user:Approvers")  # a group, not a user


# --- actions through the core -------------------------------------------------------


async def test_actions_xattr_costs_calls_once_and_is_not_listed(
    core: FileSystem, vault: FakeVault, life: Life
) -> None:
    doc = await _guide(core)
    vault.calls.clear()
    description = await _actions(core, doc)
    assert [a["name"] for a in description["actions"]] == ["approve", "startApproval"]
    (country,) = description["actions"][0]["requirements"]
    assert country["met"] is False and country["given"] == "document"
    assert description["actions"][1]["requirements"][0]["given"] == "with the action"
    # The size probe and the read of getxattr(2), and the source file: one fetch.
    source = await walk(core, "Reference", "Guide", "guide.txt")
    assert await _actions(core, source) == description
    assert vault.calls["lifecycle_actions"] == 1 and vault.calls["entry_requirements"] == 2
    # Not listed: getfattr -d and cp --preserve=xattr never meet it.
    assert not {"user.vault.actions", "user.vault.action", "user.vault.event"} & set(
        await core.listxattr(doc)
    )
    # Older than the TTL: asked again (the state may have changed elsewhere).
    clock = [1e9]
    core.life.actions._clock = lambda: clock[0]
    core.life.actions.forget(2)
    await _actions(core, doc)
    clock[0] += 10
    await _actions(core, doc)
    assert vault.calls["lifecycle_actions"] == 3


async def test_setting_the_description_is_refused_without_a_call(
    core: FileSystem, vault: FakeVault, life: Life
) -> None:
    doc = await _guide(core)
    value = await core.getxattr(doc, "user.vault.actions")
    vault.calls.clear()
    for name in ("user.vault.actions", "user.vault.last_error"):
        with pytest.raises(errors.NotEditable):
            await core.setxattr(doc, name, value)
    with pytest.raises(errors.NotEditable):
        await core.setxattr(doc, "user.vault.action", None)
    assert sum(vault.calls.values()) == 0
    with pytest.raises(errors.NoSuchAttribute):
        await core.getxattr(doc, "user.vault.action")
    versions = await walk(core, "Reference", "Guide", "versions", "0.1")
    with pytest.raises(errors.Unsupported):
        await core.setxattr(versions, "user.vault.action", b"approve")


async def test_starting_an_action_refreshes_the_document_and_its_mode(
    core: FileSystem, vault: FakeVault, life: Life, invalidated: list[int]
) -> None:
    doc = await _guide(core)
    source = await walk(core, "Reference", "Guide", "guide.txt")
    assert stat.S_IMODE((await core.getattr(source)).mode) == 0o644
    await _actions(core, doc)
    await core.setxattr(doc, "user.vault.action", b"approve")
    assert life.started == [(2, "approve", {})]
    assert await core.getxattr(doc, "user.vault.status__v") == b"Approved"
    assert stat.S_IMODE((await core.getattr(source)).mode) == 0o444
    assert source in invalidated  # the kernel forgets the old mode at once
    assert (await _actions(core, doc))["actions"] == []  # not the cached description


async def test_workflow_values_are_translated(
    core: FileSystem, vault: FakeVault, life: Life
) -> None:
    doc = await _guide(core)
    value = {
        "action": "startApproval",
        "params": {"dueDate": "2026-12-01", "Approver": ["ann@example.com", "Approvers"]},
    }
    await core.setxattr(doc, "user.vault.action", json.dumps(value).encode())
    assert life.started == [
        (2, "startApproval", {"dueDate": "2026-12-01", "Approver": "user:12,group:3"})
    ]


@pytest.mark.parametrize(
    ("refusal", "number"),
    [
        (errors.InvalidData("Entry requirement [country__v] is not set"), errno.EINVAL),
        (errors.ParameterRequired.naming(["Approver"]), errno.EINVAL),
        (errors.MethodNotSupported("not offered"), errno.EINVAL),
        (errors.InsufficientAccess("no"), errno.EACCES),
        (errors.OperationNotAllowed("in a workflow"), errno.EBUSY),
    ],
)
async def test_refusals_map_and_are_kept(
    core: FileSystem,
    life: Life,
    refusal: errors.VaultError,
    number: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    doc = await _guide(core)
    life.refuse = refusal
    with caplog.at_level(logging.WARNING), pytest.raises(errors.VaultError) as info:
        await core.setxattr(doc, "user.vault.action", b"approve")
    assert errors.errno_for(info.value) == number
    kept = json.loads(await core.getxattr(doc, "user.vault.last_error"))
    assert kept["type"] == refusal.type and kept["operation"] == "lifecycle action approve"
    assert f"approve refused: {refusal.type}" in caplog.text
    life.refuse = None
    await core.setxattr(doc, "user.vault.action", b"approve")
    with pytest.raises(errors.NoSuchAttribute):  # a success clears it
        await core.getxattr(doc, "user.vault.last_error")


# --- events -----------------------------------------------------------------------------


async def test_events_file(
    core: FileSystem, vault: FakeVault, life: Life, invalidated: list[int]
) -> None:
    doc = await _guide(core)
    assert ".events.jsonl" not in await listdir(core, doc)
    life.events[2] = [
        {"id": 2, "event_date__v": "2024-02-01T00:00:00.000Z"},
        {"id": 1, "event_date__v": "2024-01-01T00:00:00.000Z"},
    ]
    vault.calls.clear()
    ino = (await core.lookup(doc, ".events.jsonl")).ino
    attr = await core.getattr(ino)
    assert attr.size == 0 and attr.mode & 0o777 == 0o444 and attr.timeout == 0
    assert vault.calls["document_events"] == 0  # stat: no call
    opened = await core.open(ino, os.O_RDONLY)
    assert opened.direct_io and ino in invalidated
    data = await core.read(opened.fh, 0, 1 << 20)
    await core.release(opened.fh)
    assert [json.loads(line)["id"] for line in data.splitlines()] == [1, 2]  # newest last
    assert (await core.getattr(ino)).size == len(data)
    assert await read_all(core, ino) == data
    with pytest.raises(errors.AccessDenied):
        await core.open(ino, os.O_WRONLY)
    with pytest.raises(errors.OperationNotPermitted):
        await core.unlink(doc, ".events.jsonl")


async def test_logging_an_event(core: FileSystem, vault: FakeVault, life: Life) -> None:
    doc = await _guide(core)
    fields = {"event_type__v": "distribution__v", "copies": [1, 2], "sent": True}
    await core.setxattr(doc, "user.vault.event", json.dumps(fields).encode())
    assert life.events[2] == [
        {"id": 1, "event_type__v": "distribution__v", "copies": "1,2", "sent": "true"}
    ]
    with pytest.raises(errors.InvalidData):
        await core.setxattr(doc, "user.vault.event", b"[1]")
    life.refuse = errors.ParameterRequired.naming(["recipient_email__v"])
    with pytest.raises(errors.ParameterRequired):
        await core.setxattr(doc, "user.vault.event", b"{}")
    kept = json.loads(await core.getxattr(doc, "user.vault.last_error"))
    assert "recipient_email__v" in json.dumps(kept["errors"])
