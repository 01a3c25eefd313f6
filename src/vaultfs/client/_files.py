"""File endpoints of ``VaultClient``: the source file, renditions and attachments of a
document or of one of its versions (downloads streamed from an offset, uploads,
deletes, listings).

Owns which method, path and body each of these calls sends and which part of the
answer it returns; ``VaultClient`` inherits them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from ._download import StreamDownload
from ._endpoint import EndpointCalls, record
from ._http import Call
from ._types import Download

__all__ = ["FileCalls"]


class FileCalls(EndpointCalls):
    @asynccontextmanager
    async def download_file(
        self, doc_id: int, major: int | None = None, minor: int | None = None, *, offset: int = 0
    ) -> AsyncIterator[Download]:
        """Stream the source file of the latest version, or of version major.minor."""
        template, args = _of_version("/objects/documents/{id}", doc_id, major, minor)
        async with self._download(template + "/file", args, offset) as download:
            yield download

    @asynccontextmanager
    async def download_rendition(
        self,
        doc_id: int,
        rendition_type: str,
        major: int | None = None,
        minor: int | None = None,
        *,
        offset: int = 0,
    ) -> AsyncIterator[Download]:
        template, args = _of_version("/objects/documents/{id}", doc_id, major, minor)
        args["rendition"] = rendition_type
        async with self._download(template + "/renditions/{rendition}", args, offset) as download:
            yield download

    @asynccontextmanager
    async def download_attachment(
        self, doc_id: int, attachment_id: int, version: int | None = None, *, offset: int = 0
    ) -> AsyncIterator[Download]:
        template = "/objects/documents/{id}/attachments/{attachment}"
        args: dict[str, str | int] = {"id": doc_id, "attachment": attachment_id}
        if version is not None:
            template += "/versions/{attachment_version}"
            args["attachment_version"] = version
        async with self._download(template + "/file", args, offset) as download:
            yield download

    async def list_renditions(
        self, doc_id: int, major: int | None = None, minor: int | None = None
    ) -> dict[str, str]:
        """Rendition type -> URL, of the latest version or of major.minor."""
        template, args = _of_version("/objects/documents/{id}", doc_id, major, minor)
        body = await self._http.call(Call("GET", template + "/renditions", path_args=args))
        return dict(body.get("renditions") or {})

    async def list_attachments(self, doc_id: int) -> list[dict[str, Any]]:
        body = await self._get("/objects/documents/{id}/attachments", id=doc_id)
        return list(body.get("data") or [])

    async def create_attachment(
        self, doc_id: int, file: Path, *, filename: str | None = None
    ) -> dict[str, Any]:
        """POST /objects/documents/{id}/attachments (multipart, the file sent as
        ``filename``: by default its own name; the attachment is known by it); returns
        ``data`` ({id, version__v}). Retried only when the request surely did not
        arrive."""
        call = Call(
            "POST",
            "/objects/documents/{id}/attachments",
            path_args={"id": doc_id},
            file=file,
            filename=filename,
            idempotent=False,
        )
        body = await self._http.call(call)
        data = body.get("data")
        return dict(data) if isinstance(data, dict) else record(body)

    async def put_rendition(
        self,
        doc_id: int,
        rendition_type: str,
        file: Path,
        major: int | None = None,
        minor: int | None = None,
        *,
        replace: bool,
        filename: str | None = None,
    ) -> None:
        """Add (POST) or, with ``replace``, replace (PUT) a rendition of the latest
        version or of major.minor (multipart ``file``, sent as ``filename``: by default
        its own name). A replacement is idempotent; an add is retried only when it
        surely did not arrive (a second one is refused as existing)."""
        template, args = _of_version("/objects/documents/{id}", doc_id, major, minor)
        args["rendition"] = rendition_type
        call = Call(
            "PUT" if replace else "POST",
            template + "/renditions/{rendition}",
            path_args=args,
            file=file,
            filename=filename,
            idempotent=replace,
        )
        await self._http.call(call)

    async def delete_rendition(
        self, doc_id: int, rendition_type: str, major: int | None = None, minor: int | None = None
    ) -> None:
        template, args = _of_version("/objects/documents/{id}", doc_id, major, minor)
        args["rendition"] = rendition_type
        await self._http.call(Call("DELETE", template + "/renditions/{rendition}", path_args=args))

    async def delete_attachment(self, doc_id: int, attachment_id: int) -> None:
        """DELETE /objects/documents/{id}/attachments/{attachment} (all its versions)."""
        args = {"id": doc_id, "attachment": attachment_id}
        await self._http.call(
            Call("DELETE", "/objects/documents/{id}/attachments/{attachment}", path_args=args)
        )

    @asynccontextmanager
    async def _download(
        self, template: str, args: Mapping[str, str | int], offset: int
    ) -> AsyncIterator[Download]:
        if offset < 0:
            raise ValueError(f"negative download offset {offset}")
        # identity: byte ranges and Content-Length must count the file's own bytes.
        headers = {"Accept-Encoding": "identity"}
        if offset:
            headers["Range"] = f"bytes={offset}-"
        call = Call("GET", template, path_args=args, headers=headers)
        response = await self._http.open_stream(call)
        try:
            yield StreamDownload(response, offset, call.what)
        finally:
            if response is not None:
                await response.aclose()


def _of_version(
    template: str, doc_id: int, major: int | None, minor: int | None
) -> tuple[str, dict[str, str | int]]:
    """The document's path template, or its version's when major.minor is given."""
    if major is None or minor is None:
        if major is not None or minor is not None:
            raise ValueError("give both major and minor, or neither")
        return template, {"id": doc_id}
    return template + "/versions/{major}/{minor}", {"id": doc_id, "major": major, "minor": minor}
