"""Live tests of the lifecycle, event, user and group calls of the client against a
real local vault process (the vault of the session; each test changes its own
document)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import ADMIN, API, DEMO_PASSWORD, EDITOR, login
from vaultfs.client import Credentials, VaultClient
from vaultfs.errors import InvalidData, MethodNotSupported, ParameterRequired
from vaultfs.testing.vault_process import VaultProcess

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


@pytest.fixture
async def editor(vault_server: VaultProcess) -> AsyncIterator[VaultClient]:
    async with VaultClient(vault_server.url, Credentials(EDITOR, DEMO_PASSWORD)) as client:
        yield client


async def _draft(client: VaultClient, tmp_path: Path, name: str) -> int:
    path = tmp_path / f"{name}.txt"
    path.write_text(f"{name}\n")
    return await client.create_document({"name__v": name, **GENERAL}, path)


async def test_actions_requirements_and_start(editor: VaultClient, tmp_path: Path) -> None:
    doc_id = await _draft(editor, tmp_path, "lifecycle client")
    actions = await editor.lifecycle_actions(doc_id, 0, 1)
    assert {a["name__v"] for a in actions} == {"approve", "startApproval"}
    requirements = await editor.entry_requirements(doc_id, 0, 1, "approve")
    assert [r["name"] for r in requirements] == ["country__v"]
    with pytest.raises(InvalidData, match="country__v"):
        await editor.start_action(doc_id, 0, 1, "approve", {})
    with pytest.raises(ParameterRequired, match="Approver"):
        await editor.start_action(doc_id, 0, 1, "startApproval", {"dueDate": "2026-12-01"})
    with pytest.raises(MethodNotSupported):
        await editor.start_action(doc_id, 0, 1, "publish", {})
    answer = await editor.start_action(
        doc_id, 0, 1, "startApproval", {"dueDate": "2026-12-01", "Approver": "user:2"}
    )
    assert answer["workflow_id__v"]
    assert (await editor.get_document(doc_id))["document"]["status__v"] == "In Review"


async def test_events_log_and_read(editor: VaultClient, tmp_path: Path) -> None:
    doc_id = await _draft(editor, tmp_path, "events client")
    fields = {
        "event_type__v": "distribution__v",
        "event_subtype__v": "approved_email__v",
        "classification__v": "sent__v",
        "recipient_email__v": "ann@example.com",
    }
    answer = await editor.log_event(doc_id, 0, 1, fields)
    events = await editor.document_events(doc_id)
    assert [e["id"] for e in events] == [answer["id"]]
    with pytest.raises(ParameterRequired, match="recipient_email__v"):
        await editor.log_event(doc_id, 0, 1, {**fields, "recipient_email__v": ""})


async def test_users_and_groups(editor: VaultClient) -> None:
    users = {u["user_name__v"]: u for u in await editor.list_users()}
    assert ADMIN in users and EDITOR in users
    assert "password" not in " ".join(users[EDITOR])
    await editor.login()
    assert users[EDITOR]["id"] == editor.user_id
    groups = {g["label__v"]: g for g in await editor.list_groups()}
    assert editor.user_id in groups["Approvers"]["members__v"]


def test_users_route(vault_server: VaultProcess) -> None:
    headers = {"Authorization": login(vault_server.url, EDITOR)}
    with httpx.Client(base_url=vault_server.url + API, headers=headers) as http:
        body = http.get("/objects/users").json()
        assert body["size"] == len(body["users"]) >= 3
        first = body["users"][0]["user"]
        one = http.get(f"/objects/users/{first['id']}").json()
        assert one["users"] == [{"user": first}]
        unknown = http.get("/objects/users/9999").json()
        assert unknown["errors"][0]["type"] == "MALFORMED_URL"
