"""Relationships over real HTTP: metadata, create (rules), list, read, delete."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import EDITOR, VIEWER
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from tests.server.versioned import at_version
from vaultfs.testing.vault_process import VaultProcess

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}
CLINICAL = {
    "type__v": "Clinical",
    "subtype__v": "Protocol",
    "classification__v": "Amendment",
    "lifecycle__v": "General Lifecycle",
    "study_number__c": "S-1",
}


@pytest.fixture
def client(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url, EDITOR)


def new_doc(client: httpx.Client, fields: dict[str, str] = GENERAL, name: str = "rel") -> int:
    body = assert_ok(
        upload(client, "/objects/documents", {**fields, "name__v": name}, "r.txt", b"x")
    )
    return int(body["id"])


def rels(client: httpx.Client, doc_id: int, version: str = "0/1") -> str:
    return f"/objects/documents/{doc_id}/versions/{version}/relationships"


def test_metadata_lists_fields_and_type_rules(client: httpx.Client) -> None:
    body = assert_ok(client.get("/metadata/objects/documents/types/General/relationships"))
    names = {p["name"] for p in body["properties"]}
    assert {"source_doc_id__v", "target_doc_id__v", "relationship_type__v"} <= names
    types = {t["value"]: t for t in body["relationshipTypes"]}
    assert types["original_source__v"]["singleUse"] is True
    assert types["basedon__vs"]["targetDocVersionSpecific"] is True
    assert types["basedon__vs"]["targetDocumentTypes"] == [
        {"label": "Clinical", "value": "clinical__c"}
    ]
    assert {r["relationship_name"] for r in body["relationships"]} == {"source__vr", "target__vr"}
    one = assert_ok(
        client.get("/metadata/objects/documents/types/General/relationships/references__vs")
    )
    assert [t["value"] for t in one["relationshipTypes"]] == ["references__vs"]
    assert_error(
        client.get("/metadata/objects/documents/types/Nope/relationships"), "MALFORMED_URL"
    )
    # Relationships came with v3.
    old = at_version(client, "v2.0").get(
        "/metadata/objects/documents/types/General/relationships",
    )
    assert_error(old, "MALFORMED_URL", 404)


def test_create_list_read_delete(client: httpx.Client) -> None:
    source, target = new_doc(client), new_doc(client)
    form = {"target_doc_id__v": str(target), "relationship_type__v": "references__vs"}
    created = assert_ok(client.post(rels(client, source), data=form))
    rel_id = created["id"]
    assert created["responseMessage"]
    listed = assert_ok(client.get(rels(client, source)))["relationships"]
    assert [r["relationship"]["id"] for r in listed] == [rel_id]
    record = listed[0]["relationship"]
    assert record["source_doc_id__v"] == source and record["target_doc_id__v"] == target
    assert (record["source_major_version__v"], record["source_minor_version__v"]) == (0, 1)
    assert record["relationship_type__v"] == "references__vs"
    # The target sees it too.
    assert [
        r["relationship"]["id"]
        for r in assert_ok(client.get(rels(client, target)))["relationships"]
    ] == [rel_id]
    one = assert_ok(client.get(f"{rels(client, source)}/{rel_id}"))["relationships"]
    assert one[0]["relationship"]["id"] == rel_id
    # The same relationship again is INVALID_DATA.
    assert_error(client.post(rels(client, source), data=form), "INVALID_DATA", 400, "exists")
    deleted = assert_ok(client.delete(f"{rels(client, source)}/{rel_id}"))
    assert deleted["id"] == rel_id
    assert assert_ok(client.get(rels(client, source)))["relationships"] == []
    assert_error(client.get(f"{rels(client, source)}/{rel_id}"), "MALFORMED_URL")
    assert_error(client.delete(f"{rels(client, source)}/{rel_id}"), "MALFORMED_URL")


def test_create_rules(client: httpx.Client) -> None:
    source, target, clinical = new_doc(client), new_doc(client), new_doc(client, CLINICAL)
    url = rels(client, source)
    r = client.post(url, data={})
    body = assert_error(r, "PARAMETER_REQUIRED", 400)
    assert {e["message"] for e in body["errors"]} == {
        "Missing required parameter [target_doc_id__v]",
        "Missing required parameter [relationship_type__v]",
    }
    assert_error(
        client.post(url, data={"target_doc_id__v": str(target), "relationship_type__v": "nope"}),
        "INVALID_DATA",
        mentions="nope",
    )
    assert_error(
        client.post(
            url, data={"target_doc_id__v": "999999", "relationship_type__v": "references__vs"}
        ),
        "INVALID_DATA",
        mentions="999999",
    )
    # A target version that does not exist.
    missing_version = {
        "target_doc_id__v": str(target),
        "relationship_type__v": "references__vs",
        "target_major_version__v": "7",
        "target_minor_version__v": "0",
    }
    assert_error(client.post(url, data=missing_version), "INVALID_DATA", mentions="7.0")
    # basedon__vs: version specific and only to Clinical documents.
    based = {"target_doc_id__v": str(clinical), "relationship_type__v": "basedon__vs"}
    assert_error(client.post(url, data=based), "PARAMETER_REQUIRED", mentions="target_major")
    wrong_type = {**based, "target_doc_id__v": str(target)}
    wrong_type.update(target_major_version__v="0", target_minor_version__v="1")
    assert_error(client.post(url, data=wrong_type), "INVALID_DATA", mentions="Clinical")
    ok = {**based, "target_major_version__v": "0", "target_minor_version__v": "1"}
    record_id = assert_ok(client.post(url, data=ok))["id"]
    record = assert_ok(client.get(f"{url}/{record_id}"))["relationships"][0]["relationship"]
    assert (record["target_major_version__v"], record["target_minor_version__v"]) == (0, 1)
    # original_source__v is single-use per source version.
    single = {"target_doc_id__v": str(target), "relationship_type__v": "original_source__v"}
    assert_ok(client.post(url, data=single))
    again = {**single, "target_doc_id__v": str(clinical)}
    assert_error(client.post(url, data=again), "INVALID_DATA", mentions="single-use")
    assert_error(client.post(rels(client, source, "9/9"), data=single), "INVALID_DOCUMENT", 404)


def test_viewer_may_read_but_not_create(vault_server: VaultProcess, client: httpx.Client) -> None:
    source, target = new_doc(client), new_doc(client)
    viewer = api_client(vault_server.url, VIEWER)
    form = {"target_doc_id__v": str(target), "relationship_type__v": "references__vs"}
    assert_error(viewer.post(rels(viewer, source), data=form), "INSUFFICIENT_ACCESS", 403)
    assert assert_ok(viewer.get(rels(viewer, source)))["relationships"] == []


def test_deleting_the_target_removes_the_relationship(
    vault_server: VaultProcess, client: httpx.Client
) -> None:
    source, target = new_doc(client), new_doc(client)
    form = {"target_doc_id__v": str(target), "relationship_type__v": "references__vs"}
    assert_ok(client.post(rels(client, source), data=form))
    admin = api_client(vault_server.url)
    assert_ok(admin.delete(f"/objects/documents/{target}"))
    assert assert_ok(client.get(rels(client, source)))["relationships"] == []
