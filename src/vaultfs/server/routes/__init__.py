"""HTTP routes of the local vault, one module per area of the API.

``api_routes()`` collects them; a new area adds a module with a ``routes()``
function and one line here.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount

from . import (
    access,
    attachments,
    auth,
    bulk,
    documents,
    events,
    files,
    lifecycle,
    locks,
    metadata,
    platform,
    relationships,
    renditions,
    users,
)

__all__ = ["api_routes"]


def api_routes() -> list[BaseRoute]:
    versioned: list[BaseRoute] = [
        *auth.versioned_routes(),
        *metadata.routes(),
        # before the other document routes: /objects/documents/batch is no document id
        *bulk.routes(),
        *relationships.routes(),
        *events.routes(),
        *lifecycle.routes(),
        *access.routes(),
        *users.routes(),
        *files.routes(),
        *locks.routes(),
        *renditions.routes(),
        *attachments.routes(),
        *platform.routes(),
        # last: its /objects/documents/{id} patterns are the most general
        *documents.routes(),
    ]
    return [
        *auth.unversioned_routes(),
        Mount("/api/{version}", routes=versioned),
    ]
