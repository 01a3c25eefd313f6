"""Lifecycle actions over real HTTP: list, entry requirements, approve, workflows, binders."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import EDITOR, VIEWER
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from tests.server.versioned import at_version
from vaultfs.testing.vault_process import VaultProcess

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": "lc"}


@pytest.fixture
def client(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url, EDITOR)


def new_doc(client: httpx.Client, kind: str = "documents") -> int:
    if kind == "binders":
        return int(assert_ok(client.post("/objects/binders", data=GENERAL))["id"])
    return int(assert_ok(upload(client, "/objects/documents", GENERAL, "l.txt", b"l"))["id"])


def actions_url(doc_id: int, kind: str = "documents") -> str:
    return f"/objects/{kind}/{doc_id}/versions/0/1/lifecycle_actions"


@pytest.mark.parametrize("kind", ["documents", "binders"])
def test_approve_needs_the_document_requirement(client: httpx.Client, kind: str) -> None:
    doc_id = new_doc(client, kind)
    listed = assert_ok(client.get(actions_url(doc_id, kind)))["lifecycle_actions__v"]
    by_name = {a["name__v"]: a for a in listed}
    assert by_name["approve"]["lifecycle_action_type__v"] == "stateChange"
    assert by_name["startApproval"]["lifecycle_action_type__v"] == "workflow"
    assert by_name["approve"]["entry_requirements__v"].endswith("/approve/entry_requirements")
    reqs = assert_ok(client.get(actions_url(doc_id, kind) + "/approve/entry_requirements"))
    [country] = reqs["properties"]
    assert country["name"] == "country__v" and country["scope"] == "Document"
    assert "currentSetting" not in country
    r = client.put(actions_url(doc_id, kind) + "/approve")
    assert_error(r, "INVALID_DATA", 400, mentions="country__v")
    doc = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert doc["status__v"] == "Draft"
    assert doc["binder__v"] is (kind == "binders")
    assert_ok(client.put(f"/objects/documents/{doc_id}", data={"country__v": "us"}))
    reqs = assert_ok(client.get(actions_url(doc_id, kind) + "/approve/entry_requirements"))
    assert reqs["properties"][0]["currentSetting"] == ["us"]
    assert assert_ok(client.put(actions_url(doc_id, kind) + "/approve"))["id"] == doc_id
    doc = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert doc["status__v"] == "Approved"
    # Approved offers no actions; unknown actions are no resource.
    assert assert_ok(client.get(actions_url(doc_id, kind)))["lifecycle_actions__v"] == []
    # An action the version does not offer is an endpoint-construction problem.
    assert_error(client.put(actions_url(doc_id, kind) + "/approve"), "METHOD_NOT_SUPPORTED", 405)


def test_workflow_start(client: httpx.Client, vault_server: VaultProcess) -> None:
    doc_id = new_doc(client)
    url = actions_url(doc_id) + "/startApproval"
    reqs = assert_ok(client.get(url + "/entry_requirements"))["properties"]
    assert {r["name"]: r["scope"] for r in reqs} == {
        "dueDate": "WorkflowActivation",
        "Approver": "WorkflowActivation",
    }
    body = assert_error(client.put(url, data={}), "PARAMETER_REQUIRED", 400)
    assert len(body["errors"]) == 2
    assert_error(
        client.put(url, data={"dueDate": "tomorrow", "Approver": "user:1"}),
        "INVALID_DATA",
        mentions="dueDate",
    )
    assert_error(
        client.put(url, data={"dueDate": "2030-01-01", "Approver": "bob"}),
        "INVALID_DATA",
        mentions="Approver",
    )
    assert_error(
        client.put(url, data={"dueDate": "2030-01-01", "Approver": "user:999"}),
        "INVALID_DATA",
        mentions="999",
    )
    # nothing started by the failures
    assert assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]["status__v"] == "Draft"
    groups = assert_ok(client.get("/objects/groups"))["groups"]
    group_id = groups[0]["group"]["id"]
    viewer = api_client(vault_server.url, VIEWER)
    assert_error(
        viewer.put(url, data={"dueDate": "2030-01-01", "Approver": "user:1"}),
        "INSUFFICIENT_ACCESS",
        403,
    )
    started = assert_ok(
        client.put(url, data={"dueDate": "2030-01-01", "Approver": f"user:1,group:{group_id}"})
    )
    assert started["id"] == doc_id and isinstance(started["workflow_id__v"], int)
    doc = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert doc["status__v"] == "In Review"
    # In an active workflow: no actions, none can start.
    assert assert_ok(client.get(actions_url(doc_id)))["lifecycle_actions__v"] == []
    assert_error(client.put(actions_url(doc_id) + "/approve"), "OPERATION_NOT_ALLOWED", 409)
    # Setting the state by hand ends the workflow.
    assert_ok(client.put(f"/objects/documents/{doc_id}", data={"status__v": "Draft"}))
    names = {
        a["name__v"] for a in assert_ok(client.get(actions_url(doc_id)))["lifecycle_actions__v"]
    }
    assert names == {"approve", "startApproval"}


def test_binder_paths_need_a_binder(client: httpx.Client) -> None:
    doc_id = new_doc(client)
    assert_error(client.get(actions_url(doc_id, "binders")), "INVALID_DOCUMENT", 404)
    old = at_version(client, "v5.0").get(
        actions_url(doc_id),
    )
    assert_error(old, "MALFORMED_URL", 404)
