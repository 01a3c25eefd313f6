"""API versions: the served labels, and features gated by the version that introduced them."""

from __future__ import annotations

import httpx

from tests.conftest import login
from tests.server.helpers import assert_error, assert_ok
from vaultfs.server.versions import API_VERSIONS, at_least
from vaultfs.testing.vault_process import VaultProcess


def _client(url: str, version: str) -> httpx.Client:
    return httpx.Client(
        base_url=f"{url}/api/{version}", headers={"Authorization": login(url)}, timeout=30
    )


def _first_document(client: httpx.Client) -> int:
    body = assert_ok(client.get("/objects/documents", params={"limit": 1}))
    doc_id: int = body["documents"][0]["document"]["id"]
    return doc_id


def test_version_list_runs_from_v2_to_the_newest(vault_server: VaultProcess) -> None:
    values = assert_ok(httpx.get(vault_server.url + "/api/"))["values"]
    labels = list(values)
    assert labels[0] == "v2.0" and labels[-1] == "v26.3"
    assert labels == list(API_VERSIONS)
    majors = sorted({int(label[1:].split(".")[0]) for label in labels})
    assert majors == list(range(2, 27))
    assert all(values[label].endswith(f"/api/{label}") for label in labels)


def test_unsupported_versions_are_malformed_urls(vault_server: VaultProcess) -> None:
    session = login(vault_server.url)
    for label in ("v99.0", "v1.0", "v25.9", "latest"):
        r = httpx.get(
            f"{vault_server.url}/api/{label}/metadata/objects", headers={"Authorization": session}
        )
        assert_error(r, "MALFORMED_URL", 404, mentions=label)


def test_endpoints_gated_by_version(vault_server: VaultProcess) -> None:
    old, new = _client(vault_server.url, "v5.0"), _client(vault_server.url, "v25.1")
    doc_id = _first_document(new)
    doc = f"/objects/documents/{doc_id}"
    version = assert_ok(new.get(f"{doc}/versions"))["versions"][0]["number"].replace(".", "/")
    gated = {
        # path: version that introduced it
        f"{doc}/versions/{version}/thumbnail": "v6.0",
        f"{doc}/versions/{version}/renditions": "v7.0",
        "/objects/domains": "v7.0",
        f"{doc}/attachments": "v12.0",
        "/limits": "v14.0",
    }
    for path, since in gated.items():
        major = int(since[1:].split(".")[0])
        before = _client(vault_server.url, f"v{major - 1}.0")
        r = before.get(path)
        assert_error(r, "MALFORMED_URL", 404, mentions=since)
        at = _client(vault_server.url, since).get(path)
        assert at.status_code == 200, (path, at.text)
    # Features of v1 are there in every served version.
    assert_ok(old.get(f"{doc}/renditions"))
    assert_ok(old.get(doc))


def test_lock_on_download_is_ignored_before_v6(vault_server: VaultProcess) -> None:
    old, new = _client(vault_server.url, "v5.0"), _client(vault_server.url, "v25.1")
    doc_id = _first_document(new)
    try:
        r = old.get(f"/objects/documents/{doc_id}/file", params={"lockDocument": "true"})
        assert r.status_code == 200
        assert "lock" not in assert_ok(new.get(f"/objects/documents/{doc_id}/lock"))
        r = new.get(f"/objects/documents/{doc_id}/file", params={"lockDocument": "true"})
        assert r.status_code == 200
        assert "lock" in assert_ok(new.get(f"/objects/documents/{doc_id}/lock"))
    finally:
        new.delete(f"/objects/documents/{doc_id}/lock")


def test_remaining_call_headers_from_v14(vault_server: VaultProcess) -> None:
    for label, shown in (("v13.0", False), ("v14.0", True), ("v25.1", True)):
        r = _client(vault_server.url, label).get("/metadata/objects")
        assert_ok(r)
        assert ("X-ServiceAPI-BurstLimitRemaining" in r.headers) is shown, label
        assert ("X-ServiceAPI-DailyLimitRemaining" in r.headers) is shown, label
        assert "X-ServiceAPI-ExecutionId" in r.headers


def test_version_comparison() -> None:
    assert at_least("v14.0", "v14.0") and at_least("v15.1", "v14.0")
    assert not at_least("v9.3", "v14.0")
    assert at_least("v10.0", "v9.0")  # numeric, not text order
    assert not at_least("nonsense", "v2.0")


def test_record_fields_appear_with_their_version(vault_server: VaultProcess) -> None:
    """``binder__v`` came with v5 and ``version_id`` with v15: older versions omit them."""
    records = {}
    for version in ("v4.0", "v14.0", "v25.1"):
        client = _client(vault_server.url, version)
        doc_id = _first_document(client)
        listed = assert_ok(client.get("/objects/documents", params={"limit": 1}))
        read = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
        assert listed["documents"][0]["document"].keys() == read.keys()
        records[version] = read
    assert "binder__v" not in records["v4.0"] and "version_id" not in records["v4.0"]
    assert "binder__v" in records["v14.0"] and "version_id" not in records["v14.0"]
    assert "binder__v" in records["v25.1"] and "version_id" in records["v25.1"]
