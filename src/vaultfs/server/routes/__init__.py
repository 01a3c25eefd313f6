"""HTTP routes of the local vault, one module per area of the API.

``api_routes()`` collects them; a new area adds a module with a ``routes()``
function and one line here.
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount

from . import attachments, auth, documents, files, locks, metadata, renditions

__all__ = ["api_routes"]


def api_routes() -> list[BaseRoute]:
    versioned: list[BaseRoute] = [
        *auth.versioned_routes(),
        *metadata.routes(),
        *files.routes(),
        *locks.routes(),
        *renditions.routes(),
        *attachments.routes(),
        # last: its /objects/documents/{id} patterns are the most general
        *documents.routes(),
    ]
    return [
        *auth.unversioned_routes(),
        Mount("/api/{version}", routes=versioned),
    ]
