"""The workloads: each measures vaultfs and its reference and returns table rows.

Each module has ``run(ctx: Context) -> list[Row]``; ``WORKLOADS`` names them for
``--only``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..context import Context
from ..results import Row
from . import content, cp, grep, listing, offline, read, scale, search, servers, walk, webdav

__all__ = ["WORKLOADS"]

WORKLOADS: dict[str, Callable[[Context], list[Row]]] = {
    "read": read.run,
    "listing": listing.run,
    "grep": grep.run,
    "search": search.run,
    "cp": cp.run,
    "servers": servers.run,
    "content": content.run,
    "scale": scale.run,
    "webdav": webdav.run,
    "walk": walk.run,
    "offline": offline.run,
}
