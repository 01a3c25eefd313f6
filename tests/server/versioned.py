"""A test client of the same session under another API version (for version gating)."""

from __future__ import annotations

import httpx

__all__ = ["at_version"]


def at_version(client: httpx.Client, version: str) -> httpx.Client:
    """A client like ``client`` whose base URL is ``/api/<version>`` instead."""
    base = str(client.base_url).rstrip("/").rsplit("/", 1)[0]
    return httpx.Client(base_url=f"{base}/{version}", headers=client.headers, timeout=30)
