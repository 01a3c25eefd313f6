"""Locks (check-out) over real HTTP: one winner of a race, who may undo, what it blocks."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.conftest import ADMIN, EDITOR
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from tests.vaultproc import VaultProcess


def _new_doc(client: httpx.Client) -> int:
    fields = {"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": "Lockable"}
    return int(assert_ok(upload(client, "/objects/documents", fields, "l.txt", b"l"))["id"])


def test_two_clients_racing_for_a_lock_one_wins(vault_server: VaultProcess) -> None:
    clients = [api_client(vault_server.url, EDITOR), api_client(vault_server.url, ADMIN)]
    for _ in range(5):
        doc_id = _new_doc(clients[0])
        with ThreadPoolExecutor(2) as pool:
            results = list(pool.map(lambda c: c.post(f"/objects/documents/{doc_id}/lock"),
                                    clients))
        bodies = [r.json() for r in results]
        winners = [b for b in bodies if b["responseStatus"] == "SUCCESS"]
        losers = [b for b in bodies if b["responseStatus"] == "FAILURE"]
        assert len(winners) == 1 and len(losers) == 1, bodies
        assert losers[0]["errors"][0]["type"] == "OPERATION_NOT_ALLOWED"
        holder = assert_ok(clients[0].get(f"/objects/documents/{doc_id}/lock"))["lock"]
        winner_index = bodies.index(winners[0])
        me = [login_user(clients[0]), login_user(clients[1])][winner_index]
        assert holder["locked_by__v"] == me


def login_user(client: httpx.Client) -> int:
    # The creator of a fresh document is the caller.
    doc_id = _new_doc(client)
    return int(assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]["created_by__v"])


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
    assert_error(editor.post(base, data={"createDraft": "latestContent"}),
                 "OPERATION_NOT_ALLOWED", mentions="checked out")
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
