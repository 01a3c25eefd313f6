"""``StreamDownload``: the ``Download`` of an open streaming httpx response.

Owns the byte-level facts of a download: skipping the requested offset when the server
ignored ``Range`` (200 instead of 206), the exact length still to come, the file name
from ``Content-Disposition``, and the body in the pieces the network hands it (no copy:
a reader that wants bigger ones gathers them, as the content cache does).
"""

from __future__ import annotations

import email.message
import re
from collections.abc import AsyncIterator

import httpx

from vaultfs.errors import VaultUnavailable

from ._errors import transport_error

__all__ = ["StreamDownload"]

_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-\d+/(?:\d+|\*)")


class StreamDownload:
    """Reads an open response (which the owner closes); yields bytes from ``offset`` on."""

    def __init__(self, response: httpx.Response | None, offset: int, what: str) -> None:
        """``response`` None stands for an empty download (a Range past the end)."""
        self.offset = offset
        self._response = response
        self._what = what
        self.filename: str | None = None
        self.length: int | None = 0
        #: bytes of the body to drop before ``offset`` (the server sent the whole file)
        self._skip = 0
        if response is not None:
            self._read_headers(response)

    def _read_headers(self, response: httpx.Response) -> None:
        headers = response.headers
        self.filename = _filename(headers.get("Content-Disposition"))
        if self.offset and response.status_code == 206:
            start = _range_start(headers.get("Content-Range"))
            if start != self.offset:
                raise VaultUnavailable(
                    f"{self._what}: asked for bytes from {self.offset}, got a range from {start}"
                )
        elif self.offset:
            self._skip = self.offset
        length = headers.get("Content-Length")
        self.length = max(0, int(length) - self._skip) if length and length.isdigit() else None

    async def pieces(self) -> AsyncIterator[bytes]:
        """The content from ``offset`` on, in the pieces the network hands it (their
        sizes vary; no copy is made of them). Transport trouble mid-stream raises
        ``VaultUnavailable``; reopen the download at the offset reached to resume."""
        if self._response is None:
            return
        skip = self._skip
        try:
            async for piece in self._response.aiter_raw():
                if skip:
                    dropped = min(skip, len(piece))
                    piece, skip = piece[dropped:], skip - dropped
                    if not piece:
                        continue
                yield piece
        except httpx.RequestError as exc:
            raise transport_error(exc, self._what) from exc
        if skip:
            raise VaultUnavailable(f"{self._what}: the file ended before offset {self.offset}")


def _filename(disposition: str | None) -> str | None:
    """The file name of a Content-Disposition value (plain, quoted or RFC 2231 form)."""
    if not disposition:
        return None
    message = email.message.Message()
    message["Content-Disposition"] = disposition
    return message.get_filename()


def _range_start(content_range: str | None) -> int | None:
    match = _CONTENT_RANGE.fullmatch((content_range or "").strip())
    return int(match.group(1)) if match else None
