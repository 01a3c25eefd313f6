"""Content search, named filters, find_common and CrossLink creation over real HTTP."""

from __future__ import annotations

import uuid
import zlib
from pathlib import Path

import httpx
import pytest

from tests.conftest import EDITOR
from tests.server.helpers import api_client, assert_error, assert_ok, upload
from tests.server.versioned import at_version
from vaultfs.server.storage.search import extract_text
from vaultfs.testing.vault_process import VaultProcess

#: Files are what these tests are about: they run with the files in a bucket too.
pytestmark = pytest.mark.content_stores

GENERAL = {"type__v": "General", "lifecycle__v": "General Lifecycle"}


@pytest.fixture
def client(vault_server: VaultProcess) -> httpx.Client:
    return api_client(vault_server.url, EDITOR)


def ids(body: dict) -> list[int]:
    return [d["document"]["id"] for d in body["documents"]]


def test_content_search_and_highlights(client: httpx.Client) -> None:
    word = "zq" + uuid.uuid4().hex[:8]
    fields = {**GENERAL, "name__v": "Plain name"}
    doc = assert_ok(
        upload(
            client, "/objects/documents", fields, "a.md", f"# Notes\nthe {word} clause\n".encode()
        )
    )["id"]
    named = assert_ok(
        upload(client, "/objects/documents", {**GENERAL, "name__v": f"About {word}"}, "b.txt", b"-")
    )["id"]
    fields_only = assert_ok(client.get("/objects/documents", params={"search": word}))
    assert ids(fields_only) == [named]
    contents = assert_ok(
        client.get("/objects/documents", params={"search": word, "scope": "contents"})
    )
    assert ids(contents) == [doc]
    [hit] = contents["documents"][0]["document"]["term_highlights"]
    assert hit == {
        "name": "content",
        "highlight": [word],
        "major_version_number__v": 0,
        "minor_version_number__v": 1,
    }
    everything = assert_ok(
        client.get("/objects/documents", params={"search": word, "scope": "all"})
    )
    assert sorted(ids(everything)) == sorted([doc, named])
    # Every keyword must match; prefixes match content words.
    both = {"search": f"{word[:6]} clause", "scope": "contents"}
    assert ids(assert_ok(client.get("/objects/documents", params=both))) == [doc]
    none = {"search": f"{word} absentword", "scope": "contents"}
    assert ids(assert_ok(client.get("/objects/documents", params=none))) == []
    assert_error(
        client.get("/objects/documents", params={"search": word, "scope": "x"}), "INVALID_DATA"
    )
    # A new draft's text is searchable; v3 does not know scope (fields only).
    other = "zq" + uuid.uuid4().hex[:8]
    assert_ok(client.post(f"/objects/documents/{doc}", files={"file": ("a.md", other.encode())}))
    found = assert_ok(
        client.get("/objects/documents", params={"search": other, "scope": "contents"})
    )
    assert ids(found) == [doc]
    old = at_version(client, "v3.0").get(
        "/objects/documents", params={"search": other, "scope": "contents"}
    )
    assert ids(assert_ok(old)) == []


def test_demo_pdf_and_docx_text_is_searchable(client: httpx.Client) -> None:
    for name in ("Employee Handbook", "Travel Policy"):  # a PDF and a .docx in the demo
        params = {"search": "sample content", "scope": "contents", "limit": 200}
        names = {
            d["document"]["name__v"]
            for d in assert_ok(client.get("/objects/documents", params=params))["documents"]
        }
        assert name in names


def test_named_filters(vault_server: VaultProcess) -> None:
    editor = api_client(vault_server.url, EDITOR)
    admin = api_client(vault_server.url)
    mine = assert_ok(
        upload(editor, "/objects/documents", {**GENERAL, "name__v": "mine"}, "m.txt", b"m")
    )["id"]
    theirs = assert_ok(
        upload(admin, "/objects/documents", {**GENERAL, "name__v": "theirs"}, "t.txt", b"t")
    )["id"]
    my_docs = ids(
        assert_ok(editor.get("/objects/documents", params={"named_filter": "My Documents"}))
    )
    assert mine in my_docs and theirs not in my_docs
    favourites = {"named_filter": "Favorites"}
    assert theirs not in ids(assert_ok(editor.get("/objects/documents", params=favourites)))
    assert_ok(editor.post(f"/objects/documents/{theirs}/favorite"))
    assert ids(assert_ok(editor.get("/objects/documents", params=favourites))) == [theirs]
    assert ids(assert_ok(admin.get("/objects/documents", params=favourites))) == []
    assert_ok(editor.delete(f"/objects/documents/{theirs}/favorite"))
    assert ids(assert_ok(editor.get("/objects/documents", params=favourites))) == []


