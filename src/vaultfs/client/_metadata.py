"""Metadata endpoints of ``VaultClient``: document types, subtypes, classifications
and document fields.

Owns which path each of these calls sends and which part of the answer it returns;
``VaultClient`` inherits them.
"""

from __future__ import annotations

from typing import Any

from ._endpoint import EndpointCalls, record

__all__ = ["MetadataCalls"]


class MetadataCalls(EndpointCalls):
    async def document_types(self) -> list[dict[str, Any]]:
        """GET /metadata/objects/documents/types -> ``types`` ([{label, value}])."""
        body = await self._get("/metadata/objects/documents/types")
        return list(body.get("types") or [])

    async def document_type(self, type_name: str) -> dict[str, Any]:
        """GET /metadata/objects/documents/types/{type} -> the type record."""
        return record(await self._get("/metadata/objects/documents/types/{type}", type=type_name))

    async def document_subtype(self, type_name: str, subtype: str) -> dict[str, Any]:
        body = await self._get(
            "/metadata/objects/documents/types/{type}/subtypes/{subtype}",
            type=type_name,
            subtype=subtype,
        )
        return record(body)

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
        return record(body)

    async def document_properties(self) -> list[dict[str, Any]]:
        """GET /metadata/objects/documents/properties -> field metadata records."""
        body = await self._get("/metadata/objects/documents/properties")
        return list(body.get("properties") or [])
