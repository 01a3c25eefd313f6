"""Changing documents over real HTTP: create, update, drafts, delete, permissions."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from tests.conftest import EDITOR, VIEWER, login
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from vaultfs.testing.vault_process import VaultProcess

#: Files are what these tests are about: they run with the files in a bucket too.
pytestmark = pytest.mark.content_stores

CLINICAL = {
    "type__v": "Clinical",
    "subtype__v": "Protocol",
    "classification__v": "Amendment",
    "lifecycle__v": "General Lifecycle",
}


@pytest.fixture
def client(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url, EDITOR)


def _total(client: httpx.Client) -> int:
    body = assert_ok(client.get("/objects/documents", params={"limit": 1}))
    return int(body["responseDetails"]["total"])


def test_create_missing_required_field_creates_nothing(fresh_vault: VaultProcess) -> None:
    client = api_client(fresh_vault.url, EDITOR)
    before = _total(client)
    fields = {**CLINICAL, "name__v": "No study number"}
    r = upload(client, "/objects/documents", fields, "a.txt", b"hello")
    assert_error(r, "PARAMETER_REQUIRED", 400, mentions="study_number__c")
    r = upload(client, "/objects/documents", {"name__v": "x"}, "a.txt", b"hello")
    assert_error(r, "PARAMETER_REQUIRED", mentions="type__v")
    general = {"type__v": "General", "name__v": "x"}
    assert_error(
        upload(client, "/objects/documents", general, "a.txt", b"x"),
        "PARAMETER_REQUIRED",
        mentions="lifecycle__v",
    )
    bad = {**CLINICAL, "name__v": "x", "study_number__c": "S1", "md5checksum__v": "0"}
    assert_error(
        upload(client, "/objects/documents", bad, "a.txt", b"x"),
        "INVALID_DATA",
        mentions="md5checksum__v",
    )
    wrong = {**CLINICAL, "subtype__v": "Nope", "name__v": "x", "study_number__c": "S1"}
    assert_error(
        upload(client, "/objects/documents", wrong, "a.txt", b"x"), "INVALID_DATA", mentions="Nope"
    )
    # JSON is taken where a form is (an empty object lacks the required fields) ...
    assert_error(
        client.post(
            "/objects/documents", content=b"{}", headers={"Content-Type": "application/json"}
        ),
        "PARAMETER_REQUIRED",
        mentions="type__v",
    )
    # ... any other body is not.
    assert_error(
        client.post("/objects/documents", content=b"x", headers={"Content-Type": "text/plain"}),
        "INVALID_DATA",
        mentions="Content-Type",
    )
    assert _total(client) == before


def test_create_with_defaults_and_read_back(client: httpx.Client) -> None:
    content = b"protocol amendment text\n" * 100
    fields = {
        **CLINICAL,
        "name__v": "Amendment 7",
        "study_number__c": "S-7",
        "amendment_number__c": "7",
        "title__v": "Seventh",
    }
    body = assert_ok(upload(client, "/objects/documents", fields, "amend.txt", content))
    doc = assert_ok(client.get(f"/objects/documents/{body['id']}"))["document"]
    assert doc["name__v"] == "Amendment 7" and doc["title__v"] == "Seventh"
    assert doc["type__v"] == "Clinical" and doc["classification__v"] == "Amendment"
    assert doc["amendment_number__c"] == 7 and doc["study_number__c"] == "S-7"
    assert (doc["major_version_number__v"], doc["minor_version_number__v"]) == (0, 1)
    assert doc["status__v"] == "Draft"
    assert doc["md5checksum__v"] == hashlib.md5(content).hexdigest()
    assert doc["filename__v"] == "amend.txt" and doc["format__v"] == "text/plain"
    assert doc["size__v"] == 3  # KB, rounded up
    promo = {
        "type__v": "Promotional Piece",
        "subtype__v": "Brochure",
        "lifecycle__v": "general_lifecycle__c",
        "name__v": "Defaults",
    }
    promo_id = assert_ok(upload(client, "/objects/documents", promo, "b.pdf", b"%PDF"))["id"]
    promo_doc = assert_ok(client.get(f"/objects/documents/{promo_id}"))["document"]
    assert promo_doc["audience__c"] == ["Healthcare Professional"]


def test_name_defaults_from_filename(client: httpx.Client) -> None:
    fields = {"type__v": "General", "lifecycle__v": "General Lifecycle"}
    doc_id = assert_ok(upload(client, "/objects/documents", fields, "budget plan.csv", b"a,b\n"))[
        "id"
    ]
    doc = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert doc["name__v"] == "budget plan"


def _new_doc(client: httpx.Client, content: bytes = b"first\n") -> int:
    fields = {"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": "Draft me"}
    return int(assert_ok(upload(client, "/objects/documents", fields, "d.txt", content))["id"])


def test_create_drafts(client: httpx.Client) -> None:
    doc_id = _new_doc(client)
    r = client.post(
        f"/objects/documents/{doc_id}",
        data={"createDraft": "uploadedContent"},
        files={"file": ("d.txt", b"second\n")},
    )
    body = assert_ok(r)
    assert (body["major_version_number__v"], body["minor_version_number__v"]) == (0, 2)
    r = client.post(
        f"/objects/documents/{doc_id}",
        params={"createDraft": "latestContent"},
        files={"description__v": (None, "copy")},
    )
    assert assert_ok(r)["minor_version_number__v"] == 3
    latest = client.get(f"/objects/documents/{doc_id}/file")
    assert latest.content == b"second\n"
    doc = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert doc["description__v"] == "copy" and doc["minor_version_number__v"] == 3
    assert client.get(f"/objects/documents/{doc_id}/versions/0/1/file").content == b"first\n"
    r = client.post(
        f"/objects/documents/{doc_id}",
        data={"createDraft": "uploadedContent"},
        files={"other": ("x", b"x")},
    )
    assert_error(r, "PARAMETER_REQUIRED", mentions="file")
    r = client.post(f"/objects/documents/{doc_id}", data={"createDraft": "bogus"})
    assert_error(r, "INVALID_DATA", mentions="createDraft")


def test_update_fields(client: httpx.Client) -> None:
    doc_id = _new_doc(client)
    before = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    r = client.put(
        f"/objects/documents/{doc_id}",
        data={"title__v": "New title", "language__v": "English,french"},
    )
    assert assert_ok(r)["id"] == doc_id
    after = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert after["title__v"] == "New title" and after["language__v"] == ["English", "French"]
    assert after["version_modified_date__v"] > before["version_modified_date__v"]
    # An empty value clears the field.
    assert_ok(client.put(f"/objects/documents/{doc_id}", data={"title__v": ""}))
    assert assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]["title__v"] is None
    assert_error(
        client.put(f"/objects/documents/{doc_id}", data={"filename__v": "x"}),
        "INVALID_DATA",
        mentions="filename__v",
    )
    assert_error(
        client.put(f"/objects/documents/{doc_id}", data={"type__v": "Clinical"}),
        "INVALID_DATA",
        mentions="type__v",
    )
    assert_error(
        client.put(f"/objects/documents/{doc_id}", data={"name__v": ""}),
        "INVALID_DATA",
        mentions="name__v",
    )
    assert_error(
        client.put(f"/objects/documents/{doc_id}", data={"name__v": "x" * 101}),
        "INVALID_DATA",
        mentions="name__v",
    )
    # Older versions are updated through their own path.
    assert_ok(client.put(f"/objects/documents/{doc_id}/versions/0/1", data={"title__v": "v1"}))
    v1 = assert_ok(client.get(f"/objects/documents/{doc_id}/versions/0/1"))["document"]
    assert v1["title__v"] == "v1"


def test_viewer_may_not_change_anything(vault_server: VaultProcess) -> None:
    viewer = api_client(vault_server.url, VIEWER)
    doc_id = assert_ok(viewer.get("/objects/documents", params={"limit": 1}))["documents"][0][
        "document"
    ]["id"]
    attempts = [
        upload(viewer, "/objects/documents", {"type__v": "General"}, "a.txt", b"x"),
        viewer.put(f"/objects/documents/{doc_id}", data={"title__v": "x"}),
        viewer.post(f"/objects/documents/{doc_id}", data={"createDraft": "latestContent"}),
        viewer.post(f"/objects/documents/{doc_id}/lock"),
        viewer.delete(f"/objects/documents/{doc_id}"),
        viewer.get(f"/objects/documents/{doc_id}/file", params={"lockDocument": "true"}),
    ]
    for r in attempts:
        assert_error(r, "INSUFFICIENT_ACCESS", 403)
    assert assert_ok(viewer.get(f"/objects/documents/{doc_id}"))["document"]["locked__v"] is False


def test_delete_document_and_version(vault_server: VaultProcess) -> None:
    admin = api_client(vault_server.url)
    editor = api_client(vault_server.url, EDITOR)
    doc_id = _new_doc(editor)
    assert_ok(editor.post(f"/objects/documents/{doc_id}", data={"createDraft": "latestContent"}))
    assert_error(editor.delete(f"/objects/documents/{doc_id}"), "INSUFFICIENT_ACCESS")
    assert_ok(admin.delete(f"/objects/documents/{doc_id}/versions/0/2"))
    versions = assert_ok(admin.get(f"/objects/documents/{doc_id}/versions"))["versions"]
    assert [v["number"] for v in versions] == ["0.1"]
    assert_error(admin.delete(f"/objects/documents/{doc_id}/versions/0/1"), "INVALID_DATA")
    assert_ok(admin.delete(f"/objects/documents/{doc_id}"))
    assert_error(admin.get(f"/objects/documents/{doc_id}"), "INVALID_DOCUMENT")
    deleted = assert_ok(admin.get("/objects/deletions/documents"))
    mine = [d for d in deleted["data"] if d["id"] == doc_id]
    assert {(d["major_version_number__v"], d["minor_version_number__v"]) for d in mine} == {
        (0, 1),
        (0, 2),
    }
    assert deleted["responseDetails"]["total"] >= 2
    later = assert_ok(
        admin.get("/objects/deletions/documents", params={"start_date": "2999-01-01T00:00:00Z"})
    )
    assert later["data"] == []


def test_reclassify(client: httpx.Client) -> None:
    doc_id = _new_doc(client)
    path = f"/objects/documents/{doc_id}"
    r = client.put(path, params={"reclassify": "true"}, data=CLINICAL)
    assert_error(r, "PARAMETER_REQUIRED", mentions="study_number__c")
    assert assert_ok(client.get(path))["document"]["type__v"] == "General"
    assert_ok(
        client.put(path, params={"reclassify": "true"}, data={**CLINICAL, "study_number__c": "R-1"})
    )
    doc = assert_ok(client.get(path))["document"]
    assert (doc["type__v"], doc["subtype__v"], doc["classification__v"]) == (
        "Clinical",
        "Protocol",
        "Amendment",
    )
    assert doc["study_number__c"] == "R-1" and doc["name__v"] == "Draft me"


def test_deleted_documents_answer_csv_when_asked(fresh_vault: VaultProcess) -> None:
    session = login(fresh_vault.url)
    base = f"{fresh_vault.url}/api/v25.1"
    headers = {"Authorization": session}
    doc_id = httpx.get(f"{base}/objects/documents", headers=headers).json()["documents"][0][
        "document"
    ]["id"]
    assert (
        httpx.delete(f"{base}/objects/documents/{doc_id}", headers=headers).json()["responseStatus"]
        == "SUCCESS"
    )
    r = httpx.get(f"{base}/objects/deletions/documents", headers={**headers, "Accept": "text/csv"})
    assert r.headers["content-type"].startswith("text/csv")
    lines = r.text.strip().splitlines()
    assert "id" in lines[0].split(",") and any(line.startswith(f"{doc_id},") for line in lines[1:])
