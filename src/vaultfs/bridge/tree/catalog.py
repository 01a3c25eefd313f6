"""The type metadata: labels of document types, subtypes and classifications, the
metadata records of leaves (for new documents) and the field metadata, read lazily
and cached for an hour. What was read is also kept in the index file (``IndexStore``'s
meta table) and used, however old, while the vault cannot be reached: offline, folders
keep their labels, a setfattr checks a field against it and a new document's create
is made from it, and then each waits in the spool's queue.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import trio

from vaultfs import errors
from vaultfs.client import VaultApi

log = logging.getLogger(__name__)

__all__ = ["KeptMetadata", "TypeCatalog"]

#: type metadata changes rarely; read it again after this many seconds
_METADATA_TTL = 3600.0
#: the prefix of the catalog's keys in the kept meta table
_KEPT = "catalog:"


class KeptMetadata(Protocol):
    """Where what was read is kept across starts (the index file: ``IndexStore``)."""

    def meta(self, key: str) -> str | None: ...
    def set_meta(self, key: str, value: str) -> None: ...


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

    Each metadata call is made at most once per TTL; while the vault cannot be reached
    what was read before answers (in memory, or kept in ``kept``); a failing call
    leaves the API names as labels rather than failing a directory listing
    (``Tree``)."""

    def __init__(
        self,
        client: VaultApi,
        *,
        kept: KeptMetadata | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._client = client
        self._kept = kept
        self._clock = clock
        #: key -> (when read, what was read)
        self._memo: dict[str, tuple[float, Any]] = {}
        self._lock = trio.Lock()

    async def _read(self, key: str, call: Callable[[], Awaitable[Any]]) -> Any:
        """The metadata ``key``: from memory within the TTL, else read with ``call``
        (and kept); when the vault cannot be reached, what was read before."""
        async with self._lock:
            cached = self._memo.get(key)
            if cached is not None and self._clock() - cached[0] < _METADATA_TTL:
                return cached[1]
            try:
                value = await call()
            except errors.VaultUnavailable as exc:
                old = cached[1] if cached is not None else self._kept_value(key)
                if old is None:
                    raise
                log.info("metadata %s kept from before: the vault is away (%s)", key, exc)
                return old
            self._memo[key] = (self._clock(), value)
            if self._kept is not None:
                self._kept.set_meta(_KEPT + key, json.dumps(value, sort_keys=True))
            return value

    def _kept_value(self, key: str) -> Any:
        text = self._kept.meta(_KEPT + key) if self._kept is not None else None
        if text is None:
            return None
        try:
            return json.loads(text)
        except ValueError:
            return None

    async def type_labels(self) -> dict[str, str]:
        """Type API name -> label."""

        async def read() -> dict[str, str]:
            types = await self._client.document_types()
            return {_api_name(t): str(t.get("label") or _api_name(t)) for t in types}

        labels: dict[str, str] = await self._read("types", read)
        return labels

    async def subtype_labels(self, type_name: str) -> dict[str, str]:
        async def read() -> dict[str, str]:
            return _labels((await self._client.document_type(type_name)).get("subtypes"))

        labels: dict[str, str] = await self._read(f"subtypes/{type_name}", read)
        return labels

    async def classification_labels(self, type_name: str, subtype: str) -> dict[str, str]:
        async def read() -> dict[str, str]:
            record = await self._client.document_subtype(type_name, subtype)
            return _labels(record.get("classifications"))

        labels: dict[str, str] = await self._read(f"classifications/{type_name}/{subtype}", read)
        return labels

    async def leaf(
        self, type_name: str, subtype: str | None, classification: str | None
    ) -> dict[str, Any]:
        """The metadata record of a type, subtype or classification (API names): its
        ``properties``, ``availableLifecycles``, and ``subtypes``/``classifications``
        when it is not a leaf."""

        async def read() -> dict[str, Any]:
            if classification is not None and subtype is not None:
                return await self._client.document_classification(
                    type_name, subtype, classification
                )
            if subtype is not None:
                return await self._client.document_subtype(type_name, subtype)
            return await self._client.document_type(type_name)

        record: dict[str, Any] = await self._read(
            f"leaf/{type_name}/{subtype or ''}/{classification or ''}", read
        )
        return record

    def known_max_length(self, field: str) -> int | None:
        """``field``'s ``maxLength`` as the metadata read so far says (no call is made:
        a caller that must answer at once takes None as "not known yet")."""
        specs: list[Any] = []
        for key, (_, value) in self._memo.items():
            if key == "fields":
                specs.extend(value.values())
            elif key.startswith("leaf/"):
                specs.extend(value.get("properties") or [])
        for spec in specs:
            if isinstance(spec, dict) and spec.get("name") == field:
                limit = spec.get("maxLength")
                if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
                    return limit
        return None

    async def fields(self) -> dict[str, dict[str, Any]]:
        """Field name -> field metadata (``editable``, ``setOnCreateOnly``, ...)."""

        async def read() -> dict[str, dict[str, Any]]:
            specs = await self._client.document_properties()
            return {str(s.get("name")): s for s in specs}

        specs: dict[str, dict[str, Any]] = await self._read("fields", read)
        return specs


def _labels(entries: Any) -> dict[str, str]:
    if not isinstance(entries, list):
        return {}
    return {
        _api_name(e): str(e.get("label") or _api_name(e)) for e in entries if isinstance(e, dict)
    }
