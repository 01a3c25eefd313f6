"""Files over real HTTP: downloads with Range, thumbnails, renditions, attachments."""

from __future__ import annotations

import hashlib
import os

import httpx
import pytest

from tests.conftest import EDITOR
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from vaultfs.testing.vault_process import VaultProcess

#: Files are what these tests are about: they run with the files in a bucket too.
pytestmark = pytest.mark.content_stores


@pytest.fixture
def client(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url, EDITOR)


def _new_doc(client: httpx.Client, content: bytes, filename: str = "data.bin") -> int:
    fields = {"type__v": "General", "lifecycle__v": "General Lifecycle", "name__v": "Files"}
    return int(assert_ok(upload(client, "/objects/documents", fields, filename, content))["id"])


def test_download_exact_bytes_headers_and_ranges(client: httpx.Client) -> None:
    content = os.urandom(3 * 1024 * 1024 + 17)  # several 1 MiB chunks and a tail
    doc_id = _new_doc(client, content, "report final.bin")
    r = client.get(f"/objects/documents/{doc_id}/file")
    assert r.status_code == 200 and r.content == content
    assert r.headers["content-length"] == str(len(content))
    assert r.headers["content-type"] == "application/octet-stream;charset=UTF-8"
    assert r.headers["content-disposition"] == 'attachment;filename="report final.bin"'
    record = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert record["md5checksum__v"] == hashlib.md5(content).hexdigest()
    tail = client.get(f"/objects/documents/{doc_id}/file", headers={"Range": "bytes=3000000-"})
    assert tail.status_code == 206 and tail.content == content[3_000_000:]
    assert tail.headers["content-range"] == f"bytes 3000000-{len(content) - 1}/{len(content)}"
    middle = client.get(
        f"/objects/documents/{doc_id}/versions/0/1/file", headers={"Range": "bytes=10-19"}
    )
    assert middle.status_code == 206 and middle.content == content[10:20]


def test_unicode_file_name_and_lock_on_download(client: httpx.Client) -> None:
    doc_id = _new_doc(client, b"x", "Überblick ✓.txt")
    r = client.get(f"/objects/documents/{doc_id}/file", params={"lockDocument": "true"})
    assert r.content == b"x"
    assert "filename*=UTF-8''%C3%9Cberblick%20%E2%9C%93.txt" in r.headers["content-disposition"]
    lock = assert_ok(client.get(f"/objects/documents/{doc_id}/lock"))["lock"]
    assert (
        lock["locked_by__v"]
        == assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]["created_by__v"]
    )
    assert_ok(client.delete(f"/objects/documents/{doc_id}/lock"))


def test_thumbnail_is_a_png(client: httpx.Client) -> None:
    doc_id = _new_doc(client, b"%PDF-1.4", "a.pdf")
    r = client.get(f"/objects/documents/{doc_id}/versions/0/1/thumbnail")
    assert r.status_code == 200 and r.headers["content-type"] == "image/png"
    assert r.content.startswith(b"\x89PNG\r\n\x1a\n")


def test_renditions_lifecycle(client: httpx.Client) -> None:
    doc_id = _new_doc(client, b"source")
    base = f"/objects/documents/{doc_id}"
    assert assert_ok(client.get(base + "/renditions"))["renditionTypes"] == []
    r = client.post(base + "/renditions/viewable_rendition__v", files={"file": ("v.pdf", b"v1")})
    assert_ok(r)
    r = client.post(base + "/renditions/viewable_rendition__v", files={"file": ("v.pdf", b"v2")})
    assert_error(r, "INVALID_DATA", mentions="already exists")
    assert_ok(
        client.put(base + "/renditions/viewable_rendition__v", files={"file": ("v.pdf", b"v2")})
    )
    listing = assert_ok(client.get(base + "/versions/0/1/renditions"))
    assert listing["renditionTypes"] == ["viewable_rendition__v"]
    assert (
        httpx.get(listing["renditions"]["viewable_rendition__v"], headers=client.headers).content
        == b"v2"
    )
    assert client.get(base + "/renditions/viewable_rendition__v").content == b"v2"
    # steadyState: only a M.0 version counts, and this document has none yet.
    assert_error(
        client.get(base + "/renditions/viewable_rendition__v", params={"steadyState": "true"}),
        "MALFORMED_URL",
    )
    assert_error(
        client.post(base + "/renditions/nope__c", files={"file": ("v", b"v")}),
        "MALFORMED_URL",
        mentions="nope__c",
    )
    assert_ok(client.delete(base + "/versions/0/1/renditions/viewable_rendition__v"))
    assert_error(client.get(base + "/renditions/viewable_rendition__v"), "MALFORMED_URL")


def test_attachments(client: httpx.Client) -> None:
    doc_id = _new_doc(client, b"source")
    base = f"/objects/documents/{doc_id}/attachments"
    first = assert_ok(
        client.post(
            base, files={"file": ("notes.txt", b"one")}, data={"description__v": "first notes"}
        )
    )["data"]
    same = assert_ok(client.post(base, files={"file": ("notes.txt", b"one")}))["data"]
    assert same == first  # same checksum and name: ignored, not versioned
    second = assert_ok(client.post(base, files={"file": ("notes.txt", b"two")}))["data"]
    assert second == {"id": first["id"], "version__v": 2}
    other = assert_ok(client.post(base, files={"file": ("other.txt", b"one")}))["data"]
    assert other["id"] != first["id"]
    listing = assert_ok(client.get(base))["data"]
    assert [a["filename__v"] for a in listing] == ["notes.txt", "other.txt"]
    notes = listing[0]
    assert notes["version__v"] == 2 and notes["md5checksum__v"] == hashlib.md5(b"two").hexdigest()
    assert [v["version__v"] for v in notes["versions"]] == [1, 2]
    one = f"{base}/{first['id']}"
    assert client.get(one + "/file").content == b"two"
    assert client.get(one + "/versions/1/file").content == b"one"
    assert [v["version__v"] for v in assert_ok(client.get(one + "/versions"))["data"]] == [1, 2]
    assert assert_ok(client.get(one))["data"][0]["id"] == first["id"]
    doc = assert_ok(client.get(f"/objects/documents/{doc_id}"))
    assert {a["id"] for a in doc["attachments"]} == {first["id"], other["id"]}
    assert_ok(client.delete(one))
    assert_error(client.get(one), "MALFORMED_URL", mentions=str(first["id"]))
    assert_error(client.get("/objects/documents/999999/attachments"), "INVALID_DOCUMENT")
