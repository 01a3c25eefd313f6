"""A ``multipart/form-data`` body whose file part is produced while it is being sent.

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

__all__ = ["StreamedForm"]


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
        self._filename = filename
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
