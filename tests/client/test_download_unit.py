"""Unit tests: downloads stream, resume at an offset (Range, or skipping when the server
ignores it), report length and file name, and raise what an error envelope says."""

from __future__ import annotations

import re

import httpx
import pytest

from vaultfs.errors import InvalidDocument, VaultUnavailable

from .mockvault import MockVault, failure

CONTENT = bytes(range(256)) * 40_000  # ~10 MiB, not a multiple of the pieces' size


def _file(*, honour_range: bool, chunk: int = 65_536):
    """A file endpoint streaming CONTENT in ``chunk``-sized pieces."""

    def handle(request: httpx.Request) -> httpx.Response:
        headers = {"Content-Disposition": 'attachment;filename="Q3 report.pdf"'}
        body, status = CONTENT, 200
        match = re.fullmatch(r"bytes=(\d+)-", request.headers.get("Range", ""))
        if honour_range and match:
            start = int(match.group(1))
            if start >= len(CONTENT):
                return httpx.Response(416)
            body, status = CONTENT[start:], 206
            headers["Content-Range"] = f"bytes {start}-{len(CONTENT) - 1}/{len(CONTENT)}"
        headers["Content-Length"] = str(len(body))
        pieces = [body[i : i + chunk] for i in range(0, len(body), chunk)]
        return httpx.Response(status, headers=headers, stream=_Stream(pieces))

    return handle


class _Stream(httpx.AsyncByteStream):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def __aiter__(self):
        for piece in self.pieces:
            yield piece


async def _read_all(download) -> bytes:
    return b"".join([piece async for piece in download.pieces()])


async def test_download_streams_the_whole_file_in_the_pieces_it_came_in() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/3/file"] = _file(honour_range=True)
    async with vault.client() as client, client.download_file(3) as download:
        assert download.length == len(CONTENT)
        assert download.filename == "Q3 report.pdf"
        assert download.offset == 0
        sizes = [len(piece) async for piece in download.pieces()]
    assert sum(sizes) == len(CONTENT)
    assert set(sizes[:-1]) == {65_536} and 0 < sizes[-1] <= 65_536
    request = vault.requests[-2]  # before the logout
    assert "Range" not in request.headers
    assert request.headers["Accept-Encoding"] == "identity"


@pytest.mark.parametrize("honour_range", [True, False])
@pytest.mark.parametrize("offset", [1, 65_535, 65_536, 3_000_001, len(CONTENT) - 1])
async def test_download_from_an_offset(offset: int, honour_range: bool) -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/3/versions/1/0/file"] = _file(honour_range=honour_range)
    async with vault.client() as client, client.download_file(3, 1, 0, offset=offset) as download:
        assert download.offset == offset
        assert download.length == len(CONTENT) - offset
        data = await _read_all(download)
    assert data == CONTENT[offset:]
    assert vault.requests[-2].headers["Range"] == f"bytes={offset}-"


async def test_the_bytes_before_the_offset_are_dropped_from_the_pieces() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/3/file"] = _file(honour_range=False, chunk=1000)
    async with vault.client() as client, client.download_file(3, offset=2010) as download:
        sizes = [len(piece) async for piece in download.pieces()]
    assert sizes[0] == 990 and set(sizes[1:-1]) == {1000}
    assert sum(sizes) == len(CONTENT) - 2010


async def test_offset_at_the_end_is_an_empty_download() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/3/file"] = _file(honour_range=True)
    async with vault.client() as client:
        async with client.download_file(3, offset=len(CONTENT)) as download:
            assert download.length == 0
            assert await _read_all(download) == b""
        # Past the end of a server that ignores Range: the file ended first.
        vault.routes["GET /objects/documents/3/file"] = _file(honour_range=False)
        async with client.download_file(3, offset=len(CONTENT) + 5) as download:
            with pytest.raises(VaultUnavailable, match="ended before offset"):
                await _read_all(download)


async def test_a_range_that_starts_elsewhere_is_refused() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/3/file"] = lambda r: httpx.Response(
        206, headers={"Content-Range": "bytes 0-9/10"}, content=b"0123456789"
    )
    async with vault.client() as client:
        with pytest.raises(VaultUnavailable, match="asked for bytes from 5"):
            async with client.download_file(3, offset=5):
                pass


async def test_error_envelope_instead_of_a_file_raises() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/3/renditions/viewable_rendition__v"] = lambda r: failure(
        "INVALID_DOCUMENT", "no such document", status=404
    )
    async with vault.client() as client:
        with pytest.raises(InvalidDocument, match="no such document"):
            async with client.download_rendition(3, "viewable_rendition__v"):
                pytest.fail("an error must not open a download")


async def test_expired_session_on_download_relogs_in() -> None:
    vault = MockVault()
    vault.routes["GET /objects/documents/3/attachments/8/versions/2/file"] = _file(
        honour_range=True
    )
    async with vault.client() as client:
        await client.login()
        vault.expire_sessions()
        async with client.download_attachment(3, 8, 2) as download:
            assert await _read_all(download) == CONTENT
    assert len(vault.logins) == 2


async def test_transport_error_mid_stream_is_unavailable() -> None:
    class Broken(httpx.AsyncByteStream):
        async def __aiter__(self):
            yield b"x" * 1000
            raise httpx.RemoteProtocolError("peer closed connection")

    vault = MockVault()
    vault.routes["GET /objects/documents/3/file"] = lambda r: httpx.Response(
        200, headers={"Content-Length": "5000"}, stream=Broken()
    )
    async with vault.client() as client, client.download_file(3) as download:
        with pytest.raises(VaultUnavailable, match="GET /objects/documents/3/file"):
            await _read_all(download)


async def test_download_paths() -> None:
    vault = MockVault()
    paths = [
        "/objects/documents/3/renditions/viewable_rendition__v",
        "/objects/documents/3/versions/2/1/renditions/viewable_rendition__v",
        "/objects/documents/3/attachments/8/file",
    ]
    for path in paths:
        vault.routes[f"GET {path}"] = _file(honour_range=True, chunk=len(CONTENT))
    async with vault.client() as client:
        async with client.download_rendition(3, "viewable_rendition__v") as d:
            assert await _read_all(d) == CONTENT
        async with client.download_rendition(3, "viewable_rendition__v", 2, 1) as d:
            assert await _read_all(d) == CONTENT
        async with client.download_attachment(3, 8) as d:
            assert await _read_all(d) == CONTENT
        with pytest.raises(ValueError):
            async with client.download_file(3, 1):
                pass
