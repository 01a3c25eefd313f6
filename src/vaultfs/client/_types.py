"""Plain value types the client hands to its callers (no httpx types leak out)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Budget", "Credentials", "DocumentPage", "Download"]


@dataclass(frozen=True)
class Credentials:
    """Who logs in. ``repr`` never shows the password."""

    username: str
    password: str = field(repr=False)
    #: optional ``vaultDNS`` sent with the login (overrides the host of the URL)
    vault_dns: str | None = None


@dataclass
class Budget:
    """What the vault says is left of the rate limits, and what this client spent."""

    burst_remaining: int | None = None
    #: the largest burst remainder seen: the best guess of the vault's burst limit
    burst_limit_seen: int | None = None
    daily_remaining: int | None = None
    #: API calls this client made (every HTTP request, retries and logins included)
    calls: int = 0
    #: calls per endpoint kind, e.g. {"GET /objects/documents": 5}
    by_endpoint: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class DocumentPage:
    """One page of ``GET /objects/documents``: ``documents`` are the inner records."""

    documents: list[dict[str, Any]]
    size: int
    start: int
    limit: int
    #: how many records match in all (``responseDetails.total``), when the vault said
    total: int | None = None


class Download(Protocol):
    """An open download of a file stream."""

    # Read-only members: what a reader of a download sees, whether the download keeps
    # them as attributes or computes them.

    @property
    def length(self) -> int | None:
        """Exact byte length of what ``pieces`` will yield from ``offset`` on, when the
        server said (Content-Length), else None."""

    @property
    def filename(self) -> str | None:
        """The file name from Content-Disposition, when sent."""

    @property
    def offset(self) -> int:
        """The offset the stream starts at (the requested one: the client skips bytes
        itself when a server ignores Range)."""

    def pieces(self) -> AsyncIterator[bytes]:
        """The content from ``offset`` on, in pieces of whatever size came."""
