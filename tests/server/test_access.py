"""Access over real HTTP: vault roles, document roles, groups; what a viewer never sees
or changes."""

from __future__ import annotations

import httpx

from tests.conftest import EDITOR, VIEWER
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from vaultfs.testing.vault_process import VaultProcess

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


def clients(url: str) -> tuple[httpx.Client, httpx.Client, httpx.Client]:
    return api_client(url), api_client(url, EDITOR), api_client(url, VIEWER)


def ids(client: httpx.Client, **params: str) -> set[int]:
    body = assert_ok(client.get("/objects/documents", params={"limit": "200", **params}))
    assert body["responseDetails"]["total"] == len(body["documents"])
    return {d["document"]["id"] for d in body["documents"]}


def test_restricted_document_is_invisible_to_others(fresh_vault: VaultProcess) -> None:
    admin, editor, viewer = clients(fresh_vault.url)
    word = "restrictedword"
    fields = {**GENERAL, "name__v": f"Secret {word}", "viewer__v.users": "2"}
    secret = assert_ok(upload(admin, "/objects/documents", fields, "s.txt", f"{word}\n".encode()))[
        "id"
    ]
    doc = assert_ok(admin.get(f"/objects/documents/{secret}"))["document"]
    assert doc["viewer__v"] == {"users": [2], "groups": []}
    assert doc["owner__v"] == {"users": [1], "groups": []}
    # The viewer: not in lists, counts, searches; single reads say it does not exist.
    assert secret not in ids(viewer)
    assert secret not in ids(viewer, search=word, scope="all")
    for path in (
        "",
        "/versions",
        "/versions/0/1",
        "/file",
        "/renditions",
        "/attachments",
        "/events",
        "/roles",
        "/versions/0/1/relationships",
        "/versions/0/1/lifecycle_actions",
    ):
        assert_error(viewer.get(f"/objects/documents/{secret}{path}"), "INVALID_DOCUMENT", 404)
    assert_error(
        viewer.post(
            "/metadata/objects/documents/properties/find_common", data={"docIds": str(secret)}
        ),
        "INVALID_DOCUMENT",
    )
    # The editor (a viewer__v of it) sees it but may not change it.
    assert secret in ids(editor) and secret in ids(editor, search=word, scope="contents")
    assert_error(
        editor.put(f"/objects/documents/{secret}", data={"title__v": "x"}),
        "INSUFFICIENT_ACCESS",
        403,
    )
    assert_error(editor.post(f"/objects/documents/{secret}/lock"), "INSUFFICIENT_ACCESS", 403)
    assert_error(
        editor.post(f"/objects/documents/{secret}/roles", data={"editor__v.users": "2"}),
        "INSUFFICIENT_ACCESS",
        403,
    )
    # A relationship to it is no relationship for the viewer either.
    mine = assert_ok(
        upload(editor, "/objects/documents", {**GENERAL, "name__v": "pub"}, "p.txt", b"p")
    )["id"]
    rel = {"target_doc_id__v": str(secret), "relationship_type__v": "references__vs"}
    assert_ok(editor.post(f"/objects/documents/{mine}/versions/0/1/relationships", data=rel))
    assert (
        assert_ok(viewer.get(f"/objects/documents/{mine}/versions/0/1/relationships"))[
            "relationships"
        ]
        == []
    )
    # Deleted: still not in the viewer's list of deletions.
    assert_ok(admin.delete(f"/objects/documents/{secret}"))
    deleted = assert_ok(viewer.get("/objects/deletions/documents"))["data"]
    assert secret not in {d["id"] for d in deleted}
    assert secret in {
        d["id"] for d in assert_ok(editor.get("/objects/deletions/documents"))["data"]
    }


