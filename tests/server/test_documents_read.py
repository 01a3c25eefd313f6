"""Reading documents over real HTTP: list, paging, sorting, search, records, versions."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.server.helpers import api_client, assert_error, assert_ok
from vaultfs.testing.vault_process import VaultProcess

RECORD_FIELDS = {
    "id",
    "version_id",
    "name__v",
    "title__v",
    "description__v",
    "type__v",
    "subtype__v",
    "classification__v",
    "lifecycle__v",
    "status__v",
    "major_version_number__v",
    "minor_version_number__v",
    "filename__v",
    "format__v",
    "size__v",
    "md5checksum__v",
    "locked__v",
    "document_number__v",
    "created_by__v",
    "version_created_by__v",
    "last_modified_by__v",
    "document_creation_date__v",
    "version_creation_date__v",
    "version_modified_date__v",
    "owner__v",
    "viewer__v",
    "editor__v",
    "language__v",
    "binder__v",
    "crosslink__v",
}


@pytest.fixture(scope="module")
def read_vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VaultProcess]:
    """A demo vault of this module's own: these tests only read, so they share it."""
    with VaultProcess(tmp_path_factory.mktemp("read-vault") / "data") as server:
        yield server


@pytest.fixture
def client(read_vault: VaultProcess) -> httpx.Client:
    return api_client(read_vault.url)


def _all(client: httpx.Client, **params: str) -> list[dict]:
    body = assert_ok(client.get("/objects/documents", params=params))
    return [item["document"] for item in body["documents"]]


def test_list_pages_and_totals(client: httpx.Client) -> None:
    everything = _all(client)
    assert len(everything) >= 20
    ids = [d["id"] for d in everything]
    assert len(set(ids)) == len(ids)
    page = assert_ok(client.get("/objects/documents", params={"limit": 7, "start": 7}))
    assert page["size"] == 7 and page["start"] == 7 and page["limit"] == 7
    assert page["responseDetails"]["total"] == len(everything)
    assert [d["document"]["id"] for d in page["documents"]] == ids[7:14]
    beyond = assert_ok(client.get("/objects/documents", params={"start": 10_000}))
    assert beyond["documents"] == [] and beyond["size"] == 0
    # Larger limits are ignored (200 at most), not refused.
    assert assert_ok(client.get("/objects/documents", params={"limit": 5000}))["limit"] == 200
    assert_error(
        client.get("/objects/documents", params={"limit": "x"}), "INVALID_DATA", mentions="limit"
    )


def test_every_record_has_the_standard_fields(client: httpx.Client) -> None:
    for record in _all(client):
        missing = RECORD_FIELDS - record.keys()
        assert not missing, (record["id"], missing)
        assert record["version_id"] == (
            f"{record['id']}_{record['major_version_number__v']}_"
            f"{record['minor_version_number__v']}"
        )
        assert record["binder__v"] is False and isinstance(record["language__v"], list)


def test_sort_by_modification_date(client: httpx.Client) -> None:
    records = _all(client, sort="version_modified_date__v desc")
    dates = [r["version_modified_date__v"] for r in records]
    assert dates == sorted(dates, reverse=True)
    names = [r["name__v"].lower() for r in _all(client, sort="name__v asc")]
    assert names == sorted(names)
    assert_error(
        client.get("/objects/documents", params={"sort": "nope__v desc"}),
        "INVALID_DATA",
        mentions="nope__v",
    )


def test_search_and_awkward_names(client: httpx.Client) -> None:
    names = [r["name__v"] for r in _all(client)]
    assert "Q3 Results / Forecast" in names
    assert any(not n.isascii() for n in names)
    assert names.count("Meeting Notes") == 2
    found = _all(client, search="forecast")
    assert [r["name__v"] for r in found] == ["Q3 Results / Forecast"]


def test_versionscope_all_lists_every_version(client: httpx.Client) -> None:
    latest = _all(client)
    every = _all(client, versionscope="all")
    assert len(every) > len(latest)
    assert {r["version_id"] for r in latest} <= {r["version_id"] for r in every}


def test_read_document_version_and_versions(client: httpx.Client) -> None:
    record = next(r for r in _all(client) if r["name__v"] == "Travel Policy")
    doc_id = record["id"]
    body = assert_ok(client.get(f"/objects/documents/{doc_id}"))
    assert body["document"] == record
    numbers = [v["number"] for v in body["versions"]]
    assert numbers == ["0.1", "0.2", "1.0", "1.1"]
    assert body["versions"][0]["value"].startswith("http://127.0.0.1:")
    assert "viewable_rendition__v" in body["renditions"]
    assert "attachments" in body
    versions = assert_ok(client.get(f"/objects/documents/{doc_id}/versions"))
    assert [v["number"] for v in versions["versions"]] == numbers
    old = assert_ok(client.get(f"/objects/documents/{doc_id}/versions/1/0"))
    assert old["document"]["version_id"] == f"{doc_id}_1_0"
    assert old["document"]["status__v"] == "Approved"
    assert [v["number"] for v in old["versions"]] == ["1.0"]


def test_unknown_and_malformed_ids(client: httpx.Client) -> None:
    assert_error(
        client.get("/objects/documents/999999"), "INVALID_DOCUMENT", 404, mentions="999999"
    )
    assert_error(
        client.get("/objects/documents/1/versions/9/9"), "INVALID_DOCUMENT", mentions="9.9"
    )
    assert_error(client.get("/objects/documents/abc"), "MALFORMED_URL", mentions="abc")
    assert_error(client.get("/objects/nothing/here"), "MALFORMED_URL", 404)
    assert_error(client.patch("/objects/documents/1"), "METHOD_NOT_SUPPORTED", 405)


def test_metadata(client: httpx.Client) -> None:
    index = assert_ok(client.get("/metadata/objects"))
    assert set(index["values"]) == {"documents", "users", "groups", "securitypolicies", "vobjects"}
    types = assert_ok(client.get("/metadata/objects/documents/types"))
    labels = {t["label"]: t["value"] for t in types["types"]}
    assert {"General", "Promotional Piece", "Clinical"} <= labels.keys()
    assert types["lock"].endswith("/metadata/objects/documents/lock")
    assert assert_ok(client.get("/metadata/objects/documents"))["types"] == types["types"]
    general = assert_ok(httpx.get(labels["General"], headers=client.headers))
    assert "subtypes" not in general
    assert any(p["name"] == "name__v" for p in general["properties"])
    clinical = assert_ok(httpx.get(labels["Clinical"], headers=client.headers))
    protocol = assert_ok(httpx.get(clinical["subtypes"][0]["value"], headers=client.headers))
    amendment_url = next(
        c["value"] for c in protocol["classifications"] if c["label"] == "Amendment"
    )
    amendment = assert_ok(httpx.get(amendment_url, headers=client.headers))
    names = {p["name"] for p in amendment["properties"]}
    assert {"study_number__c", "amendment_number__c", "name__v"} <= names
    own = assert_ok(
        httpx.get(amendment_url, params={"includeInheritedFields": "false"}, headers=client.headers)
    )
    assert {p["name"] for p in own["properties"]} == {"amendment_number__c"}
    fields = assert_ok(client.get("/metadata/objects/documents/properties"))["properties"]
    study = next(f for f in fields if f["name"] == "study_number__c")
    assert study["required"] is True and study["definedIn"] == "clinical__c"
    lock = assert_ok(client.get("/metadata/objects/documents/lock"))
    assert {p["name"] for p in lock["properties"]} == {"locked_by__v", "locked_date__v"}
    assert_error(client.get("/metadata/objects/documents/types/nope__c"), "MALFORMED_URL")
