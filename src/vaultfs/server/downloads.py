"""File download responses: a blob streamed in 1 MiB chunks, with Range support.

Starlette's ``FileResponse`` sends exact ``Content-Length`` and answers ``Range:
bytes=N-`` / ``bytes=N-M`` with 206 (the bridge resumes and reads at offsets that
way); this subclass only raises its chunk size and sets the API's headers.
"""

from __future__ import annotations

import urllib.parse
from pathlib import Path

from starlette.responses import FileResponse

__all__ = ["OCTET_STREAM", "content_disposition", "file_response"]

OCTET_STREAM = "application/octet-stream;charset=UTF-8"


class _BlobResponse(FileResponse):
    chunk_size = 1024 * 1024


def content_disposition(filename: str) -> str:
    """``attachment;filename="<name>"``, plus ``filename*`` when the name is not ASCII."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "_" for c in filename)
    value = f'attachment;filename="{fallback}"'
    if fallback != filename:
        value += ";filename*=UTF-8''" + urllib.parse.quote(filename, safe="")
    return value


def file_response(path: Path, filename: str, media_type: str = OCTET_STREAM) -> FileResponse:
    return _BlobResponse(
        path, media_type=media_type, headers={"Content-Disposition": content_disposition(filename)}
    )
