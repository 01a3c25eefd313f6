"""A blocking "is a vault answering here?" check, for commands that start a server."""

from __future__ import annotations

import httpx

__all__ = ["vault_answers"]


def vault_answers(base_url: str, timeout: float = 1.0) -> bool:
    """True when ``GET {base_url}/api/`` answers 200 (no session needed)."""
    try:
        return httpx.get(base_url.rstrip("/") + "/api/", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False
