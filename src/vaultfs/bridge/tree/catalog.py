"""The type metadata: labels of document types, subtypes and classifications, the
metadata records of leaves (for new documents) and the field metadata, read lazily
and cached for an hour. Field metadata older than that is still used while the vault
cannot be reached (a setfattr checks a field against it, and then waits in the spool).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import trio

from vaultfs import errors
from vaultfs.client import VaultApi

log = logging.getLogger(__name__)

__all__ = ["TypeCatalog"]

#: type metadata changes rarely; read it again after this many seconds
_METADATA_TTL = 3600.0


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
                try:
                    specs = await self._client.document_properties()
                except errors.VaultUnavailable as exc:
                    if self._fields is None:
                        raise
                    log.warning("field metadata kept from before: the vault is away (%s)", exc)
                    return self._fields[1]
                self._fields = (self._clock(), {str(s.get("name")): s for s in specs})
            return self._fields[1]


def _labels(entries: Any) -> dict[str, str]:
    if not isinstance(entries, list):
        return {}
    return {
        _api_name(e): str(e.get("label") or _api_name(e)) for e in entries if isinstance(e, dict)
    }
