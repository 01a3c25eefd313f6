"""Request bodies of the WebDAV front: received into a private file, never whole in memory.

Owns what happens to a request's body before WsgiDAV sees it. Hypercorn's WSGI
wrapper reads a whole body into memory; here it is received in the trio loop
instead, as it arrives (Hypercorn's queue of ten messages holds the client back), and
written 1 MiB at a time to an unnamed 0600 file in the front's cache directory
(``O_TMPFILE``: nothing of it is left after a crash). WsgiDAV then reads it from that
file, and a PUT writes it into the spool's durable file of the save, which is
made durable before the answer (``resources``). A body is bounded: a PUT by the
front's ``max_upload`` (default the vault's own limit on a file), anything else (the
XML of PROPFIND, PROPPATCH, LOCK, which WsgiDAV parses in memory) by ``XML_LIMIT``;
beyond it the answer is 413 and the rest of the body is not read. A body received
whole is given to WsgiDAV with its exact ``Content-Length`` (a chunked one too, whose
chunks Hypercorn already joined); a client gone before the end is never a save.
"""

from __future__ import annotations

import io
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import trio

__all__ = ["XML_LIMIT", "Body", "BodyTooLarge", "ClientGone", "limit_of", "receive_body"]

#: the largest body of a method other than PUT (XML that WsgiDAV parses in memory)
XML_LIMIT = 4 << 20
#: what is kept in memory before it goes to the file (and the size of each write)
_BLOCK = 1 << 20


class BodyTooLarge(Exception):
    """A body over its limit (answered 413)."""


class ClientGone(Exception):
    """The client went away before its body ended."""


@dataclass
class Body:
    """A whole request body: in memory when under ``_BLOCK``, else in a private file."""

    size: int
    stream: IO[bytes] = field(repr=False)

    def close(self) -> None:
        self.stream.close()


def limit_of(scope: dict[str, Any], max_upload: int) -> int:
    """The largest body the request ``scope`` may send."""
    return max_upload if scope.get("method") == "PUT" else XML_LIMIT


def declared_length(scope: dict[str, Any]) -> int | None:
    """The body's ``Content-Length``, None when not given (chunked) or not a number."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def receive_body(scope: dict[str, Any], receive: Any, directory: Path, limit: int) -> Body:
    """The body of the request ``scope``, received whole from ``receive`` (ASGI);
    a body over ``limit`` bytes raises ``BodyTooLarge`` as soon as that is known."""
    declared = declared_length(scope)
    if declared is not None and declared > limit:
        raise BodyTooLarge(f"{declared} bytes, over the limit of {limit}")
    pending = bytearray()
    spilled: IO[bytes] | None = None
    size = 0
    try:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ClientGone("the client went away before the end of its body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(f"over {limit} bytes")
            pending += chunk
            more = bool(message.get("more_body"))
            if len(pending) >= _BLOCK or (spilled is not None and not more):
                if spilled is None:
                    spilled = await trio.to_thread.run_sync(_private_file, directory)
                data, pending = bytes(pending), bytearray()
                await trio.to_thread.run_sync(spilled.write, data)
            if not more:
                break
    except BaseException:
        if spilled is not None:
            spilled.close()
        raise
    if spilled is None:
        return Body(size, io.BytesIO(bytes(pending)))
    spilled.seek(0)
    return Body(size, spilled)


def _private_file(directory: Path) -> IO[bytes]:
    """An unnamed file (0600) in the private ``directory`` (0700), made when missing."""
    directory.mkdir(mode=0o700, exist_ok=True)
    os.chmod(directory, 0o700)
    return tempfile.TemporaryFile(dir=directory)
