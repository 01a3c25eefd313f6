"""Document event routes: event metadata, logging an event on a version, reading events.

Document events exist since API v6. Event types are shown to (and may be logged by)
callers with the event permission only; the others see no event types, and logging
answers ``INSUFFICIENT_ACCESS``.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from vaultfs.errors import MethodNotSupported
from vaultfs.wire import PAGE_LIMIT

from .. import versions
from ..envelope import success
from ..permissions import Permission, allowed
from ..storage import events
from .common import api_url, caller, form, path_int, since, state
from .documents import date_param, int_param
from .relationships import subject

__all__ = ["routes"]

_META = "/metadata/objects/documents/events"
#: Query parameters of the event list that are not property filters.
_NOT_FILTERS = frozenset({"startDate", "endDate", "limit", "start", "auth", "format"})


def _subtype_entries(request: Request, spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": sub["name"],
            "label": sub["label"],
            "value": api_url(request, f"{_META}/{spec['name']}/types/{sub['name']}"),
        }
        for sub in spec["subtypes"]
    ]


def _metadata_caller(request: Request) -> bool:
    """Whether the caller may see (log) event types."""
    return allowed(caller(request), Permission.LOG_EVENTS)


async def event_types(request: Request) -> Response:
    may_log = _metadata_caller(request)
    specs = await state(request).db.read(events.event_types) if may_log else []
    return success(
        events=[
            {"name": s["name"], "label": s["label"], "subtypes": _subtype_entries(request, s)}
            for s in specs
        ]
    )


async def _find_type(request: Request) -> dict[str, Any]:
    name = request.path_params["event_type"]
    if not _metadata_caller(request):
        # Types the caller may not log do not exist for them.
        raise MethodNotSupported(f"Invalid event type [{name}]")
    spec: dict[str, Any] = await state(request).db.read(events.find_type, name)
    return spec


async def event_type(request: Request) -> Response:
    spec = await _find_type(request)
    return success(name=spec["name"], label=spec["label"], subtypes=_subtype_entries(request, spec))


async def event_subtype(request: Request) -> Response:
    spec = await _find_type(request)
    sub = events.find_subtype(spec, request.path_params["event_subtype"])
    return success(
        name=sub["name"],
        label=sub["label"],
        classifications=sub.get("classifications", []),
        properties=events.subtype_properties(sub),
    )


async def log_event(request: Request) -> Response:
    who, vault, doc_id, version = await subject(request, Permission.VIEW)
    # Logging needs the event permission and view access to the document: an event
    # records what happened to a document, it does not change it.
    caller(request, Permission.LOG_EVENTS)
    body = await form(request)
    event_id = await vault.db.write(
        events.log_event, who, doc_id, version, body.fields, vault.db.tick()
    )
    return success(responseMessage="Successfully logged event.", id=event_id)


async def list_events(request: Request) -> Response:
    who = caller(request)
    doc_id = path_int(request, "doc_id", "document id")
    # As for documents: 200 by default and at most ("limit can only lower it").
    limit = int_param(request, "limit", PAGE_LIMIT, 1, PAGE_LIMIT)
    start = int_param(request, "start", 0, 0)
    spec = events.EventQuery(
        filters={k: v for k, v in request.query_params.items() if k not in _NOT_FILTERS},
        start_ms=date_param(request, "startDate"),
        end_ms=date_param(request, "endDate"),
        start=start,
        limit=limit,
    )
    records, total = await state(request).db.read(events.list_events, who.vault_id, doc_id, spec)
    return success(
        responseMessage="Success",
        responseDetails={"total": total, "size": len(records), "start": start, "limit": limit},
        events=records,
    )


def routes() -> list[BaseRoute]:
    gate = since(versions.EVENTS)
    version = "/objects/documents/{doc_id}/versions/{major}/{minor}"
    return [
        Route(_META, gate(event_types), methods=["GET"]),
        Route(_META + "/{event_type}", gate(event_type), methods=["GET"]),
        Route(_META + "/{event_type}/types/{event_subtype}", gate(event_subtype), methods=["GET"]),
        Route("/objects/documents/{doc_id}/events", gate(list_events), methods=["GET"]),
        Route(version + "/events", gate(log_event), methods=["POST"]),
    ]
