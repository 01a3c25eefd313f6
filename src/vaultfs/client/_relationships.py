"""The relationship endpoints of ``VaultClient``: metadata, listings, create, delete.

A mixin, so the client's one class keeps every endpoint while this area stays in a file
of its own. It speaks through the client's ``Http`` pipeline like every other endpoint,
so errors are translated in the one place (``_errors``).
"""

from __future__ import annotations

from typing import Any

from ._http import Call, Http

__all__ = ["ALL_RELATIONSHIPS", "RelationshipCalls", "RelationshipPage"]

_RELATIONSHIPS = "/objects/documents/{id}/versions/{major}/{minor}/relationships"
#: the local vault's listing of every relationship (an extension the spec does not show)
ALL_RELATIONSHIPS = "/objects/documents/relationships"


class RelationshipPage:
    """One page of the cross-document listing: the records and the total."""

    def __init__(self, records: list[dict[str, Any]], total: int) -> None:
        self.records = records
        self.total = total


def _records(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        dict(item["relationship"])
        for item in body.get("relationships") or []
        if isinstance(item, dict) and isinstance(item.get("relationship"), dict)
    ]


class RelationshipCalls:
    _http: Http

    async def relationship_types(self, type_name: str) -> list[dict[str, Any]]:
        """GET /metadata/objects/documents/types/{type}/relationships ->
        ``relationshipTypes`` ({value, label, singleUse, targetDocVersionSpecific, ...})."""
        call = Call(
            "GET",
            "/metadata/objects/documents/types/{type}/relationships",
            path_args={"type": type_name},
        )
        body = await self._http.call(call)
        return [t for t in body.get("relationshipTypes") or [] if isinstance(t, dict)]

    async def list_relationships(self, doc_id: int, major: int, minor: int) -> list[dict[str, Any]]:
        """The relationships of one version (from it, and to its document)."""
        args = {"id": doc_id, "major": major, "minor": minor}
        return _records(await self._http.call(Call("GET", _RELATIONSHIPS, path_args=args)))

    async def list_all_relationships(
        self, *, start: int = 0, limit: int = 1000
    ) -> RelationshipPage:
        """One page of every relationship the user may see (the local vault's extension;
        a vault without it answers with an error, e.g. ``MalformedUrl``)."""
        params = {"start": start or None, "limit": limit}
        body = await self._http.call(Call("GET", ALL_RELATIONSHIPS, params=params))
        if not isinstance(body.get("relationships"), list):
            raise ValueError(f"GET {ALL_RELATIONSHIPS}: no relationship list in the answer")
        records = _records(body)
        details = body.get("responseDetails") or {}
        return RelationshipPage(records, int(details.get("total", start + len(records))))

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
        """POST a relationship from version major.minor; returns its id. Sent again only
        when the request surely did not arrive (a resend would be refused as a duplicate
        anyway, but the caller could not tell that from a real refusal)."""
        form = {"target_doc_id__v": str(target), "relationship_type__v": relationship_type}
        if target_version is not None:
            form["target_major_version__v"] = str(target_version[0])
            form["target_minor_version__v"] = str(target_version[1])
        call = Call(
            "POST",
            _RELATIONSHIPS,
            path_args={"id": doc_id, "major": major, "minor": minor},
            form=form,
            idempotent=False,
        )
        return int((await self._http.call(call))["id"])

    async def delete_relationship(self, doc_id: int, major: int, minor: int, rel_id: int) -> None:
        """DELETE a relationship whose source is version major.minor."""
        args = {"id": doc_id, "major": major, "minor": minor, "rel": rel_id}
        await self._http.call(Call("DELETE", _RELATIONSHIPS + "/{rel}", path_args=args))
