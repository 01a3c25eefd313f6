"""Locks (check-out) over real HTTP: one winner of a race, who may undo, what it blocks."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.conftest import ADMIN, DEMO_PASSWORD, EDITOR
from tests.server.helpers import API, api_client, assert_error, assert_ok, upload
from vaultfs.testing.vault_process import VaultProcess


def _new_doc(client: httpx.Client) -> int:
    fields = {"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": "Lockable"}
    return int(assert_ok(upload(client, "/objects/documents", fields, "l.txt", b"l"))["id"])


def test_two_clients_racing_for_a_lock_one_wins(vault_server: VaultProcess) -> None:
    users = [EDITOR, ADMIN]
    clients = [api_client(vault_server.url, user) for user in users]
    ids = [user_id(vault_server.url, user) for user in users]
    for _ in range(5):
        doc_id = _new_doc(clients[0])
        gate = threading.Barrier(2)

        def take(
            client: httpx.Client, doc_id: int = doc_id, gate: threading.Barrier = gate
        ) -> dict:
            gate.wait()  # both requests leave at the same moment
            return dict(client.post(f"/objects/documents/{doc_id}/lock").json())

        with ThreadPoolExecutor(2) as pool:
            bodies = list(pool.map(take, clients))
        statuses = [b["responseStatus"] for b in bodies]
        assert sorted(statuses) == ["FAILURE", "SUCCESS"], bodies
        loser = bodies[statuses.index("FAILURE")]
        assert loser["errors"][0]["type"] == "OPERATION_NOT_ALLOWED"
        holder = assert_ok(clients[0].get(f"/objects/documents/{doc_id}/lock"))["lock"]
        assert holder["locked_by__v"] == ids[statuses.index("SUCCESS")]


def user_id(url: str, username: str) -> int:
    r = httpx.post(url + API + "/auth", data={"username": username, "password": DEMO_PASSWORD})
    return int(assert_ok(r)["userId"])


def test_lock_blocks_others_and_only_holder_or_admin_undoes(vault_server: VaultProcess) -> None:
    editor = api_client(vault_server.url, EDITOR)
    admin = api_client(vault_server.url, ADMIN)
    doc_id = _new_doc(editor)
    base = f"/objects/documents/{doc_id}"
    assert_ok(admin.post(base + "/lock"))
    record = assert_ok(editor.get(base))["document"]
    assert record["locked__v"] is True
    assert_error(editor.post(base + "/lock"), "OPERATION_NOT_ALLOWED", 409)
    assert_error(editor.put(base, data={"title__v": "x"}), "OPERATION_NOT_ALLOWED")
    assert_error(
        editor.post(base, data={"createDraft": "latestContent"}),
        "OPERATION_NOT_ALLOWED",
        mentions="checked out",
    )
    assert_error(editor.delete(base + "/lock"), "INSUFFICIENT_ACCESS", 403)
    # The holder may still change the document (check out, edit, check in).
    assert_ok(admin.post(base, data={"createDraft": "latestContent"}))
    assert_ok(admin.post(base + "/lock"))  # already held by the caller: no change
    assert_ok(admin.delete(base + "/lock"))
    assert "lock" not in assert_ok(editor.get(base + "/lock"))
    assert_ok(editor.post(base + "/lock"))
    # An admin may undo someone else's check out.
    assert_ok(admin.delete(base + "/lock"))
    assert assert_ok(editor.get(base))["document"]["locked__v"] is False
