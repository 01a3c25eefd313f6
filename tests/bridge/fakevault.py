"""An in-memory stand-in for ``VaultClient``, for unit tests of the bridge layers.

It keeps documents with versions, renditions, attachments and relationships, answers
every call of ``VaultApi`` (reads, locks, drafts, creates, field updates, deletions;
a vault without lifecycle actions, events, users or groups unless a test adds them)
with the shapes of the REST API, counts calls per method, and can hold downloads and
version reads at a gate so tests see reads racing them. ``tests/bridge/test_vault_api.py``
has mypy check that it satisfies ``VaultApi`` as ``VaultClient`` does.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import AsyncIterable, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import trio

from vaultfs import errors
from vaultfs.client import Budget, DocumentPage, Reachability, RelationshipPage
from vaultfs.wire import format_datetime

__all__ = ["FakeDownload", "FakeVault"]

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


@dataclass
class FakeDownload:
    data: bytes
    offset: int = 0
    filename: str | None = None
    #: when set, pieces after the first wait for it
    gate: trio.Event | None = None
    #: the size of the pieces handed (the content cache's batch: one batch a piece)
    piece: int = 1 << 17

    @property
    def length(self) -> int:
        return len(self.data) - self.offset

    async def pieces(self) -> AsyncIterator[bytes]:
        for start in range(self.offset, len(self.data), self.piece):
            if start > self.offset and self.gate is not None:
                await self.gate.wait()
            yield self.data[start : start + self.piece]


@dataclass
class _Version:
    record: dict[str, Any]
    content: bytes
    renditions: dict[str, bytes] = field(default_factory=dict)


class FakeVault:
    """A ``VaultApi`` kept in memory."""

    def __init__(self) -> None:
        self.docs: dict[int, list[_Version]] = {}
        self.attachments: dict[int, list[dict[str, Any]]] = {}
        self.attachment_content: dict[tuple[int, int], bytes] = {}
        self.deleted: list[dict[str, Any]] = []
        self.calls: Counter[str] = Counter()
        self.budget = Budget()
        self.session_state = "active"
        self.session_refusal: str | None = None
        self.user_id = 1
        self.vault_id = 1
        self.username = "me@example.com"
        self.gate: trio.Event | None = None
        #: when set, version reads wait for it
        self.version_gate: trio.Event | None = None
        self.unreachable = False
        #: offline (``Reach.OFFLINE``): every call fails at once, as the client's do
        self.reach = Reachability()
        self.forbidden: set[int] = set()
        self._clock = EPOCH
        self._next_id = 1
        self.types = {
            "promotional_piece__c": ("Promotional Piece", {"brochure__c": "Brochure"}),
            "reference__c": ("Reference", {}),
        }
        #: field metadata (name -> record), as /metadata/objects/documents/properties
        self.fields: dict[str, dict[str, Any]] = {
            name: {"name": name, "editable": editable, "required": required}
            for name, editable, required in [
                ("id", False, False),
                ("name__v", True, True),
                ("title__v", True, False),
                ("language__v", True, False),
                ("md5checksum__v", False, False),
                ("type__v", False, True),
            ]
        }
        #: required fields without default per type (API name), for creates
        self.required: dict[str, list[str]] = {"reference__c": []}
        #: doc id -> user id holding its lock
        self.locks: dict[int, int] = {}
        self.favorites: set[int] = set()
        #: the fields of every create_document call
        self.created: list[dict[str, str]] = []
        #: relationship types (API records) every document type offers
        self.relationship_type_records: list[dict[str, Any]] = []
        #: relationship records (source_doc_id__v, target_doc_id__v, ... as the API)
        self.relationships: list[dict[str, Any]] = []
        #: False: a vault without the cross-document listing (it answers MalformedUrl)
        self.cross_listing = True
        #: the (doc id, major, minor) of every per-version relationship listing
        self.version_listings: list[tuple[int, int, int]] = []

    # --- test helpers ------------------------------------------------------------

    def tick(self) -> str:
        self._clock += timedelta(seconds=1)
        return format_datetime(self._clock)

    def add(
        self,
        name: str,
        content: bytes = b"hello\n",
        *,
        type_: str = "reference__c",
        subtype: str = "",
        classification: str = "",
        filename: str = "file.txt",
        renditions: dict[str, bytes] | None = None,
    ) -> int:
        doc_id = self._next_id
        self._next_id += 1
        now = self.tick()
        record = {
            "id": doc_id,
            "name__v": name,
            "type__v": type_,
            "subtype__v": subtype,
            "classification__v": classification,
            "filename__v": filename,
            "major_version_number__v": 0,
            "minor_version_number__v": 1,
            "document_creation_date__v": now,
            "version_creation_date__v": now,
            "version_modified_date__v": now,
            "md5checksum__v": hashlib.md5(content).hexdigest(),
            "size__v": (len(content) + 1023) // 1024,
            "language__v": ["English"],
            "locked__v": False,
        }
        self.docs[doc_id] = [_Version(record, content, dict(renditions or {}))]
        return doc_id

    def new_version(self, doc_id: int, content: bytes) -> None:
        old = self.docs[doc_id][-1].record
        now = self.tick()
        record = dict(
            old,
            minor_version_number__v=old["minor_version_number__v"] + 1,
            version_creation_date__v=now,
            version_modified_date__v=now,
            md5checksum__v=hashlib.md5(content).hexdigest(),
            size__v=(len(content) + 1023) // 1024,
        )
        self.docs[doc_id].append(_Version(record, content))

    def rename(self, doc_id: int, name: str) -> None:
        version = self.docs[doc_id][-1]
        version.record = dict(version.record, name__v=name, version_modified_date__v=self.tick())

    def delete(self, doc_id: int) -> None:
        latest = self.docs.pop(doc_id)[-1].record
        self.deleted.append(
            {
                "id": doc_id,
                "major_version_number__v": latest["major_version_number__v"],
                "minor_version_number__v": latest["minor_version_number__v"],
                "date_deleted": self.tick(),
            }
        )

    def attach(self, doc_id: int, filename: str, content: bytes) -> int:
        attachment_id = 100 + sum(len(a) for a in self.attachments.values())
        self.attachments.setdefault(doc_id, []).append(
            {
                "id": attachment_id,
                "filename__v": filename,
                "version__v": 1,
                "size__v": len(content),
                "md5checksum__v": hashlib.md5(content).hexdigest(),
                "created_date__v": self.tick(),
            }
        )
        self.attachment_content[(doc_id, attachment_id)] = content
        return attachment_id

    def _call(self, name: str) -> None:
        self.reach.refuse(name)
        if self.unreachable:
            raise errors.VaultUnavailable("connection refused")
        self.calls[name] += 1
        self.budget.calls += 1

    def _doc(self, doc_id: int) -> list[_Version]:
        if doc_id in self.forbidden:
            raise errors.InsufficientAccess(f"no access to {doc_id}")
        versions = self.docs.get(doc_id)
        if versions is None:
            raise errors.InvalidDocument(f"document {doc_id} not found")
        return versions

    def _version(self, doc_id: int, major: int | None, minor: int | None) -> _Version:
        versions = self._doc(doc_id)
        if major is None:
            return versions[-1]
        for v in versions:
            r = v.record
            if (r["major_version_number__v"], r["minor_version_number__v"]) == (major, minor):
                return v
        raise errors.InvalidDocument(f"version {major}.{minor} of {doc_id} not found")

    # --- the client surface ------------------------------------------------------

    async def document_types(self) -> list[dict[str, Any]]:
        self._call("document_types")
        return [
            {"label": label, "value": f"http://x/metadata/objects/documents/types/{name}"}
            for name, (label, _) in self.types.items()
        ]

    async def document_type(self, type_name: str) -> dict[str, Any]:
        self._call("document_type")
        label, subtypes = self.types[type_name]
        if not subtypes:
            return {"name": type_name, "label": label, **self._leaf(type_name)}
        return {
            "name": type_name,
            "label": label,
            "subtypes": [
                {"label": lb, "value": f"http://x/subtypes/{n}"} for n, lb in subtypes.items()
            ],
        }

    async def document_subtype(self, type_name: str, subtype: str) -> dict[str, Any]:
        self._call("document_subtype")
        return {"name": subtype, "classifications": [], **self._leaf(type_name)}

    def _leaf(self, type_name: str) -> dict[str, Any]:
        """What a leaf's metadata says about creating documents of it."""
        properties = [
            {"name": "name__v", "required": True, "systemAttribute": False},
            {"name": "type__v", "required": True, "systemAttribute": True},
            {"name": "language__v", "required": True, "defaultValue": ["English"]},
        ]
        properties += [{"name": f, "required": True} for f in self.required.get(type_name, [])]
        return {
            "availableLifecycles": [{"name": "general_lifecycle__c", "label": "General"}],
            "properties": properties,
        }

    async def list_documents(
        self,
        *,
        start: int = 0,
        limit: int = 200,
        sort: str | None = None,
        versionscope: str | None = None,
        search: str | None = None,
        scope: str | None = None,
        named_filter: str | None = None,
    ) -> DocumentPage:
        self._call("list_documents")
        # the index's pages only; the search folders' queries have fakes of their own
        assert search is None and scope is None and named_filter is None
        records = [v[-1].record for v in self.docs.values()]
        assert sort == "version_modified_date__v desc"
        records.sort(key=lambda r: r["version_modified_date__v"], reverse=True)
        page = [dict(r) for r in records[start : start + limit]]
        return DocumentPage(documents=page, size=len(records), start=start, limit=limit)

    async def set_favorite(self, doc_id: int, favorite: bool) -> None:
        self._call("set_favorite")
        self._doc(doc_id)
        (self.favorites.add if favorite else self.favorites.discard)(doc_id)

    async def get_document(self, doc_id: int) -> dict[str, Any]:
        self._call("get_document")
        versions = self._doc(doc_id)
        latest = versions[-1]
        response: dict[str, Any] = {
            "document": {**latest.record, "locked__v": doc_id in self.locks},
            "versions": [
                {"number": "{major_version_number__v}.{minor_version_number__v}".format(**v.record)}
                for v in versions
            ],
            "renditions": {t: "http://x" for t in latest.renditions},
        }
        if doc_id in self.attachments:
            response["attachments"] = [
                {"id": a["id"], "url": "http://x"} for a in self.attachments[doc_id]
            ]
        return response

    async def get_version(self, doc_id: int, major: int, minor: int) -> dict[str, Any]:
        if self.version_gate is not None:
            await self.version_gate.wait()
        self._call("get_version")
        version = self._version(doc_id, major, minor)
        return {
            "document": dict(version.record),
            "renditions": {t: "http://x" for t in version.renditions},
        }

    async def relationship_types(self, type_name: str) -> list[dict[str, Any]]:
        self._call("relationship_types")
        return [dict(t) for t in self.relationship_type_records]

    async def list_all_relationships(
        self, *, start: int = 0, limit: int = 1000
    ) -> RelationshipPage:
        """None unless a test adds some (the mount tests show them against the local
        vault)."""
        self._call("list_all_relationships")
        if not self.cross_listing:
            raise errors.MalformedUrl("no such route")
        page = [dict(r) for r in self.relationships[start : start + limit]]
        return RelationshipPage(page, len(self.relationships))

    async def list_relationships(self, doc_id: int, major: int, minor: int) -> list[dict[str, Any]]:
        self._call("list_relationships")
        self.version_listings.append((doc_id, major, minor))
        return [
            dict(r)
            for r in self.relationships
            if doc_id in (r["source_doc_id__v"], r["target_doc_id__v"])
            and (r["source_major_version__v"], r["source_minor_version__v"]) == (major, minor)
        ]

    async def create_relationship(
        self,
        doc_id: int,
        major: int,
        minor: int,
        *,
        target: int,
        relationship_type: str,
        target_version: tuple[int, int] | None = None,
    ) -> int:
        self._call("create_relationship")
        self._version(doc_id, major, minor)
        self._doc(target)
        rel_id = 1 + max((r["id"] for r in self.relationships), default=0)
        record: dict[str, Any] = {
            "id": rel_id,
            "source_doc_id__v": doc_id,
            "source_major_version__v": major,
            "source_minor_version__v": minor,
            "target_doc_id__v": target,
            "relationship_type__v": relationship_type,
        }
        if target_version is not None:
            record["target_major_version__v"], record["target_minor_version__v"] = target_version
        self.relationships.append(record)
        return rel_id

    async def delete_relationship(self, doc_id: int, major: int, minor: int, rel_id: int) -> None:
        self._call("delete_relationship")
        found = [r for r in self.relationships if r["id"] == rel_id]
        if not found or found[0]["source_doc_id__v"] != doc_id:
            raise errors.InvalidData(f"no relationship {rel_id} from {doc_id}")
        self.relationships.remove(found[0])

    async def list_renditions(
        self, doc_id: int, major: int | None = None, minor: int | None = None
    ) -> dict[str, str]:
        self._call("list_renditions")
        return {t: "http://x" for t in self._version(doc_id, major, minor).renditions}

    async def list_attachments(self, doc_id: int) -> list[dict[str, Any]]:
        self._call("list_attachments")
        self._doc(doc_id)
        return [dict(a) for a in self.attachments.get(doc_id, [])]

    async def deleted_documents(self, since: datetime | None = None) -> list[dict[str, Any]]:
        self._call("deleted_documents")
        return [dict(d) for d in self.deleted]

    @asynccontextmanager
    async def download_file(
        self, doc_id: int, major: int | None = None, minor: int | None = None, *, offset: int = 0
    ) -> AsyncIterator[FakeDownload]:
        self._call("download_file")
        yield FakeDownload(self._version(doc_id, major, minor).content, offset, gate=self.gate)

    @asynccontextmanager
    async def download_rendition(
        self,
        doc_id: int,
        rendition_type: str,
        major: int | None = None,
        minor: int | None = None,
        *,
        offset: int = 0,
    ) -> AsyncIterator[FakeDownload]:
        self._call("download_rendition")
        data = self._version(doc_id, major, minor).renditions[rendition_type]
        yield FakeDownload(data, offset, gate=self.gate)

    @asynccontextmanager
    async def download_attachment(
        self, doc_id: int, attachment_id: int, version: int | None = None, *, offset: int = 0
    ) -> AsyncIterator[FakeDownload]:
        self._call("download_attachment")
        self._doc(doc_id)
        yield FakeDownload(self.attachment_content[(doc_id, attachment_id)], offset)

    # --- the write surface ---------------------------------------------------------

    async def document_properties(self) -> list[dict[str, Any]]:
        self._call("document_properties")
        return [dict(f) for f in self.fields.values()]

    async def document_classification(
        self, type_name: str, subtype: str, classification: str
    ) -> dict[str, Any]:
        self._call("document_classification")
        return {"name": classification}

    async def lock(self, doc_id: int) -> None:
        self._call("lock")
        self._doc(doc_id)
        if doc_id in self.locks:
            raise errors.OperationNotAllowed(f"{doc_id} is checked out")
        self.locks[doc_id] = self.user_id

    async def get_lock(self, doc_id: int) -> dict[str, Any] | None:
        self._call("get_lock")
        holder = self.locks.get(doc_id)
        return None if holder is None else {"locked_by__v": holder}

    async def unlock(self, doc_id: int) -> None:
        self._call("unlock")
        self.locks.pop(doc_id, None)

    async def keep_alive(self) -> None:
        self._call("keep_alive")

    async def login(self, *, max_retries: int | None = None) -> dict[str, Any]:
        self._call("login")
        return {"responseStatus": "SUCCESS", "userId": self.user_id, "vaultId": self.vault_id}

    async def create_draft(
        self, doc_id: int, file: Path | None, *, filename: str | None = None
    ) -> tuple[int, int]:
        self._call("create_draft")
        self._doc(doc_id)
        assert file is not None
        content = file.read_bytes()  # noqa: ASYNC240 - a test fake
        self.new_version(doc_id, content)
        record = self.docs[doc_id][-1].record
        record["filename__v"] = filename or file.name
        return record["major_version_number__v"], record["minor_version_number__v"]

    async def create_draft_streamed(
        self, doc_id: int, filename: str, content: AsyncIterable[bytes]
    ) -> tuple[int, int]:
        self._call("create_draft_streamed")
        self._doc(doc_id)
        self.new_version(doc_id, b"".join([chunk async for chunk in content]))
        record = self.docs[doc_id][-1].record
        record["filename__v"] = filename
        return record["major_version_number__v"], record["minor_version_number__v"]

    async def may_create_documents(self) -> bool:
        self._call("may_create_documents")
        return True

    async def create_document(
        self, fields: Mapping[str, str], file: Path | None, *, filename: str | None = None
    ) -> int:
        self._call("create_document")
        type_ = fields.get("type__v", "")
        if type_ not in self.types:
            raise errors.InvalidData(f"unknown type {type_}")
        missing = [f for f in ["lifecycle__v", *self.required.get(type_, [])] if f not in fields]
        if missing:
            raise errors.ParameterRequired(f"missing {missing}")
        assert file is not None
        doc_id = self.add(
            fields["name__v"],
            file.read_bytes(),  # noqa: ASYNC240 - a test fake
            type_=type_,
            subtype=fields.get("subtype__v", ""),
            filename=filename or file.name,
        )
        self.created.append(dict(fields))
        return doc_id

    async def update_document(self, doc_id: int, fields: Mapping[str, str | None]) -> None:
        self._call("update_document")
        version = self._doc(doc_id)[-1]
        self._update(version, fields)

    async def update_version(
        self, doc_id: int, major: int, minor: int, fields: Mapping[str, str | None]
    ) -> None:
        self._call("update_version")
        self._update(self._version(doc_id, major, minor), fields)

    def _update(self, version: _Version, fields: Mapping[str, str | None]) -> None:
        for name, text in fields.items():
            if not self.fields.get(name, {}).get("editable"):
                raise errors.InvalidData(f"{name} is not editable")
            value: Any = text or None
            if name == "language__v" and text:
                value = text.split(",")
            version.record = dict(version.record, **{name: value})
        version.record["version_modified_date__v"] = self.tick()

    async def delete_document(self, doc_id: int) -> None:
        self._call("delete_document")
        self._doc(doc_id)
        self.delete(doc_id)

    async def delete_version(self, doc_id: int, major: int, minor: int) -> None:
        self._call("delete_version")
        versions = self._doc(doc_id)
        version = self._version(doc_id, major, minor)
        if len(versions) == 1:
            raise errors.InvalidData("the only version")
        versions.remove(version)
        versions[-1].record["version_modified_date__v"] = self.tick()

    async def create_attachment(
        self, doc_id: int, file: Path, *, filename: str | None = None
    ) -> dict[str, Any]:
        self._call("create_attachment")
        self._doc(doc_id)
        content = file.read_bytes()  # noqa: ASYNC240 - a test fake
        attachment_id = self.attach(doc_id, filename or file.name, content)
        return {"id": attachment_id, "version__v": 1}

    async def delete_attachment(self, doc_id: int, attachment_id: int) -> None:
        self._call("delete_attachment")
        kept = [a for a in self.attachments.get(doc_id, []) if a["id"] != attachment_id]
        if len(kept) == len(self.attachments.get(doc_id, [])):
            raise errors.InvalidData(f"no attachment {attachment_id} on {doc_id}")
        self.attachments[doc_id] = kept
        del self.attachment_content[(doc_id, attachment_id)]

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
        self._call("put_rendition")
        renditions = self._version(doc_id, major, minor).renditions
        if not replace and rendition_type in renditions:
            raise errors.OperationNotAllowed(f"{doc_id} has a {rendition_type} already")
        renditions[rendition_type] = file.read_bytes()  # noqa: ASYNC240 - a test fake

    async def delete_rendition(
        self, doc_id: int, rendition_type: str, major: int | None = None, minor: int | None = None
    ) -> None:
        self._call("delete_rendition")
        renditions = self._version(doc_id, major, minor).renditions
        if renditions.pop(rendition_type, None) is None:
            raise errors.InvalidData(f"{doc_id} has no {rendition_type}")

    # --- lifecycle, events, users, groups: none unless a test adds them ---------------

    async def lifecycle_actions(self, doc_id: int, major: int, minor: int) -> list[dict[str, Any]]:
        self._call("lifecycle_actions")
        self._version(doc_id, major, minor)
        return []

    async def entry_requirements(
        self, doc_id: int, major: int, minor: int, action: str
    ) -> list[dict[str, Any]]:
        self._call("entry_requirements")
        raise errors.InvalidData(f"no lifecycle action {action}")

    async def start_action(
        self, doc_id: int, major: int, minor: int, action: str, params: Mapping[str, str]
    ) -> dict[str, Any]:
        self._call("start_action")
        raise errors.InvalidData(f"no lifecycle action {action}")

    async def document_events(self, doc_id: int) -> list[dict[str, Any]]:
        self._call("document_events")
        self._doc(doc_id)
        return []

    async def log_event(
        self, doc_id: int, major: int, minor: int, fields: Mapping[str, str]
    ) -> dict[str, Any]:
        self._call("log_event")
        raise errors.InvalidData("no event types")

    async def list_users(self) -> list[dict[str, Any]]:
        self._call("list_users")
        return []

    async def list_groups(self) -> list[dict[str, Any]]:
        self._call("list_groups")
        return []
