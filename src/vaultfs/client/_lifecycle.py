"""Lifecycle actions, document events, users and groups: the endpoints of
``VaultClient`` that act on a document's life rather than on its content.

Owns which method, path and body each of these calls sends and which part of the
answer it returns, as ``_documents`` does for documents; ``VaultClient`` inherits them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vaultfs.wire import PAGE_LIMIT

from ._http import Call, Http

__all__ = ["LifecycleCalls"]

_ACTIONS = "/objects/documents/{id}/versions/{major}/{minor}/lifecycle_actions"


class LifecycleCalls:
    _http: Http
    _username: str

    @property
    def username(self) -> str:
        """The user this client logs in as."""
        return self._username

    # --- lifecycle actions -------------------------------------------------------

    async def lifecycle_actions(self, doc_id: int, major: int, minor: int) -> list[dict[str, Any]]:
        """GET .../lifecycle_actions -> ``lifecycle_actions__v`` (name__v, label__v,
        lifecycle_action_type__v, entry_requirements__v when there are any)."""
        args = {"id": doc_id, "major": major, "minor": minor}
        body = await self._http.call(Call("GET", _ACTIONS, path_args=args))
        return [a for a in body.get("lifecycle_actions__v") or [] if isinstance(a, dict)]

    async def entry_requirements(
        self, doc_id: int, major: int, minor: int, action: str
    ) -> list[dict[str, Any]]:
        """GET .../lifecycle_actions/{action}/entry_requirements -> ``properties``."""
        args: dict[str, str | int] = {
            "id": doc_id,
            "major": major,
            "minor": minor,
            "action": action,
        }
        call = Call("GET", _ACTIONS + "/{action}/entry_requirements", path_args=args)
        body = await self._http.call(call)
        return [p for p in body.get("properties") or [] if isinstance(p, dict)]

    async def start_action(
        self, doc_id: int, major: int, minor: int, action: str, params: Mapping[str, str]
    ) -> dict[str, Any]:
        """PUT .../lifecycle_actions/{action} with the WorkflowActivation values (form);
        returns the answer (``id``, ``workflow_id__v`` for workflows). Never resent after
        an ambiguous failure: an action that started is not offered a second time."""
        args: dict[str, str | int] = {
            "id": doc_id,
            "major": major,
            "minor": minor,
            "action": action,
        }
        call = Call(
            "PUT", _ACTIONS + "/{action}", path_args=args, form=dict(params), idempotent=False
        )
        return await self._http.call(call)

    # --- document events ---------------------------------------------------------

    async def document_events(self, doc_id: int) -> list[dict[str, Any]]:
        """GET /objects/documents/{id}/events, every page, in the vault's order."""
        events: list[dict[str, Any]] = []
        start = 0
        while True:
            params: dict[str, str | int | None] = {"start": start or None, "limit": PAGE_LIMIT}
            call = Call(
                "GET", "/objects/documents/{id}/events", path_args={"id": doc_id}, params=params
            )
            body = await self._http.call(call)
            page = [e for e in body.get("events") or [] if isinstance(e, dict)]
            events.extend(page)
            details = body.get("responseDetails") or {}
            total = int(details.get("total", len(events)))
            # Stop at the end, and on an empty page (a server ignoring ``start``
            # would otherwise be paged forever).
            if not page or len(events) >= total:
                return events
            start += len(page)

    async def log_event(
        self, doc_id: int, major: int, minor: int, fields: Mapping[str, str]
    ) -> dict[str, Any]:
        """POST .../versions/{major}/{minor}/events; returns the answer (``id``)."""
        args = {"id": doc_id, "major": major, "minor": minor}
        template = "/objects/documents/{id}/versions/{major}/{minor}/events"
        call = Call("POST", template, path_args=args, form=dict(fields), idempotent=False)
        return await self._http.call(call)

    # --- users and groups ---------------------------------------------------------

    async def list_users(self) -> list[dict[str, Any]]:
        """GET /objects/users -> the user records (``users[].user``)."""
        body = await self._http.call(Call("GET", "/objects/users"))
        return [
            dict(item["user"])
            for item in body.get("users") or []
            if isinstance(item, dict) and isinstance(item.get("user"), dict)
        ]

    async def list_groups(self) -> list[dict[str, Any]]:
        """GET /objects/groups -> the group records (``groups[].group``)."""
        body = await self._http.call(Call("GET", "/objects/groups"))
        return [
            dict(item["group"])
            for item in body.get("groups") or []
            if isinstance(item, dict) and isinstance(item.get("group"), dict)
        ]
