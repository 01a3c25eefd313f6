"""VaultClient: the typed async API of a vault over httpx.

Owns: the httpx.AsyncClient (one connection pool, HTTP/1.1 keep-alive), the session
(login, transparent re-login on INVALID_SESSION_ID, keep-alive, logout), retries with
backoff (in one place), the rate-limit budget from the remaining-call headers, and the
translation of envelopes and transport errors into ``vaultfs.errors`` (in one place).
Callers never see httpx types. The session id travels only in the Authorization header.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from ._types import Budget, Credentials, DocumentPage, Download

__all__ = ["VaultClient"]


class VaultClient:
    """One logged-in user on one vault.

    ``base_url`` is the vault's address (``http://127.0.0.1:8817``); the client adds
    ``/api/<version>/``. Use as ``async with VaultClient(...) as client:`` (logs in
    lazily on the first call, logs out on exit).
    """

    def __init__(
        self,
        base_url: str,
        credentials: Credentials,
        *,
        api_version: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 6,
        transport: httpx.AsyncBaseTransport | None = None,
        verify: bool | str = True,
    ) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> VaultClient:
        raise NotImplementedError

    async def __aexit__(self, *exc_info: object) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        """Log out (best effort) and close the connection pool."""
        raise NotImplementedError

    # --- state -----------------------------------------------------------------

    @property
    def budget(self) -> Budget:
        """Remaining-call headers last seen, and calls made."""
        raise NotImplementedError

    @property
    def session_state(self) -> str:
        """``none``, ``active`` or ``expired`` (never the session id itself)."""
        raise NotImplementedError

    @property
    def user_id(self) -> int | None:
        raise NotImplementedError

    # --- session ---------------------------------------------------------------

    async def login(self) -> dict[str, Any]:
        """POST /auth; returns the session response without ``sessionId``."""
        raise NotImplementedError

    async def keep_alive(self) -> None:
        """POST /keep-alive (re-logs in when the session had expired)."""
        raise NotImplementedError

    async def logout(self) -> None:
        """DELETE /session (best effort)."""
        raise NotImplementedError

    # --- metadata --------------------------------------------------------------

    async def document_types(self) -> list[dict[str, Any]]:
        """GET /metadata/objects/documents/types -> ``types`` ([{label, value}])."""
        raise NotImplementedError

    async def document_type(self, type_name: str) -> dict[str, Any]:
        """GET /metadata/objects/documents/types/{type} -> the type record."""
        raise NotImplementedError

    async def document_subtype(self, type_name: str, subtype: str) -> dict[str, Any]:
        raise NotImplementedError

    async def document_classification(
        self, type_name: str, subtype: str, classification: str
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def document_properties(self) -> list[dict[str, Any]]:
        """GET /metadata/objects/documents/properties -> field metadata records."""
        raise NotImplementedError

    # --- documents -------------------------------------------------------------

    async def list_documents(
        self,
        *,
        start: int = 0,
        limit: int = 200,
        sort: str | None = None,
        versionscope: str | None = None,
        search: str | None = None,
    ) -> DocumentPage:
        raise NotImplementedError

    async def get_document(self, doc_id: int) -> dict[str, Any]:
        """GET /objects/documents/{id}: the whole response (document, versions,
        renditions, attachments)."""
        raise NotImplementedError

    async def get_version(self, doc_id: int, major: int, minor: int) -> dict[str, Any]:
        """GET one version: the whole response, as for ``get_document``."""
        raise NotImplementedError

    async def list_versions(self, doc_id: int) -> list[dict[str, Any]]:
        """GET /objects/documents/{id}/versions -> ``versions`` ([{number, value}])."""
        raise NotImplementedError

    async def deleted_documents(self, since: datetime | None = None) -> list[dict[str, Any]]:
        """GET /objects/deletions/documents (all pages) -> deleted-document records."""
        raise NotImplementedError

    async def create_document(self, fields: Mapping[str, str], file: Path | None) -> int:
        """POST /objects/documents (multipart); returns the new id."""
        raise NotImplementedError

    async def update_document(self, doc_id: int, fields: Mapping[str, str | None]) -> None:
        """PUT editable fields of the latest version; None sends an empty value, which
        clears the field."""
        raise NotImplementedError

    async def update_version(
        self, doc_id: int, major: int, minor: int, fields: Mapping[str, str | None]
    ) -> None:
        raise NotImplementedError

    async def create_draft(self, doc_id: int, file: Path | None) -> tuple[int, int]:
        """POST createDraft=uploadedContent (file) or latestContent (None); returns
        the new (major, minor). Never retried once the request may have reached the
        server: the caller decides (it can compare checksums)."""
        raise NotImplementedError

    async def delete_document(self, doc_id: int) -> None:
        raise NotImplementedError

    async def delete_version(self, doc_id: int, major: int, minor: int) -> None:
        raise NotImplementedError

    # --- files -----------------------------------------------------------------

    @asynccontextmanager
    async def download_file(
        self, doc_id: int, major: int | None = None, minor: int | None = None, *, offset: int = 0
    ) -> AsyncIterator[Download]:
        """Stream the source file of the latest version, or of version major.minor."""
        raise NotImplementedError
        yield  # pragma: no cover

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
        raise NotImplementedError
        yield  # pragma: no cover

    @asynccontextmanager
    async def download_attachment(
        self, doc_id: int, attachment_id: int, version: int | None = None, *, offset: int = 0
    ) -> AsyncIterator[Download]:
        raise NotImplementedError
        yield  # pragma: no cover

    async def list_renditions(
        self, doc_id: int, major: int | None = None, minor: int | None = None
    ) -> dict[str, str]:
        """Rendition type -> URL, of the latest version or of major.minor."""
        raise NotImplementedError

    async def list_attachments(self, doc_id: int) -> list[dict[str, Any]]:
        raise NotImplementedError

    # --- locks -----------------------------------------------------------------

    async def lock(self, doc_id: int) -> None:
        """Check the document out. Raises ``InvalidData``/``InsufficientAccess`` as the
        vault says when another user holds it (the bridge turns that into EBUSY after
        ``get_lock``)."""
        raise NotImplementedError

    async def get_lock(self, doc_id: int) -> dict[str, Any] | None:
        """The ``lock`` object ({locked_by__v, locked_date__v}) or None."""
        raise NotImplementedError

    async def unlock(self, doc_id: int) -> None:
        raise NotImplementedError
