"""Request bodies of forms: url-encoded, JSON, or multipart streamed into the content store.

``read_form`` parses ``multipart/form-data`` as the body arrives (python-multipart's
streaming parser over ``request.stream()``): text parts are kept (small, bounded),
file parts go straight into a ``BlobWriter`` while being hashed, never whole in
memory. Files go into the content store (the directory, or the bucket) only once the
whole body has been parsed; a body that stops short, a client that disconnects, or a
malformed body removes every temp file, so an aborted upload leaves nothing behind.
A store that refuses the file answers ``OPERATION_NOT_ALLOWED`` (a FAILURE, never a
5xx that would make a client send a create again): nothing was made.

Lenient where real clients are sloppy (docs/server.md, "What the local vault accepts
beyond the spec"): a multipart ``Content-Type`` without ``boundary`` takes the boundary
from the body's first line (or, when the body is no multipart at all, is read as
url-encoded); a JSON object is accepted wherever a form is (``application/json``, or
a url-encoded ``Content-Type`` whose body is a JSON object), its values turned into the
strings a form would carry.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from python_multipart.multipart import MultipartParser, parse_options_header
from starlette.requests import ClientDisconnect, Request

from vaultfs.errors import InvalidData, OperationNotAllowed

from .storage import search
from .storage.content import (
    BlobWriter,
    ContentStore,
    ContentUnavailable,
    Inspect,
    StoredFile,
    TooLarge,
)

__all__ = ["Form", "read_form"]

#: Bound of a url-encoded body and of each text part (they hold field values only).
_MAX_TEXT = 16 * 1024 * 1024
#: Longest first line that can carry a multipart boundary (RFC 2046: at most 70
#: characters, plus the leading ``--`` and some slack for trailing blanks).
_MAX_BOUNDARY_LINE = 100
_FORM_TYPES = (b"application/x-www-form-urlencoded", b"")


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


@dataclass(frozen=True)
class _Files:
    """How file parts are received: into which store, up to which size, which form
    fields are files, and whether their searchable text is extracted."""

    store: ContentStore
    max_size: int
    fields: frozenset[str]
    with_text: bool

    def inspect(self, filename: str) -> Inspect | None:
        if not self.with_text:
            return None
        return lambda path: search.extract_text(path, filename)


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
    request: Request,
    blobs: ContentStore,
    *,
    max_file_size: int,
    file_fields: frozenset[str],
    with_text: bool = False,
) -> Form:
    """The fields and files of a request body (query parameters are not included);
    ``with_text``: each file's searchable text is extracted too (``StoredFile.text``)."""
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    content_type = content_type.lower()
    stream = _chunks(request)
    files = _Files(blobs, max_file_size, file_fields, with_text)
    if content_type == b"multipart/form-data":
        boundary = options.get(b"boundary")
        if boundary:
            return await _read_multipart(stream, files, boundary)
        head, stream = await _first_line(stream)
        if head.startswith(b"--") and len(head) > 2:
            boundary = head[2:].rstrip()
            return await _read_multipart(stream, files, boundary)
        # No boundary, and a body that is no multipart: what the client's HTTP library
        # sent when it had no file to attach is a url-encoded form.
        content_type = b"application/x-www-form-urlencoded"
    body = await _read_small(stream)
    if not body.strip():
        return Form()  # whatever the Content-Type says, no fields were sent
    if content_type == b"application/json" or content_type.endswith(b"+json"):
        return Form(fields=_json_fields(body))
    if content_type in _FORM_TYPES:
        if body.lstrip().startswith(b"{"):
            return Form(fields=_json_fields(body))
        try:
            pairs = urllib.parse.parse_qsl(
                body.decode(), keep_blank_values=True, strict_parsing=False
            )
        except UnicodeDecodeError:
            raise InvalidData("The form body is not valid UTF-8") from None
        return Form(fields=dict(pairs))
    raise InvalidData(
        f"Unsupported Content-Type '{content_type.decode(errors='replace')}': send "
        "multipart/form-data, application/x-www-form-urlencoded or application/json"
    )


async def _chunks(request: Request) -> AsyncIterator[bytes]:
    try:
        async for chunk in request.stream():
            yield chunk
    except ClientDisconnect:
        raise InvalidData("The client closed the connection before the body was complete") from None


async def _first_line(stream: AsyncIterator[bytes]) -> tuple[bytes, AsyncIterator[bytes]]:
    """The body's first line (without its end), and the whole body again as a stream."""
    head = b""
    async for chunk in stream:
        head += chunk
        if b"\n" in head or len(head) > _MAX_BOUNDARY_LINE:
            break
    line = head.split(b"\n", 1)[0].rstrip(b"\r")
    if len(line) > _MAX_BOUNDARY_LINE:
        line = b""

    async def again() -> AsyncIterator[bytes]:
        if head:
            yield head
        async for chunk in stream:
            yield chunk

    return line, again()


def _text(value: Any) -> str:
    """A JSON value as the text of a form field."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_text(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _json_fields(body: bytes) -> dict[str, str]:
    """The fields of a JSON object body; a nested object ``{"viewer__v": {"users":
    [2, 3]}}`` gives the dotted form fields ``viewer__v.users=2,3``."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        raise InvalidData("The JSON body is malformed") from None
    if not isinstance(data, dict):
        raise InvalidData("The JSON body must be an object of field names and values")
    fields: dict[str, str] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            fields.update({f"{key}.{k}": _text(v) for k, v in value.items()})
        else:
            fields[key] = _text(value)
    return fields


async def _read_small(stream: AsyncIterator[bytes]) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in stream:
        size += len(chunk)
        if size > _MAX_TEXT:
            raise InvalidData("The form body is too large")
        chunks.append(chunk)
    return b"".join(chunks)


async def _read_multipart(stream: AsyncIterator[bytes], files: _Files, boundary: bytes) -> Form:
    collector = _Collector()
    try:
        parser = MultipartParser(boundary, collector.callbacks())  # type: ignore[arg-type]
    except Exception as exc:
        raise InvalidData(f"Malformed multipart body: {exc}") from None
    form = Form()
    writers: list[tuple[str, str, BlobWriter]] = []
    part = _Part()
    try:
        async for chunk in stream:
            try:
                parser.write(chunk)
            except Exception as exc:
                raise InvalidData(f"Malformed multipart body: {exc}") from None
            for kind, value in collector.events:
                part = await _apply(kind, value, part, form, writers, files)
            collector.events.clear()
        if not collector.ended:
            raise InvalidData("Malformed multipart body: it ended before the closing boundary")
        while writers:
            name, filename, writer = writers[0]
            blob = await writer.finish()
            writers.pop(0)
            form.files[name] = StoredFile(blob=blob, filename=filename, text=writer.text)
        return form
    except TooLarge as exc:
        raise InvalidData(f"The uploaded file is too large: {exc}") from None
    except ContentUnavailable as exc:
        raise OperationNotAllowed(
            f"The vault could not store the file now ({exc}); nothing was created or"
            " changed. Send it again later."
        ) from None
    finally:
        for _, _, writer in writers:
            await writer.abort()


async def _apply(
    kind: str,
    value: Any,
    part: _Part,
    form: Form,
    writers: list[tuple[str, str, BlobWriter]],
    files: _Files,
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
        if part.name in files.fields:
            if not part.filename:
                raise InvalidData(f"Malformed multipart body: part [{part.name}] has no filename")
            filename = _clean_filename(part.filename)
            part.writer = files.store.writer(files.max_size, files.inspect(filename))
            writers.append((part.name, filename, part.writer))
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
