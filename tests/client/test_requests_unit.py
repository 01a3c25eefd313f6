"""Unit tests: what the client sends (form vs multipart, streamed uploads, no empty
query parameters) and what it returns from each answer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import parse_qs

import httpx

from vaultfs.wire import parse_datetime

from .mockvault import MockVault, envelope, form_of


class StreamingVault(httpx.AsyncBaseTransport):
    """Reads request bodies piece by piece, recording the pieces' sizes."""

    def __init__(self, vault: MockVault) -> None:
        self.vault = vault
        self.pieces: list[int] = []
        self.body = b""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/attachments"):
            assert isinstance(request.stream, httpx.AsyncByteStream)
            parts = []
            async for piece in request.stream:
                self.pieces.append(len(piece))
                parts.append(piece)
            self.body = b"".join(parts)
            self.vault.requests.append(request)
            return envelope(data={"id": 4, "version__v": 1})
        return await self.vault.handle(request)


async def test_upload_streams_the_file_from_disk(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    content = bytes(range(256)) * 20_000  # ~5 MiB
    big.write_bytes(content)
    vault = MockVault()
    transport = StreamingVault(vault)
    async with vault.client(transport=transport) as client:
        assert await client.create_attachment(3, big) == {"id": 4, "version__v": 1}
    request = vault.requests[-2]
    assert request.headers["Content-Type"].startswith("multipart/form-data; boundary=")
    # A known length, not chunked: computed from the file size without reading it.
    assert int(request.headers["Content-Length"]) == len(transport.body)
    assert content in transport.body and b'filename="big.bin"' in transport.body
    assert max(transport.pieces) <= 1 << 20 and len(transport.pieces) > 5


async def test_create_sends_multipart_with_a_file_and_a_form_without(tmp_path: Path) -> None:
    source = tmp_path / "notes.txt"
    source.write_text("hello")
    vault = MockVault()
    vault.routes["POST /objects/documents"] = lambda r: envelope(id=12)
    async with vault.client() as client:
        fields = {"name__v": "Notes", "type__v": "general__c"}
        assert await client.create_document(fields, source) == 12
        assert await client.create_document(fields, None) == 12
    with_file, without = [r for r in vault.requests if r.url.path.endswith("/documents")]
    assert with_file.headers["Content-Type"].startswith("multipart/form-data")
    body = with_file.content
    assert b'name="name__v"\r\n\r\nNotes' in body and b"hello" in body
    assert b'name="file"; filename="notes.txt"' in body
    assert without.headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert form_of(without) == {"name__v": ["Notes"], "type__v": ["general__c"]}


async def test_create_draft_forms(tmp_path: Path) -> None:
    source = tmp_path / "v2.docx"
    source.write_bytes(b"new content")
    vault = MockVault()
    vault.routes["POST /objects/documents/5"] = lambda r: envelope(
        major_version_number__v=0, minor_version_number__v=3
    )
    async with vault.client() as client:
        assert await client.create_draft(5, source) == (0, 3)
        assert await client.create_draft(5, None) == (0, 3)
    uploaded, latest = [r for r in vault.requests if r.url.path.endswith("/documents/5")]
    assert b'name="createDraft"\r\n\r\nuploadedContent' in uploaded.content
    assert b"new content" in uploaded.content
    assert form_of(latest) == {"createDraft": ["latestContent"]}


async def test_updates_are_form_encoded_and_none_clears() -> None:
    vault = MockVault()
    vault.routes["PUT /objects/documents/5"] = lambda r: envelope(id=5)
    vault.routes["PUT /objects/documents/5/versions/0/2"] = lambda r: envelope(id=5)
    async with vault.client() as client:
        await client.update_document(5, {"title__v": "A & B", "description__v": None})
        await client.update_version(5, 0, 2, {"title__v": "old"})
        await client.update_document(5, {})  # nothing to say: no call
    puts = [r for r in vault.requests if r.method == "PUT"]
    assert len(puts) == 2
    assert puts[0].headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert form_of(puts[0]) == {"title__v": ["A & B"], "description__v": [""]}
    assert form_of(puts[1]) == {"title__v": ["old"]}


async def test_list_documents_sends_only_given_parameters() -> None:
    vault = MockVault()
    page = [{"document": {"id": 1}}, {"document": {"id": 2}}]
    vault.routes["GET /objects/documents"] = lambda r: envelope(
        size=2, start=0, limit=200, documents=page
    )
    async with vault.client() as client:
        result = await client.list_documents()
        await client.list_documents(start=200, limit=50, sort="version_modified_date__v desc")
    assert result.documents == [{"id": 1}, {"id": 2}]
    assert (result.size, result.start, result.limit) == (2, 0, 200)
    first, second = [r for r in vault.requests if r.url.path.endswith("/documents")]
    assert parse_qs(first.url.query.decode(), keep_blank_values=True) == {"limit": ["200"]}
    assert parse_qs(second.url.query.decode()) == {
        "start": ["200"],
        "limit": ["50"],
        "sort": ["version_modified_date__v desc"],
    }


async def test_deleted_documents_pages_and_clamps_the_window() -> None:
    vault = MockVault()
    records = [{"id": n, "date_deleted": "2025-01-01T00:00:00.000Z"} for n in range(5)]
    queries: list[dict[str, list[str]]] = []

    def handle(request: httpx.Request) -> httpx.Response:
        query = parse_qs(request.url.query.decode())
        queries.append(query)
        offset, limit = int(query.get("offset", ["0"])[0]), 2
        data = records[offset : offset + limit]
        details = {"offset": offset, "limit": limit, "size": len(data), "total": len(records)}
        return envelope(responseDetails=details, data=data)

    vault.routes["GET /objects/deletions/documents"] = handle
    async with vault.client() as client:
        since = datetime.now(UTC) - timedelta(days=90)
        assert await client.deleted_documents(since) == records
        assert await client.deleted_documents() == records
    assert [q.get("offset") for q in queries[:3]] == [None, ["2"], ["4"]]
    start = parse_datetime(queries[0]["start_date"][0])
    assert timedelta(days=29) < datetime.now(UTC) - start < timedelta(days=30)
    assert "start_date" not in queries[3]


async def test_deleted_documents_stops_when_the_server_ignores_offset() -> None:
    vault = MockVault()
    details = {"offset": 0, "limit": 1, "size": 1, "total": 3}
    vault.routes["GET /objects/deletions/documents"] = lambda r: envelope(
        responseDetails=details, data=[{"id": 1}]
    )
    async with vault.client() as client:
        assert await client.deleted_documents() == [{"id": 1}, {"id": 1}]
    assert vault.count("GET /objects/deletions/documents") == 2


async def test_metadata_and_lock_answers() -> None:
    vault = MockVault()
    types = [{"label": "General", "value": "http://vault.test/api/v25.1/x"}]
    vault.routes["GET /metadata/objects/documents/types"] = lambda r: envelope(types=types)
    vault.routes["GET /metadata/objects/documents/types/general__c"] = lambda r: envelope(
        name="general__c", label="General", subtypes=[]
    )
    vault.routes["GET /metadata/objects/documents/types/a/subtypes/b/classifications/c d"] = (
        lambda r: envelope(name="c d", properties=[])
    )
    vault.routes["GET /metadata/objects/documents/properties"] = lambda r: envelope(
        properties=[{"name": "id"}]
    )
    vault.routes["GET /objects/documents/5/lock"] = lambda r: envelope(
        lock={"locked_by__v": 42, "locked_date__v": "2025-01-01T00:00:00.000Z"}
    )
    vault.routes["GET /objects/documents/6/lock"] = lambda r: envelope()
    vault.routes["POST /objects/documents/5/lock"] = lambda r: envelope()
    vault.routes["DELETE /objects/documents/5/lock"] = lambda r: envelope()
    vault.routes["GET /objects/documents/5/renditions"] = lambda r: envelope(
        renditionTypes=["viewable_rendition__v"], renditions={"viewable_rendition__v": "u"}
    )
    vault.routes["GET /objects/documents/5/attachments"] = lambda r: envelope(data=[{"id": 1}])
    async with vault.client() as client:
        assert await client.document_types() == types
        assert await client.document_type("general__c") == {
            "name": "general__c",
            "label": "General",
            "subtypes": [],
        }
        assert (await client.document_classification("a", "b", "c d"))["name"] == "c d"
        assert await client.document_properties() == [{"name": "id"}]
        assert (await client.get_lock(5))["locked_by__v"] == 42
        assert await client.get_lock(6) is None
        await client.lock(5)
        await client.unlock(5)
        assert await client.list_renditions(5) == {"viewable_rendition__v": "u"}
        assert await client.list_attachments(5) == [{"id": 1}]
    lock = next(r for r in vault.requests if r.method == "POST" and r.url.path.endswith("/lock"))
    assert lock.content == b""
    assert any(r.url.raw_path.endswith(b"/classifications/c%20d") for r in vault.requests)
