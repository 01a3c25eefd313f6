"""File download responses: a stored file streamed in 1 MiB chunks, with Range support.

From the directory store, Starlette's ``FileResponse`` sends the file (exact
``Content-Length``; ``Range: bytes=N-`` / ``bytes=N-M`` answered with 206, which the
bridge uses to resume and to read at offsets); the subclass only raises its chunk
size and sets the API's headers.

From a bucket, ``_StoredResponse`` asks the store for the range the client asked for
(one request to the bucket, which reads only those bytes) and passes the body on
chunk by chunk, each read in a worker thread: never the whole file in memory. It
answers like ``FileResponse``: ``Accept-Ranges``, 206 with ``Content-Range`` for one
range (``N-``, ``N-M``, ``-N``), 416 with ``Content-Range: bytes */SIZE`` past the
end, the whole file (200) for several ranges or an ``If-Range`` that does not match.
Its ``ETag`` is the content's sha256, which never changes.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping

import trio
from starlette.datastructures import Headers, MutableHeaders
from starlette.responses import FileResponse, Response
from starlette.types import Receive, Scope, Send

from vaultfs.errors import ServerException

from .storage.content import ContentStore, ContentUnavailable, RangeNotSatisfiable, Reading

__all__ = ["OCTET_STREAM", "content_disposition", "file_response"]

OCTET_STREAM = "application/octet-stream;charset=UTF-8"
_CHUNK = 1024 * 1024
_ONE_RANGE = re.compile(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*")


class _BlobResponse(FileResponse):
    chunk_size = _CHUNK


def content_disposition(filename: str) -> str:
    """``attachment;filename="<name>"``, plus ``filename*`` when the name is not ASCII."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in filename)
    value = f'attachment;filename="{fallback}"'
    if fallback != filename:
        value += ";filename*=UTF-8''" + urllib.parse.quote(filename, safe="")
    return value


def file_response(
    store: ContentStore, sha256: str, filename: str, media_type: str = OCTET_STREAM
) -> Response:
    headers = {"Content-Disposition": content_disposition(filename)}
    path = store.local_path(sha256)
    if path is not None:
        return _BlobResponse(path, media_type=media_type, headers=headers)
    return _StoredResponse(store, sha256, media_type, headers)


def _requested_range(value: str | None) -> tuple[int | None, int | None] | None:
    """(first, last) of a single byte range (see ``ContentStore.read``), or None for the
    whole file: no Range, several ranges, or one this server does not serve."""
    if value is None:
        return None
    found = _ONE_RANGE.fullmatch(value)
    if found is None or not (found.group(1) or found.group(2)):
        return None
    first = int(found.group(1)) if found.group(1) else None
    last = int(found.group(2)) if found.group(2) else None
    if first is not None and last is not None and last < first:
        return None  # not a valid range: the whole file
    if first is None and last == 0:
        return None
    return first, last


class _StoredResponse(Response):
    def __init__(
        self, store: ContentStore, sha256: str, media_type: str, headers: Mapping[str, str]
    ) -> None:
        super().__init__(media_type=media_type, headers=headers)
        self.store = store
        self.sha256 = sha256
        self.headers["accept-ranges"] = "bytes"
        self.headers["etag"] = f'"{sha256}"'
        if "content-length" in self.headers:
            del self.headers["content-length"]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Headers(scope=scope)
        wanted = _requested_range(request.get("range"))
        if_range = request.get("if-range")
        if wanted is not None and if_range is not None and if_range != self.headers["etag"]:
            wanted = None
        try:
            reading = await trio.to_thread.run_sync(self._open, wanted)
        except RangeNotSatisfiable as exc:
            answer = Response(status_code=416, headers={"Content-Range": f"bytes */{exc.size}"})
            await answer(scope, receive, send)
            return
        try:
            await self._send(scope, send, reading, partial=wanted is not None)
        finally:
            with trio.CancelScope(shield=True):
                await trio.to_thread.run_sync(reading.body.close)

    def _open(self, wanted: tuple[int | None, int | None] | None) -> Reading:
        try:
            if wanted is None:
                return self.store.read(self.sha256)
            return self.store.read(self.sha256, *wanted)
        except (FileNotFoundError, ContentUnavailable) as exc:
            raise ServerException(
                f"The file's content cannot be read from the vault's file store now ({exc})"
            ) from exc

    async def _send(self, scope: Scope, send: Send, reading: Reading, *, partial: bool) -> None:
        headers = MutableHeaders(raw=list(self.raw_headers))
        headers["content-length"] = str(reading.length)
        status = 200
        if partial:
            status = 206
            end = reading.start + reading.length - 1
            headers["content-range"] = f"bytes {reading.start}-{end}/{reading.size}"
        await send({"type": "http.response.start", "status": status, "headers": headers.raw})
        if scope["method"].upper() == "HEAD":
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        left = reading.length
        while left > 0:
            chunk = await trio.to_thread.run_sync(reading.body.read, min(_CHUNK, left))
            if not chunk:
                raise ContentUnavailable(f"{self.sha256} ended {left} bytes early")
            left -= len(chunk)
            await send({"type": "http.response.body", "body": chunk, "more_body": left > 0})
        if reading.length == 0:
            await send({"type": "http.response.body", "body": b"", "more_body": False})