def test_groups_and_editor_role(fresh_vault: VaultProcess) -> None:
    admin, editor, viewer = clients(fresh_vault.url)
    assert_error(editor.post("/objects/groups", data={"label__v": "Mine"}), "INSUFFICIENT_ACCESS")
    group = assert_ok(
        admin.post("/objects/groups", data={"label__v": "Readers", "members__v": "3"})
    )["id"]
    record = assert_ok(viewer.get(f"/objects/groups/{group}"))["groups"][0]["group"]
    assert record["members__v"] == [3] and record["label__v"] == "Readers"
    assert_error(
        admin.post("/objects/groups", data={"label__v": "Bad", "members__v": "99"}),
        "INVALID_DATA",
        mentions="99",
    )
    doc = assert_ok(
        upload(
            admin,
            "/objects/documents",
            {**GENERAL, "name__v": "Grouped", "viewer__v.groups": str(group)},
            "g.txt",
            b"g",
        )
    )["id"]
    assert doc in ids(viewer) and doc not in ids(editor)
    assert_error(editor.get(f"/objects/documents/{doc}"), "INVALID_DOCUMENT")
    # The owner gives the editor the editor role: now they may change it.
    assert_ok(admin.post(f"/objects/documents/{doc}/roles", data={"editor__v.users": "2"}))
    assert_ok(editor.put(f"/objects/documents/{doc}", data={"title__v": "edited"}))
    roles = {
        r["name"]: r
        for r in assert_ok(editor.get(f"/objects/documents/{doc}/roles"))["documentRoles"]
    }
    assert roles["editor__v"]["assignedUsers"] == [2] and roles["viewer__v"]["assignedGroups"] == [
        group
    ]
    # The viewer's vault role still allows viewing only.
    assert_error(
        viewer.put(f"/objects/documents/{doc}", data={"title__v": "x"}), "INSUFFICIENT_ACCESS"
    )
    # Out of the group: out of the document.
    assert_ok(admin.put(f"/objects/groups/{group}", data={"members__v": ""}))
    assert_error(viewer.get(f"/objects/documents/{doc}"), "INVALID_DOCUMENT")
    # Deleting the group never opens the document.
    assert_ok(admin.delete(f"/objects/groups/{group}"))
    assert doc not in ids(viewer)
    assert_ok(admin.delete(f"/objects/documents/{doc}/roles/viewer__v.groups/{group}"))
    assert_ok(admin.delete(f"/objects/documents/{doc}/roles/editor__v.users/2"))
    assert doc in ids(viewer)  # no roles but the owner: open again
    assert_error(admin.delete(f"/objects/documents/{doc}/roles/editor__v.users/2"), "MALFORMED_URL")
    assert_error(
        admin.post(f"/objects/documents/{doc}/roles", data={"viewer__v.users": "42"}),
        "INVALID_DATA",
        mentions="42",
    )


def test_viewer_never_changes_anything(fresh_vault: VaultProcess) -> None:
    admin, _, viewer = clients(fresh_vault.url)
    before = assert_ok(admin.get("/objects/documents/1"))["document"]
    attempts = [
        viewer.put("/objects/documents/1", data={"title__v": "x"}),
        viewer.post("/objects/documents/1", files={"file": ("a.txt", b"x")}),
        viewer.delete("/objects/documents/1"),
        viewer.post("/objects/documents/1/lock"),
        viewer.post("/objects/documents/1/roles", data={"viewer__v.users": "3"}),
        viewer.post(
            "/objects/documents/1/versions/1/0/relationships",
            data={"target_doc_id__v": "2", "relationship_type__v": "references__vs"},
        ),
        viewer.put("/objects/documents/1/versions/1/0/lifecycle_actions/approve"),
        viewer.post("/objects/documents", data={**GENERAL, "name__v": "v"}),
        viewer.post(
            "/objects/documents/batch",
            content=b"name__v\nx\n",
            headers={"Content-Type": "text/csv"},
        ),
        viewer.put("/objects/documents/batch", data={"docIds": "1", "title__v": "x"}),
        viewer.post("/objects/groups", data={"label__v": "g"}),
    ]
    for response in attempts:
        assert_error(response, "INSUFFICIENT_ACCESS", 403)
    after = assert_ok(admin.get("/objects/documents/1"))["document"]
    assert after == before
