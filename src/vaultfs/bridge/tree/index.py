"""The document index: every document's latest record, kept fresh cheaply.

Owns the one list of all documents the tree is built from, and the type metadata
(labels of types, subtypes and classifications). The index is built from list pages
of 200 sorted by ``version_modified_date__v desc`` and refreshed incrementally: pages
are read newest-modified first until a page holds only records already known with the
same modification date, then deletions since the last poll are applied. Nothing
secret is kept, and nothing is written to disk.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import trio

from vaultfs import errors
from vaultfs.client import VaultApi
from vaultfs.wire import PAGE_LIMIT

__all__ = ["DocumentIndex", "TypeCatalog"]

log = logging.getLogger(__name__)

SORT = "version_modified_date__v desc"
#: deletions are asked for with this overlap, so clock skew cannot hide one
_DELETION_OVERLAP = timedelta(minutes=2)
#: type metadata changes rarely; read it again after this many seconds
_METADATA_TTL = 3600.0

Record = dict[str, Any]

#: values shared between records at most (then the pool starts again: values of
#: documents that changed must not be kept for ever)
_POOL_LIMIT = 100_000
#: strings longer than this are rarely equal between documents: not pooled
_POOL_MAX_LENGTH = 40


def _frozen(value: Any) -> Any:
    """A hashable stand-in of a JSON value (lists and objects), None when there is none."""
    if isinstance(value, list):
        items = tuple(_frozen(v) if isinstance(v, list | dict) else v for v in value)
        return ("l", items)
    if isinstance(value, dict):
        return (
            "d",
            tuple((k, _frozen(v) if isinstance(v, list | dict) else v) for k, v in value.items()),
        )
    return None


class _Pool:
    """Equal field values of different records as one object: 10,000 documents of a
    folder share their type, lifecycle, status and format strings, their empty lists
    and their owner/viewer/editor objects (about a third of a record's memory). Records
    of the index are read-only: a change is a new record (``{**old, ...}``), never an
    edit of a value in place, so sharing a list or an object between records is safe."""

    def __init__(self) -> None:
        self._strings: dict[str, str] = {}
        self._containers: dict[Any, Any] = {}

    def record(self, record: Record) -> Record:
        if len(self._strings) + len(self._containers) > _POOL_LIMIT:
            self._strings.clear()
            self._containers.clear()
        return {key: self._value(value) for key, value in record.items()}

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            if len(value) > _POOL_MAX_LENGTH:
                return value
            return self._strings.setdefault(value, value)
        if isinstance(value, list | dict):
            try:
                return self._containers.setdefault(_frozen(value), value)
            except TypeError:  # something unhashable deep inside: kept as it is
                return value
        return value


def _api_name(entry: dict[str, Any]) -> str:
    """The API name of a metadata list entry ({name} or {value: URL ending in it})."""
    name = entry.get("name")
    if isinstance(name, str) and name:
        return name
    value = str(entry.get("value") or "")
    return value.rstrip("/").rsplit("/", 1)[-1]


class TypeCatalog:
    """Type metadata, read lazily and cached: labels of document types, subtypes and
    classifications, the metadata records of leaves (for new documents) and the field
    metadata (for field changes).

    Each metadata call is made at most once per TTL; a failing call leaves the API
    names as labels rather than failing a directory listing.
    """

    def __init__(self, client: VaultApi, *, clock: Callable[[], float] = time.monotonic):
        self._client = client
        self._clock = clock
        self._types: tuple[float, dict[str, str]] | None = None
        self._subtypes: dict[str, tuple[float, dict[str, str]]] = {}
        self._classifications: dict[tuple[str, str], tuple[float, dict[str, str]]] = {}
        self._leaves: dict[tuple[str, str | None, str | None], tuple[float, dict[str, Any]]] = {}
        self._fields: tuple[float, dict[str, dict[str, Any]]] | None = None
        self._lock = trio.Lock()

    def _fresh(self, entry: tuple[float, dict[str, str]] | None) -> bool:
        return entry is not None and self._clock() - entry[0] < _METADATA_TTL

    async def type_labels(self) -> dict[str, str]:
        """Type API name -> label."""
        async with self._lock:
            if not self._fresh(self._types):
                types = await self._client.document_types()
                self._types = (
                    self._clock(),
                    {_api_name(t): str(t.get("label") or _api_name(t)) for t in types},
                )
            assert self._types is not None
            return self._types[1]

    async def subtype_labels(self, type_name: str) -> dict[str, str]:
        async with self._lock:
            cached = self._subtypes.get(type_name)
            if not self._fresh(cached):
                record = await self._client.document_type(type_name)
                cached = (self._clock(), _labels(record.get("subtypes")))
                self._subtypes[type_name] = cached
            assert cached is not None
            return cached[1]

    async def classification_labels(self, type_name: str, subtype: str) -> dict[str, str]:
        async with self._lock:
            cached = self._classifications.get((type_name, subtype))
            if not self._fresh(cached):
                record = await self._client.document_subtype(type_name, subtype)
                cached = (self._clock(), _labels(record.get("classifications")))
                self._classifications[(type_name, subtype)] = cached
            assert cached is not None
            return cached[1]

    async def leaf(
        self, type_name: str, subtype: str | None, classification: str | None
    ) -> dict[str, Any]:
        """The metadata record of a type, subtype or classification (API names): its
        ``properties``, ``availableLifecycles``, and ``subtypes``/``classifications``
        when it is not a leaf."""
        mark = (type_name, subtype, classification)
        async with self._lock:
            cached = self._leaves.get(mark)
            if cached is None or self._clock() - cached[0] >= _METADATA_TTL:
                if classification is not None and subtype is not None:
                    record = await self._client.document_classification(
                        type_name, subtype, classification
                    )
                elif subtype is not None:
                    record = await self._client.document_subtype(type_name, subtype)
                else:
                    record = await self._client.document_type(type_name)
                cached = self._leaves[mark] = (self._clock(), record)
            return cached[1]

    def known_max_length(self, field: str) -> int | None:
        """``field``'s ``maxLength`` as the metadata read so far says (no call is made:
        a caller that must answer at once takes None as "not known yet")."""
        specs: list[Any] = list(self._fields[1].values()) if self._fields is not None else []
        for _, record in self._leaves.values():
            specs.extend(record.get("properties") or [])
        for spec in specs:
            if isinstance(spec, dict) and spec.get("name") == field:
                limit = spec.get("maxLength")
                if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
                    return limit
        return None

    async def fields(self) -> dict[str, dict[str, Any]]:
        """Field name -> field metadata (``editable``, ``setOnCreateOnly``, ...)."""
        async with self._lock:
            if self._fields is None or self._clock() - self._fields[0] >= _METADATA_TTL:
                specs = await self._client.document_properties()
                self._fields = (self._clock(), {str(s.get("name")): s for s in specs})
            return self._fields[1]


def _labels(entries: Any) -> dict[str, str]:
    if not isinstance(entries, list):
        return {}
    return {
        _api_name(e): str(e.get("label") or _api_name(e)) for e in entries if isinstance(e, dict)
    }


class DocumentIndex:
    """All documents the user may see: id -> latest record (the list's inner record)."""

    def __init__(
        self,
        client: VaultApi,
        *,
        page_size: int = PAGE_LIMIT,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._client = client
        self._page_size = page_size
        self._now = now
        self.documents: dict[int, Record] = {}
        #: bumped on every change, so views built from the index know when to rebuild
        self.generation = 0
        self.ready = trio.Event()
        self.last_refresh: float | None = None
        #: polls asked for out of turn (``poll_now``), and the last of them answered
        self.polls_asked = 0
        self.polls_answered = 0
        #: why the last poll failed (None: it did not)
        self.poll_error: str | None = None
        self._poked = trio.Event()
        self._last_poll: datetime | None = None
        self._seen_deletions: set[tuple[int, str]] = set()
        #: one refresh at a time (the poller and a check-in may both ask)
        self._refreshing = trio.Lock()
        #: called with the id of each document that changed or left (caches drop it)
        self.on_change: list[Callable[[int], None]] = []
        #: doc id -> monotonic time this mount last put its own change of it: a page
        #: asked for before that is older than what the mount shows, and is not taken
        self._own_change: dict[int, float] = {}
        self._pool = _Pool()

    def get(self, doc_id: int) -> Record | None:
        return self.documents.get(doc_id)

    async def build(self) -> None:
        """Read every page (one call per 200 documents) and replace the index."""
        started = self._now()
        documents: dict[int, Record] = {}
        start = 0
        while True:
            page = await self._client.list_documents(start=start, limit=self._page_size, sort=SORT)
            for record in page.documents:
                documents[int(record["id"])] = self._pool.record(record)
            start += len(page.documents)
            if len(page.documents) < self._page_size:
                break
        changed = set(documents) ^ set(self.documents) | {
            i for i, r in documents.items() if self.documents.get(i) not in (None, r)
        }
        self.documents = documents
        self._finish(started, changed)

    async def refresh(self) -> set[int]:
        """Bring the index up to date incrementally; returns the ids that changed."""
        async with self._refreshing:
            return await self._refresh()

    async def _refresh(self) -> set[int]:
        if not self.ready.is_set():
            await self.build()
            return set(self.documents)
        started = self._now()
        asked = time.monotonic()
        changed: set[int] = set()
        start = 0
        while True:
            page = await self._client.list_documents(start=start, limit=self._page_size, sort=SORT)
            all_known = True
            for record in page.documents:
                doc_id = int(record["id"])
                if self._own_change.get(doc_id, -math.inf) >= asked:
                    continue  # the mount changed it after this page was asked for
                old = self.documents.get(doc_id)
                if old is None or old.get("version_modified_date__v") != record.get(
                    "version_modified_date__v"
                ):
                    all_known = False
                if old != record:
                    self.documents[doc_id] = self._pool.record(record)
                    changed.add(doc_id)
            start += len(page.documents)
            if all_known or len(page.documents) < self._page_size:
                break
        changed |= await self._apply_deletions()
        self._finish(started, changed)
        return changed

    async def _apply_deletions(self) -> set[int]:
        since = self._last_poll - _DELETION_OVERLAP if self._last_poll else None
        changed: set[int] = set()
        for record in await self._client.deleted_documents(since=since):
            try:
                doc_id = int(record["id"])
            except (KeyError, TypeError, ValueError):
                continue
            mark = (doc_id, str(record.get("date_deleted")))
            if mark in self._seen_deletions or doc_id not in self.documents:
                continue
            self._seen_deletions.add(mark)
            # A deletion record may name one version only: ask whether the document
            # itself is gone (rare, so one call each is cheap).
            try:
                response = await self._client.get_document(doc_id)
            except errors.InvalidDocument:
                self.documents.pop(doc_id, None)
            else:
                document = response.get("document")
                if isinstance(document, dict):
                    self.documents[doc_id] = self._pool.record(document)
            changed.add(doc_id)
        return changed

    def put(self, record: Record, *, own: bool = False) -> None:
        """Learn a document's latest record now (after the bridge changed it), rather
        than at the next poll; ``own``: the mount's own change, which a poll already
        under way must not undo."""
        doc_id = int(record["id"])
        if own:
            self._own_change[doc_id] = time.monotonic()
        if self.documents.get(doc_id) != record:
            self.documents[doc_id] = self._pool.record(record)
            self._finish(None, {doc_id})

    def forget(self, doc_id: int) -> None:
        """Drop a document the vault says does not exist (INVALID_DOCUMENT)."""
        if self.documents.pop(doc_id, None) is not None:
            self._finish(None, {doc_id})

    def _finish(self, started: datetime | None, changed: set[int]) -> None:
        if started is not None:
            self._last_poll = started
            self.last_refresh = time.monotonic()
        if changed:
            self.generation += 1
            for doc_id in changed:
                for callback in self.on_change:
                    callback(doc_id)
        self.ready.set()

    async def run(
        self, interval: float, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Build, then refresh every ``interval`` seconds, or at once when asked
        (``poll_now``); errors are logged, not fatal."""
        task_status.started()
        while True:
            asked = self.polls_asked
            try:
                changed = await self.refresh()
                self.poll_error = None
                if changed:
                    log.info("index: %d document(s) changed", len(changed))
            except errors.VaultError as exc:
                self.poll_error = str(exc)
                log.warning("index refresh failed: %s", exc)
            self.polls_answered = asked
            with trio.move_on_after(interval):
                await self._poked.wait()
            self._poked = trio.Event()

    def poll_now(self) -> None:
        """Look for the vault's changes now rather than at the next poll (``vaultfs
        refresh``); a poll under way is followed by another."""
        self.polls_asked += 1
        self._poked.set()
