"""Multipart uploads: the file name a part carries, and a ``multipart/form-data`` body
whose file part is produced while it is being sent.

The name of an uploaded file travels as data in the part's ``Content-Disposition``
(``upload_filename`` checks it can): UTF-8 inside the quoted ``filename`` parameter, as
RFC 7578 (section 4.2) and browsers write it, never RFC 5987's ``filename*``, which
RFC 7578 forbids in forms. A name that is not text (a local file name of undecodable
bytes) cannot be sent and is refused before anything is.

httpx encodes multipart bodies only from files whose content exists when the request
starts (it needs their size for ``Content-Length``). An upload that streams content a
program is still writing has no size yet: its body goes out with chunked transfer
encoding, built here. The closing boundary is sent only when the content's iterator
ends normally; an iterator that raises aborts the request mid-body, and a server
makes no record of a body without its closing boundary.
"""

from __future__ import annotations

import mimetypes
import secrets
from collections.abc import AsyncIterable, AsyncIterator, Mapping

from vaultfs.errors import InvalidData

__all__ = ["StreamedForm", "upload_filename"]


def upload_filename(filename: str) -> str:
    """``filename`` as a multipart part may carry it; InvalidData when it holds what
    UTF-8 cannot encode (the surrogates ``os.fsdecode`` makes of undecodable bytes)."""
    try:
        filename.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidData(
            f"the file name {filename!r} is not valid UTF-8: the vault cannot take it"
        ) from None
    return filename


def _quoted(value: str) -> str:
    """A header parameter value as browsers and httpx write it (HTML's form encoding:
    ``"`` and line breaks percent-encoded, backslash escaped)."""
    escaped = value.replace("\\", "\\\\").replace('"', "%22")
    return escaped.replace("\r", "%0D").replace("\n", "%0A")


class StreamedForm:
    """Form fields, then one file part named ``file`` whose bytes come from
    ``content``."""

    def __init__(
        self, fields: Mapping[str, str], filename: str, content: AsyncIterable[bytes]
    ) -> None:
        self._boundary = secrets.token_hex(16)
        self._fields = dict(fields)
        self._filename = upload_filename(filename)
        self._content = content

    @property
    def content_type(self) -> str:
        return f"multipart/form-data; boundary={self._boundary}"

    def _head(self) -> bytes:
        parts = [
            f'--{self._boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"'
            f"\r\n\r\n{value}\r\n"
            for name, value in self._fields.items()
        ]
        media = mimetypes.guess_type(self._filename)[0] or "application/octet-stream"
        parts.append(
            f'--{self._boundary}\r\nContent-Disposition: form-data; name="file"; '
            f'filename="{_quoted(self._filename)}"\r\nContent-Type: {media}\r\n\r\n'
        )
        return "".join(parts).encode()

    async def body(self) -> AsyncIterator[bytes]:
        yield self._head()
        async for chunk in self._content:
            yield chunk
        yield f"\r\n--{self._boundary}--\r\n".encode()
