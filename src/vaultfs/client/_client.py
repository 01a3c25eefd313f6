"""VaultClient: the typed async API of a vault over httpx.

Owns the endpoints: which method, path, parameters and body each operation sends, and
which part of the answer it returns. Everything below an endpoint (the httpx client,
the session, retries, the budget, error translation) is in ``_http`` and the modules
it composes. Callers never see httpx types; the session id travels only in the
Authorization header.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import trio

from vaultfs import __version__
from vaultfs.errors import InsufficientAccess, VaultError
from vaultfs.wire import API_VERSION, PAGE_LIMIT, format_query_datetime

from ._download import StreamDownload
from ._http import Call, Http
from ._lifecycle import LifecycleCalls
from ._multipart import StreamedForm
from ._relationships import RelationshipCalls
from ._retry import RetryPolicy
from ._session import SessionSource
from ._types import Budget, Credentials, DocumentPage, Download

__all__ = ["VaultClient"]

#: Deleted document ids are retrievable this long; older start dates are refused.
DELETIONS_WINDOW = timedelta(days=30)
#: Kept off the window's edge so clock skew with the vault cannot make it refuse.
_WINDOW_MARGIN = timedelta(minutes=5)
#: Keys of the envelope itself, dropped from records returned whole.
_ENVELOPE_KEYS = frozenset({"responseStatus", "responseMessage", "errors"})
_VERSION = "/objects/documents/{id}/versions/{major}/{minor}"
_LOCK = "/objects/documents/{id}/lock"
#: retries of a lock: about 3.5 s of backoff at most before open() fails
_LOCK_RETRIES = 3
#: How long closing may take (logout) even when the caller is being cancelled.
_CLOSE_TIMEOUT = 5.0


class VaultClient(LifecycleCalls, RelationshipCalls):
    """One logged-in user on one vault.

    ``base_url`` is the vault's address (``http://127.0.0.1:8817``); the client adds
    ``/api/<version>/``. ``credentials`` are a user name and password, or any other
    ``SessionSource`` (single sign-on: ``TokenLogin``). Use as ``async with
    VaultClient(...) as client:`` (logs in lazily on the first call, logs out on exit).

    ``timeout`` bounds every read and write on the connection (seconds without progress),
    ``connect_timeout`` the connection set-up. ``max_retries`` bounds the retries of one
    call (see docs/client.md for what is retried). ``burst_window`` is the vault's burst
    limit window, used to pace calls when the burst budget runs low.
    """

    def __init__(
        self,
        base_url: str,
        credentials: Credentials | SessionSource,
        *,
        api_version: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 6,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: bool | str = True,
        connect_timeout: float = 10.0,
        max_connections: int = 16,
        burst_window: float = 300.0,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._username = credentials.username
        self._http = Http(
            f"{self._base_url}/api/{api_version or API_VERSION}",
            credentials,
            # Waiting for a free pooled connection is bounded like a read.
            timeout=httpx.Timeout(timeout, connect=connect_timeout),
            # Room for ~8 parallel downloads plus metadata calls, all kept alive.
            limits=httpx.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            policy=RetryPolicy(max_retries=max_retries, max_limit_wait=burst_window),
            burst_window=burst_window,
            transport=transport,
            verify=verify,
            user_agent=f"vaultfs/{__version__}",
        )

    def __repr__(self) -> str:
        return (
            f"VaultClient({self._base_url!r}, user={self._username!r}, "
            f"session={self.session_state})"
        )

    async def __aenter__(self) -> VaultClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Log out (best effort) and close the connection pool."""
        # Shielded so a cancelled caller still ends its session on the vault.
        with trio.move_on_after(_CLOSE_TIMEOUT, shield=True):
            try:
                await self._http.logout()
            finally:
                await self._http.aclose()

    # --- state -----------------------------------------------------------------

    @property
    def budget(self) -> Budget:
        """Remaining-call headers last seen, and calls made."""
        return self._http.meter.budget

    @property
    def session_state(self) -> str:
        """``none``, ``active`` or ``expired`` (never the session id itself)."""
        return self._http.session.state

    @property
    def user_id(self) -> int | None:
        return self._http.session.user_id

    @property
    def vault_id(self) -> int | None:
        """The vault the session was issued for."""
        return self._http.session.vault_id

    # --- session ---------------------------------------------------------------

    async def login(self, *, max_retries: int | None = None) -> dict[str, Any]:
        """Sign in (POST /auth, or the session source's way); returns the session
        response without ``sessionId``.
        ``max_retries`` instead of the policy's (a mount fails fast at start)."""
        return await self._http.login(max_retries=max_retries)

    async def keep_alive(self) -> None:
        """POST /keep-alive (re-logs in when the session had expired)."""
        await self._http.call(Call("POST", "/keep-alive"))

    async def logout(self) -> None:
        """DELETE /session (best effort)."""
        await self._http.logout()

    # --- metadata --------------------------------------------------------------

    async def document_types(self) -> list[dict[str, Any]]:
        """GET /metadata/objects/documents/types -> ``types`` ([{label, value}])."""
        body = await self._get("/metadata/objects/documents/types")
        return list(body.get("types") or [])

    async def document_type(self, type_name: str) -> dict[str, Any]:
        """GET /metadata/objects/documents/types/{type} -> the type record."""
        return _record(await self._get("/metadata/objects/documents/types/{type}", type=type_name))

    async def document_subtype(self, type_name: str, subtype: str) -> dict[str, Any]:
        body = await self._get(
            "/metadata/objects/documents/types/{type}/subtypes/{subtype}",
            type=type_name,
            subtype=subtype,
        )
        return _record(body)

    async def document_classification(
        self, type_name: str, subtype: str, classification: str
    ) -> dict[str, Any]:
        body = await self._get(
            "/metadata/objects/documents/types/{type}/subtypes/{subtype}"
            "/classifications/{classification}",
            type=type_name,
            subtype=subtype,
            classification=classification,
        )
        return _record(body)

    async def document_properties(self) -> list[dict[str, Any]]:
        """GET /metadata/objects/documents/properties -> field metadata records."""
        body = await self._get("/metadata/objects/documents/properties")
        return list(body.get("properties") or [])

    # --- documents -------------------------------------------------------------

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

    # --- files -----------------------------------------------------------------

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
        return dict(data) if isinstance(data, dict) else _record(body)

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

    # --- locks -----------------------------------------------------------------

    async def lock(self, doc_id: int) -> None:
        """Check the document out. Raises ``InvalidData``/``InsufficientAccess`` as the
        vault says when another user holds it (the bridge turns that into EBUSY after
        ``get_lock``)."""
        # Retried like an idempotent call: a resend after a lost answer to a lock that
        # was taken fails as "already locked", and the caller then asks ``get_lock``,
        # which says the lock is ours. Not retrying would fail an open() on one blip;
        # retrying long would hang it while the vault is away (a few seconds at most).
        await self._http.call(
            Call(
                "POST",
                _LOCK,
                path_args={"id": doc_id},
                idempotent=True,
                max_retries=_LOCK_RETRIES,
            )
        )

    async def get_lock(self, doc_id: int) -> dict[str, Any] | None:
        """The ``lock`` object ({locked_by__v, locked_date__v}) or None."""
        body = await self._get(_LOCK, id=doc_id)
        lock = body.get("lock")
        return dict(lock) if isinstance(lock, dict) and lock.get("locked_by__v") else None

    async def unlock(self, doc_id: int) -> None:
        await self._http.call(Call("DELETE", _LOCK, path_args={"id": doc_id}))

    # --- helpers ---------------------------------------------------------------

    async def _get(self, template: str, **path_args: str | int) -> dict[str, Any]:
        return await self._http.call(Call("GET", template, path_args=path_args))

    async def _put_form(
        self, template: str, fields: Mapping[str, str | None], **path_args: str | int
    ) -> None:
        form = {name: "" if value is None else value for name, value in fields.items()}
        await self._http.call(Call("PUT", template, path_args=path_args, form=form))

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


def _listed(item: dict[str, Any]) -> dict[str, Any]:
    """A list item's record, with the item's ``term_highlights`` when sent beside it."""
    record: dict[str, Any] = item["document"]
    highlights = item.get("term_highlights")
    if highlights is not None and "term_highlights" not in record:
        record = {**record, "term_highlights": highlights}
    return record


def _record(body: dict[str, Any]) -> dict[str, Any]:
    """A record returned at the top level of its response, without the envelope keys."""
    return {k: v for k, v in body.items() if k not in _ENVELOPE_KEYS}
