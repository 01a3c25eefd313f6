"""Request bodies of forms: url-encoded, or multipart streamed into the blob store.

``read_form`` parses ``multipart/form-data`` as the body arrives (python-multipart's
streaming parser over ``request.stream()``): text parts are kept (small, bounded),
file parts go straight into a ``BlobWriter`` while being hashed, never whole in
memory. Files are moved into the blob store only once the whole body has been
parsed; a body that stops short, a client that disconnects, or a malformed body
removes every temp file, so an aborted upload leaves nothing behind.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect, Request

from vaultfs.errors import InvalidData

from .storage.blobs import BlobStore, BlobWriter, StoredFile, TooLarge

__all__ = ["Form", "read_form"]

#: Bound of a url-encoded body and of each text part (they hold field values only).
_MAX_TEXT = 16 * 1024 * 1024


@dataclass
class Form:
    fields: dict[str, str] = field(default_factory=dict)
    files: dict[str, StoredFile] = field(default_factory=dict)


@dataclass
class _Part:
    headers: dict[str, bytes] = field(default_factory=dict)
    name: str = ""
    filename: str | None = None
    text: list[bytes] = field(default_factory=list)
    text_size: int = 0
    writer: BlobWriter | None = None


class _Collector:
    """Callbacks of the sync parser; they only record events for the async side."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.ended = False
        self._field = b""
        self._value = b""

    def callbacks(self) -> dict[str, Callable[..., None]]:
        return {
            "on_part_begin": lambda: self.events.append(("begin", None)),
            "on_part_data": lambda d, s, e: self.events.append(("data", bytes(d[s:e]))),
            "on_part_end": lambda: self.events.append(("end", None)),
            "on_header_field": self._header_field,
            "on_header_value": self._header_value,
            "on_header_end": self._header_end,
            "on_headers_finished": lambda: self.events.append(("headers_done", None)),
            "on_end": self._end,
        }

    def _header_field(self, data: bytes, start: int, end: int) -> None:
        self._field += data[start:end]

    def _header_value(self, data: bytes, start: int, end: int) -> None:
        self._value += data[start:end]

    def _header_end(self) -> None:
        self.events.append(("header", (self._field.lower(), self._value)))
        self._field, self._value = b"", b""

    def _end(self) -> None:
        self.ended = True


async def read_form(
    request: Request, blobs: BlobStore, *, max_file_size: int, file_fields: frozenset[str]
) -> Form:
    """The fields and files of a request body (query parameters are not included)."""
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    if content_type == b"multipart/form-data":
        boundary = options.get(b"boundary")
        if not boundary:
            raise InvalidData("Malformed multipart body: the Content-Type has no boundary")
        return await _read_multipart(request, blobs, boundary, max_file_size, file_fields)
    body = await _read_small(request)
    if content_type in (b"application/x-www-form-urlencoded", b"") or not body:
        try:
            pairs = urllib.parse.parse_qsl(
                body.decode(), keep_blank_values=True, strict_parsing=False
            )
        except UnicodeDecodeError:
            raise InvalidData("The form body is not valid UTF-8") from None
        return Form(fields=dict(pairs))
    raise InvalidData(
        f"Unsupported Content-Type '{content_type.decode(errors='replace')}': send "
        "multipart/form-data or application/x-www-form-urlencoded"
    )


async def _read_small(request: Request) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > _MAX_TEXT:
            raise InvalidData("The form body is too large")
        chunks.append(chunk)
    return b"".join(chunks)


async def _read_multipart(
    request: Request,
    blobs: BlobStore,
    boundary: bytes,
    max_file_size: int,
    file_fields: frozenset[str],
) -> Form:
    collector = _Collector()
    try:
        parser = MultipartParser(boundary, collector.callbacks())  # type: ignore[arg-type]
    except Exception as exc:
        raise InvalidData(f"Malformed multipart body: {exc}") from None
    form = Form()
    writers: list[tuple[str, str, BlobWriter]] = []
    part = _Part()
    try:
        async for chunk in request.stream():
            try:
                parser.write(chunk)
            except Exception as exc:
                raise InvalidData(f"Malformed multipart body: {exc}") from None
            for kind, value in collector.events:
                part = await _apply(
                    kind, value, part, form, writers, blobs, max_file_size, file_fields
                )
            collector.events.clear()
        if not collector.ended:
            raise InvalidData("Malformed multipart body: it ended before the closing boundary")
        for name, filename, writer in writers:
            form.files[name] = StoredFile(blob=await writer.finish(), filename=filename)
        writers.clear()
        return form
    except ClientDisconnect:
        raise InvalidData("The client closed the connection before the body was complete") from None
    except TooLarge as exc:
        raise InvalidData(f"The uploaded file is too large: {exc}") from None
    finally:
        for _, _, writer in writers:
            await writer.abort()


async def _apply(
    kind: str,
    value: Any,
    part: _Part,
    form: Form,
    writers: list[tuple[str, str, BlobWriter]],
    blobs: BlobStore,
    max_file_size: int,
    file_fields: frozenset[str],
) -> _Part:
    if kind == "begin":
        return _Part()
    if kind == "header":
        part.headers[value[0].decode("latin-1")] = value[1]
    elif kind == "headers_done":
        _, disposition = parse_options_header(part.headers.get("content-disposition", b""))
        part.name = disposition.get(b"name", b"").decode("utf-8", errors="replace")
        if b"filename" in disposition:
            part.filename = disposition[b"filename"].decode("utf-8", errors="replace")
        if part.name in file_fields:
            if not part.filename:
                raise InvalidData(f"Malformed multipart body: part [{part.name}] has no filename")
            part.writer = blobs.writer(max_file_size)
            writers.append((part.name, _clean_filename(part.filename), part.writer))
            await part.writer.open()
    elif kind == "data":
        if part.writer is not None:
            await part.writer.write(value)
        else:
            part.text_size += len(value)
            if part.text_size > _MAX_TEXT:
                raise InvalidData(f"Form field [{part.name}] is too large")
            part.text.append(value)
    elif kind == "end" and part.writer is None and part.name:
        try:
            form.fields[part.name] = b"".join(part.text).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidData(f"Form field [{part.name}] is not valid UTF-8") from None
    return part


def _clean_filename(name: str) -> str:
    """The last path segment of a client's file name (never a path)."""
    name = name.replace("\\", "/").rsplit("/", 1)[-1].replace("\0", "")
    return name if name not in ("", ".", "..") else "file"
