"""VaultApi: the calls of a vault the bridge makes, as a protocol.

``VaultClient`` satisfies it, and so does any stand-in (the tests' in-memory vault):
code that takes a ``VaultApi`` can be given either, and mypy checks that both keep
every method with the same signature. It owns no behaviour: what each call sends and
returns is documented on ``VaultClient``.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Mapping
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ._reach import Reachability
from ._relationships import RelationshipPage
from ._types import Budget, DocumentPage, Download

__all__ = ["VaultApi"]


class VaultApi(Protocol):
    """One logged-in user on one vault, as the bridge uses it."""

    # --- state -------------------------------------------------------------------

    @property
    def budget(self) -> Budget: ...
    @property
    def session_state(self) -> str: ...
    @property
    def session_refusal(self) -> str | None: ...
    @property
    def user_id(self) -> int | None: ...
    @property
    def vault_id(self) -> int | None: ...
    @property
    def username(self) -> str: ...
    @property
    def reach(self) -> Reachability: ...

    # --- session -------------------------------------------------------------------

    async def login(self, *, max_retries: int | None = None) -> dict[str, Any]: ...
    async def keep_alive(self) -> None: ...

    # --- metadata ------------------------------------------------------------------

    async def document_types(self) -> list[dict[str, Any]]: ...
    async def document_type(self, type_name: str) -> dict[str, Any]: ...
    async def document_subtype(self, type_name: str, subtype: str) -> dict[str, Any]: ...
    async def document_classification(
        self, type_name: str, subtype: str, classification: str
    ) -> dict[str, Any]: ...
    async def document_properties(self) -> list[dict[str, Any]]: ...

    # --- documents and versions ------------------------------------------------------

    async def list_documents(
        self,
        *,
        start: int = 0,
        limit: int = ...,
        sort: str | None = None,
        versionscope: str | None = None,
        search: str | None = None,
        scope: str | None = None,
        named_filter: str | None = None,
    ) -> DocumentPage: ...
    async def set_favorite(self, doc_id: int, favorite: bool) -> None: ...
    async def get_document(self, doc_id: int) -> dict[str, Any]: ...
    async def get_version(self, doc_id: int, major: int, minor: int) -> dict[str, Any]: ...
    async def deleted_documents(self, since: datetime | None = None) -> list[dict[str, Any]]: ...
    async def create_document(
        self, fields: Mapping[str, str], file: Path | None, *, filename: str | None = None
    ) -> int: ...
    async def may_create_documents(self) -> bool: ...
    async def update_document(self, doc_id: int, fields: Mapping[str, str | None]) -> None: ...
    async def update_version(
        self, doc_id: int, major: int, minor: int, fields: Mapping[str, str | None]
    ) -> None: ...
    async def create_draft(
        self, doc_id: int, file: Path | None, *, filename: str | None = None
    ) -> tuple[int, int]: ...
    async def create_draft_streamed(
        self, doc_id: int, filename: str, content: AsyncIterable[bytes]
    ) -> tuple[int, int]: ...
    async def delete_document(self, doc_id: int) -> None: ...
    async def delete_version(self, doc_id: int, major: int, minor: int) -> None: ...

    # --- files, renditions and attachments ---------------------------------------------

    def download_file(
        self, doc_id: int, major: int | None = None, minor: int | None = None, *, offset: int = 0
    ) -> AbstractAsyncContextManager[Download]: ...
    def download_rendition(
        self,
        doc_id: int,
        rendition_type: str,
        major: int | None = None,
        minor: int | None = None,
        *,
        offset: int = 0,
    ) -> AbstractAsyncContextManager[Download]: ...
    def download_attachment(
        self, doc_id: int, attachment_id: int, version: int | None = None, *, offset: int = 0
    ) -> AbstractAsyncContextManager[Download]: ...
    async def list_renditions(
        self, doc_id: int, major: int | None = None, minor: int | None = None
    ) -> dict[str, str]: ...
    async def list_attachments(self, doc_id: int) -> list[dict[str, Any]]: ...
    async def create_attachment(
        self, doc_id: int, file: Path, *, filename: str | None = None
    ) -> dict[str, Any]: ...
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
    ) -> None: ...
    async def delete_rendition(
        self, doc_id: int, rendition_type: str, major: int | None = None, minor: int | None = None
    ) -> None: ...
    async def delete_attachment(self, doc_id: int, attachment_id: int) -> None: ...

    # --- locks -------------------------------------------------------------------------

    async def lock(self, doc_id: int) -> None: ...
    async def get_lock(self, doc_id: int) -> dict[str, Any] | None: ...
    async def unlock(self, doc_id: int) -> None: ...

    # --- lifecycle, events, users and groups --------------------------------------------

    async def lifecycle_actions(
        self, doc_id: int, major: int, minor: int
    ) -> list[dict[str, Any]]: ...
    async def entry_requirements(
        self, doc_id: int, major: int, minor: int, action: str
    ) -> list[dict[str, Any]]: ...
    async def start_action(
        self, doc_id: int, major: int, minor: int, action: str, params: Mapping[str, str]
    ) -> dict[str, Any]: ...
    async def document_events(self, doc_id: int) -> list[dict[str, Any]]: ...
    async def log_event(
        self, doc_id: int, major: int, minor: int, fields: Mapping[str, str]
    ) -> dict[str, Any]: ...
    async def list_users(self) -> list[dict[str, Any]]: ...
    async def list_groups(self) -> list[dict[str, Any]]: ...

    # --- relationships -------------------------------------------------------------------

    async def relationship_types(self, type_name: str) -> list[dict[str, Any]]: ...
    async def list_relationships(
        self, doc_id: int, major: int, minor: int
    ) -> list[dict[str, Any]]: ...
    async def list_all_relationships(
        self, *, start: int = 0, limit: int = 1000
    ) -> RelationshipPage: ...
    async def create_relationship(
        self,
        doc_id: int,
        major: int,
        minor: int,
        *,
        target: int,
        relationship_type: str,
        target_version: tuple[int, int] | None = None,
    ) -> int: ...
    async def delete_relationship(
        self, doc_id: int, major: int, minor: int, rel_id: int
    ) -> None: ...
