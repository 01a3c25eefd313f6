"""What ``vaultfs webdav`` is told: the vault, who signs in, where it listens, limits.

Owns ``WebdavConfig``, light to import (the command builds it before WsgiDAV loads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vaultfs.bridge.tree.walks import WALK_BURST, WALK_CALLS
from vaultfs.wire import MAX_FILE_SIZE

__all__ = ["WebdavConfig"]


@dataclass
class WebdavConfig:
    url: str
    #: the one user of a loopback front ("" when each WebDAV user signs in: ``users``)
    user: str
    password: str = field(repr=False)
    host: str
    port: int
    cache_dir: Path
    cache_size: int = 1 << 30
    poll_interval: float = 30.0
    retries: int = 6
    read_only: bool = False
    allow_delete: bool = False
    #: the largest PUT body taken (the vault's own limit on a file by default)
    max_upload: int = MAX_FILE_SIZE
    session_source: Any = field(default=None, repr=False)
    #: the certificate and key of HTTPS (both or neither)
    tls_cert: Path | None = None
    tls_key: Path | None = None
    #: each WebDAV user signs in with their own vault credentials (Basic, over TLS)
    users: bool = False
    #: the walks' share of the vault's budget (``tree.walks``): calls a day for the
    #: front, and per 5 minutes for each client
    walk_calls: int = WALK_CALLS
    walk_burst: int = WALK_BURST

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert is not None else "http"