def test_find_common(client: httpx.Client) -> None:
    url = "/metadata/objects/documents/properties/find_common"
    general = assert_ok(client.post(url, data={"docIds": "1"}))["properties"]
    assert "audience__c" not in {p["name"] for p in general}
    # 10 is an Advertisement (audience__c), 12 a Brochure: audience__c is shared.
    both = assert_ok(client.post(url, data={"docIds": "10,12"}))["properties"]
    audience = next(p for p in both if p["name"] == "audience__c")
    assert audience["shared"] is True
    assert {u["key"] for u in audience["usedIn"]} == {"advertisement__c", "brochure__c"}
    mixed = {p["name"] for p in assert_ok(client.post(url, data={"docIds": "1,10"}))["properties"]}
    assert "name__v" in mixed and "audience__c" not in mixed
    assert_error(client.post(url, data={}), "PARAMETER_REQUIRED")
    assert_error(client.post(url, data={"docIds": "1,x"}), "INVALID_DATA")
    assert_error(client.post(url, data={"docIds": "999999"}), "INVALID_DOCUMENT")


def test_crosslink_create(client: httpx.Client) -> None:
    fields = {
        **GENERAL,
        "name__v": "Linked",
        "source_vault_id__v": "1",
        "source_document_id__v": "1",
        "source_binding_rule__v": "Specific Document version",
        "bound_source_major_version__v": "1",
        "bound_source_minor_version__v": "0",
    }
    doc_id = assert_ok(client.post("/objects/documents", data=fields))["id"]
    doc = assert_ok(client.get(f"/objects/documents/{doc_id}"))["document"]
    assert doc["crosslink__v"] is True and doc["source_document_id__v"] == 1
    assert doc["source_binding_rule__v"] == "Specific Document version"
    assert (doc["bound_source_major_version__v"], doc["bound_source_minor_version__v"]) == (1, 0)
    assert_error(
        client.post("/objects/documents", data={**fields, "bound_source_major_version__v": "8"}),
        "INVALID_DATA",
        mentions="8.0",
    )
    assert_error(
        client.post("/objects/documents", data={**fields, "source_document_id__v": "999999"}),
        "INVALID_DATA",
        mentions="999999",
    )
    assert_error(
        client.post("/objects/documents", data={**fields, "source_binding_rule__v": "whenever"}),
        "INVALID_DATA",
        mentions="binding",
    )
    old = at_version(client, "v9.0").post("/objects/documents", data=fields)
    assert_error(old, "INVALID_DATA", mentions="source_")


def test_pdf_text_comes_from_plain_and_compressed_streams_in_one_pass(tmp_path: Path) -> None:
    page = b"BT (plain words) Tj ET"
    packed = zlib.compress(b"BT (packed \\(words\\)) Tj ET")
    pdf = (
        b"%PDF-1.4\n1 0 obj\n<< /Length 22 /Resources << /Font << >> >> >>\nstream\n"
        + page
        + b"\nendstream\nendobj\n2 0 obj\n<< /Filter /FlateDecode /Length 9 >>\nstream\n"
        + packed
        + b"\r\nendstream\nendobj\n"
    )
    (tmp_path / "a.pdf").write_bytes(pdf)
    assert extract_text(tmp_path / "a.pdf", "a.pdf") == "plain words\npacked (words)"
    # Bytes that are no PDF, full of dictionary openings and never a stream: no text
    # (the scan is linear; a pattern from each "<<" to "endstream" took minutes here).
    (tmp_path / "b.pdf").write_bytes(b"<< /x " * 400_000)
    assert extract_text(tmp_path / "b.pdf", "b.pdf") is None
