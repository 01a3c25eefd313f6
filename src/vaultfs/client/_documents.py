"""Document and version endpoints of ``VaultClient``: listing (one page, deletions,
favorites), reading records, creating documents and drafts, updating fields, deleting.

Owns which method, path, parameters and body each of these calls sends and which part
of the answer it returns; ``VaultClient`` inherits them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from vaultfs.errors import InsufficientAccess, VaultError
from vaultfs.wire import PAGE_LIMIT, format_query_datetime

from ._endpoint import EndpointCalls
from ._http import Call
from ._multipart import StreamedForm
from ._retry import WAITED_ON
from ._types import DocumentPage

__all__ = ["DELETIONS_WINDOW", "DocumentCalls"]

#: Deleted document ids are retrievable this long; older start dates are refused.
DELETIONS_WINDOW = timedelta(days=30)
#: Kept off the window's edge so clock skew with the vault cannot make it refuse.
_WINDOW_MARGIN = timedelta(minutes=5)
_VERSION = "/objects/documents/{id}/versions/{major}/{minor}"


class DocumentCalls(EndpointCalls):
    async def list_documents(
        self,
        *,
        start: int = 0,
        limit: int = PAGE_LIMIT,
        sort: str | None = None,
        versionscope: str | None = None,
        search: str | None = None,
        scope: str | None = None,
        named_filter: str | None = None,
    ) -> DocumentPage:
        """GET /objects/documents: one page. ``search`` keywords match fields, or with
        ``scope`` ``contents`` the file text only, ``all`` both; ``named_filter`` is
        ``My Documents``, ``Recent Documents`` or ``Favorites``. A record carries its
        ``term_highlights`` (the versions whose text matched) when the vault sent any,
        beside the record or in it."""
        params = {
            "start": start or None,
            "limit": limit,
            "sort": sort,
            "versionscope": versionscope,
            "search": search,
            "scope": scope,
            "named_filter": named_filter,
        }
        body = await self._http.call(Call("GET", "/objects/documents", params=params))
        documents = [_listed(item) for item in body.get("documents") or []]
        details = body.get("responseDetails")
        total = details.get("total") if isinstance(details, dict) else None
        return DocumentPage(
            documents=documents,
            size=int(body.get("size", len(documents))),
            start=int(body.get("start", start)),
            limit=int(body.get("limit", limit)),
            total=int(total) if isinstance(total, int) else None,
        )

    async def set_favorite(self, doc_id: int, favorite: bool) -> None:
        """POST (mark) or DELETE (unmark) /objects/documents/{id}/favorite: the
        caller's ``Favorites``."""
        method = "POST" if favorite else "DELETE"
        await self._http.call(
            Call(method, "/objects/documents/{id}/favorite", path_args={"id": doc_id})
        )

    async def get_document(self, doc_id: int) -> dict[str, Any]:
        """GET /objects/documents/{id}: the whole response (document, versions,
        renditions, attachments)."""
        return await self._get("/objects/documents/{id}", id=doc_id)

    async def get_version(self, doc_id: int, major: int, minor: int) -> dict[str, Any]:
        """GET one version: the whole response, as for ``get_document``."""
        return await self._get(_VERSION, id=doc_id, major=major, minor=minor)

    async def list_versions(self, doc_id: int) -> list[dict[str, Any]]:
        """GET /objects/documents/{id}/versions -> ``versions`` ([{number, value}])."""
        body = await self._get("/objects/documents/{id}/versions", id=doc_id)
        return list(body.get("versions") or [])

    async def deleted_documents(self, since: datetime | None = None) -> list[dict[str, Any]]:
        """GET /objects/deletions/documents (all pages) -> deleted-document records.

        ``since`` (aware; naive means local time) is clamped into the vault's 30-day
        window; None asks for the whole window.
        """
        params: dict[str, str | int | None] = {}
        if since is not None:
            earliest = datetime.now(UTC) - DELETIONS_WINDOW + _WINDOW_MARGIN
            params["start_date"] = format_query_datetime(max(since.astimezone(UTC), earliest))
        records: list[dict[str, Any]] = []
        while True:
            body = await self._http.call(Call("GET", "/objects/deletions/documents", params=params))
            page = list(body.get("data") or [])
            records.extend(page)
            details = body.get("responseDetails") or {}
            offset = int(details.get("offset", 0)) + int(details.get("size", len(page)))
            total = int(details.get("total", 0))
            # Stop at the end, and on a page that does not advance (a server that
            # ignores ``offset`` would otherwise be paged forever).
            if not page or offset >= total or offset <= int(params.get("offset") or 0):
                return records
            params["offset"] = offset
            params["limit"] = details.get("limit")

    async def create_document(
        self, fields: Mapping[str, str], file: Path | None, *, filename: str | None = None
    ) -> int:
        """POST /objects/documents (multipart with a file, sent as ``filename``: by
        default the file's own name); returns the new id."""
        call = Call(
            "POST",
            "/objects/documents",
            form=dict(fields),
            file=file,
            filename=filename,
            idempotent=False,
        )
        body = await self._http.call(call)
        return int(body["id"])

    async def may_create_documents(self) -> bool:
        """Whether the vault lets this user create documents, asked without changing
        anything: a create with no fields at all, which can only be refused, is refused
        for want of permission before its fields are looked at (INSUFFICIENT_ACCESS)
        or for want of fields. Anything else (the vault away) counts as yes: the create
        itself decides then."""
        try:
            await self._http.call(
                Call("POST", "/objects/documents", form={}, idempotent=False, max_retries=0)
            )
        except InsufficientAccess:
            return False
        except VaultError:
            return True
        return True  # pragma: no cover - a vault that took an empty create

    async def update_document(self, doc_id: int, fields: Mapping[str, str | None]) -> None:
        """PUT editable fields of the latest version; None sends an empty value, which
        clears the field. No fields: no call."""
        if fields:
            await self._put_form("/objects/documents/{id}", fields, id=doc_id)

    async def update_version(
        self, doc_id: int, major: int, minor: int, fields: Mapping[str, str | None]
    ) -> None:
        if fields:
            await self._put_form(_VERSION, fields, id=doc_id, major=major, minor=minor)

    async def create_draft(
        self, doc_id: int, file: Path | None, *, filename: str | None = None
    ) -> tuple[int, int]:
        """POST createDraft=uploadedContent (file, sent as ``filename``: by default
        its own name) or latestContent (None); returns the new (major, minor). Never
        retried once the request may have reached the server: the caller decides (it
        can compare checksums)."""
        form = {"createDraft": "uploadedContent" if file is not None else "latestContent"}
        call = Call(
            "POST",
            "/objects/documents/{id}",
            path_args={"id": doc_id},
            form=form,
            file=file,
            filename=filename,
            idempotent=False,
        )
        body = await self._http.call(call)
        return int(body["major_version_number__v"]), int(body["minor_version_number__v"])

    async def create_draft_streamed(
        self, doc_id: int, filename: str, content: AsyncIterable[bytes]
    ) -> tuple[int, int]:
        """POST createDraft=uploadedContent with the file's bytes taken from ``content``
        as they come (chunked): sent once, never retried or replayed. When ``content``
        raises, the request is aborted before its closing boundary (the vault makes
        no draft of it) and that exception comes out here."""
        form = StreamedForm({"createDraft": "uploadedContent"}, filename, content)
        call = Call(
            "POST",
            "/objects/documents/{id}",
            path_args={"id": doc_id},
            body=form.body(),
            headers={"Content-Type": form.content_type},
            idempotent=False,
            max_retries=0,
        )
        body = await self._http.call(call)
        return int(body["major_version_number__v"]), int(body["minor_version_number__v"])

    async def delete_document(self, doc_id: int) -> None:
        await self._http.call(Call("DELETE", "/objects/documents/{id}", path_args={"id": doc_id}))

    async def delete_version(self, doc_id: int, major: int, minor: int) -> None:
        args = {"id": doc_id, "major": major, "minor": minor}
        await self._http.call(Call("DELETE", _VERSION, path_args=args))

    async def _put_form(
        self, template: str, fields: Mapping[str, str | None], **path_args: str | int
    ) -> None:
        form = {name: "" if value is None else value for name, value in fields.items()}
        # A program waits on it: retried briefly (a field set then waits in the queue).
        call = Call("PUT", template, path_args=path_args, form=form)
        await self._http.call(dataclasses.replace(call, max_retries=WAITED_ON.max_retries))


def _listed(item: dict[str, Any]) -> dict[str, Any]:
    """A list item's record, with the item's ``term_highlights`` when sent beside it."""
    record: dict[str, Any] = item["document"]
    highlights = item.get("term_highlights")
    if highlights is not None and "term_highlights" not in record:
        record = {**record, "term_highlights": highlights}
    return record
